package train

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/podspec"
)

// torchJob is the PyTorchJob core that PyTorch, DeepSpeed and ColossalAI
// share: Master plus Workers, or Workers alone under an elastic policy.
type torchJob[T any] struct {
	operatorJob[T]
	size        podCount
	elastic     *[2]int
	rdzv        *rendezvous
	rdzvConf    []kubeflowv1.RDZVConf
	maxRestarts *int
	nproc       *int
}

// podCount is how many pods a job with a Master runs, as Workers (the
// Worker replicas) or Nodes (the Master included) said; unset, one Worker.
type podCount struct {
	n          int
	set, nodes bool
}

// workers returns the Worker replicas: with a Master (withMaster) Nodes
// counts it, without one Nodes counts Workers. A count below what makes a
// job is reported under path.
func (c podCount) workers(withMaster bool, path *field.Path) (int, field.ErrorList) {
	switch {
	case !c.set:
		return 1, nil
	case c.nodes && withMaster:
		if c.n < 1 {
			return 0, field.ErrorList{field.Invalid(path, c.n-1, fmt.Sprintf("Nodes(%d) leaves no pod: Nodes counts the Master, so it is at least 1", c.n))}
		}
		return c.n - 1, nil
	case c.n < 0:
		return 0, field.ErrorList{field.Invalid(path, c.n, "must not be negative")}
	}
	return c.n, nil
}

type rendezvous struct {
	backend kubeflowv1.RDZVBackend
	host    string
	port    int
}

func (t *torchJob[T]) initTorch(self *T, kind, name string) {
	t.init(self, kind, name)
}

// Workers sets how many Worker replicas run besides the Master (default 1;
// 0 runs the Master alone, one pod). Under Elastic no Master runs and it is
// the initial Worker count (default: the maximum). Nodes counts the Master
// too; the later of the two calls wins.
func (t *torchJob[T]) Workers(n int) *T {
	t.size = podCount{n: n, set: true}
	return t.Lifecycle.ret()
}

// Nodes sets how many pods train, the Master included: Nodes(1) is a
// single pod (a Master alone), Nodes(4) a Master and three Workers. It is
// the count of Arena's --workers, the Kubeflow SDK's num_workers and
// torchrun's --nnodes. Under Elastic, where no Master runs, it is the
// initial Worker count. Workers counts the Worker replicas only; the later
// of the two calls wins.
func (t *torchJob[T]) Nodes(n int) *T {
	t.size = podCount{n: n, set: true, nodes: true}
	return t.Lifecycle.ret()
}

// Elastic makes the job elastic: between min and max Worker replicas
// rendezvous through torchrun's c10d backend (see Rendezvous), and no
// Master runs. Gang scheduling then needs min pods.
func (t *torchJob[T]) Elastic(min, max int) *T {
	t.elastic = &[2]int{min, max}
	return t.Lifecycle.ret()
}

// Rendezvous sets the elastic rendezvous backend (kubeflowv1.BackendC10D,
// BackendETCD or BackendETCDV2) and endpoint; an empty host means the
// first worker and port 0 the worker's port, as the operator defaults.
// It needs Elastic.
func (t *torchJob[T]) Rendezvous(backend kubeflowv1.RDZVBackend, host string, port int) *T {
	t.rdzv = &rendezvous{backend: backend, host: host, port: port}
	return t.Lifecycle.ret()
}

// RendezvousConf adds a rendezvous configuration entry (torchrun's
// --rdzv-conf key=value). It needs Elastic.
func (t *torchJob[T]) RendezvousConf(key, value string) *T {
	t.rdzvConf = append(t.rdzvConf, kubeflowv1.RDZVConf{Key: key, Value: value})
	return t.Lifecycle.ret()
}

// MaxRestarts is how many times torchrun restarts the worker group before
// the job fails. It needs Elastic.
func (t *torchJob[T]) MaxRestarts(n int) *T { t.maxRestarts = &n; return t.Lifecycle.ret() }

// NprocPerNode sets how many processes torchrun starts in each pod. By
// default it is the accelerators per pod (GPUs or NPUs), or 1 for pods
// without accelerators.
func (t *torchJob[T]) NprocPerNode(n int) *T { t.nproc = &n; return t.Lifecycle.ret() }

// Torchrun replaces the command and arguments with TorchrunCommand(script,
// args...).
func (t *torchJob[T]) Torchrun(script string, args ...string) *T {
	t.Command(TorchrunCommand(script, args...)...)
	return t.Args()
}

