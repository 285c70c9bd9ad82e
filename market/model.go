package market

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DType is a numeric format for weights or the KV cache.
type DType string

// The formats cube knows. INT4 counts half a byte per value; the scales and
// zero points of group-wise 4-bit formats (GPTQ, AWQ) are not counted.
const (
	FP32 DType = "fp32"
	BF16 DType = "bf16"
	FP16 DType = "fp16"
	FP8  DType = "fp8"
	INT8 DType = "int8"
	INT4 DType = "int4"
)

// Bits returns the width of one value in bits, or 0 for a format cube does
// not know.
func (d DType) Bits() int {
	switch d {
	case FP32:
		return 32
	case BF16, FP16:
		return 16
	case FP8, INT8:
		return 8
	case INT4:
		return 4
	}
	return 0
}

// Bytes returns the size of one value in bytes (0.5 for INT4, 0 if unknown).
func (d DType) Bytes() float64 { return float64(d.Bits()) / 8 }

// Valid reports whether cube knows the format.
func (d DType) Valid() bool { return d.Bits() > 0 }

// MLA holds the dimensions of DeepSeek's multi-head latent attention. The
// zero value means the model uses ordinary multi-head or grouped-query
// attention.
type MLA struct {
	// KVLoraRank is the width of the compressed KV latent c_KV (kv_lora_rank).
	KVLoraRank int
	// QLoraRank is the width of the compressed query (q_lora_rank); 0 when
	// queries are projected directly from the hidden state.
	QLoraRank int
	// QKRopeHeadDim is the width of the decoupled RoPE key shared by all
	// heads (qk_rope_head_dim).
	QKRopeHeadDim int
	// QKNopeHeadDim is the per-head query/key width without RoPE
	// (qk_nope_head_dim).
	QKNopeHeadDim int
	// VHeadDim is the per-head value width (v_head_dim).
	VHeadDim int
}

// MoE holds the mixture-of-experts layout. The zero value means a dense
// model.
type MoE struct {
	// Experts is the number of routed experts per MoE layer.
	Experts int
	// SharedExperts is the number of always-active experts per MoE layer.
	SharedExperts int
	// ExpertsPerToken is how many routed experts each token uses (top-k).
	ExpertsPerToken int
	// ExpertIntermediateSize is the FFN width of one expert
	// (moe_intermediate_size); shared experts have the same width.
	ExpertIntermediateSize int
	// DenseLayers is how many leading layers keep a dense FFN of
	// Model.IntermediateSize (first_k_dense_replace).
	DenseLayers int
}

// Model holds the architecture facts that memory and throughput planners
// need. Parameter counts are computed from the architecture (see the package
// documentation for the formula) unless a config states them.
type Model struct {
	// Name is the short name, usually the Hugging Face repository name
	// without its organisation, such as "Qwen2.5-7B-Instruct".
	Name string
	// HFID is the Hugging Face repository id, such as "Qwen/Qwen2.5-7B-Instruct".
	HFID string
	// Architecture is the config's model_type: llama, qwen2, mistral,
	// chatglm, glm, deepseek_v3 ...
	Architecture string

	// Parameters is the total parameter count of the served model
	// (DeepSeek's multi-token-prediction module excluded).
	Parameters int64
	// ActiveParameters is the count used per token; equal to Parameters for
	// dense models.
	ActiveParameters int64

	Layers           int
	HiddenSize       int
	IntermediateSize int
	AttentionHeads   int
	// KVHeads is the number of key/value heads (grouped-query attention).
	// Models with MLA keep their nominal head count here; the KV cache uses
	// the latent instead.
	KVHeads int
	HeadDim int
	// VocabSize is the (padded) vocabulary, the row count of the embedding.
	VocabSize int
	// ContextLength is the longest sequence the config allows
	// (max_position_embeddings, or seq_length for ChatGLM).
	ContextLength int
	// TiedEmbeddings is true when the output head shares the input embedding.
	TiedEmbeddings bool
	// QKVBias is true when the query, key and value projections carry biases.
	QKVBias bool
	// QKNorm is true when each layer RMS-normalises queries and keys per
	// head (Qwen3's q_norm and k_norm, head_dim weights each).
	QKNorm bool

	MLA MLA
	MoE MoE

	// DType is the format the published weights are stored in.
	DType DType
	// License is the SPDX id or Hugging Face license tag of the weights.
	License string
	// Source says where the numbers come from.
	Source string
}

// UsesMLA reports whether the model caches a compressed latent (DeepSeek
// MLA) instead of per-head keys and values.
func (m Model) UsesMLA() bool { return m.MLA.KVLoraRank > 0 }

// IsMoE reports whether the model is a mixture of experts.
func (m Model) IsMoE() bool { return m.MoE.Experts > 0 }

