package models

import (
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
