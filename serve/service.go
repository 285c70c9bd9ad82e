package serve

import (
	"fmt"
	"math"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/urlcheck"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/pod"
)

// Service builds one served model: a Deployment (a LeaderWorkerSet when a
// replica spans nodes), its Service, a PodDisruptionBudget when it has more
// than one replica, a HorizontalPodAutoscaler when it autoscales and a
// ConfigMap when the engine reads a config file. The constructors (VLLM,
// SGLang, Ollama, MindIE, TGI, Triton) choose the engine; the methods below
// are the same for all of them and each engine renders them with its own
// flags. A setting an engine does not have is reported by Objects, never
// silently dropped.
//
// Pod settings (image, env, secrets, volumes, CPU, memory, hardware
// profile, GPUs, fabric, placement…) come from the embedded pod.Builder.
// Args and AddArgs (and ExtraArgs) add flags after the engine's own.
type Service struct {
	pod.Builder[Service]
	engine *engine
	model  string

	replicas          *int32
	tp, pp, nodes     int
	maxModelLen       int
	memoryUtilization float64
	dtype             string
	quantization      string
	kvCacheDType      string
	prefixCaching     *bool
	loras             []loraAdapter
	servedName        string
	trustRemoteCode   bool

	hfToken    *secretKey
	apiKey     *secretKey
	hfEndpoint string
	s3Secret   string
	s3Endpoint string
	s3Region   string
	cacheClaim string

	startupTimeout time.Duration
	autoscale      *autoscaling
	maxUnavailable *int32

	auto  *autoSettings
	facts *models.Model

	rankTable       string
	mindIEConfig    []func(*MindIEConfig)
	tritonControl   string
	tritonModels    []string
	tritonConfigs   []TritonModelConfig
	ollamaKeepAlive string

	problems field.ErrorList
	set      map[string]bool // settings used, for engine support checks
}

type secretKey struct{ name, key string }

type loraAdapter struct{ name, source string }

type autoSettings struct{ opts []PlanOption }

// DefaultStartupTimeout is how long a pod may take to download and load its
// model before Kubernetes restarts it; change it with StartupTimeout.
const DefaultStartupTimeout = 30 * time.Minute

// maxNameLength bounds the release name: it names the Deployment or
// LeaderWorkerSet, whose StatefulSets Kubernetes limits to 52 characters.
const maxNameLength = 52

func newService(e *engine, name, model string) *Service {
	s := &Service{engine: e, model: model, set: map[string]bool{}}
	podspec.Of(&s.Handle).Init(s, e.kind, name)
	return s
}

// VLLM serves model with vLLM (`vllm serve`), OpenAI-compatible on port
// 8000. model is a Hugging Face id (Qwen/Qwen2.5-7B-Instruct) or a source
// URI: hf://, modelscope://, pvc://claim/path or s3://bucket/prefix. On an
// Ascend profile it uses the vllm-ascend image.
func VLLM(name, model string) *Service { return newService(vllmEngine, name, model) }

// SGLang serves model with SGLang (`python3 -m sglang.launch_server`),
// OpenAI-compatible on port 30000. Sources as for VLLM.
func SGLang(name, model string) *Service { return newService(sglangEngine, name, model) }

// TGI serves model with Hugging Face Text Generation Inference
// (`text-generation-launcher`), OpenAI-compatible on port 8080. Sources:
// hf://, pvc:// and s3://.
func TGI(name, model string) *Service { return newService(tgiEngine, name, model) }

// TEI serves an embedding, reranker or classifier model with Hugging Face
// Text Embeddings Inference (`text-embeddings-router`) on port 8080: the
// OpenAI-compatible /v1/embeddings, which rag's OpenAI embedder and
// Client.Embeddings call, and /rerank for rerankers (rag's TEI reranker).
// Sources: hf://, pvc:// and s3://. Prometheus metrics are on port
// TEIMetricsPort; ScaleOnQueue scales on te_queue_size.
func TEI(name, model string) *Service { return newService(teiEngine, name, model) }

// Ollama serves model with Ollama on port 11434 (OpenAI-compatible under
// /v1). model is an Ollama library name (qwen2.5:7b or ollama://qwen2.5:7b),
// hf://org/repo-GGUF or modelscope://org/repo-GGUF; an init container pulls
// it before the server starts.
func Ollama(name, model string) *Service { return newService(ollamaEngine, name, model) }

// MindIE serves model with Huawei MindIE on Ascend NPUs (On(hardware.Ascend910B3)
// or another 910B profile), OpenAI-compatible on port 1025. Its config.json
// is rendered from MindIEConfig into a ConfigMap. model is pvc://claim/path
// or s3://bucket/prefix: MindIE loads weights from a local directory.
func MindIE(name, model string) *Service { return newService(mindieEngine, name, model) }

