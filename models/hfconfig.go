package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits on the dimensions FromHFConfig accepts. They are far above any
// published model and keep arithmetic on hostile input bounded.
const (
	maxDimension = 1 << 24 // hidden, intermediate, vocabulary, context
	maxCount     = 1 << 16 // layers, heads, experts
)

// hfConfig is a decoded config.json: its top-level fields, raw, so that
// each one can be decoded on its own and a wrong type named precisely.
type hfConfig struct {
	raw  map[string]json.RawMessage
	path *field.Path
	// errs is shared by a config and the objects nested in it.
	errs *field.ErrorList
}

func (c *hfConfig) fail(err *field.Error) { *c.errs = append(*c.errs, err) }

func (c *hfConfig) has(name string) bool {
	v, ok := c.raw[name]
	return ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
}

// first returns the first of names present in the config, or "".
func (c *hfConfig) first(names ...string) string {
	for _, n := range names {
		if c.has(n) {
			return n
		}
	}
	return ""
}

// int decodes the first present of names as a non-negative integer no
// larger than limit. It returns def when none is present and records an
// error naming the field otherwise.
func (c *hfConfig) int(def, limit int, names ...string) int {
	name := c.first(names...)
	if name == "" {
		return def
	}
	p := c.path.Child(name)
	var f float64
	if err := json.Unmarshal(c.raw[name], &f); err != nil {
		c.fail(field.Invalid(p, rawValue(c.raw[name]), "must be a number"))
		return def
	}
	if f < 0 || f > float64(limit) {
		c.fail(field.Invalid(p, f, fmt.Sprintf("must be between 0 and %d", limit)))
		return def
	}
	if f != float64(int64(f)) {
		c.fail(field.Invalid(p, f, "must be a whole number"))
		return def
	}
	return int(f)
}

// int64Field decodes an optional non-negative integer count.
func (c *hfConfig) int64Field(name string) int64 {
	if !c.has(name) {
		return 0
	}
	var v int64
	if err := json.Unmarshal(c.raw[name], &v); err != nil || v < 0 {
		c.fail(field.Invalid(c.path.Child(name), rawValue(c.raw[name]), "must be a non-negative integer"))
		return 0
	}
	return v
}

func (c *hfConfig) bool(def bool, name string) bool {
	if !c.has(name) {
		return def
	}
	var b bool
	if err := json.Unmarshal(c.raw[name], &b); err != nil {
		c.fail(field.Invalid(c.path.Child(name), rawValue(c.raw[name]), "must be true or false"))
		return def
	}
	return b
}

func (c *hfConfig) string(name string) string {
	if !c.has(name) {
		return ""
	}
	var s string
	if err := json.Unmarshal(c.raw[name], &s); err != nil {
		c.fail(field.Invalid(c.path.Child(name), rawValue(c.raw[name]), "must be a string"))
		return ""
	}
	return s
}

// firstString decodes a list of strings, such as architectures, and
// returns its first entry ("" when absent or empty).
func (c *hfConfig) firstString(name string) string {
	if !c.has(name) {
		return ""
	}
	var list []string
	if err := json.Unmarshal(c.raw[name], &list); err != nil {
		c.fail(field.Invalid(c.path.Child(name), rawValue(c.raw[name]), "must be a list of strings"))
		return ""
	}
	if len(list) == 0 {
		return ""
	}
	return list[0]
}

// size returns the number of entries of an object field such as id2label,
// and whether it is present.
func (c *hfConfig) size(name string) (int, bool) {
	sub := c.object(name)
	if sub == nil {
		return 0, false
	}
	return len(sub.raw), true
}

// rawValue returns what to print for a value of the wrong type: the string
// itself for a JSON string, the JSON text otherwise.
func rawValue(raw json.RawMessage) any {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	return string(raw)
}

// object decodes a nested object such as quantization_config or
// text_config; it returns nil when absent.
func (c *hfConfig) object(name string) *hfConfig {
	if !c.has(name) {
		return nil
	}
	sub := &hfConfig{path: c.path.Child(name), errs: c.errs}
	if err := json.Unmarshal(c.raw[name], &sub.raw); err != nil {
		c.fail(field.Invalid(sub.path, rawValue(c.raw[name]), "must be an object"))
		return nil
	}
	return sub
}

