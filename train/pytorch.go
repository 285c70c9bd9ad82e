package train

import (
	"fmt"
	"slices"
	"strconv"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// torchJob is the PyTorchJob core that PyTorch, DeepSpeed and ColossalAI
// share: Master plus Workers, or Workers alone under an elastic policy.
type torchJob[T any] struct {
	operatorJob[T]
	workers     int
	workersSet  bool
	elastic     *[2]int
	rdzv        *rendezvous
	rdzvConf    []kubeflowv1.RDZVConf
	maxRestarts *int
	nproc       *int
}

type rendezvous struct {
	backend kubeflowv1.RDZVBackend
	host    string
	port    int
}

func (t *torchJob[T]) initTorch(self *T, kind, name string) {
	t.init(self, kind, name)
	t.workers = 1
}

// Workers sets how many Worker replicas run besides the Master (default 1).
// Under Elastic it is the initial worker count (default: the maximum).
func (t *torchJob[T]) Workers(n int) *T {
	t.workers, t.workersSet = n, true
	return t.Lifecycle.self
}

// Elastic makes the job elastic: between min and max Worker replicas
// rendezvous through torchrun's c10d backend (see Rendezvous), and no
// Master runs. Gang scheduling then needs min pods.
func (t *torchJob[T]) Elastic(min, max int) *T {
	t.elastic = &[2]int{min, max}
	return t.Lifecycle.self
}

// Rendezvous sets the elastic rendezvous backend (kubeflowv1.BackendC10D,
// BackendETCD or BackendETCDV2) and endpoint; an empty host means the
// first worker and port 0 the worker's port, as the operator defaults.
// It needs Elastic.
func (t *torchJob[T]) Rendezvous(backend kubeflowv1.RDZVBackend, host string, port int) *T {
	t.rdzv = &rendezvous{backend: backend, host: host, port: port}
	return t.Lifecycle.self
}

// RendezvousConf adds a rendezvous configuration entry (torchrun's
// --rdzv-conf key=value). It needs Elastic.
func (t *torchJob[T]) RendezvousConf(key, value string) *T {
	t.rdzvConf = append(t.rdzvConf, kubeflowv1.RDZVConf{Key: key, Value: value})
	return t.Lifecycle.self
}

// MaxRestarts is how many times torchrun restarts the worker group before
// the job fails. It needs Elastic.
func (t *torchJob[T]) MaxRestarts(n int) *T { t.maxRestarts = &n; return t.Lifecycle.self }

// NprocPerNode sets how many processes torchrun starts in each pod. By
// default it is the accelerators per pod (GPUs or NPUs), or 1 for pods
// without accelerators.
func (t *torchJob[T]) NprocPerNode(n int) *T { t.nproc = &n; return t.Lifecycle.self }

// Torchrun replaces the command and arguments with TorchrunCommand(script,
// args...).
func (t *torchJob[T]) Torchrun(script string, args ...string) *T {
	t.Command(TorchrunCommand(script, args...)...)
	return t.Args()
}

// nprocPerNode is the process count per pod.
func (t *torchJob[T]) nprocPerNode() int { return perPod(t.nproc, t.Devices()) }

const pytorchSpecs = "pytorchReplicaSpecs"

// buildPyTorchJob renders the PyTorchJob; override, when set, replaces the
// command line of every replica.
func (t *torchJob[T]) buildPyTorchJob(override []string) (*kubeflowv1.PyTorchJob, field.ErrorList) {
	var errs field.ErrorList
	workers := t.workers
	elasticPath := field.NewPath("spec", "elasticPolicy")
	var policy *kubeflowv1.ElasticPolicy
	gangSize := int32(0)
	if t.elastic != nil {
		lo, hi := t.elastic[0], t.elastic[1]
		if !t.workersSet {
			workers = hi
		}
		switch {
		case lo < 1:
			errs = append(errs, field.Invalid(elasticPath.Child("minReplicas"), lo, "must be at least 1"))
		case lo > hi:
			errs = append(errs, field.Invalid(elasticPath.Child("maxReplicas"), hi, fmt.Sprintf("must not be less than minReplicas (%d)", lo)))
		case workers < lo || workers > hi:
			errs = append(errs, field.Invalid(replicasPath(pytorchSpecs, kubeflowv1.PyTorchJobReplicaTypeWorker), workers,
				fmt.Sprintf("must be within the elastic range %d..%d", lo, hi)))
		}
		minR, maxR := int32(lo), int32(hi)
		policy = &kubeflowv1.ElasticPolicy{MinReplicas: &minR, MaxReplicas: &maxR, RDZVConf: slices.Clone(t.rdzvConf)}
		gangSize = max(minR, 0)
		errs = append(errs, t.renderRendezvous(policy, elasticPath)...)
	} else if t.rdzv != nil || len(t.rdzvConf) > 0 || t.maxRestarts != nil {
		errs = append(errs, field.Forbidden(elasticPath, "rendezvous settings and MaxRestarts need Elastic(min, max)"))
	}
	errs = append(errs, atLeast(workers, 1, replicasPath(pytorchSpecs, kubeflowv1.PyTorchJobReplicaTypeWorker), "worker")...)
	nproc := t.nprocPerNode()
	if nproc < 1 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "nprocPerNode"), nproc, "must be at least 1"))
	}

	var roles []role
	if policy == nil {
		roles = append(roles, role{typ: kubeflowv1.PyTorchJobReplicaTypeMaster, replicas: 1})
	}
	roles = append(roles, role{typ: kubeflowv1.PyTorchJobReplicaTypeWorker, replicas: int32(max(workers, 0))})
	if override != nil {
		for i := range roles {
			roles[i].override, roles[i].command = true, override
		}
	}
	r, renderErrs := t.render(layout{specsField: pytorchSpecs, container: kubeflowv1.PyTorchJobDefaultContainerName, roles: roles, gangSize: gangSize})
	errs = append(errs, renderErrs...)
	nprocValue := strconv.Itoa(nproc)
	job := &kubeflowv1.PyTorchJob{
		TypeMeta:   typeMeta(kubeflowv1.PyTorchJobKind),
		ObjectMeta: r.meta,
		Spec: kubeflowv1.PyTorchJobSpec{
			RunPolicy:           r.runPolicy,
			ElasticPolicy:       policy,
			PyTorchReplicaSpecs: r.replicas,
			NprocPerNode:        &nprocValue,
		},
	}
	kubeflowv1.SetObjectDefaults_PyTorchJob(job)
	return job, dedupe(errs)
}

