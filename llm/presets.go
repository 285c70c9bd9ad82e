package llm

import "strings"

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
var families = []struct {
	match  []string
	family Family
}{
	{[]string{"deepseek-r1"}, Family{Name: "DeepSeek-R1", Template: "deepseekr1"}},
	{[]string{"deepseek-v3"}, Family{Name: "DeepSeek-V3", Template: "deepseek3", TrustRemoteCode: true}},
	{[]string{"qwen3"}, Family{Name: "Qwen3", Template: "qwen3"}},
	{[]string{"qwen2.5", "qwen2"}, Family{Name: "Qwen2.5", Template: "qwen"}},
	{[]string{"llama-3", "llama3"}, Family{Name: "Llama 3", Template: "llama3"}},
	{[]string{"glm-4", "glm4"}, Family{Name: "GLM-4", Template: "glm4", TrustRemoteCode: true}},
	{[]string{"mistral"}, Family{Name: "Mistral", Template: "mistral"}},
}

// FamilyOf returns the family preset of a model reference (a Hugging Face
// or ModelScope id, or a path whose last element names the model), and
// false when cube has none: set Template then.
func FamilyOf(model string) (Family, bool) {
	name := strings.ToLower(model)
	name = name[strings.LastIndex(name, "/")+1:]
	for _, f := range families {
		for _, m := range f.match {
			if strings.Contains(name, m) {
				return f.family, true
			}
		}
	}
	return Family{}, false
}