// FromHFConfig reads the architecture facts from a Hugging Face config.json.
// It understands the field names of llama, qwen2, mistral (and other
// Llama-style decoders), mixtral-style MoE, glm (the transformers port of
// GLM-4), chatglm (GLM's remote-code configs: num_layers, ffn_hidden_size,
// multi_query_group_num, kv_channels, padded_vocab_size, seq_length) and
// deepseek_v2/deepseek_v3 (MLA: kv_lora_rank, q_lora_rank,
// qk_rope_head_dim, qk_nope_head_dim, v_head_dim; MoE: n_routed_experts,
// n_shared_experts, num_experts_per_tok, moe_intermediate_size,
// first_k_dense_replace). A multimodal config whose decoder sits under
// text_config is read from there. Qwen2.5-VL's vision_config (depth,
// hidden_size, intermediate_size, num_heads, patch_size,
// temporal_patch_size, spatial_merge_size, out_hidden_size, in_chans) is
// counted with the decoder; a vision_config of any other model_type is
// refused unless num_parameters is stated. bert, roberta, xlm-roberta and
// camembert configs are read as encoders: max_position_embeddings,
// type_vocab_size, pad_token_id (the RoBERTa family's position offset),
// and the head the first architectures entry names, a bare encoder
// ("…Model", TaskEmbedding) or a sequence classifier
// ("…ForSequenceClassification", TaskReranking with one label in
// id2label or num_labels, TaskClassification otherwise).
//
// Parameters come from a num_parameters field when the config has one and
// are otherwise computed from the architecture with the formula in the
// package documentation. The weight format is quantization_config's when
// present (fp8; gptq, awq, bitsandbytes with their bit width) and
// torch_dtype (or dtype) otherwise, bf16 if neither is given.
//
// Every field that has the wrong type, is out of range, or is missing
// when required is reported, all at once, as a field.ErrorList aggregate
// whose paths are the config's field names. Name and HFID come from
// _name_or_path when it holds a repository id; License is left empty since
// config.json does not state it.
func FromHFConfig(configJSON []byte) (Model, error) {
	var errs field.ErrorList
	top := &hfConfig{errs: &errs}
	if err := json.Unmarshal(configJSON, &top.raw); err != nil {
		return Model{}, fmt.Errorf("parse hugging face config: %w", err)
	}
	if top.raw == nil {
		return Model{}, fmt.Errorf("parse hugging face config: want a JSON object, got null")
	}
	c := top
	if !c.has("num_hidden_layers") && !c.has("num_layers") {
		if text := c.object("text_config"); text != nil {
			c = text
		}
	}
	m, extraPerLayer := readArchitecture(c)
	if encoderFamilies[m.Architecture] {
		readEncoder(c, &m)
	} else {
		m.Task = TaskTextGeneration
		readVision(top, c, &m)
	}
	m.DType = readDType(c, top)
	if name := top.string("_name_or_path"); isRepoID(name) {
		m.HFID = name
		m.Name = name[strings.Index(name, "/")+1:]
	}
	m.Source = "config.json"

	for _, req := range []struct {
		value int
		names []string
	}{
		{m.Layers, []string{"num_hidden_layers", "num_layers"}},
		{m.HiddenSize, []string{"hidden_size"}},
		{m.AttentionHeads, []string{"num_attention_heads"}},
		{m.VocabSize, []string{"vocab_size", "padded_vocab_size"}},
	} {
		if req.value == 0 && c.first(req.names...) == "" {
			c.fail(field.Required(c.path.Child(req.names[0]), ""))
		}
	}
	if m.IntermediateSize == 0 && !m.IsMoE() && c.first("intermediate_size", "ffn_hidden_size") == "" {
		c.fail(field.Required(c.path.Child("intermediate_size"), "dense models need the FFN width"))
	}
	stated := c.int64Field("num_parameters")
	if len(errs) > 0 {
		return Model{}, errs.ToAggregate()
	}

	total, active, err := countParameters(m, extraPerLayer)
	if err != nil {
		return Model{}, field.ErrorList{field.Invalid(c.path.Child("num_hidden_layers"), m.Layers, err.Error())}.ToAggregate()
	}
	m.Parameters, m.ActiveParameters = total, active
	if m.HasVision() {
		// countParameters succeeded, so the tower's own count does too.
		m.VisionParameters, _ = visionParameters(m.Vision)
	}
	if stated > 0 {
		m.Parameters = stated
		if !m.IsMoE() || m.ActiveParameters > stated {
			m.ActiveParameters = stated
		}
	}
	if err := m.Validate(); err != nil {
		return Model{}, err
	}
	return m, nil
}

