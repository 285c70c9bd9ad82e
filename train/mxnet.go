package train

import (
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/pod"
)

// MXNetJob builds a training-operator MXJob in training mode: a Scheduler
// and Servers (without accelerators) and Workers, in a container named
// mxnet running the same command (the operator's DMLC_* variables tell each
// its role). Create one with MXNet.
//
// Its settings are its own methods below, every pod setting (image,
// command, env, resources, Accelerators, On, Fabric…: go doc pod.Builder)
// and every run-policy setting (CleanPodPolicy, RestartPolicy, Gang,
// TTLAfterFinished, ActiveDeadline, Retry, Suspend: go doc train.RunPolicy
// and go doc train.Lifecycle).
type MXNetJob struct {
	pod.Builder[MXNetJob]
	RunPolicy[MXNetJob]
	roles            roleResources
	workers, servers int
}

// MXNet starts an MXJob named name with a Scheduler, one Server and one
// Worker.
func MXNet(name string) *MXNetJob {
	j := &MXNetJob{workers: 1, servers: 1}
	initOperator(j, &j.Builder, &j.RunPolicy, "mxjob", name)
	return j
}

// Workers sets the Worker replicas (default 1).
func (j *MXNetJob) Workers(n int) *MXNetJob {
	if j == nil {
		return nil
	}
	j.workers = n
	return j
}

// Servers sets the parameter-server replicas (default 1).
func (j *MXNetJob) Servers(n int) *MXNetJob {
	if j == nil {
		return nil
	}
	j.servers = n
	return j
}

func (j *MXNetJob) operator() operator[MXNetJob] {
	return operator[MXNetJob]{pod: &j.Builder, run: &j.RunPolicy, roles: j.roles}
}

// RoleResources gives one replica role its own CPU and memory (requests =
// limits) in place of the shared CPU and Memory, as TFJob.RoleResources.
func (j *MXNetJob) RoleResources(role kubeflowv1.ReplicaType, cpu, memory string) *MXNetJob {
	if j == nil {
		return nil
	}
	j.roles.set(role, cpu, memory)
	return j
}

const mxnetSpecs = "mxReplicaSpecs"

func (j *MXNetJob) build() (*kubeflowv1.MXJob, field.ErrorList) {
	if j == nil || unmade(&j.Builder) {
		return nil, unmadeErrors("train.MXNetJob", "MXNet")
	}
	errs := atLeast(j.workers, 1, replicasPath(mxnetSpecs, kubeflowv1.MXJobReplicaTypeWorker), "worker")
	errs = append(errs, atLeast(j.servers, 1, replicasPath(mxnetSpecs, kubeflowv1.MXJobReplicaTypeServer), "server")...)
	roles := []role{
		{typ: kubeflowv1.MXJobReplicaTypeScheduler, replicas: 1, noGPUs: true},
		{typ: kubeflowv1.MXJobReplicaTypeServer, replicas: max(j.servers, 0), noGPUs: true},
		{typ: kubeflowv1.MXJobReplicaTypeWorker, replicas: max(j.workers, 0)},
	}
	r, renderErrs := j.operator().render(layout{specsField: mxnetSpecs, container: kubeflowv1.MXJobDefaultContainerName, roles: roles})
	errs = append(errs, renderErrs...)
	job := &kubeflowv1.MXJob{
		TypeMeta:   typeMeta(kubeflowv1.MXJobKind),
		ObjectMeta: r.meta,
		Spec: kubeflowv1.MXJobSpec{
			RunPolicy:      r.runPolicy,
			JobMode:        kubeflowv1.MXTrain,
			MXReplicaSpecs: r.replicas,
		},
	}
	kubeflowv1.SetObjectDefaults_MXJob(job)
	errs = append(errs, checkPorts(mxnetSpecs, job.Spec.MXReplicaSpecs)...)
	// A backstop only, as for MPIJob: the operator reports one finding.
	if len(errs) == 0 {
		if err := kubeflowv1.ValidateV1MXJob(job); err != nil {
			errs = append(errs, operatorError(err))
		}
	}
	return job, dedupe(errs)
}

// Build validates the settings and returns the MXJob, or every problem at
// once.
func (j *MXNetJob) Build() (*kubeflowv1.MXJob, error) { return result(j.build()) }

// Objects returns the MXJob; it implements cube.Workload.
func (j *MXNetJob) Objects() ([]client.Object, error) { return objects(j.Build()) }
