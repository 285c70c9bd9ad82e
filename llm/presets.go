package llm

import (
	"slices"
	"strings"
)

// Family holds what a model family needs from LLaMA-Factory: its chat
// template and whether its repositories carry their own modelling code.
type Family struct {
	// Name is the family, such as "Qwen2.5".
	Name string
	// Template is LLaMA-Factory's template name (data/template.py at
	// v0.9.5; the README's table of supported models pairs each family
	// with it).
	Template string
	// TrustRemoteCode says the repositories need trust_remote_code.
	TrustRemoteCode bool
}

// families are matched against the lower-cased repository name, most
// specific first. LoRA targets are not per family: lora_target "all"
// makes LLaMA-Factory find every linear layer but the output head
// (model/model_utils/misc.py find_all_linear_modules), which covers
// q/k/v/o and the MLP projections of all of them.
//
// A pattern matches when the name contains its parts, separated by *, in
// order. Templates are the README's table of supported models at v0.9.5
// (README.md:272-318) and, for Qwen3's 2507 Instruct models, its
// examples (examples/inference/qwen3.yaml: Qwen3-4B-Instruct-2507 with
// qwen3_nothink); Mistral Small 3.x uses tokenizer v7 tekken, whose
// template is mistral_small (data/template.py:1794).
var families = []struct {
	match  []string
	family Family
}{
	{[]string{"deepseek-r1"}, Family{Name: "DeepSeek-R1", Template: "deepseekr1"}},
	{[]string{"deepseek-v3"}, Family{Name: "DeepSeek-V3", Template: "deepseek3", TrustRemoteCode: true}},
	{[]string{"qwen3.6", "qwen3_6"}, Family{Name: "Qwen3.6", Template: "qwen3_6"}},
	{[]string{"qwen3.5", "qwen3_5"}, Family{Name: "Qwen3.5", Template: "qwen3_5"}},
	{[]string{"qwen3-vl"}, Family{Name: "Qwen3-VL", Template: "qwen3_vl"}},
	{[]string{"qwen3-omni"}, Family{Name: "Qwen3-Omni", Template: "qwen3_omni"}},
	{[]string{"qwen3*-instruct-2507"}, Family{Name: "Qwen3 Instruct-2507", Template: "qwen3_nothink"}},
	{[]string{"qwen3"}, Family{Name: "Qwen3", Template: "qwen3"}},
	{[]string{"qwen2.5-vl", "qwen2-vl", "qvq"}, Family{Name: "Qwen2-VL", Template: "qwen2_vl"}},
	{[]string{"qwen2.5-omni"}, Family{Name: "Qwen2.5-Omni", Template: "qwen2_omni"}},
	{[]string{"qwen2-audio"}, Family{Name: "Qwen2-Audio", Template: "qwen2_audio"}},
	{[]string{"qwen2.5", "qwen2"}, Family{Name: "Qwen2.5", Template: "qwen"}},
	{[]string{"llama-3.2*vision"}, Family{Name: "Llama 3.2 Vision", Template: "mllama"}},
	{[]string{"llama-4", "llama4"}, Family{Name: "Llama 4", Template: "llama4"}},
	{[]string{"llama-3", "llama3"}, Family{Name: "Llama 3", Template: "llama3"}},
	{[]string{"glm-4.5v", "glm-4.6v"}, Family{Name: "GLM-4.5V", Template: "glm4_5v"}},
	{[]string{"glm-4.5", "glm-4.6"}, Family{Name: "GLM-4.5", Template: "glm4_moe"}},
	{[]string{"glm-4", "glm4"}, Family{Name: "GLM-4", Template: "glm4", TrustRemoteCode: true}},
	{[]string{"mistral-small"}, Family{Name: "Mistral Small", Template: "mistral_small"}},
	{[]string{"mistral", "mixtral"}, Family{Name: "Mistral", Template: "mistral"}},
}

// FamilyOf returns the family preset of a model reference (a Hugging Face
// or ModelScope id, or a path whose last element names the model), and
// false when cube has none: set Template then.
func FamilyOf(model string) (Family, bool) {
	name := strings.ToLower(model)
	name = name[strings.LastIndex(name, "/")+1:]
	for _, f := range families {
		for _, m := range f.match {
			if containsInOrder(name, strings.Split(m, "*")) {
				return f.family, true
			}
		}
	}
	return Family{}, false
}

func containsInOrder(s string, parts []string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

// Templates returns the chat templates LLaMA-Factory v0.9.5 registers
// (every register_template call of src/llamafactory/data/template.py),
// sorted: the names Template accepts.
func Templates() []string { return slices.Clone(templates) }

var templates = []string{
	"aeva", "alpaca", "bailing", "bailing_v2", "breeze", "chatglm3", "chatml", "chatml_de", "cohere",
	"cpm4", "dbrx", "deepseek", "deepseek3", "deepseekcoder", "deepseekr1", "default", "dots_ocr",
	"empty", "ernie", "ernie_nothink", "ernie_vl", "exaone", "falcon", "falcon_h1", "fewshot",
	"gemma", "gemma2", "gemma3", "gemma3n", "gemma4", "gemma4n", "glm4", "glm4_5v", "glm4_7",
	"glm4_moe", "glm4v", "glm_ocr", "glmz1", "gpt_oss", "granite3", "granite3_vision", "granite4",
	"hunyuan", "hunyuan_small", "hy3", "index", "intern2", "intern_s1", "intern_vl", "keye_vl",
	"kimi_vl", "lfm2", "lfm2_vl", "llama2", "llama2_zh", "llama3", "llama4", "llava", "llava_next",
	"llava_next_llama3", "llava_next_mistral", "llava_next_qwen", "llava_next_video",
	"llava_next_video_mistral", "llava_next_video_yi", "llava_next_yi", "mimo", "mimo_v2", "mimo_vl",
	"minicpm_o", "minicpm_v", "minicpm_v_4_6", "minimax1", "minimax2", "ministral", "ministral3",
	"mistral", "mistral_small", "mllama", "moonlight", "olmo", "openchat", "openchat-3.6",
	"opencoder", "paligemma", "paligemma_chat", "phi", "phi4", "phi4_mini", "phi_small", "pixtral",
	"qwen", "qwen2_audio", "qwen2_omni", "qwen2_vl", "qwen3", "qwen3_5", "qwen3_5_nothink", "qwen3_6",
	"qwen3_nothink", "qwen3_omni", "qwen3_omni_nothink", "qwen3_vl", "qwen3_vl_nothink", "sailor",
	"seed_coder", "seed_oss", "smollm", "smollm2", "solar", "starchat", "telechat2", "vicuna",
	"video_llava", "xuanyuan", "yi", "yi_vl", "youtu", "youtu_vl", "yuan", "zephyr",
}
