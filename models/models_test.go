package models

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// xlmRoberta counts an XLM-RoBERTa checkpoint term by term from the modules
// of transformers' modeling_xlm_roberta.py, independently of
// encoderParameters: word, position and token-type embeddings with their
// LayerNorm; per layer query/key/value/output dense layers with biases, two
// LayerNorms and the biased FFN; then the pooler of XLMRobertaModel or the
// classification head (dense, out_proj) of
// XLMRobertaForSequenceClassification, which has no pooler.
func xlmRoberta(vocab, positions, h, inter, layers, labels int64) int64 {
	embeddings := vocab*h + positions*h + 1*h + 2*h
	layer := 4*(h*h+h) + 2*h + (h*inter + inter) + (inter*h + h) + 2*h
	head := h*h + h // pooler
	if labels > 0 {
		head = (h*h + h) + (h*labels + labels)
	}
	return embeddings + layers*layer + head
}

// TestEncoderParameterCounts checks the BGE encoders against the counts
// their pages publish: 568M parameters for bge-m3 (the Hugging Face
// safetensors count, which theaibench.ai/models/bge-m3 and
// b3blog.b-tech.io/de/resources/models/bge-m3 repeat), 568M for
// bge-reranker-v2-m3 and 278M for bge-reranker-base (their Hugging Face
// pages), each to the rounding of the published figure.
func TestEncoderParameterCounts(t *testing.T) {
	for _, tc := range []struct {
		id        string
		want      int64
		published float64 // millions
		context   int
		task      Task
	}{
		{"BAAI/bge-m3", xlmRoberta(250002, 8194, 1024, 4096, 24, 0), 568, 8192, TaskEmbedding},
		{"BAAI/bge-reranker-v2-m3", xlmRoberta(250002, 8194, 1024, 4096, 24, 1), 568, 8192, TaskReranking},
		{"BAAI/bge-reranker-base", xlmRoberta(250002, 514, 768, 3072, 12, 1), 278, 512, TaskReranking},
	} {
		m := mustLookup(t, tc.id)
		assert.Equal(t, tc.want, m.Parameters, tc.id)
		assert.Equal(t, tc.want, m.ActiveParameters, tc.id)
		assert.InDelta(t, tc.published, float64(m.Parameters)/1e6, 0.5, tc.id)
		assert.Equal(t, tc.context, m.ContextLength, "max_position_embeddings less pad_token_id + 1: %s", tc.id)
		assert.Equal(t, tc.task, m.Task, tc.id)
		assert.True(t, m.IsEncoder(), tc.id)
		assert.False(t, m.Generates(), tc.id)
		assert.Zero(t, m.KVBytesPerToken(BF16), "an encoder keeps no KV cache: %s", tc.id)
		assert.Zero(t, m.KVBytesPerTokenPerLayer(BF16, 4), tc.id)
		assert.Equal(t, FP32, m.DType, "published in float32: %s", tc.id)
	}
	assert.Equal(t, int64(567_754_752), mustLookup(t, "BAAI/bge-m3").Parameters)
}

// qwen25VLVisionCount counts Qwen2.5-VL's vision tower term by term from
// modeling_qwen2_5_vl.py: the bias-free Conv3d patch embedding; per block
// two RMSNorms, qkv and proj with biases, and the gated MLP with biases;
// the merger's RMSNorm and its two biased linear layers over 2×2 merged
// patches.
func qwen25VLVisionCount(out int64) int64 {
	const h, inter, depth, patch, temporal, merge, channels = 1280, 3420, 32, 14, 2, 2, 3
	embed := int64(channels * temporal * patch * patch * h)
	block := int64(2*h + (3*h*h + 3*h) + (h*h + h) + 2*(h*inter+inter) + (inter*h + h))
	merged := int64(h * merge * merge)
	merger := h + (merged*merged + merged) + (merged*out + out)
	return embed + depth*block + merger
}

// TestQwen25VLParameterCounts checks Qwen2.5-VL: the decoder is Qwen2's
// (the 7B's is Qwen2.5-7B's), the vision tower comes on top. The
// published reference is a parameter breakdown of
// Qwen/Qwen2.5-VL-7B-Instruct loaded with transformers (found in the code
// corpus: vision encoder 676.55M, total 8.29B), which agrees with the
// 8.29B the model's Hugging Face page states; no copy of its
// model.safetensors.index.json was found. For the 3B no published count
// was found, so it is checked term by term only.
func TestQwen25VLParameterCounts(t *testing.T) {
	gqa := func(vocab, h, inter, layers, heads, kv, d int64, tied bool) int64 {
		attn := h*heads*d + 2*h*kv*d + heads*d*h + heads*d + 2*kv*d
		embeddings := 2 * vocab * h
		if tied {
			embeddings = vocab * h
		}
		return embeddings + h + layers*(attn+3*h*inter+2*h)
	}
	vl7 := mustLookup(t, "Qwen/Qwen2.5-VL-7B-Instruct")
	assert.Equal(t, qwen25VLVisionCount(3584), vl7.VisionParameters)
	assert.Equal(t, gqa(152064, 3584, 18944, 28, 28, 4, 128, false)+vl7.VisionParameters, vl7.Parameters)
	assert.Equal(t, mustLookup(t, "Qwen/Qwen2.5-7B-Instruct").Parameters+vl7.VisionParameters, vl7.Parameters)
	assert.InDelta(t, 676.55, float64(vl7.VisionParameters)/1e6, 0.005)
	assert.InDelta(t, 8.29, float64(vl7.Parameters)/1e9, 0.005)
	assert.Equal(t, vl7.Parameters, vl7.ActiveParameters)
	assert.Equal(t, TaskVisionLanguage, vl7.Task)
	assert.True(t, vl7.Generates())
	assert.Equal(t, int64(2*28*4*128*2), vl7.KVBytesPerToken(BF16), "the decoder's KV cache; the vision tower keeps none")
	assert.Equal(t, 128000, vl7.ContextLength)

	vl3 := mustLookup(t, "Qwen/Qwen2.5-VL-3B-Instruct")
	assert.Equal(t, qwen25VLVisionCount(2048), vl3.VisionParameters)
	assert.Equal(t, gqa(151936, 2048, 11008, 36, 16, 2, 128, true)+vl3.VisionParameters, vl3.Parameters)
}