// KVBytesPerToken returns the KV-cache bytes one token occupies across all
// layers when the cache is stored in format kv, before any tensor-parallel
// split: 2 × layers × KV heads × head dim × bytes for multi-head and
// grouped-query attention, and (kv_lora_rank + qk_rope_head_dim) × layers ×
// bytes for MLA, which caches one latent shared by every head.
func (m Model) KVBytesPerToken(kv DType) int64 {
	return int64(m.Layers) * m.KVBytesPerTokenPerLayer(kv, 1)
}

// KVBytesPerTokenPerLayer returns the KV bytes of one token in one layer on
// one of tp tensor-parallel ranks, the way vLLM sizes its cache pages: KV
// heads are divided among ranks and replicated when tp exceeds them (at
// least one head per rank); an MLA latent is replicated on every rank.
func (m Model) KVBytesPerTokenPerLayer(kv DType, tp int) int64 {
	if tp < 1 {
		tp = 1
	}
	if m.UsesMLA() {
		return int64(m.MLA.KVLoraRank+m.MLA.QKRopeHeadDim) * int64(kv.Bits()) / 8
	}
	heads := max(1, m.KVHeads/tp)
	return 2 * int64(heads) * int64(m.HeadDim) * int64(kv.Bits()) / 8
}

// WeightBytes returns the bytes of all weights stored in format d,
// rounded up to a whole byte.
func (m Model) WeightBytes(d DType) int64 {
	b := int64(d.Bits())
	if m.Parameters > math.MaxInt64/32 {
		return math.MaxInt64
	}
	return (m.Parameters*b + 7) / 8
}

// Validate reports every architecture fact that is missing or inconsistent,
// with the Hugging Face config name of the field in the path.
func (m Model) Validate() error {
	var errs field.ErrorList
	positive := func(name string, v int) {
		if v <= 0 {
			errs = append(errs, field.Invalid(field.NewPath(name), v, "must be positive"))
		}
	}
	positive("num_hidden_layers", m.Layers)
	positive("hidden_size", m.HiddenSize)
	positive("num_attention_heads", m.AttentionHeads)
	positive("num_key_value_heads", m.KVHeads)
	positive("head_dim", m.HeadDim)
	positive("vocab_size", m.VocabSize)
	nonNegative := func(name string, v int) {
		if v < 0 {
			errs = append(errs, field.Invalid(field.NewPath(name), v, "must not be negative"))
		}
	}
	nonNegative("intermediate_size", m.IntermediateSize)
	nonNegative("max_position_embeddings", m.ContextLength)
	nonNegative("kv_lora_rank", m.MLA.KVLoraRank)
	nonNegative("q_lora_rank", m.MLA.QLoraRank)
	nonNegative("qk_rope_head_dim", m.MLA.QKRopeHeadDim)
	nonNegative("qk_nope_head_dim", m.MLA.QKNopeHeadDim)
	nonNegative("v_head_dim", m.MLA.VHeadDim)
	nonNegative("n_routed_experts", m.MoE.Experts)
	nonNegative("n_shared_experts", m.MoE.SharedExperts)
	nonNegative("moe_intermediate_size", m.MoE.ExpertIntermediateSize)
	nonNegative("first_k_dense_replace", m.MoE.DenseLayers)
	if m.Layers > 0 && m.MoE.DenseLayers > m.Layers {
		errs = append(errs, field.Invalid(field.NewPath("first_k_dense_replace"), m.MoE.DenseLayers,
			fmt.Sprintf("must not exceed num_hidden_layers (%d)", m.Layers)))
	}
	if m.IsMoE() && m.MoE.ExpertIntermediateSize == 0 {
		errs = append(errs, field.Invalid(field.NewPath("moe_intermediate_size"), 0, "must be positive for a mixture-of-experts model"))
	}
	if m.KVHeads > 0 && m.AttentionHeads > 0 && m.AttentionHeads%m.KVHeads != 0 {
		errs = append(errs, field.Invalid(field.NewPath("num_key_value_heads"), m.KVHeads,
			fmt.Sprintf("must divide num_attention_heads (%d)", m.AttentionHeads)))
	}
	if m.Parameters <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("num_parameters"), m.Parameters, "must be positive"))
	}
	if m.ActiveParameters > m.Parameters {
		errs = append(errs, field.Invalid(field.NewPath("num_active_parameters"), m.ActiveParameters,
			"must not exceed num_parameters"))
	}
	if !m.DType.Valid() {
		errs = append(errs, field.NotSupported(field.NewPath("torch_dtype"), m.DType,
			[]DType{FP32, BF16, FP16, FP8, INT8, INT4}))
	}
	if m.IsMoE() && (m.MoE.ExpertsPerToken <= 0 || m.MoE.ExpertsPerToken > m.MoE.Experts) {
		errs = append(errs, field.Invalid(field.NewPath("num_experts_per_tok"), m.MoE.ExpertsPerToken,
			fmt.Sprintf("must be between 1 and the number of experts (%d)", m.MoE.Experts)))
	}
	return errs.ToAggregate()
}