// isRepoID reports whether s looks like a Hugging Face repository id
// ("org/name") rather than a local path.
func isRepoID(s string) bool {
	return strings.Count(s, "/") == 1 && !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, ".") &&
		!strings.HasSuffix(s, "/")
}

// readArchitecture maps the config's field names onto a Model. The second
// result is the per-layer count of biases the Model fields cannot express.
func readArchitecture(c *hfConfig) (Model, int64) {
	m := Model{Architecture: c.string("model_type")}
	chatGLM := c.has("ffn_hidden_size") || c.has("padded_vocab_size") || c.has("multi_query_group_num")

	m.Layers = c.int(0, maxCount, "num_hidden_layers", "num_layers", "n_layer")
	m.HiddenSize = c.int(0, maxDimension, "hidden_size")
	m.AttentionHeads = c.int(0, maxCount, "num_attention_heads")
	m.ContextLength = c.int(0, 1<<30, "max_position_embeddings", "seq_length")
	m.TiedEmbeddings = c.bool(false, "tie_word_embeddings")

	var extra int64
	if chatGLM {
		m.IntermediateSize = c.int(0, maxDimension, "ffn_hidden_size", "intermediate_size")
		m.VocabSize = c.int(0, maxDimension, "padded_vocab_size", "vocab_size")
		m.KVHeads = m.AttentionHeads
		if c.bool(false, "multi_query_attention") {
			m.KVHeads = c.int(m.AttentionHeads, maxCount, "multi_query_group_num")
		}
		m.HeadDim = c.int(0, maxDimension, "kv_channels")
		m.QKVBias = c.bool(false, "add_qkv_bias")
		if c.bool(false, "add_bias_linear") {
			// dense, dense_h_to_4h and dense_4h_to_h biases.
			extra = int64(m.HiddenSize) + 2*int64(m.IntermediateSize) + int64(m.HiddenSize)
		}
	} else {
		m.IntermediateSize = c.int(0, maxDimension, "intermediate_size")
		m.VocabSize = c.int(0, maxDimension, "vocab_size")
		m.KVHeads = c.int(m.AttentionHeads, maxCount, "num_key_value_heads")
		m.HeadDim = c.int(0, maxDimension, "head_dim")
		bias := c.bool(false, "attention_bias")
		switch m.Architecture {
		case "qwen2", "qwen2_moe", "qwen2_vl", "qwen2_vl_text", "qwen2_5_vl", "qwen2_5_vl_text":
			// Qwen2 always biases q, k and v and never o.
			m.QKVBias = true
		case "qwen3", "qwen3_moe":
			// Qwen3 drops the biases (attention_bias false) and normalises
			// q and k per head (transformers models/qwen3/modeling_qwen3.py).
			m.QKVBias = bias
			m.QKNorm = true
		case "glm":
			m.QKVBias = bias
		default:
			m.QKVBias = bias
			if bias {
				extra += int64(m.HiddenSize) // Llama's attention_bias covers o_proj too.
			}
		}
		if c.bool(false, "mlp_bias") {
			extra += 2*int64(m.IntermediateSize) + int64(m.HiddenSize)
		}
	}
	if m.HeadDim == 0 && m.AttentionHeads > 0 {
		m.HeadDim = m.HiddenSize / m.AttentionHeads
	}

	if c.has("kv_lora_rank") {
		m.MLA = MLA{
			KVLoraRank:    c.int(0, maxDimension, "kv_lora_rank"),
			QLoraRank:     c.int(0, maxDimension, "q_lora_rank"),
			QKRopeHeadDim: c.int(0, maxDimension, "qk_rope_head_dim"),
			QKNopeHeadDim: c.int(0, maxDimension, "qk_nope_head_dim"),
			VHeadDim:      c.int(0, maxDimension, "v_head_dim"),
		}
		m.HeadDim = m.MLA.QKNopeHeadDim + m.MLA.QKRopeHeadDim
		for _, name := range []string{"qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"} {
			if !c.has(name) {
				c.fail(field.Required(c.path.Child(name), "MLA configs (kv_lora_rank) need it"))
			}
		}
	}

	if experts := c.int(0, maxCount, "n_routed_experts", "num_local_experts", "num_experts"); experts > 0 {
		m.MoE = MoE{
			Experts:                experts,
			SharedExperts:          c.int(0, maxCount, "n_shared_experts"),
			ExpertsPerToken:        c.int(0, maxCount, "num_experts_per_tok"),
			ExpertIntermediateSize: c.int(m.IntermediateSize, maxDimension, "moe_intermediate_size"),
			DenseLayers:            c.int(0, maxCount, "first_k_dense_replace"),
		}
		if !c.has("num_experts_per_tok") {
			c.fail(field.Required(c.path.Child("num_experts_per_tok"), "MoE configs need the number of experts per token"))
		}
	}
	return m, extra
}

