package train

import (
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// XGBoostJob builds a training-operator XGBoostJob: a Master (the Rabit
// tracker and rank 0) and Workers, in a container named xgboost running the
// same command. Create one with XGBoost.
type XGBoostJob struct {
	operatorJob[XGBoostJob]
	workers int
}

// XGBoost starts an XGBoostJob named name with one Worker.
func XGBoost(name string) *XGBoostJob {
	j := &XGBoostJob{workers: 1}
	j.init(j, "xgboostjob", name)
	return j
}

// Workers sets the Worker replicas besides the Master (default 1).
func (j *XGBoostJob) Workers(n int) *XGBoostJob { j.workers = n; return j }

const xgboostSpecs = "xgbReplicaSpecs"

func (j *XGBoostJob) build() (*kubeflowv1.XGBoostJob, field.ErrorList) {
	errs := atLeast(j.workers, 1, replicasPath(xgboostSpecs, kubeflowv1.XGBoostJobReplicaTypeWorker), "worker")
	roles := []role{
		{typ: kubeflowv1.XGBoostJobReplicaTypeMaster, replicas: 1},
		{typ: kubeflowv1.XGBoostJobReplicaTypeWorker, replicas: int32(max(j.workers, 0))},
	}
	r, renderErrs := j.render(layout{specsField: xgboostSpecs, container: kubeflowv1.XGBoostJobDefaultContainerName, roles: roles})
	errs = append(errs, renderErrs...)
	job := &kubeflowv1.XGBoostJob{
		TypeMeta:   typeMeta(kubeflowv1.XGBoostJobKind),
		ObjectMeta: r.meta,
		Spec: kubeflowv1.XGBoostJobSpec{
			RunPolicy:       r.runPolicy,
			XGBReplicaSpecs: r.replicas,
		},
	}
	kubeflowv1.SetObjectDefaults_XGBoostJob(job)
	return job, dedupe(errs)
}

// Build validates the settings and returns the XGBoostJob, or every problem
// at once.
func (j *XGBoostJob) Build() (*kubeflowv1.XGBoostJob, error) { return result(j.build()) }

// Objects returns the XGBoostJob; it implements cube.Workload.
func (j *XGBoostJob) Objects() ([]client.Object, error) { return objects(j.Build()) }
