package serve

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// vllmEngine is vLLM's OpenAI-compatible server, `vllm serve` (flags from
// vllm/engine/arg_utils.py and vllm/entrypoints/openai/cli_args.py).
var vllmEngine = &engine{
	kind: "vllm", title: "vLLM",
	image: DefaultVLLMImage, ascendImage: DefaultVLLMAscendImage,
	nvidia: true, ascend: true, cpu: true, gpuImage: true,
	port:      8000,
	readyPath: "/health", livePath: "/health",
	metricsPath: "/metrics", queueMetric: "vllm:num_requests_waiting",
	bare:          SourceHuggingFace,
	sources:       []SourceKind{SourceHuggingFace, SourceModelScope, SourcePVC, SourceS3},
	loraSources:   []SourceKind{SourceHuggingFace, SourcePVC},
	hub:           true,
	modelScopeEnv: corev1.EnvVar{Name: "VLLM_USE_MODELSCOPE", Value: "True"},
	flags: flagSet{
		port:              "--port",
		tensorParallel:    "--tensor-parallel-size",
		pipelineParallel:  "--pipeline-parallel-size",
		maxModelLen:       "--max-model-len",
		memoryUtilization: "--gpu-memory-utilization",
		dtype:             "--dtype",
		quantization:      "--quantization",
		kvCacheDType:      "--kv-cache-dtype",
		servedModelName:   "--served-model-name",
		trustRemoteCode:   "--trust-remote-code",
		revision:          "--revision",
		prefixOn:          "--enable-prefix-caching",
		prefixOff:         "--no-enable-prefix-caching",
		dtypes:            []string{"auto", "half", "float16", "bfloat16", "float", "float32"},
		lora: func(adapters []resolvedLoRA) []string {
			return append([]string{"--enable-lora", "--lora-modules"}, loraPairs(adapters)...)
		},
	},
	autoSizes: true, pipeline: true, multiNode: true,
}

func init() { vllmEngine.launch = launchVLLM }

// RayPort is the port of the Ray head a multi-node vLLM leader starts.
const RayPort = 6379

// vllmLeaderScript starts the Ray head, waits until every worker of the
// group has joined (LWS_GROUP_SIZE nodes) and runs `vllm serve` with the
// container's arguments.
var vllmLeaderScript = fmt.Sprintf(`ray start --head --port=%d --disable-usage-stats
until [ "$(python3 -c 'import ray; ray.init(address="auto", logging_level="error"); print(sum(n["Alive"] for n in ray.nodes()))' 2>/dev/null)" = "$LWS_GROUP_SIZE" ]; do
  echo "waiting for $LWS_GROUP_SIZE Ray nodes"; sleep 5
done
exec vllm serve "$@"`, RayPort)

func launchVLLM(s *Service, r *rendering) field.ErrorList {
	args := cliArgs(r.engine.flags, s, r)
	if r.nodes <= 1 {
		r.command, r.args = []string{"vllm", "serve"}, args
		return nil
	}
	// Over Ray: the leader heads the cluster and serves; each worker joins
	// it and lends its GPUs.
	r.command = []string{"/bin/sh", "-c", vllmLeaderScript, "vllm-leader"}
	r.args = append(args, "--distributed-executor-backend", "ray")
	r.workerCommand = []string{"ray", "start", fmt.Sprintf("--address=$(LWS_LEADER_ADDRESS):%d", RayPort), "--block"}
	return nil
}