// readDType returns the weight format: quantization_config first, then
// torch_dtype (dtype in newer transformers) of the decoder config c or of
// the outer config top, else BF16.
func readDType(c, top *hfConfig) DType {
	for _, cfg := range []*hfConfig{top, c} {
		q := cfg.object("quantization_config")
		if q == nil {
			continue
		}
		method := strings.ToLower(q.string("quant_method"))
		bits := q.int(0, 64, "bits", "w_bit")
		switch {
		case method == "fp8":
			return FP8
		case method == "bitsandbytes" && q.bool(false, "load_in_4bit"):
			return INT4
		case method == "bitsandbytes" && q.bool(false, "load_in_8bit"):
			return INT8
		case bits == 4:
			return INT4
		case bits == 8:
			return INT8
		}
	}
	src := c
	name := c.first("torch_dtype", "dtype")
	if name == "" && c != top {
		src, name = top, top.first("torch_dtype", "dtype")
	}
	if name == "" {
		return BF16
	}
	switch s := src.string(name); s {
	case "bfloat16":
		return BF16
	case "float16", "half":
		return FP16
	case "float32", "float":
		return FP32
	default:
		src.fail(field.NotSupported(src.path.Child(name), s, []string{"bfloat16", "float16", "float32"}))
		return BF16
	}
}

// encoderFamilies are the model_type values of the BERT-style encoders
// FromHFConfig reads; the RoBERTa family among them offsets positions by
// the padding index.
var encoderFamilies = map[string]bool{"bert": true, "roberta": true, "xlm-roberta": true, "camembert": true}