// errOverflow reports architectures whose parameter count does not fit an
// int64; only nonsense configs get there.
var errOverflow = errors.New("parameter count overflows int64")

// counter adds products of dimensions and remembers whether any step
// overflowed, so the formula below reads like the formula in doc.go.
type counter struct {
	n        int64
	overflow bool
}

func (c *counter) mul(xs ...int) int64 {
	p := uint64(1)
	for _, x := range xs {
		if x < 0 {
			c.overflow = true
			return 0
		}
		hi, lo := bits.Mul64(p, uint64(x))
		if hi != 0 || lo > math.MaxInt64 {
			c.overflow = true
			return 0
		}
		p = lo
	}
	return int64(p)
}

func (c *counter) add(v int64) {
	if v > math.MaxInt64-c.n {
		c.overflow = true
		return
	}
	c.n += v
}

// times multiplies the running total by k (a layer count).
func (c *counter) times(k int) int64 {
	if k < 0 {
		c.overflow = true
		return 0
	}
	hi, lo := bits.Mul64(uint64(c.n), uint64(k))
	if hi != 0 || lo > math.MaxInt64 {
		c.overflow = true
		return 0
	}
	return int64(lo)
}

// countParameters returns the total and active parameter counts of a
// decoder-only transformer described by m, following the formula in doc.go.
// extraPerLayer adds biases the Model fields do not describe (Llama's
// o_proj and MLP biases).
func countParameters(m Model, extraPerLayer int64) (total, active int64, err error) {
	var c counter
	h := m.HiddenSize

	// Attention block of one layer, with its two RMSNorm weights.
	var attn counter
	if m.UsesMLA() {
		a := m.MLA
		qHead := a.QKNopeHeadDim + a.QKRopeHeadDim
		if a.QLoraRank > 0 {
			attn.add(attn.mul(h, a.QLoraRank))                       // q_a_proj
			attn.add(int64(a.QLoraRank))                             // q_a_layernorm
			attn.add(attn.mul(a.QLoraRank, m.AttentionHeads, qHead)) // q_b_proj
		} else {
			attn.add(attn.mul(h, m.AttentionHeads, qHead)) // q_proj
		}
		attn.add(attn.mul(h, a.KVLoraRank+a.QKRopeHeadDim))                            // kv_a_proj_with_mqa
		attn.add(int64(a.KVLoraRank))                                                  // kv_a_layernorm
		attn.add(attn.mul(a.KVLoraRank, m.AttentionHeads, a.QKNopeHeadDim+a.VHeadDim)) // kv_b_proj
		attn.add(attn.mul(m.AttentionHeads, a.VHeadDim, h))                            // o_proj
	} else {
		q := attn.mul(m.AttentionHeads, m.HeadDim)
		kv := attn.mul(m.KVHeads, m.HeadDim)
		attn.add(attn.mul(h, int(q)))      // q_proj
		attn.add(2 * attn.mul(h, int(kv))) // k_proj, v_proj
		attn.add(attn.mul(int(q), h))      // o_proj
		if m.QKVBias {
			attn.add(q + 2*kv)
		}
		if m.QKNorm {
			attn.add(2 * int64(m.HeadDim)) // q_norm, k_norm
		}
	}
	attn.add(2 * int64(h)) // input and post-attention RMSNorm
	attn.add(extraPerLayer)

	// Feed-forward blocks: gated (SwiGLU) MLPs have three h×i matrices.
	dense := c.mul(3, h, m.IntermediateSize)
	denseLayers, moeLayers := m.Layers, 0
	var moeTotal, moeActive int64
	if m.IsMoE() {
		e := m.MoE
		denseLayers = min(e.DenseLayers, m.Layers)
		moeLayers = m.Layers - denseLayers
		expert := c.mul(3, h, e.ExpertIntermediateSize)
		router := c.mul(h, e.Experts)
		moeTotal = c.mul(int(expert), e.Experts+e.SharedExperts) + router
		moeActive = c.mul(int(expert), e.ExpertsPerToken+e.SharedExperts) + router
	}

	// Embedding, output head (unless tied) and final norm.
	embed := c.mul(m.VocabSize, h)
	var outer counter
	outer.add(embed)
	if !m.TiedEmbeddings {
		outer.add(embed)
	}
	outer.add(int64(h))

	sum := func(ffnMoE int64) int64 {
		var s counter
		s.add(outer.n)
		var layer counter
		layer.add(attn.n)
		layer.add(dense)
		s.add(layer.times(denseLayers))
		var moeLayer counter
		moeLayer.add(attn.n)
		moeLayer.add(ffnMoE)
		s.add(moeLayer.times(moeLayers))
		if s.overflow || layer.overflow || moeLayer.overflow {
			c.overflow = true
		}
		return s.n
	}
	total = sum(moeTotal)
	active = sum(moeActive)
	if c.overflow || attn.overflow || outer.overflow {
		return 0, 0, errOverflow
	}
	return total, active, nil
}
