package train

import (
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/pod"
)

// PaddleJob builds a training-operator PaddleJob. In collective mode (the
// default) only Workers run and the first is the rendezvous point; with
// ParameterServers the job runs in parameter-server mode, where the
// operator's Master replicas are the servers (without accelerators) and
// the Workers are the trainers. Every replica runs the same command,
// usually PaddleLaunchCommand. Create one with Paddle.
//
// Its settings are its own methods below, every pod setting (image,
// command, env, resources, Accelerators, On, Fabric…: go doc pod.Builder)
// and every run-policy setting (CleanPodPolicy, RestartPolicy, Gang,
// TTLAfterFinished, ActiveDeadline, Retry, Suspend: go doc train.RunPolicy
// and go doc train.Lifecycle).
type PaddleJob struct {
	pod.Builder[PaddleJob]
	RunPolicy[PaddleJob]
	roles            roleResources
	workers, servers int
}

// Paddle starts a collective PaddleJob named name with one Worker.
func Paddle(name string) *PaddleJob {
	j := &PaddleJob{workers: 1}
	initOperator(j, &j.Builder, &j.RunPolicy, "paddlejob", name)
	return j
}

// Workers sets the Worker (trainer) replicas (default 1).
func (j *PaddleJob) Workers(n int) *PaddleJob {
	if j == nil {
		return nil
	}
	j.workers = n
	return j
}

// ParameterServers switches to parameter-server mode with n servers.
func (j *PaddleJob) ParameterServers(n int) *PaddleJob {
	if j == nil {
		return nil
	}
	j.servers = n
	return j
}

// Launch replaces the command and arguments with PaddleLaunchCommand(script,
// args...).
func (j *PaddleJob) Launch(script string, args ...string) *PaddleJob {
	if j == nil {
		return nil
	}
	j.Command(PaddleLaunchCommand(script, args...)...)
	return j.Args()
}

func (j *PaddleJob) operator() operator[PaddleJob] {
	return operator[PaddleJob]{pod: &j.Builder, run: &j.RunPolicy, roles: j.roles}
}

// RoleResources gives one replica role its own CPU and memory (requests =
// limits) in place of the shared CPU and Memory, as TFJob.RoleResources.
func (j *PaddleJob) RoleResources(role kubeflowv1.ReplicaType, cpu, memory string) *PaddleJob {
	if j == nil {
		return nil
	}
	j.roles.set(role, cpu, memory)
	return j
}

const paddleSpecs = "paddleReplicaSpecs"

func (j *PaddleJob) build() (*kubeflowv1.PaddleJob, field.ErrorList) {
	if j == nil || unmade(&j.Builder) {
		return nil, unmadeErrors("train.PaddleJob", "Paddle")
	}
	errs := atLeast(j.workers, 1, replicasPath(paddleSpecs, kubeflowv1.PaddleJobReplicaTypeWorker), "worker")
	if j.servers < 0 {
		errs = append(errs, field.Invalid(replicasPath(paddleSpecs, kubeflowv1.PaddleJobReplicaTypeMaster), j.servers, "must not be negative"))
	}
	var roles []role
	if j.servers > 0 {
		roles = append(roles, role{typ: kubeflowv1.PaddleJobReplicaTypeMaster, replicas: j.servers, noGPUs: true})
	}
	roles = append(roles, role{typ: kubeflowv1.PaddleJobReplicaTypeWorker, replicas: max(j.workers, 0)})
	r, renderErrs := j.operator().render(layout{specsField: paddleSpecs, container: kubeflowv1.PaddleJobDefaultContainerName, roles: roles})
	errs = append(errs, renderErrs...)
	job := &kubeflowv1.PaddleJob{
		TypeMeta:   typeMeta(kubeflowv1.PaddleJobKind),
		ObjectMeta: r.meta,
		Spec: kubeflowv1.PaddleJobSpec{
			RunPolicy:          r.runPolicy,
			PaddleReplicaSpecs: r.replicas,
		},
	}
	kubeflowv1.SetObjectDefaults_PaddleJob(job)
	errs = append(errs, checkPorts(paddleSpecs, job.Spec.PaddleReplicaSpecs)...)
	return job, dedupe(errs)
}

// Build validates the settings and returns the PaddleJob, or every problem
// at once.
func (j *PaddleJob) Build() (*kubeflowv1.PaddleJob, error) { return result(j.build()) }

// Objects returns the PaddleJob; it implements cube.Workload.
func (j *PaddleJob) Objects() ([]client.Object, error) { return objects(j.Build()) }
