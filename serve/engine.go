package serve

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
)

// Default images of the engines. Each constructor uses its engine's image
// unless Image is called; on Ascend NPUs an engine without an Ascend image
// needs Image.
const (
	DefaultVLLMImage       = "vllm/vllm-openai:v0.18.0"
	DefaultVLLMAscendImage = "quay.io/ascend/vllm-ascend:v0.18.0rc1"
	DefaultSGLangImage     = "lmsysorg/sglang:v0.5.9"
	DefaultTGIImage        = "ghcr.io/huggingface/text-generation-inference:3.3.5"
	// DefaultTEIImage is Text Embeddings Inference 1.9.3 for every NVIDIA
	// GPU it supports: the cuda- image (Dockerfile-cuda-all) holds a router
	// per compute capability (75, 80, 90, 100, 120) and its entrypoint
	// (cuda-all-entrypoint.sh) starts the one for the device, where the
	// single-architecture images refuse any other (compute_cap.rs: the
	// plain 1.9 image, built for 8.0, fails on a T4 or an H100). Give
	// cpu-1.9.3 with Image on nodes without a GPU. 1.9 is the first release
	// with --served-model-name (router/src/main.rs), which ServedModelName
	// and market.Entry.Serve render.
	DefaultTEIImage    = "ghcr.io/huggingface/text-embeddings-inference:cuda-1.9.3"
	DefaultTritonImage = "nvcr.io/nvidia/tritonserver:25.06-py3"
	DefaultOllamaImage = "ollama/ollama:0.11.10"
	DefaultMindIEImage = "swr.cn-south-1.myhuaweicloud.com/ascendhub/mindie:2.2.RC1-800I-A2-py311-openeuler24.03-lts"
	// DefaultS3Image runs the init container that downloads s3:// sources.
	DefaultS3Image = "amazon/aws-cli:2.32.8"
)

// engine describes one serving engine: its images, ports, probes, the
// sources it loads and the flag (or config key) each engine-neutral setting
// becomes. Every constructor configures the one Service type with one of
// these; the engine-neutral rendering lives in render.go.
type engine struct {
	// kind is the cube.dev/kind label, the container name and, in messages,
	// what the engine is called.
	kind, title string
	image       string
	ascendImage string // "" = no default image for Ascend NPUs
	// vendorFramework names the vendor build of the engine the hardware
	// catalogue lists for other vendors' devices (hardware.FrameworkVLLM);
	// "" = the engine has none, and Image is required there.
	vendorFramework hardware.Framework
	// gpuImage says the default image is built for accelerators: on a CPU
	// node the caller must give a CPU build with Image.
	gpuImage bool
	// nvidia, ascend and cpu say where the engine runs: on NVIDIA GPUs, on
	// Ascend NPUs, on nodes without accelerators.
	nvidia, ascend, cpu bool

	port  int32                  // the HTTP (OpenAI or KServe v2) port, named "http"
	ports []corev1.ContainerPort // more ports (gRPC, metrics, management)

	// readyPath answers 200 once the model is loaded: startup and readiness.
	readyPath string
	readyPort int32 // 0 = port
	// livePath answers 200 while the server lives; "" uses a TCP check.
	livePath string
	// metricsPath and metricsPort are where Prometheus scrapes.
	metricsPath string
	metricsPort int32 // 0 = port
	// queueMetric is the per-pod metric of waiting requests ScaleOnQueue
	// scales on; "" = the engine exports none.
	queueMetric string

	// bare is the kind of a model reference without a scheme.
	bare SourceKind
	// sources are the kinds of model source the engine loads.
	sources []SourceKind
	// loraSources are the kinds of LoRA adapter source it loads (none =
	// no LoRA support).
	loraSources []SourceKind
	// hub says the engine downloads hub models itself (into HF_HOME).
	hub bool
	// modelScopeEnv makes the engine resolve repository ids on ModelScope.
	modelScopeEnv corev1.EnvVar

	// flags names the engine's flag for each setting; "" means the engine
	// has no such setting and the Service reports its use.
	flags flagSet
	// defaultMaxLen is the context the engine is configured for when
	// MaxModelLen is not set (0 = the engine reads the model's).
	defaultMaxLen int
	// autoSizes says Auto may size it with the planner.
	autoSizes bool
	// plannedFraction says Auto passes the plan's memory utilisation: the
	// engine's fraction means what vLLM's does (a share of the device's
	// total memory for weights, activations and KV cache). SGLang's
	// --mem-fraction-static covers weights and the KV pool only, and
	// SGLang derives it from the device's memory itself
	// (_handle_gpu_memory_settings in server_args.py); TGI's
	// --cuda-memory-fraction caps the process and TGI sizes its KV cache by
	// its own warm-up. Auto leaves both to the engine.
	plannedFraction bool
	// pipeline says the engine splits layers into pipeline stages.
	pipeline bool
	// multiNode says one replica may span nodes (a LeaderWorkerSet).
	multiNode bool

	// launch fills the command, arguments, environment and files of the
	// main container (and of multi-node workers).
	launch func(s *Service, r *rendering) field.ErrorList
}