// TestLlama32ParameterCounts checks Llama-3.2-1B and -3B against the 1.23B
// and 3.21B of their model card (Meta's table): tied embeddings, head_dim
// 64 for the 1B.
func TestLlama32ParameterCounts(t *testing.T) {
	tied := func(vocab, h, inter, layers, heads, kv, d int64) int64 {
		return vocab*h + h + layers*(h*heads*d+2*h*kv*d+heads*d*h+3*h*inter+2*h)
	}
	for _, tc := range []struct {
		id        string
		want      int64
		published float64
	}{
		{"meta-llama/Llama-3.2-1B-Instruct", tied(128256, 2048, 8192, 16, 32, 8, 64), 1.23},
		{"meta-llama/Llama-3.2-3B", tied(128256, 3072, 8192, 28, 24, 8, 128), 3.21},
	} {
		m := mustLookup(t, tc.id)
		assert.Equal(t, tc.want, m.Parameters, tc.id)
		assert.InDelta(t, tc.published, float64(m.Parameters)/1e9, 0.06, tc.id)
		assert.True(t, m.TiedEmbeddings, tc.id)
	}
}

func TestFromHFConfigBERT(t *testing.T) {
	// The shape of a BERT-large encoder such as BAAI/bge-large-zh-v1.5:
	// BERT numbers positions from 0 and has two token types.
	const bert = `"model_type":"bert","hidden_size":16,"intermediate_size":64,"num_hidden_layers":2,
		"num_attention_heads":4,"vocab_size":100,"max_position_embeddings":512,"type_vocab_size":2,"pad_token_id":0`
	m, err := FromHFConfig([]byte(`{"architectures":["BertModel"],` + bert + `}`))
	require.NoError(t, err)
	const h, i = 16, 64
	embeddings := int64(100*h + 512*h + 2*h + 2*h)
	layer := int64(4*(h*h+h) + 2*h + (h*i + i) + (i*h + h) + 2*h)
	assert.Equal(t, embeddings+2*layer+(h*h+h), m.Parameters, "with the pooler")
	assert.Equal(t, 512, m.ContextLength, "no position offset for BERT")
	assert.Equal(t, TaskEmbedding, m.Task)
	assert.Equal(t, Encoder{PositionEmbeddings: 512, TokenTypes: 2, Pooler: true}, m.Encoder)
	assert.Equal(t, 4, m.HeadDim)

	cls, err := FromHFConfig([]byte(`{"architectures":["BertForSequenceClassification"],"id2label":{"0":"neg","1":"pos","2":"neutral"},` + bert + `}`))
	require.NoError(t, err)
	assert.Equal(t, m.Parameters+3*h+3, cls.Parameters, "pooler kept, classifier Linear(h, 3)")
	assert.Equal(t, TaskClassification, cls.Task)

	// Without id2label or num_labels, transformers gives two labels.
	two, err := FromHFConfig([]byte(`{"architectures":["BertForSequenceClassification"],` + bert + `}`))
	require.NoError(t, err)
	assert.Equal(t, 2, two.Encoder.Labels)
	three, err := FromHFConfig([]byte(`{"architectures":["BertForSequenceClassification"],"num_labels":3,` + bert + `}`))
	require.NoError(t, err)
	assert.Equal(t, cls.Parameters, three.Parameters)

	// XLM-RoBERTa without pad_token_id takes XLMRobertaConfig's 1.
	xlmr, err := FromHFConfig([]byte(`{"architectures":["XLMRobertaModel"],"model_type":"xlm-roberta","hidden_size":16,"intermediate_size":64,
		"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,"max_position_embeddings":514,"type_vocab_size":1}`))
	require.NoError(t, err)
	assert.Equal(t, 512, xlmr.ContextLength)
}

