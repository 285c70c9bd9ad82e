package train

import (
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/pod"
)

// XGBoostJob builds a training-operator XGBoostJob: a Master (the Rabit
// tracker and rank 0) and Workers, in a container named xgboost running the
// same command. Create one with XGBoost.
//
// Its settings are its own methods below, every pod setting (image,
// command, env, resources, Accelerators, On, Fabric…: go doc pod.Builder)
// and every run-policy setting (CleanPodPolicy, RestartPolicy, Gang,
// TTLAfterFinished, ActiveDeadline, Retry, Suspend: go doc train.RunPolicy
// and go doc train.Lifecycle).
type XGBoostJob struct {
	pod.Builder[XGBoostJob]
	RunPolicy[XGBoostJob]
	roles roleResources
	size  podCount
}

// XGBoost starts an XGBoostJob named name with a Master and one Worker
// (Nodes(2)).
func XGBoost(name string) *XGBoostJob {
	j := &XGBoostJob{}
	initOperator(j, &j.Builder, &j.RunPolicy, "xgboostjob", name)
	return j
}

// Workers sets the Worker replicas besides the Master (default 1; 0 runs
// the Master alone). Nodes counts the Master too; the later call wins.
func (j *XGBoostJob) Workers(n int) *XGBoostJob {
	if j == nil {
		return nil
	}
	j.size = podCount{n: n, set: true}
	return j
}

// Nodes sets how many pods train, the Master included (Nodes(1): the Master
// alone), as PyTorchJob's Nodes. The operator gives the Workers ranks after
// the Master's (SetPodEnv in pkg/controller.v1/xgboost).
func (j *XGBoostJob) Nodes(n int) *XGBoostJob {
	if j == nil {
		return nil
	}
	j.size = podCount{n: n, set: true, nodes: true}
	return j
}

func (j *XGBoostJob) operator() operator[XGBoostJob] {
	return operator[XGBoostJob]{pod: &j.Builder, run: &j.RunPolicy, roles: j.roles}
}

// RoleResources gives one replica role its own CPU and memory (requests =
// limits) in place of the shared CPU and Memory, as TFJob.RoleResources.
func (j *XGBoostJob) RoleResources(role kubeflowv1.ReplicaType, cpu, memory string) *XGBoostJob {
	if j == nil {
		return nil
	}
	j.roles.set(role, cpu, memory)
	return j
}

const xgboostSpecs = "xgbReplicaSpecs"

func (j *XGBoostJob) build() (*kubeflowv1.XGBoostJob, field.ErrorList) {
	if j == nil || unmade(&j.Builder) {
		return nil, unmadeErrors("train.XGBoostJob", "XGBoost")
	}
	workers, errs := j.size.workers(true, replicasPath(xgboostSpecs, kubeflowv1.XGBoostJobReplicaTypeWorker))
	roles := []role{{typ: kubeflowv1.XGBoostJobReplicaTypeMaster, replicas: 1}}
	if workers > 0 {
		roles = append(roles, role{typ: kubeflowv1.XGBoostJobReplicaTypeWorker, replicas: workers})
	}
	r, renderErrs := j.operator().render(layout{specsField: xgboostSpecs, container: kubeflowv1.XGBoostJobDefaultContainerName, roles: roles})
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
	errs = append(errs, checkPorts(xgboostSpecs, job.Spec.XGBReplicaSpecs)...)
	return job, dedupe(errs)
}

// Build validates the settings and returns the XGBoostJob, or every problem
// at once.
func (j *XGBoostJob) Build() (*kubeflowv1.XGBoostJob, error) { return result(j.build()) }

// Objects returns the XGBoostJob; it implements cube.Workload.
func (j *XGBoostJob) Objects() ([]client.Object, error) { return objects(j.Build()) }
