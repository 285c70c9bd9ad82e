package models

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrUnknownModel is returned (wrapped) by Lookup for names the catalogue
// does not hold.
var ErrUnknownModel = errors.New("unknown model")

// hfSource is the Source of a catalogue entry: the config.json its numbers
// were read from.
func hfSource(id string) string {
	return "https://huggingface.co/" + id + "/blob/main/config.json"
}

// entry is one catalogue row: a model and the other ids that name the same
// weights.
type entry struct {
	model   Model
	aliases []string
}

// variant returns a copy of base published under another repository, with
// the context length and license that repository's files state.
func variant(base Model, id string, contextLength int, license string) Model {
	m := base
	m.HFID = id
	m.Name = id[strings.LastIndex(id, "/")+1:]
	m.ContextLength = contextLength
	m.License = license
	m.Source = hfSource(id)
	return m
}

// mustCount fills the parameter counts of a built-in entry. The catalogue is
// a literal in this file, so a failure is a programming error.
func mustCount(m Model) Model {
	total, active, err := countParameters(m, 0)
	if err == nil && m.HasVision() {
		m.VisionParameters, err = visionParameters(m.Vision)
	}
	if err != nil {
		panic(fmt.Sprintf("models: catalogue entry %s: %v", m.HFID, err))
	}
	m.Parameters, m.ActiveParameters = total, active
	return m
}

// qwen25VLVision is the vision tower every Qwen2.5-VL size shares; only
// out_hidden_size, the decoder's width, differs.
func qwen25VLVision(outHiddenSize int) Vision {
	return Vision{Depth: 32, HiddenSize: 1280, IntermediateSize: 3420, Heads: 16, PatchSize: 14,
		TemporalPatchSize: 2, SpatialMergeSize: 2, OutHiddenSize: outHiddenSize, InChannels: 3}
}