func TestFromHFConfigEncoderAndVisionErrors(t *testing.T) {
	const enc = `"model_type":"xlm-roberta","hidden_size":16,"intermediate_size":64,"num_hidden_layers":2,
		"num_attention_heads":4,"vocab_size":100,"max_position_embeddings":514`
	const vl = `"model_type":"qwen2_5_vl","hidden_size":16,"intermediate_size":64,"num_hidden_layers":2,
		"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100`
	for _, tc := range []struct {
		name, json string
		want       []string
	}{
		{"no architectures", `{` + enc + `}`, []string{"architectures: Required value: an encoder's class"}},
		{"architectures not a list", `{"architectures":"XLMRobertaModel",` + enc + `}`,
			[]string{`architectures: Invalid value: "XLMRobertaModel": must be a list of strings`}},
		{"masked LM head", `{"architectures":["XLMRobertaForMaskedLM"],` + enc + `}`,
			[]string{`architectures[0]: Unsupported value: "XLMRobertaForMaskedLM"`}},
		{"relative positions", `{"architectures":["XLMRobertaModel"],"position_embedding_type":"relative_key",` + enc + `}`,
			[]string{`position_embedding_type: Unsupported value: "relative_key"`}},
		{"no position table", `{"architectures":["BertModel"],"model_type":"bert","hidden_size":16,"intermediate_size":64,
			"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100}`,
			[]string{"max_position_embeddings: Required value"}},
		{"offset past the table", `{"architectures":["XLMRobertaModel"],` + enc + `,"pad_token_id":600}`,
			[]string{"pad_token_id: Invalid value: 600: positions start at pad_token_id + 1 (601)"}},
		{"no labels", `{"architectures":["XLMRobertaForSequenceClassification"],"id2label":{},` + enc + `}`,
			[]string{"id2label: Invalid value: 0: a sequence classifier needs at least one label"}},
		{"heads do not divide", `{"architectures":["BertModel"],"model_type":"bert","hidden_size":18,"intermediate_size":64,
			"num_hidden_layers":2,"num_attention_heads":4,"vocab_size":100,"max_position_embeddings":512}`,
			[]string{"num_attention_heads: Invalid value: 4: must divide hidden_size (18) in an encoder"}},
		{"vision incomplete", `{` + vl + `,"vision_config":{"depth":2,"num_heads":"16"}}`, []string{
			`vision_config.num_heads: Invalid value: "16": must be a number`,
			"vision_config.hidden_size: Required value", "vision_config.intermediate_size: Required value",
			"vision_config.patch_size: Required value", "vision_config.out_hidden_size: Required value",
		}},
		{"vision width", `{` + vl + `,"vision_config":{"depth":2,"hidden_size":8,"intermediate_size":8,"num_heads":3,"patch_size":2,"out_hidden_size":32}}`, []string{
			"vision_config.num_heads: Invalid value: 3: must divide vision_config.hidden_size (8)",
			"vision_config.out_hidden_size: Invalid value: 32: must equal the decoder's hidden_size (16)",
		}},
		{"unknown vision tower", `{"model_type":"llava","vision_config":{"hidden_size":1024},"text_config":{"num_hidden_layers":1,
			"hidden_size":8,"num_attention_heads":2,"vocab_size":10,"intermediate_size":16}}`,
			[]string{`vision_config: Invalid value: "llava": cube counts the vision tower of model_type qwen2_5_vl only: state num_parameters`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromHFConfig([]byte(tc.json))
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}

	// A vision tower cube does not lay out is accepted with a stated count.
	m, err := FromHFConfig([]byte(`{"model_type":"llava","vision_config":{"hidden_size":1024},"text_config":{"num_hidden_layers":1,
		"hidden_size":8,"num_attention_heads":2,"vocab_size":10,"intermediate_size":16,"num_parameters":5000}}`))
	require.NoError(t, err)
	assert.Equal(t, TaskVisionLanguage, m.Task)
	assert.Equal(t, int64(5000), m.Parameters)
	assert.False(t, m.HasVision())

	// Newer transformers write the decoder under text_config; the vision
	// tower stays beside it.
	nested, err := FromHFConfig([]byte(`{"model_type":"qwen2_5_vl","text_config":{"model_type":"qwen2_5_vl_text","hidden_size":16,
		"intermediate_size":64,"num_hidden_layers":2,"num_attention_heads":4,"num_key_value_heads":2,"vocab_size":100},
		"vision_config":{"depth":2,"hidden_size":8,"intermediate_size":8,"num_heads":2,"patch_size":2,"out_hidden_size":16}}`))
	require.NoError(t, err)
	assert.Equal(t, "qwen2_5_vl", nested.Architecture)
	assert.True(t, nested.QKVBias)
	assert.Equal(t, Vision{Depth: 2, HiddenSize: 8, IntermediateSize: 8, Heads: 2, PatchSize: 2, TemporalPatchSize: 2,
		SpatialMergeSize: 2, OutHiddenSize: 16, InChannels: 3}, nested.Vision)
	v, _ := visionParameters(nested.Vision)
	assert.Equal(t, v, nested.VisionParameters)
}

func TestValidateEncoderAndVision(t *testing.T) {
	m := mustLookup(t, "BAAI/bge-m3")
	m.Task = TaskTextGeneration
	m.Encoder.PositionOffset = 9000
	m.Vision.Depth = 1
	err := m.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"task: Invalid value: \"text-generation\": an encoder does not generate text",
		"pad_token_id: Invalid value: 8999",
		"model_type: Invalid value: \"xlm-roberta\": an encoder has no experts, latent attention or vision tower",
		"vision_config.hidden_size: Invalid value: 0: must be positive",
	} {
		assert.Contains(t, err.Error(), want)
	}

	d := mustLookup(t, "Qwen/Qwen2.5-7B-Instruct")
	d.Task = "chat"
	d.Encoder.Labels = 1
	d.Vision.Heads = 16
	d.VisionParameters = d.Parameters + 1
	err = d.Validate()
	require.Error(t, err)
	for _, want := range []string{
		`task: Unsupported value: "chat"`,
		"max_position_embeddings: Invalid value: 0: an encoder needs its position table",
		"vision_config.depth: Invalid value: 0: must be positive when other vision fields are set",
		"num_vision_parameters: Invalid value",
	} {
		assert.Contains(t, err.Error(), want)
	}

	legacy := mustLookup(t, "Qwen/Qwen2.5-7B-Instruct")
	legacy.Task = ""
	require.NoError(t, legacy.Validate(), "facts without a task are a text-generating decoder")
	assert.True(t, legacy.Generates())
}

// seedConfigs maps each file in testdata to the catalogue entry it is the
// config.json of.
var seedConfigs = map[string]string{
	"Llama-3.1-8B-Instruct.json":       "meta-llama/Llama-3.1-8B-Instruct",
	"Llama-3.1-70B-Instruct.json":      "meta-llama/Llama-3.1-70B-Instruct",
	"Qwen2.5-7B-Instruct.json":         "Qwen/Qwen2.5-7B-Instruct",
	"Qwen2.5-14B-Instruct.json":        "Qwen/Qwen2.5-14B-Instruct",
	"Qwen2.5-32B.json":                 "Qwen/Qwen2.5-32B",
	"Qwen2.5-72B-Instruct.json":        "Qwen/Qwen2.5-72B-Instruct",
	"DeepSeek-V3.json":                 "deepseek-ai/DeepSeek-V3",
	"DeepSeek-R1-Distill-Qwen-7B.json": "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B",
	"glm-4-9b-chat.json":               "THUDM/glm-4-9b-chat",
	"glm-4-9b-chat-hf.json":            "THUDM/glm-4-9b-chat",
	"Mistral-7B-Instruct-v0.3.json":    "mistralai/Mistral-7B-Instruct-v0.3",
	"Qwen3-8B.json":                    "Qwen/Qwen3-8B",
	"Qwen3-30B-A3B.json":               "Qwen/Qwen3-30B-A3B",
	"Llama-3.2-1B.json":                "meta-llama/Llama-3.2-1B",
	"Llama-3.2-3B.json":                "meta-llama/Llama-3.2-3B",
	"Qwen2.5-VL-3B-Instruct.json":      "Qwen/Qwen2.5-VL-3B-Instruct",
	"Qwen2.5-VL-7B-Instruct.json":      "Qwen/Qwen2.5-VL-7B-Instruct",
	"bge-m3.json":                      "BAAI/bge-m3",
	"bge-reranker-v2-m3.json":          "BAAI/bge-reranker-v2-m3",
	"bge-reranker-base.json":           "BAAI/bge-reranker-base",
}

func readSeed(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	return b
}

// Every published config reads to the same facts the catalogue holds, so the
// catalogue and the parser check each other.
func TestFromHFConfigMatchesCatalogue(t *testing.T) {
	files, err := filepath.Glob("testdata/*.json")
	require.NoError(t, err)
	require.Len(t, files, len(seedConfigs))
	for file, id := range seedConfigs {
		t.Run(file, func(t *testing.T) {
			got, err := FromHFConfig(readSeed(t, file))
			require.NoError(t, err)
			want := mustLookup(t, id)
			assert.Equal(t, want.Parameters, got.Parameters)
			assert.Equal(t, want.ActiveParameters, got.ActiveParameters)
			assert.Equal(t, want.Layers, got.Layers)
			assert.Equal(t, want.HiddenSize, got.HiddenSize)
			assert.Equal(t, want.IntermediateSize, got.IntermediateSize)
			assert.Equal(t, want.AttentionHeads, got.AttentionHeads)
			assert.Equal(t, want.KVHeads, got.KVHeads)
			assert.Equal(t, want.HeadDim, got.HeadDim)
			assert.Equal(t, want.VocabSize, got.VocabSize)
			assert.Equal(t, want.ContextLength, got.ContextLength)
			assert.Equal(t, want.TiedEmbeddings, got.TiedEmbeddings)
			assert.Equal(t, want.QKVBias, got.QKVBias)
			assert.Equal(t, want.QKNorm, got.QKNorm)
			assert.Equal(t, want.MLA, got.MLA)
			assert.Equal(t, want.MoE, got.MoE)
			assert.Equal(t, want.Encoder, got.Encoder)
			assert.Equal(t, want.Vision, got.Vision)
			assert.Equal(t, want.VisionParameters, got.VisionParameters)
			assert.Equal(t, want.Task, got.Task)
			assert.Equal(t, want.DType, got.DType)
			assert.Equal(t, want.KVBytesPerToken(BF16), got.KVBytesPerToken(BF16))
			assert.Equal(t, "config.json", got.Source)
			assert.Empty(t, got.License)
		})
	}
}

func TestFromHFConfigArchitectureNames(t *testing.T) {
	for file, arch := range map[string]string{
		"glm-4-9b-chat.json":          "chatglm",
		"glm-4-9b-chat-hf.json":       "glm",
		"DeepSeek-V3.json":            "deepseek_v3",
		"Qwen2.5-32B.json":            "qwen2",
		"Qwen2.5-VL-7B-Instruct.json": "qwen2_5_vl",
		"bge-m3.json":                 "xlm-roberta",
		"Llama-3.2-1B.json":           "llama",
	} {
		m, err := FromHFConfig(readSeed(t, file))
		require.NoError(t, err)
		assert.Equal(t, arch, m.Architecture)
	}
	// _name_or_path holding a repository id names the model; a local path does not.
	m, err := FromHFConfig(readSeed(t, "glm-4-9b-chat.json"))
	require.NoError(t, err)
	assert.Equal(t, "THUDM/glm4-9b-chat", m.HFID)
	assert.Equal(t, "glm4-9b-chat", m.Name)
	m, err = FromHFConfig([]byte(`{"_name_or_path":"/data/models/x","num_hidden_layers":1,"hidden_size":8,
		"num_attention_heads":2,"vocab_size":10,"intermediate_size":16}`))
	require.NoError(t, err)
	assert.Empty(t, m.HFID)
	assert.Empty(t, m.Name)
}

func TestFromHFConfigMixtralStyleMoE(t *testing.T) {
	// The architecture fields of mistralai/Mixtral-8x7B-v0.1's config.json;
	// its model card states 46.7 B parameters, 12.9 B active.
	m, err := FromHFConfig([]byte(`{"model_type":"mixtral","hidden_size":4096,"intermediate_size":14336,
		"num_hidden_layers":32,"num_attention_heads":32,"num_key_value_heads":8,"vocab_size":32000,
		"num_local_experts":8,"num_experts_per_tok":2,"max_position_embeddings":32768,"tie_word_embeddings":false,
		"torch_dtype":"bfloat16"}`))
	require.NoError(t, err)
	assert.Equal(t, MoE{Experts: 8, ExpertsPerToken: 2, ExpertIntermediateSize: 14336}, m.MoE)
	assert.Equal(t, int64(46_702_792_704), m.Parameters)
	assert.Equal(t, int64(12_879_925_248), m.ActiveParameters)
}

func TestFromHFConfigOptionalFields(t *testing.T) {
	const base = `"num_hidden_layers":2,"hidden_size":8,"num_attention_heads":2,"vocab_size":10,"intermediate_size":16`
	parse := func(extra string) Model {
		t.Helper()
		m, err := FromHFConfig([]byte("{" + base + extra + "}"))
		require.NoError(t, err, extra)
		return m
	}
	m := parse("")
	assert.Equal(t, 2, m.KVHeads, "KV heads default to attention heads")
	assert.Equal(t, 4, m.HeadDim, "head_dim defaults to hidden/heads")
	assert.Equal(t, BF16, m.DType)
	// 2 layers × (4·8·8 attention + 3·8·16 MLP + 2·8 norms) + 2·10·8 embeddings + 8 final norm.
	assert.Equal(t, int64(2*(256+384+16)+160+8), m.Parameters)

	assert.Equal(t, m.Parameters-80, parse(`,"tie_word_embeddings":true`).Parameters)
	assert.Equal(t, m.Parameters+2*(8+8+8+8), parse(`,"attention_bias":true`).Parameters, "q,k,v and o biases")
	assert.Equal(t, m.Parameters+2*(2*16+8), parse(`,"mlp_bias":true`).Parameters)
	assert.Equal(t, int64(42), parse(`,"num_parameters":42`).Parameters)
	assert.Equal(t, int64(42), parse(`,"num_parameters":42`).ActiveParameters)
	assert.Equal(t, FP16, parse(`,"torch_dtype":"float16"`).DType)
	assert.Equal(t, FP32, parse(`,"dtype":"float32"`).DType)
	assert.Equal(t, FP8, parse(`,"quantization_config":{"quant_method":"fp8"}`).DType)
	assert.Equal(t, INT4, parse(`,"quantization_config":{"quant_method":"gptq","bits":4}`).DType)
	assert.Equal(t, INT4, parse(`,"quantization_config":{"quant_method":"awq","w_bit":4}`).DType)
	assert.Equal(t, INT8, parse(`,"quantization_config":{"quant_method":"gptq","bits":8}`).DType)
	assert.Equal(t, INT4, parse(`,"quantization_config":{"quant_method":"bitsandbytes","load_in_4bit":true}`).DType)
	assert.Equal(t, INT8, parse(`,"quantization_config":{"quant_method":"bitsandbytes","load_in_8bit":true}`).DType)
	assert.Equal(t, BF16, parse(`,"quantization_config":{"quant_method":"compressed-tensors"}`).DType)
	assert.Equal(t, 4096, parse(`,"max_position_embeddings":4096,"head_dim":null`).ContextLength)

	chatglm := parse(`,"ffn_hidden_size":16,"multi_query_attention":true,"multi_query_group_num":1,"kv_channels":4,"add_bias_linear":true`)
	assert.Equal(t, 1, chatglm.KVHeads)
	assert.Equal(t, 4, chatglm.HeadDim)
	assert.Equal(t, m.Parameters-2*(2*8*4)+2*(8+2*16+8), chatglm.Parameters, "one KV group instead of two, plus linear biases")
	assert.Equal(t, 2, parse(`,"ffn_hidden_size":16,"multi_query_attention":false,"multi_query_group_num":1`).KVHeads)

	nested, err := FromHFConfig([]byte(`{"model_type":"llava","torch_dtype":"float16","text_config":{` + base + `}}`))
	require.NoError(t, err)
	assert.Equal(t, m.Parameters, nested.Parameters)
	assert.Equal(t, FP16, nested.DType, "torch_dtype of the outer config applies to the decoder")
}

func TestFromHFConfigErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       []string
	}{
		{"syntax", `{"num_hidden_layers": `, []string{"parse hugging face config: unexpected end of JSON input"}},
		{"not an object", `[1,2]`, []string{"parse hugging face config: json: cannot unmarshal array"}},
		{"null", `null`, []string{"parse hugging face config: want a JSON object, got null"}},
		{"empty", `{}`, []string{
			"num_hidden_layers: Required value", "hidden_size: Required value",
			"num_attention_heads: Required value", "vocab_size: Required value",
			"intermediate_size: Required value: dense models need the FFN width",
		}},
		{"wrong types", `{"num_hidden_layers":"32","hidden_size":4096.5,"num_attention_heads":-1,"vocab_size":1e12,
			"intermediate_size":true,"tie_word_embeddings":"no","model_type":7,"torch_dtype":"float8","num_parameters":-3}`, []string{
			`num_hidden_layers: Invalid value: "32": must be a number`,
			"hidden_size: Invalid value: 4096.5: must be a whole number",
			"num_attention_heads: Invalid value: -1: must be between 0 and 65536",
			"vocab_size: Invalid value: 1e+12: must be between 0 and 16777216",
			`intermediate_size: Invalid value: "true": must be a number`,
			`tie_word_embeddings: Invalid value: "no": must be true or false`,
			`model_type: Invalid value: "7": must be a string`,
			`torch_dtype: Unsupported value: "float8"`,
			`num_parameters: Invalid value: "-3": must be a non-negative integer`,
		}},
		{"zero layers", `{"num_hidden_layers":0,"hidden_size":8,"num_attention_heads":2,"vocab_size":10,"intermediate_size":16}`,
			[]string{"num_hidden_layers: Invalid value: 0: must be positive"}},
		{"kv heads", `{"num_hidden_layers":1,"hidden_size":8,"num_attention_heads":4,"num_key_value_heads":3,"vocab_size":10,"intermediate_size":16}`,
			[]string{"num_key_value_heads: Invalid value: 3: must divide num_attention_heads (4)"}},
		{"mla incomplete", `{"num_hidden_layers":1,"hidden_size":8,"num_attention_heads":2,"vocab_size":10,"intermediate_size":16,"kv_lora_rank":4}`,
			[]string{"qk_rope_head_dim: Required value", "qk_nope_head_dim: Required value", "v_head_dim: Required value"}},
		{"moe incomplete", `{"num_hidden_layers":1,"hidden_size":8,"num_attention_heads":2,"vocab_size":10,"n_routed_experts":4}`,
			[]string{"num_experts_per_tok: Required value"}},
		{"nested", `{"text_config":{"num_hidden_layers":1,"hidden_size":"8"},"quantization_config":[1]}`,
			[]string{`text_config.hidden_size: Invalid value: "8": must be a number`, `quantization_config: Invalid value: "[1]": must be an object`,
				"text_config.num_attention_heads: Required value"}},
		{"text_config not object", `{"text_config":3}`, []string{`text_config: Invalid value: "3": must be an object`}},
		{"quantization bits", `{"num_hidden_layers":1,"hidden_size":8,"num_attention_heads":2,"vocab_size":10,"intermediate_size":16,
			"quantization_config":{"quant_method":"gptq","bits":"4"}}`, []string{`quantization_config.bits: Invalid value: "4": must be a number`}},
		{"overflow", `{"num_hidden_layers":65536,"hidden_size":16777216,"num_attention_heads":65536,"num_key_value_heads":65536,
			"head_dim":16777216,"vocab_size":16777216,"intermediate_size":16777216}`,
			[]string{"num_hidden_layers: Invalid value: 65536: parameter count overflows int64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromHFConfig([]byte(tc.json))
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

// FuzzFromHFConfig checks that no input panics, and that every accepted
// config describes a model the planners can use. Plain `go test` runs the
// published configs in testdata as seeds.
func FuzzFromHFConfig(f *testing.F) {
	for file := range seedConfigs {
		f.Add(readSeed(f, file))
	}
	f.Add([]byte(`{"text_config":{"num_hidden_layers":1}}`))
	f.Add([]byte(`{"num_hidden_layers":1e308,"hidden_size":-0,"kv_lora_rank":null}`))
	f.Add([]byte(`{"num_hidden_layers":2,"hidden_size":8,"num_attention_heads":2,"vocab_size":10,"n_routed_experts":4,"num_experts_per_tok":9}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := FromHFConfig(data)
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatalf("empty error for %q", data)
			}
			return
		}
		if verr := m.Validate(); verr != nil {
			t.Fatalf("accepted an invalid model: %v", verr)
		}
		if m.Parameters <= 0 || m.ActiveParameters <= 0 {
			t.Fatalf("accepted a model without size: %+v", m)
		}
		// Decoders cache keys and values; encoders cache nothing and
		// never generate.
		if kv := m.KVBytesPerToken(BF16); (kv > 0) == m.IsEncoder() || m.Generates() == m.IsEncoder() {
			t.Fatalf("encoder %v with %d KV bytes a token and task %q: %+v", m.IsEncoder(), kv, m.Task, m)
		}
	})
}

// TestQwen3ParameterCounts checks the Qwen3 entries against the counts
// their model cards publish: Qwen3-8B has 8.2 B parameters, 6.95 B without
// the embedding and output head; Qwen3-30B-A3B 30.5 B, 3.3 B active.
func TestQwen3ParameterCounts(t *testing.T) {
	dense := mustLookup(t, "Qwen/Qwen3-8B")
	assert.InDelta(t, 8.2e9, float64(dense.Parameters), 0.05e9)
	embeddings := 2 * int64(dense.VocabSize) * int64(dense.HiddenSize)
	assert.InDelta(t, 6.95e9, float64(dense.Parameters-embeddings), 0.005e9)
	assert.False(t, dense.QKVBias)
	assert.True(t, dense.QKNorm)

	moe := mustLookup(t, "Qwen/Qwen3-30B-A3B")
	assert.InDelta(t, 30.5e9, float64(moe.Parameters), 0.05e9)
	assert.InDelta(t, 3.3e9, float64(moe.ActiveParameters), 0.06e9)
	assert.True(t, moe.IsMoE())
	// 48 layers × 4 KV heads × 128 × 2 (k and v) × 2 bytes.
	assert.Equal(t, int64(98304), moe.KVBytesPerToken(BF16))
}

func TestDType(t *testing.T) {
	for _, tc := range []struct {
		d     DType
		bits  int
		bytes float64
	}{
		{FP32, 32, 4}, {BF16, 16, 2}, {FP16, 16, 2}, {FP8, 8, 1}, {INT8, 8, 1}, {INT4, 4, 0.5}, {"fp6", 0, 0},
	} {
		assert.Equal(t, tc.bits, tc.d.Bits(), tc.d)
		assert.Equal(t, tc.bytes, tc.d.Bytes(), tc.d)
		assert.Equal(t, tc.bits > 0, tc.d.Valid(), tc.d)
	}
}

// The parameter counts below are computed here, term by term, from the
// numbers in each model's config.json, independently of countParameters.
func TestParameterCountsFollowTheArchitecture(t *testing.T) {
	gqa := func(vocab, h, inter, layers, heads, kv, d int64, qkvBias bool) int64 {
		attn := h*heads*d + 2*h*kv*d + heads*d*h
		if qkvBias {
			attn += heads*d + 2*kv*d
		}
		return 2*vocab*h + h + layers*(attn+3*h*inter+2*h)
	}
	for _, tc := range []struct {
		id        string
		want      int64
		published float64 // the count the model card states, in billions
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", gqa(128256, 4096, 14336, 32, 32, 8, 128, false), 8.03},
		{"meta-llama/Llama-3.1-70B-Instruct", gqa(128256, 8192, 28672, 80, 64, 8, 128, false), 70.6},
		{"Qwen/Qwen2.5-7B-Instruct", gqa(152064, 3584, 18944, 28, 28, 4, 128, true), 7.61},
		{"Qwen/Qwen2.5-14B-Instruct", gqa(152064, 5120, 13824, 48, 40, 8, 128, true), 14.8},
		{"Qwen/Qwen2.5-32B-Instruct", gqa(152064, 5120, 27648, 64, 40, 8, 128, true), 32.8},
		{"Qwen/Qwen2.5-72B-Instruct", gqa(152064, 8192, 29568, 80, 64, 8, 128, true), 72.7},
		{"THUDM/glm-4-9b-chat", gqa(151552, 4096, 13696, 40, 32, 2, 128, true), 9.4},
		{"mistralai/Mistral-7B-Instruct-v0.3", gqa(32768, 4096, 14336, 32, 32, 8, 128, false), 7.25},
	} {
		m, err := Lookup(tc.id)
		require.NoError(t, err)
		assert.Equal(t, tc.want, m.Parameters, tc.id)
		assert.Equal(t, tc.want, m.ActiveParameters, tc.id)
		assert.InDelta(t, tc.published, float64(m.Parameters)/1e9, 0.06, tc.id)
	}
	assert.Equal(t, int64(8_030_261_248), gqa(128256, 4096, 14336, 32, 32, 8, 128, false))
}

func TestDeepSeekV3ParameterCount(t *testing.T) {
	const (
		h, layers, heads, qLora, kvLora, rope, nope, v = 7168, 61, 128, 1536, 512, 64, 128, 128
		inter, experts, expertInter, vocab             = 18432, 256, 2048, 129280
	)
	attn := int64(h*qLora + qLora + qLora*heads*(nope+rope) + h*(kvLora+rope) + kvLora + kvLora*heads*(nope+v) + heads*v*h + 2*h)
	expert := int64(3 * h * expertInter)
	router := int64(h * experts)
	outer := int64(2*vocab*h + h)
	total := outer + 3*(attn+3*h*inter) + 58*(attn+(experts+1)*expert+router)
	active := outer + 3*(attn+3*h*inter) + 58*(attn+(8+1)*expert+router)

	m, err := Lookup("deepseek-ai/DeepSeek-V3")
	require.NoError(t, err)
	assert.Equal(t, total, m.Parameters)
	assert.Equal(t, active, m.ActiveParameters)
	// hardware.md §4.4: 671 B main model, ~37 B activated.
	assert.InDelta(t, 671.0, float64(m.Parameters)/1e9, 0.05)
	assert.InDelta(t, 37.6, float64(m.ActiveParameters)/1e9, 0.05)
	assert.True(t, m.UsesMLA())
	assert.True(t, m.IsMoE())
	assert.Equal(t, FP8, m.DType)
}

func TestKVBytesPerToken(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want int64
	}{
		// hardware.md §4.4: 128 KiB, 320 KiB, 56 KiB, (512+64)×61×2 = 68.6 KiB.
		{"meta-llama/Llama-3.1-8B-Instruct", 2 * 32 * 8 * 128 * 2},
		{"meta-llama/Llama-3.1-70B-Instruct", 2 * 80 * 8 * 128 * 2},
		{"Qwen/Qwen2.5-7B-Instruct", 2 * 28 * 4 * 128 * 2},
		{"deepseek-ai/DeepSeek-V3", (512 + 64) * 61 * 2},
	} {
		m, err := Lookup(tc.id)
		require.NoError(t, err)
		assert.Equal(t, tc.want, m.KVBytesPerToken(BF16), tc.id)
		assert.Equal(t, tc.want/2, m.KVBytesPerToken(FP8), tc.id)
	}
	assert.Equal(t, int64(128<<10), mustLookup(t, "meta-llama/Llama-3.1-8B").KVBytesPerToken(BF16))
}

func TestKVBytesPerTokenPerLayerSplitsAndReplicatesHeads(t *testing.T) {
	qwen := mustLookup(t, "Qwen/Qwen2.5-7B-Instruct") // 4 KV heads of 128
	assert.Equal(t, int64(2*4*128*2), qwen.KVBytesPerTokenPerLayer(BF16, 1))
	assert.Equal(t, int64(2*4*128*2), qwen.KVBytesPerTokenPerLayer(BF16, 0), "tp below 1 counts as 1")
	assert.Equal(t, int64(2*2*128*2), qwen.KVBytesPerTokenPerLayer(BF16, 2))
	assert.Equal(t, int64(2*1*128*2), qwen.KVBytesPerTokenPerLayer(BF16, 4))
	assert.Equal(t, int64(2*1*128*2), qwen.KVBytesPerTokenPerLayer(BF16, 8), "replicated beyond 4 ranks")

	ds := mustLookup(t, "deepseek-ai/DeepSeek-R1")
	for _, tp := range []int{1, 8, 16} {
		assert.Equal(t, int64(576*2), ds.KVBytesPerTokenPerLayer(BF16, tp), "MLA latent is on every rank")
	}
}

func TestWeightBytes(t *testing.T) {
	m := Model{Parameters: 7}
	assert.Equal(t, int64(28), m.WeightBytes(FP32))
	assert.Equal(t, int64(14), m.WeightBytes(BF16))
	assert.Equal(t, int64(7), m.WeightBytes(FP8))
	assert.Equal(t, int64(4), m.WeightBytes(INT4), "3.5 bytes round up")
	assert.Equal(t, int64(math.MaxInt64), Model{Parameters: math.MaxInt64 / 2}.WeightBytes(BF16))
}

func TestValidate(t *testing.T) {
	require.NoError(t, mustLookup(t, "Qwen/Qwen2.5-7B-Instruct").Validate())

	err := Model{AttentionHeads: 28, KVHeads: 3, ActiveParameters: 5, DType: "fp6",
		MoE: MoE{Experts: 4, ExpertsPerToken: 5}}.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"num_hidden_layers: Invalid value: 0: must be positive",
		"hidden_size: Invalid value: 0: must be positive",
		"head_dim: Invalid value: 0: must be positive",
		"vocab_size: Invalid value: 0: must be positive",
		"num_key_value_heads: Invalid value: 3: must divide num_attention_heads (28)",
		"num_parameters: Invalid value: 0: must be positive",
		"num_active_parameters: Invalid value: 5: must not exceed num_parameters",
		`torch_dtype: Unsupported value: "fp6"`,
		"num_experts_per_tok: Invalid value: 5: must be between 1 and the number of experts (4)",
	} {
		assert.Contains(t, err.Error(), want)
	}
}

func TestCountParametersOverflow(t *testing.T) {
	_, _, err := countParameters(Model{Layers: maxCount, HiddenSize: math.MaxInt32, IntermediateSize: math.MaxInt32,
		AttentionHeads: 1, KVHeads: 1, HeadDim: math.MaxInt32, VocabSize: 1}, 0)
	require.ErrorIs(t, err, errOverflow)
	_, _, err = countParameters(Model{Layers: 2, HiddenSize: -1, AttentionHeads: 1, KVHeads: 1, HeadDim: 1}, 0)
	require.ErrorIs(t, err, errOverflow, "negative dimensions are refused too")
}

// mustLookup looks a catalogue model up or fails the test.
func mustLookup(t testing.TB, id string) Model {
	t.Helper()
	m, err := Lookup(id)
	require.NoError(t, err)
	return m
}

// Negative counts in a hand-written Model are refused; before, a negative
// first_k_dense_replace made more MoE layers than the model has.
func TestValidateRefusesNegativeCounts(t *testing.T) {
	m := mustLookup(t, "deepseek-ai/DeepSeek-V3")
	m.MoE.DenseLayers = -3
	m.IntermediateSize = -1
	m.ContextLength = -5
	m.MLA.KVLoraRank = -512
	err := m.Validate()
	require.Error(t, err)
	for _, want := range []string{
		"first_k_dense_replace: Invalid value: -3: must not be negative",
		"intermediate_size: Invalid value: -1: must not be negative",
		"max_position_embeddings: Invalid value: -5: must not be negative",
		"kv_lora_rank: Invalid value: -512: must not be negative",
	} {
		assert.Contains(t, err.Error(), want)
	}

	m = mustLookup(t, "deepseek-ai/DeepSeek-V3")
	m.MoE.DenseLayers = m.Layers + 1
	require.ErrorContains(t, m.Validate(), "first_k_dense_replace: Invalid value: 62: must not exceed num_hidden_layers (61)")
}
