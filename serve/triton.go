package serve

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// tritonEngine is NVIDIA Triton Inference Server, `tritonserver`, serving a
// model repository (KServe v2 protocol over HTTP and gRPC).
var tritonEngine = &engine{
	kind: "triton", title: "Triton",
	image:  DefaultTritonImage,
	nvidia: true, cpu: true,
	port: 8000,
	ports: []corev1.ContainerPort{
		{Name: "grpc", ContainerPort: 8001, Protocol: corev1.ProtocolTCP},
		{Name: "metrics", ContainerPort: 8002, Protocol: corev1.ProtocolTCP},
	},
	readyPath: "/v2/health/ready", livePath: "/v2/health/live",
	metricsPath: "/metrics", metricsPort: 8002, queueMetric: "nv_inference_pending_request_count",
	bare:    SourceHuggingFace,
	sources: []SourceKind{SourcePVC, SourceS3},
}

func init() { tritonEngine.launch = launchTriton }

func launchTriton(s *Service, r *rendering) field.ErrorList {
	r.command = []string{"tritonserver"}
	r.args = []string{
		"--model-repository=" + r.modelArg,
		"--http-port=8000", "--grpc-port=8001", "--metrics-port=8002",
	}
	var errs field.ErrorList
	if s.tritonControl != "" {
		r.args = append(r.args, "--model-control-mode="+s.tritonControl)
	}
	if len(s.tritonModels) > 0 && s.tritonControl != "explicit" {
		errs = append(errs, field.Invalid(field.NewPath("spec", "modelControl"), s.tritonControl,
			fmt.Sprintf("models to load (%v) need the explicit mode", s.tritonModels)))
	}
	for _, m := range s.tritonModels {
		r.args = append(r.args, "--load-model="+m)
	}
	return errs
}
