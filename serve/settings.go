package serve

import (
	"math"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/pod"
)

// Replicas sets how many copies of the model serve (default 1). With
// Autoscale the autoscaler owns the count instead.
func (s *Service) Replicas(n int) *Service {
	if s == nil {
		return nil
	}
	path := field.NewPath("spec", "replicas")
	if n < 0 {
		s.fail(field.Invalid(path, n, "must not be negative"))
	}
	n32, err := podspec.Int32(path, n)
	if err != nil {
		s.fail(err)
	}
	s.replicas = &n32
	return s
}

// TensorParallel sets how many devices each layer is split across (vLLM
// --tensor-parallel-size, SGLang --tp-size, TGI --num-shard, MindIE
// worldSize). Without it the engine uses every device of the pod.
func (s *Service) TensorParallel(n int) *Service {
	if s == nil {
		return nil
	}
	if n < 1 {
		s.fail(field.Invalid(field.NewPath("spec", "tensorParallel"), n, "must be at least 1"))
	}
	s.use("tensorParallel")
	s.tp = n
	return s
}

// PipelineParallel sets how many stages the layers are split into (vLLM
// --pipeline-parallel-size, SGLang --pp-size); stages may sit on other
// nodes (see Nodes).
func (s *Service) PipelineParallel(n int) *Service {
	if s == nil {
		return nil
	}
	if n < 1 {
		s.fail(field.Invalid(field.NewPath("spec", "pipelineParallel"), n, "must be at least 1"))
	}
	s.use("pipelineParallel")
	s.pp = n
	return s
}

// Nodes spreads one replica over n nodes, each with the pod's GPUs: the
// objects become a LeaderWorkerSet of group size n and the engine starts
// in its multi-node mode (vLLM over Ray, SGLang --nnodes, MindIE with a
// rank table).
func (s *Service) Nodes(n int) *Service {
	if s == nil {
		return nil
	}
	if n < 1 {
		s.fail(field.Invalid(field.NewPath("spec", "nodes"), n, "must be at least 1"))
	}
	s.nodes = n
	return s
}

// MaxModelLen sets the longest sequence, prompt and output, the engine
// accepts and sizes its KV cache for (vLLM --max-model-len, SGLang
// --context-length, TGI --max-total-tokens, MindIE maxSeqLen, Ollama
// OLLAMA_CONTEXT_LENGTH).
func (s *Service) MaxModelLen(tokens int) *Service {
	if s == nil {
		return nil
	}
	if tokens < 2 {
		s.fail(field.Invalid(field.NewPath("spec", "maxModelLen"), tokens, "must be at least 2"))
	}
	s.use("maxModelLen")
	s.maxModelLen = tokens
	return s
}

// MemoryUtilization sets the fraction of each device's memory the engine
// may claim, in (0, 1] (vLLM --gpu-memory-utilization, SGLang
// --mem-fraction-static, TGI --cuda-memory-fraction, MindIE
// NPU_MEMORY_FRACTION).
func (s *Service) MemoryUtilization(fraction float64) *Service {
	if s == nil {
		return nil
	}
	if !(fraction > 0 && fraction <= 1) || math.IsNaN(fraction) {
		s.fail(field.Invalid(field.NewPath("spec", "memoryUtilization"), fraction, "must be in (0, 1]"))
	}
	s.use("memoryUtilization")
	s.memoryUtilization = fraction
	return s
}

// DType sets the weight and activation type (vLLM and SGLang --dtype: auto,
// half, float16, bfloat16, float, float32; TGI --dtype: float16, bfloat16).
func (s *Service) DType(dtype string) *Service {
	if s == nil {
		return nil
	}
	if dtype == "" {
		// An empty type would render no flag: the call would do nothing.
		s.fail(field.Required(field.NewPath("spec", "dtype"), "a type such as bfloat16, or auto"))
	}
	s.use("dtype")
	s.dtype = dtype
	return s
}

// Quantization names the quantization method of the weights (vLLM and
// SGLang --quantization, TGI --quantize): awq, gptq, fp8, bitsandbytes…
func (s *Service) Quantization(method string) *Service {
	if s == nil {
		return nil
	}
	if method == "" || strings.ContainsAny(method, " \t\n") || strings.HasPrefix(method, "-") {
		s.fail(field.Invalid(field.NewPath("spec", "quantization"), method, "must be a method name such as awq, gptq or fp8"))
	}
	s.use("quantization")
	s.quantization = method
	return s
}

// KVCacheDType sets the KV-cache type (vLLM and SGLang --kv-cache-dtype,
// e.g. fp8; TGI --kv-cache-dtype fp8_e4m3fn or fp8_e5m2).
// It takes the engine's own value, checked against the values that engine
// accepts, because those name variants (fp8_e4m3, fp8_e5m2, auto) that
// models.DType does not; the plan option KVCacheDType takes the
// models.DType whose width sizes the cache, and Auto passes FP8 to the
// planner for any fp8 value.
func (s *Service) KVCacheDType(dtype string) *Service {
	if s == nil {
		return nil
	}
	if dtype == "" || strings.ContainsAny(dtype, " \t\n") {
		s.fail(field.Invalid(field.NewPath("spec", "kvCacheDType"), dtype, "must be a type such as fp8"))
	}
	s.use("kvCacheDType")
	s.kvCacheDType = dtype
	return s
}

// PrefixCaching switches reuse of the KV cache of shared prompt prefixes on
// or off (vLLM --enable-prefix-caching / --no-enable-prefix-caching, SGLang
// --disable-radix-cache when off, TGI PREFIX_CACHING, MindIE
// enablePrefixCache). Without it the engine's default applies.
func (s *Service) PrefixCaching(on bool) *Service {
	if s == nil {
		return nil
	}
	s.use("prefixCaching")
	s.prefixCaching = &on
	return s
}