// The architecture of each family, as its config.json states it. Every
// number below was read from the Hugging Face config.json of the repository
// named in Source (Qwen2.5 base and Instruct configs differ only in
// max_position_embeddings: 131072 for base, 32768 for Instruct; DeepSeek-R1
// uses DeepSeek-V3's architecture unchanged).
var (
	llama31_8B = mustCount(Model{
		Task: TaskTextGeneration, Architecture: "llama", Layers: 32, HiddenSize: 4096, IntermediateSize: 14336,
		AttentionHeads: 32, KVHeads: 8, HeadDim: 128, VocabSize: 128256, DType: BF16,
	})
	llama31_70B = mustCount(Model{
		Task: TaskTextGeneration, Architecture: "llama", Layers: 80, HiddenSize: 8192, IntermediateSize: 28672,
		AttentionHeads: 64, KVHeads: 8, HeadDim: 128, VocabSize: 128256, DType: BF16,
	})
	qwen25_7B = mustCount(Model{
		Task: TaskTextGeneration, Architecture: "qwen2", Layers: 28, HiddenSize: 3584, IntermediateSize: 18944,
		AttentionHeads: 28, KVHeads: 4, HeadDim: 128, VocabSize: 152064, QKVBias: true, DType: BF16,
	})
	qwen25_14B = mustCount(Model{
		Task: TaskTextGeneration, Architecture: "qwen2", Layers: 48, HiddenSize: 5120, IntermediateSize: 13824,
		AttentionHeads: 40, KVHeads: 8, HeadDim: 128, VocabSize: 152064, QKVBias: true, DType: BF16,
	})
	qwen25_32B = mustCount(Model{
		Task: TaskTextGeneration, Architecture: "qwen2", Layers: 64, HiddenSize: 5120, IntermediateSize: 27648,
		AttentionHeads: 40, KVHeads: 8, HeadDim: 128, VocabSize: 152064, QKVBias: true, DType: BF16,
	})
	qwen25_72B = mustCount(Model{
		Task: TaskTextGeneration, Architecture: "qwen2", Layers: 80, HiddenSize: 8192, IntermediateSize: 29568,
		AttentionHeads: 64, KVHeads: 8, HeadDim: 128, VocabSize: 152064, QKVBias: true, DType: BF16,
	})
	deepseekV3 = mustCount(Model{
		Task: TaskTextGeneration, Architecture: "deepseek_v3", Layers: 61, HiddenSize: 7168, IntermediateSize: 18432,
		AttentionHeads: 128, KVHeads: 128, HeadDim: 128 + 64, VocabSize: 129280,
		MLA: MLA{KVLoraRank: 512, QLoraRank: 1536, QKRopeHeadDim: 64, QKNopeHeadDim: 128, VHeadDim: 128},
		MoE: MoE{Experts: 256, SharedExperts: 1, ExpertsPerToken: 8, ExpertIntermediateSize: 2048, DenseLayers: 3},
		// The checkpoint is block-quantized FP8 (quantization_config.quant_method "fp8").
		DType: FP8,
	})
	glm4_9B = mustCount(Model{
		// ChatGLM field names: num_layers 40, ffn_hidden_size 13696,
		// multi_query_group_num 2, kv_channels 128, padded_vocab_size 151552,
		// add_qkv_bias true.
		Task: TaskTextGeneration, Architecture: "chatglm", Layers: 40, HiddenSize: 4096, IntermediateSize: 13696,
		AttentionHeads: 32, KVHeads: 2, HeadDim: 128, VocabSize: 151552, QKVBias: true, DType: BF16,
	})
	qwen3_8B = mustCount(Model{
		Task: TaskTextGeneration, Architecture: "qwen3", Layers: 36, HiddenSize: 4096, IntermediateSize: 12288,
		AttentionHeads: 32, KVHeads: 8, HeadDim: 128, VocabSize: 151936, QKNorm: true, DType: BF16,
	})
	qwen3_30BA3B = mustCount(Model{
		// Every layer is sparse (decoder_sparse_step 1, mlp_only_layers []);
		// intermediate_size 6144 is unused by the published model.
		Task: TaskTextGeneration, Architecture: "qwen3_moe", Layers: 48, HiddenSize: 2048, IntermediateSize: 6144,
		AttentionHeads: 32, KVHeads: 4, HeadDim: 128, VocabSize: 151936, QKNorm: true, DType: BF16,
		MoE: MoE{Experts: 128, ExpertsPerToken: 8, ExpertIntermediateSize: 768},
	})
	mistral7B = mustCount(Model{
		Task: TaskTextGeneration, Architecture: "mistral", Layers: 32, HiddenSize: 4096, IntermediateSize: 14336,
		AttentionHeads: 32, KVHeads: 8, HeadDim: 128, VocabSize: 32768, DType: BF16,
	})
	llama32_1B = mustCount(Model{
		Task: TaskTextGeneration, Architecture: "llama", Layers: 16, HiddenSize: 2048, IntermediateSize: 8192,
		AttentionHeads: 32, KVHeads: 8, HeadDim: 64, VocabSize: 128256, TiedEmbeddings: true, DType: BF16,
	})
	llama32_3B = mustCount(Model{
		Task: TaskTextGeneration, Architecture: "llama", Layers: 28, HiddenSize: 3072, IntermediateSize: 8192,
		AttentionHeads: 24, KVHeads: 8, HeadDim: 128, VocabSize: 128256, TiedEmbeddings: true, DType: BF16,
	})
	// Qwen2.5-VL's decoder is Qwen2's (q, k and v biased); the vision tower
	// comes on top (vision_config).
	qwen25VL_3B = mustCount(Model{
		Task: TaskVisionLanguage, Architecture: "qwen2_5_vl", Layers: 36, HiddenSize: 2048, IntermediateSize: 11008,
		AttentionHeads: 16, KVHeads: 2, HeadDim: 128, VocabSize: 151936, TiedEmbeddings: true, QKVBias: true, DType: BF16,
		Vision: qwen25VLVision(2048),
	})
	qwen25VL_7B = mustCount(Model{
		Task: TaskVisionLanguage, Architecture: "qwen2_5_vl", Layers: 28, HiddenSize: 3584, IntermediateSize: 18944,
		AttentionHeads: 28, KVHeads: 4, HeadDim: 128, VocabSize: 152064, QKVBias: true, DType: BF16,
		Vision: qwen25VLVision(3584),
	})
	// The BGE encoders are XLM-RoBERTa (model_type xlm-roberta,
	// pad_token_id 1, so positions start at 2) published in float32.
	bgeM3 = mustCount(Model{
		Task: TaskEmbedding, Architecture: "xlm-roberta", Layers: 24, HiddenSize: 1024, IntermediateSize: 4096,
		AttentionHeads: 16, KVHeads: 16, HeadDim: 64, VocabSize: 250002, QKVBias: true, DType: FP32,
		Encoder: Encoder{PositionEmbeddings: 8194, PositionOffset: 2, TokenTypes: 1, Pooler: true},
	})
	bgeRerankerV2M3 = mustCount(Model{
		Task: TaskReranking, Architecture: "xlm-roberta", Layers: 24, HiddenSize: 1024, IntermediateSize: 4096,
		AttentionHeads: 16, KVHeads: 16, HeadDim: 64, VocabSize: 250002, QKVBias: true, DType: FP32,
		Encoder: Encoder{PositionEmbeddings: 8194, PositionOffset: 2, TokenTypes: 1, Labels: 1, HeadDense: true},
	})
	bgeRerankerBase = mustCount(Model{
		Task: TaskReranking, Architecture: "xlm-roberta", Layers: 12, HiddenSize: 768, IntermediateSize: 3072,
		AttentionHeads: 12, KVHeads: 12, HeadDim: 64, VocabSize: 250002, QKVBias: true, DType: FP32,
		Encoder: Encoder{PositionEmbeddings: 514, PositionOffset: 2, TokenTypes: 1, Labels: 1, HeadDense: true},
	})
)

