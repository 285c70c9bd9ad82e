package testenv

// Kubeflow Trainer v2's and JobSet's CRDs join every environment's, so
// that the TrainJobs, ClusterTrainingRuntimes and JobSets cube renders are
// applied against the real schemas. Their controllers do not run on the
// test cluster yet: JobSet v0.12.0's manager, started on the host like the
// other operators, did not become ready there (its certificate rotator
// kept racing on its Secret), so no TrainJob journey runs.
const (
	trainerVersion = "v2.3.0"
	jobsetVersion  = "v0.12.0"
)

func init() {
	crdSources = append(crdSources,
		crdSource{"jobset", "sigs.k8s.io/jobset", jobsetVersion, "config/components/crd/bases"},
		crdSource{"trainer", "github.com/kubeflow/trainer/v2", trainerVersion, "manifests/base/crds"},
	)
}
