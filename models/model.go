package models

import (
	"fmt"
	"math"
	"slices"

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

// Task is what a model is served for. It decides which engine serves it:
// text-generating decoders go to vLLM and its peers, encoders to Text
// Embeddings Inference (serve.TEI).
type Task string

// The tasks cube tells apart. A Model whose Task is empty is taken to be a
// text-generating decoder, so hand-written facts from before tasks existed
// keep their meaning.
const (
	// TaskTextGeneration is a decoder that generates text: chat and
	// completion.
	TaskTextGeneration Task = "text-generation"
	// TaskVisionLanguage is a decoder that also reads images and video and
	// answers in text (vision-language chat, such as Qwen2.5-VL).
	TaskVisionLanguage Task = "vision-language"
	// TaskEmbedding turns text into vectors (bge-m3): TEI's /embed and
	// /v1/embeddings.
	TaskEmbedding Task = "embedding"
	// TaskReranking scores a query against a passage with a one-label
	// cross-encoder (bge-reranker): TEI's /rerank.
	TaskReranking Task = "reranking"
	// TaskClassification labels a sequence with one of several classes:
	// TEI's /predict.
	TaskClassification Task = "classification"
)

var tasks = []Task{TaskTextGeneration, TaskVisionLanguage, TaskEmbedding, TaskReranking, TaskClassification}

// Encoder holds what a BERT-style encoder (BERT, RoBERTa, XLM-RoBERTa)
// has beyond the fields it shares with decoders. The zero value means a
// decoder. An encoder attends in both directions over its whole input at
// once and keeps no KV cache.
type Encoder struct {
	// PositionEmbeddings is the number of rows of the learned absolute
	// position table (max_position_embeddings).
	PositionEmbeddings int
	// PositionOffset is the first position id: the RoBERTa family numbers
	// positions from pad_token_id + 1, BERT from 0. The longest input is
	// PositionEmbeddings - PositionOffset tokens.
	PositionOffset int
	// TokenTypes is the rows of the token-type (segment) table
	// (type_vocab_size).
	TokenTypes int
	// Pooler is true when the checkpoint holds BERT's pooler, a dense h×h
	// layer with bias over the first token: the bare encoders (BertModel,
	// XLMRobertaModel) and BertForSequenceClassification have it; RoBERTa's
	// sequence classifiers are built without it.
	Pooler bool
	// Labels is the outputs of the sequence-classification head
	// (num_labels, the size of id2label); 0 for a bare encoder.
	Labels int
	// HeadDense is true when that head passes the first token through a
	// dense h×h layer with bias before the output projection, as
	// RobertaClassificationHead and XLMRobertaClassificationHead do; BERT's
	// head is the output projection alone, on the pooler.
	HeadDense bool
}

// Vision holds the vision tower of a vision-language model in Qwen2.5-VL's
// layout (transformers models/qwen2_5_vl/modeling_qwen2_5_vl.py,
// Qwen2_5_VisionTransformerPretrainedModel): a patch-embedding Conv3d, Depth
// blocks of RMSNorm, attention with a fused biased qkv and a biased
// output projection, and a gated (SwiGLU) MLP with biases, then a merger
// that RMS-normalises, concatenates SpatialMergeSize² neighbouring patches
// and maps them through a two-layer MLP into the decoder's hidden size. The
// zero value means no vision tower.
type Vision struct {
	// Depth is the number of vision blocks (depth).
	Depth int
	// HiddenSize is the width of the vision blocks (hidden_size).
	HiddenSize int
	// IntermediateSize is the width of their MLP (intermediate_size).
	IntermediateSize int
	// Heads is the attention heads of a block (num_heads).
	Heads int
	// PatchSize is the side of a square patch in pixels (patch_size).
	PatchSize int
	// TemporalPatchSize is how many frames a patch spans
	// (temporal_patch_size).
	TemporalPatchSize int
	// SpatialMergeSize is the side of the square of patches the merger
	// concatenates into one token (spatial_merge_size).
	SpatialMergeSize int
	// OutHiddenSize is the merger's output width, the decoder's hidden
	// size (out_hidden_size).
	OutHiddenSize int
	// InChannels is the colour channels of the input (in_channels, written
	// in_chans in the published configs).
	InChannels int
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

	// Task is what the model is served for; empty means text generation.
	Task Task

	// Parameters is the total parameter count of the served model
	// (DeepSeek's multi-token-prediction module excluded, a vision tower
	// included).
	Parameters int64
	// ActiveParameters is the count used per token; equal to Parameters for
	// dense models.
	ActiveParameters int64
	// VisionParameters is the part of Parameters in the vision tower
	// (Vision); 0 for a text-only model.
	VisionParameters int64

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
	// (max_position_embeddings, or seq_length for ChatGLM); for an encoder,
	// the longest input, max_position_embeddings less the position offset.
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
	// Encoder is set for BERT-style encoders (embedding and reranking
	// models); Vision for a vision-language model's vision tower.
	Encoder Encoder
	Vision  Vision

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

// IsEncoder reports whether the model is a BERT-style encoder, which has
// no KV cache.
func (m Model) IsEncoder() bool { return m.Encoder.PositionEmbeddings > 0 }

// HasVision reports whether the model has a vision tower whose layout cube
// knows (Vision).
func (m Model) HasVision() bool { return m.Vision.Depth > 0 }

// Generates reports whether the model generates text (TaskTextGeneration,
// TaskVisionLanguage, or no task given), which is what vLLM, SGLang, TGI,
// Ollama and MindIE serve.
func (m Model) Generates() bool {
	return m.Task == "" || m.Task == TaskTextGeneration || m.Task == TaskVisionLanguage
}

// KVBytesPerToken returns the KV-cache bytes one token occupies across all
// layers when the cache is stored in format kv, before any tensor-parallel
// split: 2 × layers × KV heads × head dim × bytes for multi-head and
// grouped-query attention, and (kv_lora_rank + qk_rope_head_dim) × layers ×
// bytes for MLA, which caches one latent shared by every head. An encoder
// caches nothing: 0.
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
	if m.IsEncoder() {
		return 0
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
	if m.Task != "" && !slices.Contains(tasks, m.Task) {
		errs = append(errs, field.NotSupported(field.NewPath("task"), m.Task, tasks))
	}
	errs = append(errs, m.validateEncoder()...)
	errs = append(errs, m.validateVision()...)
	return errs.ToAggregate()
}

func (m Model) validateEncoder() field.ErrorList {
	e := m.Encoder
	if !m.IsEncoder() {
		if e != (Encoder{}) {
			return field.ErrorList{field.Invalid(field.NewPath("max_position_embeddings"), e.PositionEmbeddings,
				"an encoder needs its position table: the other encoder fields are set")}
		}
		return nil
	}
	var errs field.ErrorList
	if e.TokenTypes < 0 {
		errs = append(errs, field.Invalid(field.NewPath("type_vocab_size"), e.TokenTypes, "must not be negative"))
	}
	if e.Labels < 0 {
		errs = append(errs, field.Invalid(field.NewPath("num_labels"), e.Labels, "must not be negative"))
	}
	if e.PositionOffset < 0 || e.PositionOffset >= e.PositionEmbeddings {
		errs = append(errs, field.Invalid(field.NewPath("pad_token_id"), e.PositionOffset-1, fmt.Sprintf(
			"positions start at pad_token_id + 1 (%d), which must lie inside max_position_embeddings (%d)", e.PositionOffset, e.PositionEmbeddings)))
	}
	if m.Generates() {
		errs = append(errs, field.Invalid(field.NewPath("task"), m.Task,
			"an encoder does not generate text: its task is embedding, reranking or classification"))
	}
	if m.IsMoE() || m.UsesMLA() || m.HasVision() {
		errs = append(errs, field.Invalid(field.NewPath("model_type"), m.Architecture,
			"an encoder has no experts, latent attention or vision tower"))
	}
	if m.AttentionHeads > 0 && m.HiddenSize%m.AttentionHeads != 0 {
		errs = append(errs, field.Invalid(field.NewPath("num_attention_heads"), m.AttentionHeads,
			fmt.Sprintf("must divide hidden_size (%d) in an encoder", m.HiddenSize)))
	}
	return errs
}

func (m Model) validateVision() field.ErrorList {
	v := m.Vision
	p := field.NewPath("vision_config")
	var errs field.ErrorList
	if m.VisionParameters < 0 || m.VisionParameters > m.Parameters {
		errs = append(errs, field.Invalid(field.NewPath("num_vision_parameters"), m.VisionParameters,
			"must be between 0 and num_parameters"))
	}
	if !m.HasVision() {
		if v != (Vision{}) {
			errs = append(errs, field.Invalid(p.Child("depth"), v.Depth, "must be positive when other vision fields are set"))
		}
		return errs
	}
	for _, f := range []struct {
		name  string
		value int
	}{
		{"hidden_size", v.HiddenSize}, {"intermediate_size", v.IntermediateSize}, {"num_heads", v.Heads},
		{"patch_size", v.PatchSize}, {"temporal_patch_size", v.TemporalPatchSize},
		{"spatial_merge_size", v.SpatialMergeSize}, {"out_hidden_size", v.OutHiddenSize}, {"in_channels", v.InChannels},
	} {
		if f.value <= 0 {
			errs = append(errs, field.Invalid(p.Child(f.name), f.value, "must be positive"))
		}
	}
	if v.Heads > 0 && v.HiddenSize%v.Heads != 0 {
		errs = append(errs, field.Invalid(p.Child("num_heads"), v.Heads, fmt.Sprintf("must divide vision_config.hidden_size (%d)", v.HiddenSize)))
	}
	if v.OutHiddenSize > 0 && m.HiddenSize > 0 && v.OutHiddenSize != m.HiddenSize {
		errs = append(errs, field.Invalid(p.Child("out_hidden_size"), v.OutHiddenSize,
			fmt.Sprintf("must equal the decoder's hidden_size (%d), which the merger feeds", m.HiddenSize)))
	}
	return errs
}
