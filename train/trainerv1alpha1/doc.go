// Package trainerv1alpha1 holds the Go types of Kubeflow Trainer v2's API,
// trainer.kubeflow.org/v1alpha1 (TrainJob, TrainingRuntime,
// ClusterTrainingRuntime), as github.com/kubeflow/trainer/v2 v2.3.0 defines
// them in pkg/apis/trainer/v1alpha1, with the same JSON.
//
// cube cannot import that package: its generated OpenAPI file
// (zz_generated.openapi.go) names corev1.PodStatusResult, which
// k8s.io/api v0.37 no longer has, so the package does not compile beside
// the Kubernetes libraries cube is built with. These types carry the fields
// cube builds and reads, field for field with the upstream ones (same
// names, JSON keys, pointers and omitempty); the JobSet inside a runtime is
// sigs.k8s.io/jobset's own type. The tests decode every runtime Trainer
// v2.3.0 ships (manifests/base/runtimes) strictly into them, and the
// apiserver tests apply them against the Trainer's CRDs, which refuse an
// unknown field.
//
// Nothing here is a builder: package train builds these objects (Trainer,
// ClusterRuntime) and reads their status (TrainJobStatus).
package trainerv1alpha1
