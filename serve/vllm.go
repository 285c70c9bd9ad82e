package serve

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
)

// vllmEngine is vLLM's OpenAI-compatible server, `vllm serve` (flags from
// vllm/engine/arg_utils.py and vllm/entrypoints/openai/cli_args.py).
var vllmEngine = &engine{
	kind: "vllm", title: "vLLM",
	image: DefaultVLLMImage, ascendImage: DefaultVLLMAscendImage,
	vendorFramework: hardware.FrameworkVLLM,
	nvidia:          true, ascend: true, cpu: true, gpuImage: true,
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
		// CacheDType of vllm/config/cache.py (testdata/contracts/vllm.tsv).
		kvCacheDTypes: []string{"auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"},
		apiKeyEnv:     "VLLM_API_KEY",
		lora: func(adapters []resolvedLoRA) []string {
			return append([]string{"--enable-lora", "--lora-modules"}, loraPairs(adapters)...)
		},
	},
	autoSizes: true, plannedFraction: true, pipeline: true, multiNode: true,
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

// vllmWorkerScript joins the leader's Ray head, retrying every 5 seconds
// until the head answers, as vLLM's examples/online_serving/multi-node-serving.sh
// does: a worker starts with its leader (LeaderCreated), usually before the
// head listens or before the leader's DNS name resolves. It gives up after
// $1 seconds, the service's startup timeout.
var vllmWorkerScript = fmt.Sprintf(`deadline=$(( $(date +%%s) + $1 ))
until ray start --address="$LWS_LEADER_ADDRESS:%d" --block; do
  if [ "$(date +%%s)" -ge "$deadline" ]; then
    echo "the Ray head at $LWS_LEADER_ADDRESS:%d did not answer in $1 seconds"; exit 1
  fi
  echo "waiting for the Ray head at $LWS_LEADER_ADDRESS:%d"; sleep 5
done`, RayPort, RayPort, RayPort)

// PodInterface is the network interface of a pod on the pod network, which
// vLLM-Ascend's collectives bind to across nodes unless Env says otherwise.
const PodInterface = "eth0"

func launchVLLM(s *Service, r *rendering) field.ErrorList {
	args := cliArgs(r.engine.flags, s, r)
	if r.nodes <= 1 {
		r.command, r.args = []string{"vllm", "serve"}, args
		return nil
	}
	// Over Ray: the leader heads the cluster and serves; each worker joins
	// it and lends its GPUs. The workers take none of the caller's
	// arguments: they are for vllm serve.
	r.command = []string{"/bin/sh", "-c", vllmLeaderScript, "vllm-leader"}
	r.args = append(args, "--distributed-executor-backend", "ray")
	r.workerCommand = []string{"/bin/sh", "-c", vllmWorkerScript, "vllm-worker"}
	r.workerArgs = []string{strconv.Itoa(int(s.startup()))}
	r.workerOwnArgs = true
	if r.hasProfile && r.profile.Vendor == hardware.Huawei {
		// vLLM-Ascend across nodes over Ray (its multi-node guide): HCCL,
		// Gloo and the TP process group bind to the pod's interface, and
		// Ray must leave ASCEND_RT_VISIBLE_DEVICES as the device plugin set
		// it instead of renumbering the NPUs of each worker.
		r.env = append(r.env,
			corev1.EnvVar{Name: "HCCL_SOCKET_IFNAME", Value: PodInterface},
			corev1.EnvVar{Name: "GLOO_SOCKET_IFNAME", Value: PodInterface},
			corev1.EnvVar{Name: "TP_SOCKET_IFNAME", Value: PodInterface},
			corev1.EnvVar{Name: "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES", Value: "1"})
	}
	return nil
}
