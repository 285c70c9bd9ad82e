package serve

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// sglangEngine is SGLang's server, `python3 -m sglang.launch_server`
// (flags from python/sglang/srt/server_args.py).
var sglangEngine = &engine{
	kind: "sglang", title: "SGLang",
	image:  DefaultSGLangImage,
	nvidia: true, ascend: true, cpu: true, gpuImage: true,
	port:      30000,
	readyPath: "/health", livePath: "/health",
	metricsPath: "/metrics", queueMetric: "sglang:num_queue_reqs",
	bare:          SourceHuggingFace,
	sources:       []SourceKind{SourceHuggingFace, SourceModelScope, SourcePVC, SourceS3},
	loraSources:   []SourceKind{SourceHuggingFace, SourcePVC},
	hub:           true,
	modelScopeEnv: corev1.EnvVar{Name: "SGLANG_USE_MODELSCOPE", Value: "true"},
	flags: flagSet{
		model:             "--model-path",
		host:              "--host",
		port:              "--port",
		tensorParallel:    "--tp-size",
		pipelineParallel:  "--pp-size",
		maxModelLen:       "--context-length",
		memoryUtilization: "--mem-fraction-static",
		dtype:             "--dtype",
		quantization:      "--quantization",
		kvCacheDType:      "--kv-cache-dtype",
		servedModelName:   "--served-model-name",
		trustRemoteCode:   "--trust-remote-code",
		revision:          "--revision",
		// The radix (prefix) cache is on unless disabled.
		prefixOff: "--disable-radix-cache",
		dtypes:    []string{"auto", "half", "float16", "bfloat16", "float", "float32"},
		// The --kv-cache-dtype choices of server_args.py; "fp8" alone is
		// vLLM's spelling and SGLang's argument parser refuses it.
		kvCacheDTypes: []string{"auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1"},
		apiKey:        "--api-key",
		lora: func(adapters []resolvedLoRA) []string {
			return append([]string{"--lora-paths"}, loraPairs(adapters)...)
		},
	},
	autoSizes: true, pipeline: true, multiNode: true,
}

func init() { sglangEngine.launch = launchSGLang }

// SGLangDistPort is the port of SGLang's multi-node rendezvous on the
// leader (--dist-init-addr).
const SGLangDistPort = 20000

func launchSGLang(s *Service, r *rendering) field.ErrorList {
	r.command = []string{"python3", "-m", "sglang.launch_server"}
	r.args = append(cliArgs(r.engine.flags, s, r), "--enable-metrics")
	if r.nodes > 1 {
		// SGLang's own multi-node mode: every pod runs the same server with
		// its node rank; rank 0 (the leader) serves HTTP.
		r.args = append(r.args,
			"--nnodes", strconv.Itoa(r.nodes),
			"--node-rank", "$(LWS_WORKER_INDEX)",
			"--dist-init-addr", fmt.Sprintf("$(LWS_LEADER_ADDRESS):%d", SGLangDistPort))
		r.workerCommand, r.workerArgs = r.command, r.args
	}
	return nil
}
