package market_test

import (
	"errors"
	"fmt"

	"github.com/cubestudio/cube/models"
)

func ExampleLookup() {
	m, err := models.Lookup("Qwen/Qwen2.5-7B-Instruct")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %d layers, %d/%d heads, %.2f B parameters, %d KiB KV per token\n",
		m.Name, m.Layers, m.AttentionHeads, m.KVHeads, float64(m.Parameters)/1e9, m.KVBytesPerToken(models.BF16)>>10)

	_, err = models.Lookup("gpt-4")
	fmt.Println(errors.Is(err, models.ErrUnknownModel))
	// Output:
	// Qwen2.5-7B-Instruct: 28 layers, 28/4 heads, 7.62 B parameters, 56 KiB KV per token
	// true
}

func ExampleFromHFConfig() {
	config := []byte(`{
	  "_name_or_path": "acme/support-bot-8b",
	  "model_type": "llama",
	  "hidden_size": 4096,
	  "intermediate_size": 14336,
	  "num_hidden_layers": 32,
	  "num_attention_heads": 32,
	  "num_key_value_heads": 8,
	  "vocab_size": 128256,
	  "max_position_embeddings": 131072,
	  "torch_dtype": "bfloat16"
	}`)
	m, err := models.FromHFConfig(config)
	if err != nil {
		panic(err)
	}
	fmt.Println(m.HFID, m.Parameters, m.DType, m.ContextLength)

	_, err = models.FromHFConfig([]byte(`{"num_hidden_layers": "32", "hidden_size": 4096}`))
	fmt.Println(err)
	// Output:
	// acme/support-bot-8b 8030261248 bf16 131072
	// [num_hidden_layers: Invalid value: "32": must be a number, num_attention_heads: Required value, vocab_size: Required value, intermediate_size: Required value: dense models need the FFN width]
}

// Encoders and vision-language models are in the catalogue too: an
// embedding model has no KV cache and a longest input, a vision-language
// model counts its vision tower among its weights.
func ExampleLookup_tasks() {
	for _, id := range []string{"BAAI/bge-m3", "BAAI/bge-reranker-v2-m3", "Qwen/Qwen2.5-VL-7B-Instruct"} {
		m, err := models.Lookup(id)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s, %.0f M parameters (%.0f M vision), %d tokens, %d bytes of KV a token\n",
			m.Name, m.Task, float64(m.Parameters)/1e6, float64(m.VisionParameters)/1e6, m.ContextLength, m.KVBytesPerToken(models.BF16))
	}
	// Output:
	// bge-m3: embedding, 568 M parameters (0 M vision), 8192 tokens, 0 bytes of KV a token
	// bge-reranker-v2-m3: reranking, 568 M parameters (0 M vision), 8192 tokens, 0 bytes of KV a token
	// Qwen2.5-VL-7B-Instruct: vision-language, 8292 M parameters (677 M vision), 128000 tokens, 57344 bytes of KV a token
}