// LoRA adds a LoRA adapter served under name next to the base model (vLLM
// --enable-lora --lora-modules, SGLang --lora-paths, TGI --lora-adapters).
// source is a Hugging Face id, hf://org/adapter or pvc://claim/path.
// Clients select it with "model": name, except for a hub adapter on TGI,
// which TGI downloads only when given its bare id and then serves under
// that id ("model": "org/adapter").
func (s *Service) LoRA(name, source string) *Service {
	if s == nil {
		return nil
	}
	s.use("lora")
	s.loras = append(s.loras, loraAdapter{name: name, source: source})
	return s
}

// ServedModelName sets the model name clients send in requests (vLLM and
// SGLang --served-model-name, MindIE modelName, Ollama by copying the
// pulled model). The default is the Hugging Face id for hub models and the
// release name for models on a volume.
func (s *Service) ServedModelName(name string) *Service {
	if s == nil {
		return nil
	}
	if name == "" || strings.ContainsAny(name, " \t\n") || strings.HasPrefix(name, "-") {
		// A leading dash would be read as the next flag: the engine's
		// parser then finds --served-model-name without a value.
		s.fail(field.Invalid(field.NewPath("spec", "servedModelName"), name, "must be a non-empty name without whitespace, not starting with '-'"))
	}
	s.use("servedModelName")
	s.servedName = name
	return s
}

// TrustRemoteCode lets the engine run the model repository's own Python
// code (--trust-remote-code; MindIE trustRemoteCode).
func (s *Service) TrustRemoteCode() *Service {
	if s == nil {
		return nil
	}
	s.use("trustRemoteCode")
	s.trustRemoteCode = true
	return s
}

// APIKey makes the engine require a bearer token, read from key of
// Secret secretName: vLLM through VLLM_API_KEY (which it reads when
// --api-key is not given, vllm/entrypoints/openai/api_server.py), SGLang
// and TGI through --api-key $(CUBE_API_KEY), an environment variable from
// the Secret that Kubernetes substitutes when it starts the container. The
// key never appears in the rendered objects; clients send it with
// APIKey or APIKeyFromEnv. A literal key given to AddArgs or Env is
// refused.
func (s *Service) APIKey(ref pod.SecretKeyRef) *Service {
	secretName, key := ref.Name, ref.Key
	if s == nil {
		return nil
	}
	if secretName == "" || key == "" {
		s.fail(field.Required(field.NewPath("spec", "apiKey"), "secret name and key are required"))
	} else {
		s.problems = append(s.problems, podspec.ValidateSecretKey(field.NewPath("spec", "apiKey"), secretName, key)...)
	}
	s.use("apiKey")
	s.apiKey = &secretKey{name: secretName, key: key}
	return s
}

// maxStartupTimeout bounds StartupTimeout: a week covers the download and
// load of any model, and is far inside the probe's int32 seconds.
const maxStartupTimeout = 7 * 24 * time.Hour

// StartupTimeout sets how long a pod may spend downloading and loading the
// model before Kubernetes restarts it (the startup probe; default 30
// minutes, at most a week). The Deployment's progress deadline follows it.
func (s *Service) StartupTimeout(d time.Duration) *Service {
	if s == nil {
		return nil
	}
	switch {
	case d < 10*time.Second:
		s.fail(field.Invalid(field.NewPath("spec", "startupTimeout"), d.String(), "must be at least 10s"))
	case d > maxStartupTimeout:
		// The probe counts in int32 seconds; a longer timeout was cut to
		// about 34 years without a word.
		s.fail(field.Invalid(field.NewPath("spec", "startupTimeout"), d.String(), "must be at most "+maxStartupTimeout.String()))
	}
	s.startupTimeout = d
	return s
}

// DisruptionBudget sets how many replicas voluntary disruptions such as
// node drains may take down at once (of a LeaderWorkerSet: how many groups;
// the budget counts pods, and one evicted pod takes its group down). The
// default, 1, is rendered whenever the service has more than one replica.
func (s *Service) DisruptionBudget(maxUnavailable int) *Service {
	if s == nil {
		return nil
	}
	path := field.NewPath("spec", "disruptionBudget")
	if maxUnavailable < 0 {
		s.fail(field.Invalid(path, maxUnavailable, "must not be negative"))
	}
	n32, err := podspec.Int32(path, maxUnavailable)
	if err != nil {
		s.fail(err)
	}
	s.maxUnavailable = &n32
	return s
}

// Auto sizes the service with the planner (serve.Plan) for the profile given
// to On: tensor parallelism, GPUs per pod, pipeline stages and, when one
// node cannot hold the model, the nodes of a LeaderWorkerSet; it also sets
// the context length it planned for and, for vLLM and MindIE, the memory
// utilisation (SGLang and TGI size their memory themselves). The model's
// facts come from models.Lookup of its id, or from ModelFacts. opts tune
// the plan (serve.ContextLength, serve.MaxNodes…); MaxModelLen,
// MemoryUtilization, TensorParallel, Quantization and KVCacheDType are
// passed on too.
func (s *Service) Auto(opts ...PlanOption) *Service {
	if s == nil {
		return nil
	}
	s.auto = &autoSettings{opts: slices.Clone(opts)}
	return s
}

// ModelFacts gives the architecture of a model the catalogue does not hold
// (or of a model on a volume), for Auto and for the checks Objects makes
// of explicit settings.
func (s *Service) ModelFacts(m models.Model) *Service {
	if s == nil {
		return nil
	}
	s.facts = &m
	return s
}
