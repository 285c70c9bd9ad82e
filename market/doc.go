// Package market is cube's model market: a team's model registry with
// lineage, downloads and evaluations as Kubernetes Jobs, one-call serving
// and fine-tuning, and the catalogue of architecture facts the planners
// need.
//
// # Registry
//
// A Registry keeps versions of a team's models. Each Version records its
// artifact (pvc://, s3://, hf:// or modelscope:// with format, precision,
// size and checksum), its lineage (base model, datasets, the training
// release and job, hyperparameters), metrics from evaluations, tags and a
// stage (none, staging, production, archived) with a history of changes.
// The artifact, lineage and description never change once registered
// (ErrImmutable); every change of the rest compares and swaps on the
// stored revision (ErrConflict), and Registry methods retry on conflict,
// so concurrent writers lose nothing. References name versions:
// "support-bot", "support-bot@3", "support-bot@production".
//
//	store, _ := market.OpenFileStore("registry.db")
//	reg := market.NewRegistry(store)
//	v, _ := reg.Register(ctx, market.Version{Model: "support-bot", Artifact: ..., Lineage: ...})
//	reg.RecordMetrics(ctx, v.Ref(), map[string]float64{"mmlu/acc": 0.71})
//	reg.Promote(ctx, v.Ref(), market.StageProduction, market.Promotion{By: "alice"})
//	found, _ := reg.Search(ctx, market.Query{MinMetrics: map[string]float64{"mmlu/acc": 0.7}, OrderBy: "mmlu/acc"})
//
// Two stores pass one conformance suite, concurrent writers and writer
// processes killed mid-stream included. FileStore is one bbolt file,
// crash-safe (copy-on-write pages, fsync before the commit is visible)
// and shared by several processes through its file lock; it opens the
// file per operation so other processes get their turn. KubernetesStore
// keeps one ConfigMap per version ("<model>-v<n>", labelled by cube and by
// model, stage and tags, at most MaxObjectBytes each), lists by label and
// compares and swaps on resourceVersion: no server of cube's own. Measured
// here (go test -bench, two shared cores): the file store with 10,000
// versions registers in 1.3 ms (an fsync), reads a version in 0.09 ms,
// resolves @production among a model's 100 versions in 1 ms and scans all
// 10,000 for a search in 92 ms; the Kubernetes store on a loopback API
// server with 1,000 versions registers in 5 ms, reads in 1.2 ms and
// searches by tag (a label selector) in 6 ms.
//
// # Downloads and evaluations
//
// Download is a Workload, a batch/v1 Job that fetches a model from Hugging
// Face (hf download), ModelScope (modelscope download) or S3 (aws s3 sync)
// into a claim: revision pinning, the token from a Secret, a mirror
// endpoint, resumed by the Job's retries; it reports its size and checksum
// in its termination message (Checksum computes the same for files already
// on a volume) and RegisterDownload registers the version.
// Evaluate is a Job running lm-evaluation-harness on benchmarks against a
// served endpoint or the version's weights (vLLM on NVIDIA or Ascend; a
// LoRA adapter on its base weights, through Entry.Evaluate);
// RecordEvaluation writes the scores to the version.
//
// # One call
//
// Get finds a model in the registry or the catalogue and returns an Entry:
// Download, Evaluate, FineTune and Serve on it: entry.Serve(name,
// hardware.L4) is a serving Service sized by the planner from the
// architecture the lineage leads to; a LoRA adapter version (FormatLoRA)
// is served on the base weights its lineage names. FineTune takes a function that
// builds the training workload (a Trainer: an llm fine-tune or any train
// builder, adapted by TrainJob with the datasets and settings of its run)
// and registers the result with its lineage. A Promotion's Rollout applies the serving release when a
// version reaches production.
//
// # Catalogue
//
// The catalogue holds the architecture facts that memory and throughput
// planners need: the task (text generation, vision-language chat,
// embedding, reranking, classification), layers,
// hidden size, attention and KV heads, head dimension, vocabulary, context
// length, DeepSeek's MLA dimensions, mixture-of-experts layout, an
// encoder's position table and head, a vision tower's layout, parameter
// counts (total, active and in the vision tower), the format the published
// weights are stored in, and the license.
//
// The built-in catalogue holds Llama-3.1 8B and 70B, Llama-3.2 1B and 3B, Qwen2.5
// 7B, 14B, 32B and 72B, Qwen3-8B and Qwen3-30B-A3B (mixture of experts),
// Llama-3.3-70B, DeepSeek-V3 and DeepSeek-R1, the R1 distills of Qwen2.5
// (7B, 14B, 32B) and Llama (8B, 70B), GLM-4-9B and Mistral-7B v0.3, base
// and instruction-tuned where both exist; the vision-language
// Qwen2.5-VL-3B and -7B Instruct; the embedding model bge-m3 and the
// rerankers bge-reranker-v2-m3 and bge-reranker-base. Every architecture's numbers were
// read from a config.json (testdata/SOURCES.md says which); testdata holds
// those files and the tests check that FromHFConfig reads each to the same
// facts. Siblings without a file of their own share an architecture with
// one that has: base and instruction-tuned pairs (the Llama-3.2 Instruct
// models with their bases among them), DeepSeek-R1 with V3,
// Llama-3.3-70B with Llama-3.1-70B, and the R1 distills, which are
// fine-tunes of Qwen2.5 and Llama bases, with those bases.
//
//	m, err := models.Lookup("Qwen/Qwen2.5-7B-Instruct")
//	// m.Layers == 28, m.KVHeads == 4, m.KVBytesPerToken(models.BF16) == 57344
//
// Lookup accepts a catalogue name or a Hugging Face id in any case, and
// resolves a base or instruction-tuned sibling the catalogue does not list
// ("Qwen/Qwen2.5-72B") to the one it does. FromHFConfig reads any
// Llama-style, Qwen2, Qwen3, Mistral, Mixtral, GLM/ChatGLM or
// DeepSeek-V2/V3 config.json, Qwen2.5-VL's (vision tower included) and the
// BERT, RoBERTa and XLM-RoBERTa encoders', so a team's own fine-tunes can
// be planned too.
//
// Model.Task says which engine serves a model: text-generating decoders
// (Generates) go to vLLM and its peers, encoders (IsEncoder; bge-m3 and
// the rerankers) to Text Embeddings Inference, serve.TEI. An encoder keeps
// no KV cache (KVBytesPerToken is 0) and its ContextLength is its longest
// input: max_position_embeddings less the position offset, pad_token_id +
// 1 for the RoBERTa family (8194 - 2 = 8192 for bge-m3), as TEI computes it.
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
//	             + 2·d when queries and keys are normalised per head (Qwen3)
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
// A Qwen2.5-VL vision tower (vision_config, writing h, i and n for its
// hidden_size, intermediate_size and depth, p and t for patch_size and
// temporal_patch_size, c for in_channels, s for spatial_merge_size and o
// for out_hidden_size) adds, after transformers' modeling_qwen2_5_vl.py:
//
//	patch embed  c·t·p²·h                       (Conv3d, no bias)
//	per block    2h + 3h² + 3h + h² + h          (two RMSNorms, qkv and proj with biases)
//	             + 3·h·i + 2i + h                (gated MLP with biases)
//	merger       h + (s²h)² + s²h + s²h·o + o    (RMSNorm, two linear layers)
//
// 676.55 M for every size's tower, 8.29 B in all for Qwen2.5-VL-7B.
//
// A BERT-style encoder (modeling_bert.py, modeling_xlm_roberta.py; P for
// max_position_embeddings, T for type_vocab_size) counts
//
//	embeddings   V·h + P·h + T·h + 2h           (word, position, token type, LayerNorm)
//	per layer    4h² + 4h + 2h                   (q, k, v, output dense with biases, LayerNorm)
//	             + 2·h·i + i + h + 2h            (FFN with biases, LayerNorm)
//	pooler       h² + h                          (bare encoders and BERT classifiers)
//	head         h² + h (RoBERTa's dense) + h·labels + labels
//
// 568 M for bge-m3 and bge-reranker-v2-m3, 278 M for bge-reranker-base.
//
// # KV cache
//
// Model.KVBytesPerToken is 2 × L × n_kv × d × bytes for multi-head and
// grouped-query attention and (kv_lora_rank + qk_rope_head_dim) × L × bytes
// for MLA, which caches one latent shared by every head; an encoder caches
// nothing, and a vision tower caches nothing either.
// Model.KVBytesPerTokenPerLayer gives one tensor-parallel rank's share the
// way vLLM sizes its pages: heads split across ranks, replicated when the
// ranks outnumber them, and the MLA latent replicated on every rank.
package market
