package serve

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TEIMetricsPort is where Text Embeddings Inference serves Prometheus
// metrics (--prometheus-port, default 9000, router/src/main.rs).
const TEIMetricsPort = 9000

// teiEngine is Hugging Face Text Embeddings Inference,
// `text-embeddings-router` (flags from router/src/main.rs of
// huggingface/text-embeddings-inference 1.8): embedding models on /embed
// and the OpenAI-compatible /v1/embeddings, rerankers on /rerank, sequence
// classifiers on /predict. It serves one model on one device: no tensor or
// pipeline parallelism, no context length or memory settings. Every flag is
// also read from the environment (clap's env): the API key from API_KEY,
// the hub token from HF_TOKEN.
var teiEngine = &engine{
	kind: "tei", title: "TEI",
	image:  DefaultTEIImage,
	nvidia: true, cpu: true, gpuImage: true,
	port: 8080,
	ports: []corev1.ContainerPort{
		{Name: "metrics", ContainerPort: TEIMetricsPort, Protocol: corev1.ProtocolTCP},
	},
	readyPath: "/health", livePath: "/health",
	metricsPath: "/metrics", metricsPort: TEIMetricsPort,
	// core/src/queue.rs: the gauge of requests waiting for a batch.
	queueMetric: "te_queue_size",
	bare:        SourceHuggingFace,
	sources:     []SourceKind{SourceHuggingFace, SourcePVC, SourceS3},
	hub:         true,
	flags: flagSet{
		model:           "--model-id",
		host:            "--hostname",
		port:            "--port",
		dtype:           "--dtype",
		revision:        "--revision",
		servedModelName: "--served-model-name",
		dtypes:          []string{"float16", "float32"},
		apiKeyEnv:       "API_KEY",
	},
}

func init() { teiEngine.launch = launchTEI }

func launchTEI(s *Service, r *rendering) field.ErrorList {
	r.command = []string{"text-embeddings-router"}
	r.args = append(cliArgs(r.engine.flags, s, r), "--prometheus-port", "9000")
	if s.cacheClaim != "" {
		// The image points the hub cache at /data (HUGGINGFACE_HUB_CACHE).
		r.env = append(r.env, corev1.EnvVar{Name: "HUGGINGFACE_HUB_CACHE", Value: CachePath + "/huggingface/hub"})
	}
	return nil
}