// catalogue is the built-in list. Licenses are the Hugging Face license tags
// of the repositories.
var catalogue = []entry{
	{model: variant(llama31_8B, "meta-llama/Llama-3.1-8B", 131072, "llama3.1"),
		aliases: []string{"meta-llama/Meta-Llama-3.1-8B"}},
	{model: variant(llama31_8B, "meta-llama/Llama-3.1-8B-Instruct", 131072, "llama3.1"),
		aliases: []string{"meta-llama/Meta-Llama-3.1-8B-Instruct"}},
	{model: variant(llama31_70B, "meta-llama/Llama-3.1-70B", 131072, "llama3.1"),
		aliases: []string{"meta-llama/Meta-Llama-3.1-70B"}},
	{model: variant(llama31_70B, "meta-llama/Llama-3.1-70B-Instruct", 131072, "llama3.1"),
		aliases: []string{"meta-llama/Meta-Llama-3.1-70B-Instruct"}},
	{model: variant(qwen25_7B, "Qwen/Qwen2.5-7B", 131072, "apache-2.0")},
	{model: variant(qwen25_7B, "Qwen/Qwen2.5-7B-Instruct", 32768, "apache-2.0")},
	{model: variant(qwen25_14B, "Qwen/Qwen2.5-14B", 131072, "apache-2.0")},
	{model: variant(qwen25_14B, "Qwen/Qwen2.5-14B-Instruct", 32768, "apache-2.0")},
	{model: variant(qwen25_32B, "Qwen/Qwen2.5-32B", 131072, "apache-2.0")},
	{model: variant(qwen25_32B, "Qwen/Qwen2.5-32B-Instruct", 32768, "apache-2.0")},
	{model: variant(qwen25_72B, "Qwen/Qwen2.5-72B-Instruct", 32768, "qwen")},
	{model: variant(qwen3_8B, "Qwen/Qwen3-8B", 40960, "apache-2.0")},
	{model: variant(qwen3_30BA3B, "Qwen/Qwen3-30B-A3B", 40960, "apache-2.0")},
	{model: variant(deepseekV3, "deepseek-ai/DeepSeek-V3", 163840, "deepseek")},
	{model: variant(deepseekV3, "deepseek-ai/DeepSeek-R1", 163840, "mit")},
	{model: variant(qwen25_7B, "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B", 131072, "mit")},
	// The other R1 distills keep their base model's architecture: Qwen2.5-14B
	// and -32B, Llama-3.1-8B, and Llama-3.3-70B-Instruct (Llama-3.1-70B's).
	{model: variant(qwen25_14B, "deepseek-ai/DeepSeek-R1-Distill-Qwen-14B", 131072, "mit")},
	{model: variant(qwen25_32B, "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", 131072, "mit")},
	{model: variant(llama31_8B, "deepseek-ai/DeepSeek-R1-Distill-Llama-8B", 131072, "mit")},
	{model: variant(llama31_70B, "deepseek-ai/DeepSeek-R1-Distill-Llama-70B", 131072, "mit")},
	{model: variant(llama31_70B, "meta-llama/Llama-3.3-70B-Instruct", 131072, "llama3.3")},
	{model: variant(glm4_9B, "THUDM/glm-4-9b-chat", 131072, "glm-4"),
		aliases: []string{"THUDM/glm-4-9b-chat-hf", "zai-org/glm-4-9b-chat", "zai-org/glm-4-9b-chat-hf"}},
	{model: variant(mistral7B, "mistralai/Mistral-7B-v0.3", 32768, "apache-2.0"),
		aliases: []string{"Mistral-7B"}},
	{model: variant(mistral7B, "mistralai/Mistral-7B-Instruct-v0.3", 32768, "apache-2.0"),
		aliases: []string{"Mistral-7B-Instruct"}},
	{model: variant(llama32_1B, "meta-llama/Llama-3.2-1B", 131072, "llama3.2")},
	{model: variant(llama32_1B, "meta-llama/Llama-3.2-1B-Instruct", 131072, "llama3.2")},
	{model: variant(llama32_3B, "meta-llama/Llama-3.2-3B", 131072, "llama3.2")},
	{model: variant(llama32_3B, "meta-llama/Llama-3.2-3B-Instruct", 131072, "llama3.2")},
	{model: variant(qwen25VL_3B, "Qwen/Qwen2.5-VL-3B-Instruct", 128000, "qwen-research")},
	{model: variant(qwen25VL_7B, "Qwen/Qwen2.5-VL-7B-Instruct", 128000, "apache-2.0")},
	// An encoder's context is its longest input: 8194 - 2 and 514 - 2.
	{model: variant(bgeM3, "BAAI/bge-m3", 8192, "mit")},
	{model: variant(bgeRerankerV2M3, "BAAI/bge-reranker-v2-m3", 8192, "apache-2.0")},
	{model: variant(bgeRerankerBase, "BAAI/bge-reranker-base", 512, "mit")},
}