// Triton serves the Triton Inference Server model repository at repository
// (pvc://claim/path or s3://bucket/prefix) on ports 8000 (HTTP, KServe v2),
// 8001 (gRPC) and 8002 (metrics). With AddTritonModel cube generates the
// repository instead, and repository is the source its models load: the
// weights of a vLLM-backend model (hf://, modelscope://, pvc://, s3://).
func Triton(name, repository string) *Service {
	return newService(tritonEngine, name, repository)
}

func (s *Service) use(setting string) {
	if s.set == nil { // a zero Service; Objects reports it
		s.set = map[string]bool{}
	}
	s.set[setting] = true
}

func (s *Service) fail(err *field.Error) { s.problems = append(s.problems, err) }

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

// GPUMemoryUtilization sets the fraction of each device's memory the engine
// may claim, in (0, 1] (vLLM --gpu-memory-utilization, SGLang
// --mem-fraction-static, TGI --cuda-memory-fraction, MindIE
// NPU_MEMORY_FRACTION).
func (s *Service) GPUMemoryUtilization(fraction float64) *Service {
	if s == nil {
		return nil
	}
	if !(fraction > 0 && fraction <= 1) || math.IsNaN(fraction) {
		s.fail(field.Invalid(field.NewPath("spec", "gpuMemoryUtilization"), fraction, "must be in (0, 1]"))
	}
	s.use("gpuMemoryUtilization")
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

// ExtraArgs appends engine flags after the ones the Service renders, for
// settings it has no method for (AddArgs does the same).
func (s *Service) ExtraArgs(args ...string) *Service {
	if s == nil {
		return nil
	}
	return s.AddArgs(args...)
}

// HFToken reads the Hugging Face token for gated or private models from a
// Secret key into HF_TOKEN (a secretKeyRef; the token never appears in the
// rendered objects).
func (s *Service) HFToken(secret, key string) *Service {
	if s == nil {
		return nil
	}
	if secret == "" || key == "" {
		s.fail(field.Required(field.NewPath("spec", "hfToken"), "secret name and key are required"))
	} else {
		s.problems = append(s.problems, podspec.ValidateSecretKey(field.NewPath("spec", "hfToken"), secret, key)...)
	}
	s.hfToken = &secretKey{name: secret, key: key}
	return s
}

// APIKeyFromSecret makes the engine require a bearer token, read from key of
// Secret secretName: vLLM through VLLM_API_KEY (which it reads when
// --api-key is not given, vllm/entrypoints/openai/api_server.py), SGLang
// and TGI through --api-key $(CUBE_API_KEY), an environment variable from
// the Secret that Kubernetes substitutes when it starts the container. The
// key never appears in the rendered objects; clients send it with
// APIKey or APIKeyFromEnv. A literal key given to ExtraArgs or Env is
// refused.
func (s *Service) APIKeyFromSecret(secretName, key string) *Service {
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

// HFEndpoint downloads Hugging Face models from a mirror (HF_ENDPOINT), such
// as https://hf-mirror.com.
func (s *Service) HFEndpoint(url string) *Service {
	if s == nil {
		return nil
	}
	if err := checkServerURL(field.NewPath("spec", "hfEndpoint"), url, "give the hub token with HFToken"); err != nil {
		s.fail(err)
	}
	s.hfEndpoint = url
	return s
}

// checkServerURL checks the base URL of a server the pod downloads from,
// rendered into its environment in clear: http or https, a host, no query
// or fragment (the clients append paths to it), and no credentials, which
// would be stored in the objects; credentials is how to give them instead.
// A URL with a user or password is never quoted back.
func checkServerURL(path *field.Path, raw, credentials string) *field.Error {
	u, err := neturl.Parse(raw)
	switch {
	case err != nil:
		return field.Invalid(path, urlcheck.Redact(raw), "not a URL")
	case u.User != nil:
		return field.Forbidden(path, "must not carry credentials (user or password before @; the value is not shown): they would be stored in the objects in clear; "+credentials)
	case u.Scheme != "http" && u.Scheme != "https":
		return field.Invalid(path, raw, "must be an http(s) URL")
	case u.Hostname() == "":
		return field.Invalid(path, raw, "must name a host")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return field.Invalid(path, raw, "must not have a query or fragment: the client appends paths to it")
	}
	return nil
}

// S3Credentials names the Secret the s3:// download reads its keys from:
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (secretKeyRefs). Without it
// the downloader uses the pod's own identity (IRSA, instance profile).
func (s *Service) S3Credentials(secret string) *Service {
	if s == nil {
		return nil
	}
	if secret == "" {
		s.fail(field.Required(field.NewPath("spec", "s3Credentials"), "a Secret name is required"))
	} else {
		s.problems = append(s.problems, podspec.ValidateSecretKey(field.NewPath("spec", "s3Credentials"), secret, "AWS_ACCESS_KEY_ID")...)
	}
	s.s3Secret = secret
	return s
}

// S3Endpoint points the s3:// download at an S3-compatible store (MinIO,
// Ceph, OSS) instead of AWS (AWS_ENDPOINT_URL).
func (s *Service) S3Endpoint(url string) *Service {
	if s == nil {
		return nil
	}
	if err := checkServerURL(field.NewPath("spec", "s3Endpoint"), url, "give the keys with S3Credentials"); err != nil {
		s.fail(err)
	}
	s.s3Endpoint = url
	return s
}

// S3Region sets the region of the s3:// bucket (AWS_DEFAULT_REGION).
func (s *Service) S3Region(region string) *Service {
	if s == nil {
		return nil
	}
	if !isRegion(region) {
		s.fail(field.Invalid(field.NewPath("spec", "s3Region"), region, "must be a region name such as us-east-1: lowercase letters, digits and '-'"))
	}
	s.s3Region = region
	return s
}

// isRegion reports whether r is spelt like an S3 region (us-east-1,
// cn-north-1, a MinIO or Ceph zone name): an empty one would render no
// AWS_DEFAULT_REGION and leave the call without effect.
func isRegion(r string) bool {
	if r == "" || len(r) > 63 || r[0] == '-' {
		return false
	}
	for _, c := range r {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// ModelCache keeps downloaded models on an existing PersistentVolumeClaim,
// mounted at /model-cache, so restarts and new replicas skip the download:
// the Hugging Face and ModelScope caches, s3:// downloads and Ollama's
// model store live there.
func (s *Service) ModelCache(claim string) *Service {
	if s == nil {
		return nil
	}
	s.cacheClaim = claim
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
// GPUMemoryUtilization, TensorParallel, Quantization and KVCacheDType are
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

// RankTable names the ConfigMap holding MindIE's multi-node rank table
// (key hccl.json, the Ascend operator's format, with "status":
// "completed"), which a MindIE replica across nodes requires: Ascend's
// operator fills rings-config-<job> only for the owners it watches
// (AscendJobs, Volcano Jobs and Deployments: acjobKind, vcjobKind and
// deployKind in mind-cluster component/ascend-operator/pkg/controllers/v1/
// consts.go), never for the LeaderWorkerSet cube renders, and the table's
// NPU device IPs are known only on the nodes. MindIE only.
func (s *Service) RankTable(configMap string) *Service {
	if s == nil {
		return nil
	}
	s.use("rankTable")
	s.rankTable = configMap
	return s
}

// ConfigureMindIE edits the MindIE config.json after the Service has filled
// it (model, devices, ports, lengths), for the settings it has no method
// for, such as ScheduleConfig.MaxBatchSize. MindIE only.
func (s *Service) ConfigureMindIE(edit func(*MindIEConfig)) *Service {
	if s == nil {
		return nil
	}
	s.use("configureMindIE")
	if edit == nil {
		s.fail(field.Required(field.NewPath("spec", "mindIEConfig"), "edit function is nil"))
		return s
	}
	s.mindIEConfig = append(s.mindIEConfig, edit)
	return s
}

// ModelControl sets Triton's --model-control-mode (none, poll or explicit)
// and, for explicit, the models to load at startup (--load-model). Triton
// only.
func (s *Service) ModelControl(mode string, load ...string) *Service {
	if s == nil {
		return nil
	}
	s.use("modelControl")
	if !slices.Contains([]string{"none", "poll", "explicit"}, mode) {
		s.fail(field.NotSupported(field.NewPath("spec", "modelControl"), mode, []string{"none", "poll", "explicit"}))
	}
	s.tritonControl = mode
	s.tritonModels = slices.Clone(load)
	return s
}

// KeepAlive sets how long Ollama keeps the model in memory after the last
// request (OLLAMA_KEEP_ALIVE: "5m", "1h"; the default "-1" keeps it
// loaded for as long as the server runs). Ollama only.
func (s *Service) KeepAlive(d string) *Service {
	if s == nil {
		return nil
	}
	s.use("keepAlive")
	if d == "" {
		s.fail(field.Required(field.NewPath("spec", "keepAlive"), "a duration such as 5m, or -1"))
	} else if _, err := time.ParseDuration(d); err != nil {
		// Ollama reads OLLAMA_KEEP_ALIVE as a Go duration or whole seconds
		// and silently keeps its 5-minute default for anything else
		// (envconfig.KeepAlive).
		if _, err := strconv.ParseInt(d, 10, 64); err != nil {
			s.fail(field.Invalid(field.NewPath("spec", "keepAlive"), d, "must be a duration such as 5m or 1h30m, whole seconds, or -1 (forever): Ollama ignores anything else"))
		}
	}
	s.ollamaKeepAlive = d
	return s
}

// ServicePort is the port the Service exposes the engine's HTTP API on (0
// for a Service not made by a constructor).
func (s *Service) ServicePort() int32 {
	if s == nil || s.engine == nil {
		return 0
	}
	return s.engine.port
}

// EngineName is the engine's name, also the cube.dev/kind label of the
// objects: vllm, sglang, tgi, ollama, mindie or triton ("" for a Service
// not made by a constructor).
func (s *Service) EngineName() string {
	if s == nil || s.engine == nil {
		return ""
	}
	return s.engine.kind
}

// ServiceName is the name of the Kubernetes Service clients reach the
// engine's HTTP API through: the release name with "-api". It cannot be the
// release name itself: a multi-node replica is a LeaderWorkerSet of that
// name, and the LeaderWorkerSet controller creates the headless Service
// its pods' DNS names (LWS_LEADER_ADDRESS, <name>-0.<name>.<namespace>)
// live under only when no Service of that name exists yet
// (CreateHeadlessServiceIfNotExists, sigs.k8s.io/lws v0.8.0
// pkg/utils/controller/controller_utils.go). One name for every layout
// keeps the endpoint the same when Auto moves a model onto several nodes.
func (s *Service) ServiceName() string {
	if s == nil {
		return ""
	}
	return podspec.Of(&s.Handle).Name() + "-api"
}

// settingNames lists, for messages, what each setting is called.
var settingNames = map[string]string{
	"tensorParallel":       "TensorParallel",
	"pipelineParallel":     "PipelineParallel",
	"maxModelLen":          "MaxModelLen",
	"gpuMemoryUtilization": "GPUMemoryUtilization",
	"dtype":                "DType",
	"quantization":         "Quantization",
	"kvCacheDType":         "KVCacheDType",
	"prefixCaching":        "PrefixCaching",
	"lora":                 "LoRA",
	"servedModelName":      "ServedModelName",
	"trustRemoteCode":      "TrustRemoteCode",
	"rankTable":            "RankTable",
	"configureMindIE":      "ConfigureMindIE",
	"modelControl":         "ModelControl",
	"tritonModels":         "AddTritonModel",
	"keepAlive":            "KeepAlive",
	"apiKey":               "APIKeyFromSecret",
}

// checkSupport reports every setting used that the engine does not have.
func (s *Service) checkSupport() field.ErrorList {
	e, f := s.engine, s.engine.flags
	supported := map[string]bool{
		"tensorParallel":       f.tensorParallel != "",
		"pipelineParallel":     f.pipelineParallel != "",
		"maxModelLen":          f.maxModelLen != "",
		"gpuMemoryUtilization": f.memoryUtilization != "",
		"dtype":                f.dtype != "",
		"quantization":         f.quantization != "",
		"kvCacheDType":         f.kvCacheDType != "",
		"prefixCaching":        f.prefixCachingSupported(),
		"lora":                 len(e.loraSources) > 0,
		"servedModelName":      f.servedModelName != "",
		"trustRemoteCode":      f.trustRemoteCode != "",
		"rankTable":            e == mindieEngine,
		"configureMindIE":      e == mindieEngine,
		"modelControl":         isTriton(e),
		"tritonModels":         isTriton(e),
		"keepAlive":            e == ollamaEngine,
		"apiKey":               f.apiKeyEnv != "" || f.apiKey != "",
	}
	var errs field.ErrorList
	for _, name := range sortedKeys(s.set) {
		if !supported[name] {
			errs = append(errs, field.Forbidden(field.NewPath("spec", name),
				fmt.Sprintf("%s has no %s setting", e.title, settingNames[name])))
		}
	}
	if s.dtype != "" && len(f.dtypes) > 0 && !slices.Contains(f.dtypes, s.dtype) {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "dtype"), s.dtype, f.dtypes))
	}
	if s.kvCacheDType != "" && len(f.kvCacheDTypes) > 0 && !slices.Contains(f.kvCacheDTypes, s.kvCacheDType) {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "kvCacheDType"), s.kvCacheDType, f.kvCacheDTypes))
	}
	return errs
}