// readEncoder reads what a BERT-style encoder adds: its position and
// token-type tables and the head its architectures entry names. Defaults
// are those of transformers' BertConfig and XLMRobertaConfig
// (type_vocab_size 2, pad_token_id 1 for the RoBERTa family) and of
// PretrainedConfig (two labels when neither id2label nor num_labels is
// given).
func readEncoder(c *hfConfig, m *Model) {
	roberta := m.Architecture != "bert"
	e := Encoder{
		PositionEmbeddings: c.int(0, 1<<30, "max_position_embeddings"),
		TokenTypes:         c.int(2, maxDimension, "type_vocab_size"),
	}
	if !c.has("max_position_embeddings") {
		c.fail(field.Required(c.path.Child("max_position_embeddings"), "an encoder's position table sets its longest input"))
	}
	if kind := c.string("position_embedding_type"); kind != "" && kind != "absolute" {
		// relative_key adds distance embeddings the count leaves out.
		c.fail(field.NotSupported(c.path.Child("position_embedding_type"), kind, []string{"absolute"}))
	}
	if roberta {
		// RoBERTa numbers positions from padding_idx + 1
		// (create_position_ids_from_input_ids in modeling_roberta.py);
		// Text Embeddings Inference takes max_position_embeddings -
		// (pad_token_id + 1) as the longest input (router/src/lib.rs).
		e.PositionOffset = c.int(1, maxDimension, "pad_token_id") + 1
	}
	arch := c.firstString("architectures")
	switch {
	case arch == "":
		c.fail(field.Required(c.path.Child("architectures"),
			"an encoder's class (such as XLMRobertaModel or XLMRobertaForSequenceClassification) decides its head"))
	case strings.HasSuffix(arch, "ForSequenceClassification"):
		if n, ok := c.size("id2label"); ok {
			e.Labels = n
		} else {
			e.Labels = c.int(2, maxCount, "num_labels")
		}
		if e.Labels < 1 {
			c.fail(field.Invalid(c.path.Child("id2label"), e.Labels, "a sequence classifier needs at least one label"))
		}
		// BertForSequenceClassification puts a Linear on the pooler;
		// RobertaForSequenceClassification builds the encoder without a
		// pooler (add_pooling_layer=False) and uses its classification
		// head, dense then out_proj.
		e.Pooler, e.HeadDense = !roberta, roberta
		m.Task = TaskClassification
		if e.Labels == 1 {
			// TEI serves a classifier of one label as a reranker
			// (router/src/lib.rs: more than one id2label entry makes a
			// classifier).
			m.Task = TaskReranking
		}
	case strings.HasSuffix(arch, "Model"):
		e.Pooler = true // BertModel and XLMRobertaModel add the pooling layer by default
		m.Task = TaskEmbedding
	default:
		c.fail(field.NotSupported(c.path.Child("architectures").Index(0), arch,
			[]string{"<family>Model (embedding)", "<family>ForSequenceClassification (reranking, classification)"}))
	}
	m.Encoder = e
	m.TiedEmbeddings = false // an encoder has no output head to tie
	m.QKVBias = true         // query, key and value carry biases in every BERT-style encoder
	m.ContextLength = max(0, e.PositionEmbeddings-e.PositionOffset)
}

// readVision reads a vision_config beside the decoder c. Qwen2.5-VL's
// vision tower is counted (Vision); any other is refused unless the config
// states num_parameters, since leaving its weights out would plan too
// little memory. Defaults are Qwen2_5_VLVisionConfig's (temporal_patch_size
// 2, spatial_merge_size 2, in_channels 3).
func readVision(top, c *hfConfig, m *Model) {
	v := top.object("vision_config")
	if v == nil {
		return
	}
	m.Task = TaskVisionLanguage
	outer := top.string("model_type")
	if outer != "" {
		m.Architecture = outer
	}
	if outer != "qwen2_5_vl" {
		if !c.has("num_parameters") {
			top.fail(field.Invalid(v.path, outer,
				"cube counts the vision tower of model_type qwen2_5_vl only: state num_parameters to plan this model"))
		}
		return
	}
	m.Vision = Vision{
		Depth:             v.int(0, maxCount, "depth"),
		HiddenSize:        v.int(0, maxDimension, "hidden_size"),
		IntermediateSize:  v.int(0, maxDimension, "intermediate_size"),
		Heads:             v.int(0, maxCount, "num_heads"),
		PatchSize:         v.int(0, maxCount, "patch_size"),
		TemporalPatchSize: v.int(2, maxCount, "temporal_patch_size"),
		SpatialMergeSize:  v.int(2, maxCount, "spatial_merge_size"),
		OutHiddenSize:     v.int(0, maxDimension, "out_hidden_size"),
		InChannels:        v.int(3, maxCount, "in_channels", "in_chans"),
	}
	for _, name := range []string{"depth", "hidden_size", "intermediate_size", "num_heads", "patch_size", "out_hidden_size"} {
		if !v.has(name) {
			v.fail(field.Required(v.path.Child(name), "Qwen2.5-VL's vision tower needs it"))
		}
	}
}
