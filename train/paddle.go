package train

import (
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PaddleJob builds a training-operator PaddleJob. In collective mode (the
// default) only Workers run and the first is the rendezvous point; with
// ParameterServers the job runs in parameter-server mode, where the
// operator's Master replicas are the servers (without accelerators) and
// the Workers are the trainers. Every replica runs the same command,
// usually PaddleLaunchCommand. Create one with Paddle.
type PaddleJob struct {
	operatorJob[PaddleJob]
	workers, servers int
}

// Paddle starts a collective PaddleJob named name with one Worker.
func Paddle(name string) *PaddleJob {
	j := &PaddleJob{workers: 1}
	j.init(j, "paddlejob", name)
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
	r, renderErrs := j.render(layout{specsField: paddleSpecs, container: kubeflowv1.PaddleJobDefaultContainerName, roles: roles})
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
