package models

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
