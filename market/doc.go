// Package market is cube's model market. This part of it is the catalogue
// of architecture facts that memory and throughput planners need: layers,
// hidden size, attention and KV heads, head dimension, vocabulary, context
// length, DeepSeek's MLA dimensions, mixture-of-experts layout, parameter
// counts (total and active), the format the published weights are stored in,
// and the license.
//
// The built-in catalogue holds Llama-3.1 8B and 70B, Qwen2.5 7B, 14B, 32B and
// 72B, DeepSeek-V3 and DeepSeek-R1, DeepSeek-R1-Distill-Qwen-7B, GLM-4-9B
// and Mistral-7B v0.3, base and instruction-tuned where both exist. Every
// number was read from the config.json of the Hugging Face repository named
// in Model.Source; testdata holds those files and the tests check that
// FromHFConfig reads each to the same facts.
//
//	m, err := market.Lookup("Qwen/Qwen2.5-7B-Instruct")
//	// m.Layers == 28, m.KVHeads == 4, m.KVBytesPerToken(market.BF16) == 57344
//
// Lookup accepts a catalogue name or a Hugging Face id in any case, and
// resolves a base or instruction-tuned sibling the catalogue does not list
// ("Qwen/Qwen2.5-72B") to the one it does. FromHFConfig reads any
// Llama-style, Qwen2, Mistral, Mixtral, GLM/ChatGLM or DeepSeek-V2/V3
// config.json, so a team's own fine-tunes can be planned too.
//
// # Parameter count
//
// When a config does not state num_parameters, FromHFConfig (and the
// catalogue) count the weights of a decoder-only transformer with gated
// (SwiGLU) MLPs and RMSNorm, writing h for hidden_size, V for the
// vocabulary, L for layers, n_q and n_kv for attention and KV heads, d for
// head_dim and i for intermediate_size:
//
//	embeddings   V·h, twice unless tie_word_embeddings
//	final norm   h
//	per layer    attention + FFN + 2h (two RMSNorms)
//	attention    h·n_q·d (q) + 2·h·n_kv·d (k, v) + n_q·d·h (o)
//	             + n_q·d + 2·n_kv·d when q, k and v carry biases (Qwen2, GLM)
//	dense FFN    3·h·i
//
// MLA attention (DeepSeek) replaces the attention term with
//
//	h·q_lora + q_lora + q_lora·n_q·(nope+rope)        (q_a, its norm, q_b; h·n_q·(nope+rope) without q_lora)
//	+ h·(kv_lora+rope) + kv_lora + kv_lora·n_q·(nope+v) (kv_a, its norm, kv_b)
//	+ n_q·v·h                                          (o)
//
// and a mixture-of-experts layer replaces the dense FFN with
// (experts + shared experts)·3·h·moe_i + h·experts (the router); the first
// first_k_dense_replace layers stay dense. Active parameters count only
// num_experts_per_tok routed experts. DeepSeek's multi-token-prediction
// module (num_nextn_predict_layers) is not counted: vLLM does not load it
// unless speculative decoding asks for it. The result matches the published
// counts: 8.03 B for Llama-3.1-8B, 7.62 B for Qwen2.5-7B, 671.0 B total and
// 37.6 B active for DeepSeek-V3, 46.7 B / 12.9 B for Mixtral-8x7B.
//
// # KV cache
//
// Model.KVBytesPerToken is 2 × L × n_kv × d × bytes for multi-head and
// grouped-query attention and (kv_lora_rank + qk_rope_head_dim) × L × bytes
// for MLA, which caches one latent shared by every head.
// Model.KVBytesPerTokenPerLayer gives one tensor-parallel rank's share the
// way vLLM sizes its pages: heads split across ranks, replicated when the
// ranks outnumber them, and the MLA latent replicated on every rank.
//
// The registry of a team's own models comes in a later issue.
package market
