// Package serve runs models behind an OpenAI-compatible API on Kubernetes,
// sizes them for the accelerators they run on, and talks to them.
//
// # Engines and objects
//
// A Service is one served model. Its constructor picks the engine: VLLM,
// SGLang, TGI, Ollama, MindIE (Ascend NPUs), Triton, or TEI (Text
// Embeddings Inference, for embedding and reranker models). Objects renders a
// Deployment (a LeaderWorkerSet when one replica spans several nodes), the
// Service in front of it, a PodDisruptionBudget for more than one replica,
// a HorizontalPodAutoscaler when it autoscales and a ConfigMap when the
// engine reads a config file. Pod settings and hardware come from the
// shared pod builder, so the same service renders for NVIDIA or Ascend by
// swapping the hardware profile:
//
//	svc := serve.VLLM("qwen-chat", "Qwen/Qwen2.5-7B-Instruct").On(hardware.L4).Auto()
//	objs, err := svc.Objects()
//
// Models come from a PVC path (pvc://claim/path), Hugging Face
// (hf://org/model, the token through a secretKeyRef, an optional mirror),
// S3 (s3://bucket/prefix, downloaded by an init container) or ModelScope
// (modelscope://org/model). Multi-node serving uses LeaderWorkerSet
// (sigs.k8s.io/lws v0.8.0): vLLM and SGLang over Ray, MindIE across 910B
// nodes, which also needs a rank-table ConfigMap the caller fills and names
// with RankTable (nothing fills one for a LeaderWorkerSet). Clients reach
// every layout through the Service <name>-api, whose in-cluster URL is
// serve.URL(svc): the name <name> belongs to the headless Service the
// LeaderWorkerSet controller creates for its pods' DNS names. AutoPlan(svc)
// returns the plan Auto sized a service with.
//
// # Credentials
//
// Credentials come from Secrets and never appear in the objects: HFToken
// for gated models, S3Credentials for s3:// downloads, APIKey for
// the engine's own bearer token (VLLM_API_KEY for vLLM, --api-key for SGLang
// and TGI). An --api-key value among the arguments (AddArgs), or HF_TOKEN or VLLM_API_KEY
// set with Env, is refused.
//
// # Triton model repositories
//
// Triton serves a model repository: an existing one on a claim or in S3
// (serve.Triton(name, "pvc://models/repository")), or one cube generates.
// TritonModelConfig is a typed config.pbtxt (name, platform or backend,
// max_batch_size, inputs and outputs, instance groups, dynamic batching,
// the decoupled transaction policy, parameters) with the field names and
// enum spellings of Triton's model_config.proto; ConfigPbtxt validates it
// and renders protobuf text format. AddTritonModel puts each model's
// config.pbtxt, and text files for its version directory (a Python
// backend's model.py), into the ConfigMap, whose volume items lay out
// TritonRepositoryPath/<model>/config.pbtxt and <model>/1/<file>.
//
// For Triton's vLLM backend, TritonVLLMModel gives the configuration the
// backend expects (backend "vllm", KIND_MODEL, decoupled) and the
// Service's source becomes the model's weights: cube writes <model>/1/model.json
// from the same engine settings `vllm serve` gets as flags (TensorParallel,
// MaxModelLen, MemoryUtilization, DType, Quantization, PrefixCaching…),
// runs the tritonserver vllm-python-py3 image, and loads hf://, modelscope://,
// pvc:// and s3:// weights as the vLLM engine does (the Hugging Face token
// through a secretKeyRef):
//
//	svc := serve.Triton("qwen", "hf://Qwen/Qwen2.5-7B-Instruct").
//		AddTritonModel(serve.TritonVLLMModel("qwen")).
//		On(hardware.L4).Accelerators(1).MaxModelLen(8192)
//
// Model files too large for a ConfigMap (ONNX, TensorRT, TorchScript
// weights) stay in an existing repository: render its config.pbtxt with
// ConfigPbtxt and store it there.
//
// Canary splits traffic between two Services by weight with a Gateway API
// HTTPRoute (module sigs.k8s.io/gateway-api v1.6.3: v1.7.0 needs Go 1.27).
// The cluster needs a Gateway API implementation (Envoy Gateway, Istio,
// Cilium…) and a Gateway for the route to attach to (Split.Gateway).
// Wait reads the route as the Gateway controllers report it
// (HTTPRouteStatus): Ready once every parent Gateway has accepted it with
// its backends resolved, Failed when one refuses it; without a Gateway
// controller nothing answers and the route stays InProgress.
//
// A cube.Client reads Deployments and Services by itself; the
// LeaderWorkerSet of a multi-node service and a Split's HTTPRoute it reads
// once given Kinds (cube.Kinds(serve.Kinds()...), or kinds.All()).
// Without them they read Unknown, and Wait for the release fails at once
// with cube.ErrNeverReaches.
//
// # Planner
//
// Plan chooses the layout Auto renders and says what each device's memory
// holds. It follows how vLLM sizes its KV cache (hardware.md §4.4,
// vllm/v1/worker/gpu_worker.py):
//
//   - vLLM claims gpu_memory_utilization (default 0.9) of each device's
//     TOTAL memory, ⌈0.9 × memory⌉, not of the free memory. The memory is
//     what the driver reports (GPU Feature Discovery's nvidia.com/gpu.memory:
//     23034 MiB for an L4), less than the datasheet's 24 GiB; the profile's
//     MemoryBytes holds it, and a copy of the profile with another size
//     is planned with that size.
//   - The CUDA (or CANN) context, NCCL/HCCL buffers and captured CUDA
//     graphs sit outside that share: vLLM starts NCCL before it measures
//     and captures graphs after it has sized the KV cache. Plan refuses a
//     utilisation that leaves less than 1 GiB outside (change it with
//     Overhead).
//   - Weights take parameters × bytes per parameter (bf16 2, fp8 and int8 1,
//     int4 0.5; group-quantization scales not counted), split evenly over
//     TP × PP ranks. A vision-language model's parameters include its
//     vision tower (models.Model.VisionParameters, 677 M for Qwen2.5-VL);
//     the memory of vLLM's profiling run through that tower (its encoder
//     cache) is not estimated.
//   - Inside the share, a reserve is held back for what vLLM's profiling
//     run measures: the gate and up activations of one forward pass of
//     max_num_batched_tokens tokens (tokens × 2 × FFN width ÷ TP × 2 bytes;
//     the FFN width of an MoE layer is the larger of the dense width and
//     (top-k + shared experts) × expert width) and the fp32 logits of
//     max_num_seqs sequences (sequences × vocabulary × 4 bytes). vLLM's
//     OpenAI server batches 8192 tokens and 1024 sequences on devices of at
//     least 70 GiB other than the A100, 2048 and 256 elsewhere; so does
//     Plan (MaxBatchedTokens and MaxSequences change them). This is an
//     estimate: vLLM measures the real peak at start-up.
//   - The rest is KV cache. One layer's page for one token is 2 × KV heads
//     per rank × head_dim × bytes, with KV heads split over TP ranks and
//     replicated (one per rank) when TP exceeds them; for DeepSeek's MLA it
//     is (kv_lora_rank + qk_rope_head_dim) × bytes on every rank, since the
//     latent is shared by all heads and not split. A rank holds the layers
//     of its pipeline stage (the fullest stage counts).
//     On the Ascend 310P, vLLM-Ascend keeps only half of what is left for
//     the KV cache, and so does Plan.
//   - Blocks = KV memory ÷ (block size × page × layers), rounded down, with
//     16-token blocks on GPUs and vLLM-Ascend's 128-token blocks on NPUs;
//     token capacity = blocks × block size; concurrent sequences = capacity
//     ÷ context length, rounded down.
//   - A layout fits when one sequence of the context length fits, the
//     condition under which vLLM starts.
//
// Auto renders the plan's layout and context length for every engine it
// sizes, and its memory utilisation for vLLM and MindIE only: SGLang's
// --mem-fraction-static covers weights and the KV pool alone and SGLang
// derives it from the device's memory itself, and TGI sizes its KV cache by
// its own warm-up, so Auto leaves their fractions to them.
//
// Plan sizes models that generate text (models.Model.Generates). It
// refuses an embedding, reranking or classification model, which has no KV
// cache: serve those with TEI, one model on one device. A Service checks
// the same when it knows the model's facts: TEI refuses a text-generating
// model, and vLLM, SGLang, TGI and MindIE refuse an encoder; market.Entry.Serve
// builds a TEI Service for an encoder the market found.
//
// Plan tries tensor-parallel sizes 1, 2, 4 … up to the node's devices that
// divide the attention heads (and divide, or are a multiple of, the KV
// heads, and divide a vision tower's heads, which vLLM splits too), smallest first, then adds pipeline stages on the largest of them:
// on the same node while it has devices left, then across nodes. The
// returned PlanResult carries TensorParallel, PipelineParallel, Nodes and
// AcceleratorsPerNode for the builders and every memory figure for people
// (String prints them). When nothing fits, a *FitError says by how much.
//
// # Client
//
// Package inference holds the client for any OpenAI-compatible server
// (vLLM, SGLang, Ollama's /v1, TGI, MindIE); give it the service's URL:
//
//	url, err := serve.URL(svc) // http://qwen-chat-api.team-a:8000
//	c, err := inference.NewClient(url,
//		inference.ServedModel("qwen-chat"), inference.APIKeyFromEnv("QWEN_API_KEY"))
//	resp, err := c.Chat(ctx, inference.UserMessage("Hello"))
//
// Client does the same from the release Apply returned: it waits until the
// release is Ready and returns the client with the served model name set.
// Its URL is the in-cluster one; from outside the cluster, forward the
// Service's port and use ClientAt:
//
//	chat, err := serve.Client(ctx, rel, svc, inference.APIKeyFromEnv("QWEN_API_KEY"))
//	// outside: kubectl port-forward -n team-a svc/qwen-chat-api 8000:8000
//	chat, err = serve.ClientAt(ctx, rel, svc, "http://127.0.0.1:8000")
//
// Package serve/servetest is an OpenAI-compatible server for tests of code
// that talks to a served model.
package serve
