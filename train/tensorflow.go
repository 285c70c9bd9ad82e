package train

import (
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/pod"
)

// TFJob builds a training-operator TFJob: Workers, and optionally a Chief,
// parameter servers and an Evaluator, all in a container named tensorflow
// running the same command (the operator's TF_CONFIG tells each its role).
// Parameter servers get no accelerators. Create one with TensorFlow.
//
// Its settings are its own methods below, every pod setting (image,
// command, env, resources, Accelerators, On, Fabric…: go doc pod.Builder)
// and every run-policy setting (CleanPodPolicy, RestartPolicy, Gang,
// TTLAfterFinished, ActiveDeadline, Retry, Suspend: go doc train.RunPolicy
// and go doc train.Lifecycle).
type TFJob struct {
	pod.Builder[TFJob]
	RunPolicy[TFJob]
	roles           roleResources
	workers, ps     int
	chief, eval     bool
	allWorkersMatch bool
}

// TensorFlow starts a TFJob named name with one Worker.
func TensorFlow(name string) *TFJob {
	j := &TFJob{workers: 1}
	initOperator(j, &j.Builder, &j.RunPolicy, "tfjob", name)
	return j
}

// Workers sets the Worker replicas (default 1; a TFJob needs at least one).
func (j *TFJob) Workers(n int) *TFJob {
	if j == nil {
		return nil
	}
	j.workers = n
	return j
}

// ParameterServers adds n PS replicas (parameter-server strategy); they
// run without accelerators.
func (j *TFJob) ParameterServers(n int) *TFJob {
	if j == nil {
		return nil
	}
	j.ps = n
	return j
}

// Chief adds a Chief replica, which coordinates and whose success ends the
// job.
func (j *TFJob) Chief() *TFJob {
	if j == nil {
		return nil
	}
	j.chief = true
	return j
}

// Evaluator adds an Evaluator replica, which evaluates checkpoints beside
// the training.
func (j *TFJob) Evaluator() *TFJob {
	if j == nil {
		return nil
	}
	j.eval = true
	return j
}

// SucceedWhenAllWorkersSucceed makes the job succeed only when every
// Worker has (SuccessPolicyAllWorkers) instead of when the Chief, or
// Worker 0, has.
func (j *TFJob) SucceedWhenAllWorkersSucceed() *TFJob {
	if j == nil {
		return nil
	}
	j.allWorkersMatch = true
	return j
}

func (j *TFJob) operator() operator[TFJob] {
	return operator[TFJob]{pod: &j.Builder, run: &j.RunPolicy, roles: j.roles}
}

// RoleResources gives one replica role its own CPU and memory (requests =
// limits) in place of the shared CPU and Memory: a one-core MPI launcher or
// a parameter server with more memory beside large GPU workers. An empty
// value keeps the shared setting for that resource. The role must be one
// the job has, e.g. kubeflowv1.TFJobReplicaTypePS or
// kubeflowv1.MPIJobReplicaTypeLauncher.
func (j *TFJob) RoleResources(role kubeflowv1.ReplicaType, cpu, memory string) *TFJob {
	if j == nil {
		return nil
	}
	j.roles.set(role, cpu, memory)
	return j
}

const tfSpecs = "tfReplicaSpecs"

func (j *TFJob) build() (*kubeflowv1.TFJob, field.ErrorList) {
	if j == nil || unmade(&j.Builder) {
		return nil, unmadeErrors("train.TFJob", "TensorFlow")
	}
	errs := atLeast(j.workers, 1, replicasPath(tfSpecs, kubeflowv1.TFJobReplicaTypeWorker), "worker")
	if j.ps < 0 {
		errs = append(errs, field.Invalid(replicasPath(tfSpecs, kubeflowv1.TFJobReplicaTypePS), j.ps, "must not be negative"))
	}
	var roles []role
	if j.chief {
		roles = append(roles, role{typ: kubeflowv1.TFJobReplicaTypeChief, replicas: 1})
	}
	if j.ps > 0 {
		roles = append(roles, role{typ: kubeflowv1.TFJobReplicaTypePS, replicas: j.ps, noGPUs: true})
	}
	roles = append(roles, role{typ: kubeflowv1.TFJobReplicaTypeWorker, replicas: max(j.workers, 0)})
	if j.eval {
		roles = append(roles, role{typ: kubeflowv1.TFJobReplicaTypeEval, replicas: 1})
	}
	r, renderErrs := j.operator().render(layout{specsField: tfSpecs, container: kubeflowv1.TFJobDefaultContainerName, roles: roles})
	errs = append(errs, renderErrs...)
	job := &kubeflowv1.TFJob{
		TypeMeta:   typeMeta(kubeflowv1.TFJobKind),
		ObjectMeta: r.meta,
		Spec: kubeflowv1.TFJobSpec{
			RunPolicy:      r.runPolicy,
			TFReplicaSpecs: r.replicas,
		},
	}
	if j.allWorkersMatch {
		p := kubeflowv1.SuccessPolicyAllWorkers
		job.Spec.SuccessPolicy = &p
	}
	kubeflowv1.SetObjectDefaults_TFJob(job)
	errs = append(errs, checkPorts(tfSpecs, job.Spec.TFReplicaSpecs)...)
	return job, dedupe(errs)
}

// Build validates the settings and returns the TFJob, or every problem at
// once.
func (j *TFJob) Build() (*kubeflowv1.TFJob, error) { return result(j.build()) }

// Objects returns the TFJob; it implements cube.Workload.
func (j *TFJob) Objects() ([]client.Object, error) { return objects(j.Build()) }
