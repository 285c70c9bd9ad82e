package models

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCatalogueHoldsTheRequiredModels(t *testing.T) {
	for _, id := range []string{
		"meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B-Instruct",
		"meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-70B-Instruct",
		"Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-14B-Instruct",
		"Qwen/Qwen2.5-32B-Instruct", "Qwen/Qwen2.5-72B-Instruct",
		"deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-R1", "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
		"THUDM/glm-4-9b-chat", "mistralai/Mistral-7B-Instruct-v0.3",
		"Qwen/Qwen3-8B", "Qwen/Qwen3-30B-A3B", "meta-llama/Llama-3.3-70B-Instruct",
		"deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B",
		"deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "deepseek-ai/DeepSeek-R1-Distill-Llama-70B",
		"meta-llama/Llama-3.2-1B", "meta-llama/Llama-3.2-1B-Instruct",
		"meta-llama/Llama-3.2-3B", "meta-llama/Llama-3.2-3B-Instruct",
		"Qwen/Qwen2.5-VL-3B-Instruct", "Qwen/Qwen2.5-VL-7B-Instruct",
		"BAAI/bge-m3", "BAAI/bge-reranker-v2-m3", "BAAI/bge-reranker-base",
	} {
		m := mustLookup(t, id)
		assert.Equal(t, id, m.HFID)
		assert.NoError(t, m.Validate(), id)
		assert.NotEmpty(t, m.License, id)
		assert.Equal(t, "https://huggingface.co/"+id+"/blob/main/config.json", m.Source)
	}
}

func TestCatalogueIsACopy(t *testing.T) {
	all := Catalogue()
	require.Len(t, all, len(catalogue))
	all[0].Layers = 1
	assert.Equal(t, 32, Catalogue()[0].Layers)
	assert.Equal(t, "Llama-3.1-8B", Catalogue()[0].Name)
}

func TestLookup(t *testing.T) {
	for _, tc := range []struct {
		query, name, hfid string
		context           int
	}{
		{"Qwen/Qwen2.5-7B-Instruct", "Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", 32768},
		{"qwen/qwen2.5-7b-instruct", "Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", 32768},
		{"Qwen2.5-7B-Instruct", "Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", 32768},
		{" Qwen2.5-7B ", "Qwen2.5-7B", "Qwen/Qwen2.5-7B", 131072},
		{"meta-llama/Meta-Llama-3.1-8B-Instruct", "Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", 131072},
		{"llama-3.1-70b", "Llama-3.1-70B", "meta-llama/Llama-3.1-70B", 131072},
		{"THUDM/glm-4-9b-chat-hf", "glm-4-9b-chat", "THUDM/glm-4-9b-chat", 131072},
		{"Mistral-7B", "Mistral-7B-v0.3", "mistralai/Mistral-7B-v0.3", 32768},
		{"deepseek-r1", "DeepSeek-R1", "deepseek-ai/DeepSeek-R1", 163840},
		// Siblings the catalogue does not list resolve to the one it does.
		{"Qwen/Qwen2.5-72B", "Qwen2.5-72B", "Qwen/Qwen2.5-72B", 32768},
		{"qwen2.5-72b", "Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-72B-Instruct", 32768},
		{"Qwen/Qwen2.5-7B-Chat", "Qwen2.5-7B-Chat", "Qwen/Qwen2.5-7B-Chat", 32768},
		{"mistralai/Mistral-7B-it", "Mistral-7B-it", "mistralai/Mistral-7B-it", 32768},
		{"BAAI/bge-m3", "bge-m3", "BAAI/bge-m3", 8192},
		{"baai/BGE-M3", "bge-m3", "BAAI/bge-m3", 8192},
		{"bge-reranker-v2-m3", "bge-reranker-v2-m3", "BAAI/bge-reranker-v2-m3", 8192},
		{"BAAI/bge-reranker-base", "bge-reranker-base", "BAAI/bge-reranker-base", 512},
		{"qwen/qwen2.5-vl-7b-instruct", "Qwen2.5-VL-7B-Instruct", "Qwen/Qwen2.5-VL-7B-Instruct", 128000},
		{"Qwen/Qwen2.5-VL-3B", "Qwen2.5-VL-3B", "Qwen/Qwen2.5-VL-3B", 128000},
		{"Llama-3.2-1B-Instruct", "Llama-3.2-1B-Instruct", "meta-llama/Llama-3.2-1B-Instruct", 131072},
	} {
		m, err := Lookup(tc.query)
		require.NoError(t, err, tc.query)
		assert.Equal(t, tc.name, m.Name, tc.query)
		assert.Equal(t, tc.hfid, m.HFID, tc.query)
		assert.Equal(t, tc.context, m.ContextLength, tc.query)
	}
	assert.Equal(t, mustLookup(t, "Qwen/Qwen2.5-72B-Instruct").Parameters, mustLookup(t, "Qwen/Qwen2.5-72B").Parameters)
	assert.Equal(t, TaskVisionLanguage, mustLookup(t, "Qwen/Qwen2.5-VL-3B").Task, "a base sibling keeps the task")
}

// Every built-in model states its task, and only encoders leave text
// generation.
func TestCatalogueTasks(t *testing.T) {
	for _, m := range Catalogue() {
		assert.NotEmpty(t, m.Task, m.HFID)
		assert.Equal(t, m.IsEncoder(), !m.Generates(), m.HFID)
		assert.Equal(t, m.HasVision(), m.Task == TaskVisionLanguage, m.HFID)
	}
}

func TestLookupUnknown(t *testing.T) {
	for _, q := range []string{"", "  ", "gpt-4", "Qwen/Qwen2.5-3B-Instruct", "org/", "BAAI/bge-large-en-v1.5", "Qwen/Qwen2.5-VL-72B-Instruct"} {
		_, err := Lookup(q)
		require.ErrorIs(t, err, ErrUnknownModel, q)
		assert.Contains(t, err.Error(), "look up model")
	}
	_, err := Lookup("gpt-4")
	assert.Contains(t, err.Error(), "known: Llama-3.1-8B, Llama-3.1-8B-Instruct")
}
