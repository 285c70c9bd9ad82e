package llm

import (
	"slices"

	"github.com/cubestudio/cube/models"
)

// linear is one kind of linear layer of a decoder block: its module name
// (the Hugging Face attribute LoRA targets), its shape and how many of it
// the model has.
type linear struct {
	name    string
	in, out int64
	count   int64
}

// linearLayers lists the linear layers LoRA can wrap, from the model's
// shapes: every projection of every decoder layer (the output head is not
// among them: LLaMA-Factory's lora_target "all" leaves it out,
// model/model_utils/misc.py find_all_linear_modules). Module names follow
// the Hugging Face implementations: Llama, Qwen2 and Mistral
// (modeling_llama.py: q/k/v/o_proj, gate/up/down_proj); ChatGLM's own code
// (query_key_value, dense, dense_h_to_4h of twice the FFN width,
// dense_4h_to_h); GLM in transformers (q/k/v/o_proj, gate_up_proj,
// down_proj); DeepSeek-V3 (MLA's q_a_proj, q_b_proj, kv_a_proj_with_mqa,
// kv_b_proj, o_proj; the routed experts' and the shared MLP's
// gate/up/down_proj; the router's weight is a Parameter, not a Linear).
func linearLayers(m models.Model) []linear {
	h, L := int64(m.HiddenSize), int64(m.Layers)
	q, kv := int64(m.AttentionHeads*m.HeadDim), int64(m.KVHeads*m.HeadDim)
	ffn := int64(m.IntermediateSize)
	switch m.Architecture {
	case "chatglm":
		return []linear{
			{"query_key_value", h, q + 2*kv, L}, {"dense", q, h, L},
			{"dense_h_to_4h", h, 2 * ffn, L}, {"dense_4h_to_h", ffn, h, L},
		}
	case "glm":
		return []linear{
			{"q_proj", h, q, L}, {"k_proj", h, kv, L}, {"v_proj", h, kv, L}, {"o_proj", q, h, L},
			{"gate_up_proj", h, 2 * ffn, L}, {"down_proj", ffn, h, L},
		}
	}
	var out []linear
	if m.UsesMLA() {
		a := m.MLA
		heads := int64(m.AttentionHeads)
		qHead := int64(a.QKNopeHeadDim + a.QKRopeHeadDim)
		if a.QLoraRank > 0 {
			out = append(out, linear{"q_a_proj", h, int64(a.QLoraRank), L}, linear{"q_b_proj", int64(a.QLoraRank), heads * qHead, L})
		} else {
			out = append(out, linear{"q_proj", h, heads * qHead, L})
		}
		out = append(out,
			linear{"kv_a_proj_with_mqa", h, int64(a.KVLoraRank + a.QKRopeHeadDim), L},
			linear{"kv_b_proj", int64(a.KVLoraRank), heads * int64(a.QKNopeHeadDim+a.VHeadDim), L},
			linear{"o_proj", heads * int64(a.VHeadDim), h, L})
	} else {
		out = append(out, linear{"q_proj", h, q, L}, linear{"k_proj", h, kv, L}, linear{"v_proj", h, kv, L}, linear{"o_proj", q, h, L})
	}
	dense := L
	if m.IsMoE() {
		e := m.MoE
		dense = int64(min(e.DenseLayers, m.Layers))
		moeLayers := L - dense
		experts := moeLayers * int64(e.Experts)
		ei := int64(e.ExpertIntermediateSize)
		out = append(out, linear{"gate_proj", h, ei, experts}, linear{"up_proj", h, ei, experts}, linear{"down_proj", ei, h, experts})
		if e.SharedExperts > 0 {
			// The shared experts are one MLP of their summed width
			// (DeepseekV3MoE: DeepseekV3MLP(intermediate_size =
			// moe_intermediate_size × n_shared_experts)).
			si := ei * int64(e.SharedExperts)
			out = append(out, linear{"gate_proj", h, si, moeLayers}, linear{"up_proj", h, si, moeLayers}, linear{"down_proj", si, h, moeLayers})
		}
	}
	if dense > 0 {
		out = append(out, linear{"gate_proj", h, ffn, dense}, linear{"up_proj", h, ffn, dense}, linear{"down_proj", ffn, h, dense})
	}
	return out
}

// LoRAParameters is the exact trainable-parameter count of a LoRA
// adapter of rank r on model m: r·(in + out) for every wrapped linear
// layer (PEFT's lora.Linear adds A of r×in and B of out×r, no bias).
// targets are module names; none means every linear layer of the decoder
// (lora_target "all"). It also returns the targets it matched nothing
// for.
func LoRAParameters(m models.Model, rank int, targets ...string) (params int64, unmatched []string) {
	layers := linearLayers(m)
	for _, t := range targets {
		if !slices.ContainsFunc(layers, func(l linear) bool { return l.name == t }) {
			unmatched = append(unmatched, t)
		}
	}
	for _, l := range layers {
		if len(targets) == 0 || slices.Contains(targets, l.name) {
			params += int64(rank) * (l.in + l.out) * l.count
		}
	}
	return params, unmatched
}

// layerLinearParameters is the weight count of every linear layer of
// the decoder blocks: what bitsandbytes quantizes under QLoRA.
func layerLinearParameters(m models.Model) int64 {
	var n int64
	for _, l := range linearLayers(m) {
		n += l.in * l.out * l.count
	}
	return n
}