// nprocPerNode is the process count per pod.
func (t *torchJob[T]) nprocPerNode() int { return perPod(t.nproc, podspec.Of(&t.Handle).GPUCount()) }

const pytorchSpecs = "pytorchReplicaSpecs"

// buildPyTorchJob renders the PyTorchJob; override, when set, replaces the
// command line of every replica.
func (t *torchJob[T]) buildPyTorchJob(override []string) (*kubeflowv1.PyTorchJob, field.ErrorList) {
	var errs field.ErrorList
	workersPath := replicasPath(pytorchSpecs, kubeflowv1.PyTorchJobReplicaTypeWorker)
	workers, countErrs := t.size.workers(t.elastic == nil, workersPath)
	errs = append(errs, countErrs...)
	elasticPath := field.NewPath("spec", "elasticPolicy")
	var policy *kubeflowv1.ElasticPolicy
	gangSize := 0
	if t.elastic != nil {
		lo, hi := t.elastic[0], t.elastic[1]
		if !t.size.set {
			workers = hi
		}
		switch {
		case lo < 1:
			errs = append(errs, field.Invalid(elasticPath.Child("minReplicas"), lo, "must be at least 1"))
		case lo > hi:
			errs = append(errs, field.Invalid(elasticPath.Child("maxReplicas"), hi, fmt.Sprintf("must not be less than minReplicas (%d)", lo)))
		case hi > math.MaxInt32:
			errs = append(errs, field.Invalid(elasticPath.Child("maxReplicas"), hi, "must fit in 32 bits"))
		case workers < lo || workers > hi:
			errs = append(errs, field.Invalid(replicasPath(pytorchSpecs, kubeflowv1.PyTorchJobReplicaTypeWorker), workers,
				fmt.Sprintf("must be within the elastic range %d..%d", lo, hi)))
		}
		minR, maxR := clamp32(lo), clamp32(hi)
		policy = &kubeflowv1.ElasticPolicy{MinReplicas: &minR, MaxReplicas: &maxR, RDZVConf: slices.Clone(t.rdzvConf)}
		gangSize = max(lo, 0)
		errs = append(errs, t.renderRendezvous(policy, elasticPath)...)
	} else if t.rdzv != nil || len(t.rdzvConf) > 0 || t.maxRestarts != nil {
		errs = append(errs, field.Forbidden(elasticPath, "rendezvous settings and MaxRestarts need Elastic(min, max)"))
	}
	nproc := t.nprocPerNode()
	if nproc < 1 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "nprocPerNode"), nproc, "must be at least 1"))
	}

	var roles []role
	if policy == nil {
		roles = append(roles, role{typ: kubeflowv1.PyTorchJobReplicaTypeMaster, replicas: 1})
	}
	if workers > 0 || policy != nil {
		// A job of one pod has no Worker replica spec: the operator's
		// webhook (pkg/webhooks/pytorch) accepts a Master alone and sets
		// WORLD_SIZE from the replicas there are.
		roles = append(roles, role{typ: kubeflowv1.PyTorchJobReplicaTypeWorker, replicas: max(workers, 0)})
	}
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
	errs = append(errs, checkPorts(pytorchSpecs, job.Spec.PyTorchReplicaSpecs)...)
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
		switch {
		case *t.maxRestarts < 0:
			errs = append(errs, field.Invalid(path.Child("maxRestarts"), *t.maxRestarts, "must not be negative"))
		case *t.maxRestarts > math.MaxInt32:
			errs = append(errs, field.Invalid(path.Child("maxRestarts"), *t.maxRestarts, "must fit in 32 bits"))
		default:
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

// PyTorch starts a PyTorchJob named name with one Master and one Worker
// (Nodes(2)); Nodes(1) or Workers(0) makes it a single pod.
func PyTorch(name string) *PyTorchJob {
	j := &PyTorchJob{}
	j.initTorch(j, "pytorchjob", name)
	return j
}

// Build validates the settings and returns the PyTorchJob, or every
// problem at once.
func (j *PyTorchJob) Build() (*kubeflowv1.PyTorchJob, error) {
	if j == nil || unmade(&j.Builder) {
		return result[*kubeflowv1.PyTorchJob](nil, unmadeErrors("train.PyTorchJob", "PyTorch"))
	}
	return result(j.buildPyTorchJob(nil))
}

// Objects returns the PyTorchJob; it implements cube.Workload.
func (j *PyTorchJob) Objects() ([]client.Object, error) { return objects(j.Build()) }