// flagSet holds an engine's spelling of the engine-neutral settings.
type flagSet struct {
	model, host, port                          string
	tensorParallel, pipelineParallel           string
	maxModelLen, maxInputLen                   string
	memoryUtilization                          string
	dtype, quantization, kvCacheDType          string
	servedModelName, trustRemoteCode, revision string
	// prefixOn and prefixOff switch prefix caching; an engine with one of
	// them set supports it. prefixEnv switches it by an environment
	// variable instead.
	prefixOn, prefixOff, prefixEnv string
	// dtypes are the values the engine's dtype flag accepts.
	dtypes []string
	// kvCacheDTypes are the values its KV-cache type flag accepts (nil:
	// not checked here).
	kvCacheDTypes []string
	// apiKeyEnv is the environment variable the engine reads its API key
	// from; apiKey is its flag, given $(CUBE_API_KEY) when the engine reads
	// no variable. Neither set: the engine has no API key.
	apiKeyEnv, apiKey string
	// lora renders the adapters as arguments.
	lora func(adapters []resolvedLoRA) []string
}

// setting is one engine-neutral setting under the engine's flag name: a
// string, int or float64 value, or true for a switch given as the flag
// alone.
type setting struct {
	flag  string
	value any
}

// engineSettings are the engine-neutral settings in a fixed order, typed,
// under the names of flag set f; the model (positional when f has no model
// flag) and LoRA adapters are left to the caller. cliArgs renders them as
// flags and the Triton vLLM backend as engine arguments, so both come from
// one place.
func engineSettings(f flagSet, s *Service, r *rendering) []setting {
	var out []setting
	add := func(flag string, value any) {
		switch v := value.(type) {
		case string:
			if v == "" {
				return
			}
		case int:
			if v <= 0 {
				return
			}
		}
		if flag != "" {
			out = append(out, setting{flag, value})
		}
	}
	add(f.host, "0.0.0.0")
	add(f.port, int(r.engine.port))
	if r.tp > 1 || r.nodes > 1 {
		add(f.tensorParallel, r.tp)
	}
	if r.pp > 1 || r.nodes > 1 {
		add(f.pipelineParallel, r.pp)
	}
	if r.maxModelLen > 0 {
		add(f.maxInputLen, r.maxModelLen-1)
		add(f.maxModelLen, r.maxModelLen)
	}
	if r.memoryUtilization > 0 {
		add(f.memoryUtilization, r.memoryUtilization)
	}
	add(f.dtype, s.dtype)
	add(f.quantization, s.quantization)
	add(f.kvCacheDType, s.kvCacheDType)
	add(f.revision, r.src.Revision)
	if r.servedNameExplicit {
		add(f.servedModelName, r.servedName)
	}
	if s.trustRemoteCode {
		add(f.trustRemoteCode, true)
	}
	if s.prefixCaching != nil {
		switch {
		case *s.prefixCaching:
			add(f.prefixOn, true)
		default:
			add(f.prefixOff, true)
		}
	}
	return out
}

// cliArgs renders the engine-neutral settings as command-line flags in a
// fixed order. It is shared by the engines that take flags (vLLM, SGLang,
// TGI); the others translate settings to environment or a config file.
func cliArgs(f flagSet, s *Service, r *rendering) []string {
	var args []string
	if f.model == "" {
		args = append(args, r.modelArg)
	} else if r.modelArg != "" {
		args = append(args, f.model, r.modelArg)
	}
	for _, st := range engineSettings(f, s, r) {
		switch v := st.value.(type) {
		case bool:
			args = append(args, st.flag)
		case int:
			args = append(args, st.flag, strconv.Itoa(v))
		case float64:
			args = append(args, st.flag, strconv.FormatFloat(v, 'g', -1, 64))
		case string:
			args = append(args, st.flag, v)
		}
	}
	if len(r.loras) > 0 && f.lora != nil {
		args = append(args, f.lora(r.loras)...)
	}
	if s.apiKey != nil && f.apiKeyEnv == "" && f.apiKey != "" {
		// Kubernetes substitutes $(VAR) in args from the container's env.
		args = append(args, f.apiKey, "$("+apiKeyVar+")")
	}
	return args
}

// apiKeyVar holds the API key from APIKey for engines that take
// it as a flag.
const apiKeyVar = "CUBE_API_KEY"

// loraPairs spells adapters name=path, as every engine that takes them does.
func loraPairs(adapters []resolvedLoRA) []string {
	out := make([]string, len(adapters))
	for i, a := range adapters {
		out[i] = a.name + "=" + a.path
	}
	return out
}

// prefixCachingSupported reports whether f can switch prefix caching at all.
func (f flagSet) prefixCachingSupported() bool {
	return f.prefixOn != "" || f.prefixOff != "" || f.prefixEnv != ""
}

// supportsSource reports whether the engine loads models from kind.
func (e *engine) supportsSource(kind SourceKind) bool { return slices.Contains(e.sources, kind) }

// containerPorts are the engine's ports: "http" first.
func (e *engine) containerPorts() []corev1.ContainerPort {
	out := []corev1.ContainerPort{{Name: "http", ContainerPort: e.port, Protocol: corev1.ProtocolTCP}}
	return append(out, slices.Clone(e.ports)...)
}

func (e *engine) metricsTarget() (int32, string) {
	port := e.metricsPort
	if port == 0 {
		port = e.port
	}
	return port, e.metricsPath
}