// Catalogue returns a copy of every built-in model, in a stable order.
func Catalogue() []Model {
	out := make([]Model, len(catalogue))
	for i, e := range catalogue {
		out[i] = e.model
	}
	return out
}

// normalize reduces a name or Hugging Face id to the key the catalogue is
// searched by: lower case, without the organisation and without the
// "Meta-" prefix that Llama 3.1 repositories first carried.
func normalize(name string) string {
	s := strings.ToLower(strings.TrimSpace(name))
	s = s[strings.LastIndex(s, "/")+1:]
	return strings.TrimPrefix(s, "meta-")
}

// instructSuffixes are the suffixes that mark a chat-tuned sibling of a base
// model; they are tried in this order.
var instructSuffixes = []string{"-instruct", "-chat", "-it"}

// Lookup finds a model by catalogue name or Hugging Face id,
// case-insensitively ("Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct" and
// "qwen2.5-7b-instruct" are the same model). A base or instruction-tuned
// sibling the catalogue does not list resolves to the one it does, since
// both share one architecture: "Qwen/Qwen2.5-72B" resolves to
// Qwen2.5-72B-Instruct's facts and "Qwen/Qwen2.5-7B-Chat" to
// Qwen2.5-7B-Instruct's. Such a result carries the requested id as HFID when
// the request was an id ("org/name"), and keeps the sibling's context length.
func Lookup(name string) (Model, error) {
	key := normalize(name)
	if key == "" {
		return Model{}, fmt.Errorf("look up model %q: %w", name, ErrUnknownModel)
	}
	if m, ok := find(key); ok {
		return m, nil
	}
	var candidates []string
	base := key
	for _, suffix := range instructSuffixes {
		if strings.HasSuffix(key, suffix) {
			base = strings.TrimSuffix(key, suffix)
			break
		}
	}
	if base != key {
		// A tuned variant: prefer the catalogue's Instruct sibling, then the base.
		candidates = append(candidates, base+"-instruct", base)
	} else {
		candidates = append(candidates, key+"-instruct")
	}
	for _, c := range candidates {
		if m, ok := find(c); ok {
			if strings.Contains(name, "/") {
				m.HFID = strings.TrimSpace(name)
				m.Name = m.HFID[strings.LastIndex(m.HFID, "/")+1:]
			}
			return m, nil
		}
	}
	return Model{}, fmt.Errorf("look up model %q: %w (known: %s)", name, ErrUnknownModel, strings.Join(names(), ", "))
}

func find(key string) (Model, bool) {
	for _, e := range catalogue {
		if normalize(e.model.HFID) == key || normalize(e.model.Name) == key {
			return e.model, true
		}
		if slices.ContainsFunc(e.aliases, func(a string) bool { return normalize(a) == key }) {
			return e.model, true
		}
	}
	return Model{}, false
}

func names() []string {
	out := make([]string, len(catalogue))
	for i, e := range catalogue {
		out[i] = e.model.Name
	}
	return out
}
