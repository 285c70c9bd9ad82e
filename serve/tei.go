package serve

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/podspec"
)

// TEIMetricsPort is where Text Embeddings Inference serves Prometheus
// metrics (--prometheus-port, default 9000, router/src/main.rs).
const TEIMetricsPort = 9000

// teiEngine is Hugging Face Text Embeddings Inference,
// `text-embeddings-router` (flags from router/src/main.rs of
// huggingface/text-embeddings-inference v1.9.3): embedding models on /embed
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
	var errs field.ErrorList
	if major, minor, ok := teiImageVersion(podspec.Of(&s.Handle).ImageName()); ok && r.servedNameExplicit && (major < 1 || major == 1 && minor < 9) {
		// TEI before 1.9 defines no --served-model-name (router/src/main.rs
		// at v1.8.3); clap refuses the unknown flag and the pod crash-loops.
		errs = append(errs, field.Invalid(field.NewPath("spec", "servedModelName"), r.servedName,
			"TEI "+strconv.Itoa(major)+"."+strconv.Itoa(minor)+" (spec.image) has no --served-model-name, added in 1.9: use "+DefaultTEIImage+" or a 1.9 image"))
	}
	// No command: every TEI image's entrypoint starts the router with the
	// arguments (Dockerfile's ENTRYPOINT text-embeddings-router;
	// cuda-entrypoint.sh, which also puts the CUDA compat libraries on the
	// path for older drivers; cuda-all-entrypoint.sh, which picks the
	// router for the device's compute capability; the cuda- image has no
	// binary called text-embeddings-router).
	r.args = append(cliArgs(r.engine.flags, s, r), "--prometheus-port", "9000")
	if s.cacheClaim != "" {
		// The image points the hub cache at /data (HUGGINGFACE_HUB_CACHE).
		r.env = append(r.env, corev1.EnvVar{Name: "HUGGINGFACE_HUB_CACHE", Value: CachePath + "/huggingface/hub"})
	}
	return errs
}

// teiImageVersion reads major.minor from the tag of a Text Embeddings
// Inference image: "1.8", "89-1.8", "cpu-1.8.3", "cuda-1.9-grpc" (the tags
// of .github/workflows/build.yaml); ok is false for another image or a tag
// without a version (latest, sha-…).
func teiImageVersion(image string) (major, minor int, ok bool) {
	repo, tag, found := strings.Cut(image, "@")
	if found {
		return 0, 0, false // a digest says no version
	}
	i := strings.LastIndex(repo, ":")
	if i < 0 || strings.Contains(repo[i:], "/") || !strings.HasSuffix(repo[:i], "/text-embeddings-inference") {
		return 0, 0, false
	}
	tag = repo[i+1:]
	for _, part := range strings.Split(tag, "-") {
		fields := strings.Split(part, ".")
		if len(fields) < 2 {
			continue
		}
		ma, err1 := strconv.Atoi(fields[0])
		mi, err2 := strconv.Atoi(fields[1])
		if err1 == nil && err2 == nil {
			return ma, mi, true
		}
	}
	return 0, 0, false
}
