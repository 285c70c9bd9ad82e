package serve

import (
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/modelsource"
	"github.com/cubestudio/cube/internal/podspec"
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
// Its settings are the methods below and every pod setting of the embedded
// pod.Builder (image, env, secrets, volumes, CPU, memory, hardware profile,
// accelerators, fabric, placement…; go doc pod.Builder): all of them apply.
// Args and AddArgs add flags after the engine's own. Reads that are not
// settings are package functions: URL (the in-cluster URL clients use) and
// AutoPlan (the plan Auto sized it with).
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

	source     modelsource.Settings
	apiKey     *secretKey
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
	ollamaKeepAlive *time.Duration

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
	podspec.Of(&s.Handle).RendersClaims() // serve/workload.go appends them
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

// HFToken reads the Hugging Face token for gated or private models from a
// Secret's key into HF_TOKEN (a secretKeyRef; the token never appears in
// the rendered objects).
func (s *Service) HFToken(ref pod.SecretKeyRef) *Service {
	if s == nil {
		return nil
	}
	s.source.HFToken(field.NewPath("spec"), ref)
	return s
}

// HFEndpoint downloads Hugging Face models from a mirror (HF_ENDPOINT), such
// as https://hf-mirror.com: an http(s) URL without credentials, query or
// fragment.
func (s *Service) HFEndpoint(url string) *Service {
	if s == nil {
		return nil
	}
	s.source.HFEndpoint(field.NewPath("spec"), url)
	return s
}

// S3Credentials reads the access key pair the s3:// download (the AWS
// CLI) signs with from Secret keys into AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY (awscli/botocore/credentials.py). Without it the
// downloader uses the pod's own identity (IRSA, instance profile).
func (s *Service) S3Credentials(accessKeyID, secretAccessKey pod.SecretKeyRef) *Service {
	if s == nil {
		return nil
	}
	s.source.S3Credentials(field.NewPath("spec"), accessKeyID, secretAccessKey)
	return s
}

// S3Endpoint points the s3:// download at an S3-compatible store (MinIO,
// Ceph, OSS) instead of AWS (AWS_ENDPOINT_URL).
func (s *Service) S3Endpoint(url string) *Service {
	if s == nil {
		return nil
	}
	s.source.S3Endpoint(field.NewPath("spec"), url)
	return s
}

// S3Region sets the region of the s3:// bucket (AWS_DEFAULT_REGION).
func (s *Service) S3Region(region string) *Service {
	if s == nil {
		return nil
	}
	s.source.S3Region(field.NewPath("spec"), region)
	return s
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