var rdzvBackends = []kubeflowv1.RDZVBackend{kubeflowv1.BackendC10D, kubeflowv1.BackendETCD, kubeflowv1.BackendETCDV2}

func (t *torchJob[T]) renderRendezvous(policy *kubeflowv1.ElasticPolicy, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.rdzv != nil {
		backend := t.rdzv.backend
		if !slices.Contains(rdzvBackends, backend) {
			errs = append(errs, field.NotSupported(path.Child("rdzvBackend"), backend, rdzvBackends))
		}
		policy.RDZVBackend = &backend
		if t.rdzv.host != "" {
			host := t.rdzv.host
			policy.RDZVHost = &host
		}
		switch {
		case t.rdzv.port < 0 || t.rdzv.port > 65535:
			errs = append(errs, field.Invalid(path.Child("rdzvPort"), t.rdzv.port, "must be a port number"))
		case t.rdzv.port > 0:
			port := int32(t.rdzv.port)
			policy.RDZVPort = &port
		}
	}
	for i, c := range t.rdzvConf {
		if c.Key == "" {
			errs = append(errs, field.Required(path.Child("rdzvConf").Index(i).Child("key"), "a key is required"))
		}
	}
	if t.maxRestarts != nil {
		if *t.maxRestarts < 0 {
			errs = append(errs, field.Invalid(path.Child("maxRestarts"), *t.maxRestarts, "must not be negative"))
		} else {
			n := int32(*t.maxRestarts)
			policy.MaxRestarts = &n
		}
	}
	return errs
}

// PyTorchJob builds a training-operator PyTorchJob: a Master and Workers
// (or elastic Workers) running the same command, usually torchrun, with
// one process per accelerator. Create one with PyTorch.
type PyTorchJob struct {
	torchJob[PyTorchJob]
}

// PyTorch starts a PyTorchJob named name with one Master and one Worker.
func PyTorch(name string) *PyTorchJob {
	j := &PyTorchJob{}
	j.initTorch(j, "pytorchjob", name)
	return j
}

// Build validates the settings and returns the PyTorchJob, or every
// problem at once.
func (j *PyTorchJob) Build() (*kubeflowv1.PyTorchJob, error) {
	return result(j.buildPyTorchJob(nil))
}

// Objects returns the PyTorchJob; it implements cube.Workload.
func (j *PyTorchJob) Objects() ([]client.Object, error) { return objects(j.Build()) }
