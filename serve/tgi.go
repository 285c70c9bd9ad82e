package serve

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// tgiEngine is Hugging Face Text Generation Inference,
// `text-generation-launcher` (flags from docs/source/reference/launcher.md).
// It shards a model across the GPUs of one node and has no pipeline
// parallelism.
var tgiEngine = &engine{
	kind: "tgi", title: "TGI",
	image:  DefaultTGIImage,
	nvidia: true, cpu: true, gpuImage: true,
	port:      8080,
	readyPath: "/health", livePath: "/health",
	metricsPath: "/metrics", queueMetric: "tgi_queue_size",
	bare:        SourceHuggingFace,
	sources:     []SourceKind{SourceHuggingFace, SourcePVC, SourceS3},
	loraSources: []SourceKind{SourceHuggingFace, SourcePVC},
	hub:         true,
	flags: flagSet{
		model:             "--model-id",
		host:              "--hostname",
		port:              "--port",
		tensorParallel:    "--num-shard",
		maxModelLen:       "--max-total-tokens",
		maxInputLen:       "--max-input-tokens",
		memoryUtilization: "--cuda-memory-fraction",
		dtype:             "--dtype",
		quantization:      "--quantize",
		kvCacheDType:      "--kv-cache-dtype",
		trustRemoteCode:   "--trust-remote-code",
		revision:          "--revision",
		prefixEnv:         "PREFIX_CACHING",
		dtypes:            []string{"float16", "bfloat16"},
		// The launcher's KV-cache types (launcher.md, --kv-cache-dtype).
		kvCacheDTypes: []string{"fp8_e4m3fn", "fp8_e5m2"},
		apiKey:        "--api-key",
		lora: func(adapters []resolvedLoRA) []string {
			// The launcher downloads an adapter given as a bare hub id and
			// skips every entry holding '=' (launcher/src/main.rs,
			// download_convert_model), so name=path is only for adapters
			// already on disk; a hub adapter is then called by its id.
			out := make([]string, len(adapters))
			for i, a := range adapters {
				if path.IsAbs(a.path) {
					out[i] = a.name + "=" + a.path
				} else {
					out[i] = a.path
				}
			}
			return []string{"--lora-adapters", strings.Join(out, ",")}
		},
	},
	autoSizes: true,
}

func init() { tgiEngine.launch = launchTGI }

func launchTGI(s *Service, r *rendering) field.ErrorList {
	r.command = []string{"text-generation-launcher"}
	r.args = cliArgs(r.engine.flags, s, r)
	if s.prefixCaching != nil {
		v := "0"
		if *s.prefixCaching {
			v = "1"
		}
		r.env = append(r.env, corev1.EnvVar{Name: r.engine.flags.prefixEnv, Value: v})
	}
	if s.cacheClaim != "" {
		// The TGI image points the hub cache at /data; HF_HOME alone does
		// not move it.
		r.env = append(r.env, corev1.EnvVar{Name: "HUGGINGFACE_HUB_CACHE", Value: CachePath + "/huggingface/hub"})
	}
	return nil
}
