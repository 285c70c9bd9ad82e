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
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/retry"
)

// torchJob is the state of the PyTorchJob settings that PyTorch,
// DeepSpeed and ColossalAI share: Master plus Workers, or Workers alone
// under an elastic policy. Each of the three declares the settings itself
// (so that go doc shows them with its own type) and keeps this state.
type torchJob struct {
	size         podCount
	elastic      *[2]int
	rdzv         *rendezvous
	rdzvConf     []kubeflowv1.RDZVConf
	elasticRetry *retry.Policy
	nproc        *int
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

func (t *torchJob) workers(n int) { t.size = podCount{n: n, set: true} }
func (t *torchJob) nodes(n int)   { t.size = podCount{n: n, set: true, nodes: true} }
func (t *torchJob) setElastic(min, max int) {
	t.elastic = &[2]int{min, max}
}
func (t *torchJob) rendezvous(backend kubeflowv1.RDZVBackend, host string, port int) {
	t.rdzv = &rendezvous{backend: backend, host: host, port: port}
}
func (t *torchJob) rendezvousConf(key, value string) {
	t.rdzvConf = append(t.rdzvConf, kubeflowv1.RDZVConf{Key: key, Value: value})
}

// nprocPerNode is the process count per pod for pods with accelerators
// accelerators each.
func (t *torchJob) nprocPerNode(accelerators int) int { return perPod(t.nproc, accelerators) }

const pytorchSpecs = "pytorchReplicaSpecs"

// buildPyTorchJob renders the PyTorchJob of o with the settings t;
// override, when set, replaces the command line of every replica.
func buildPyTorchJob[T any](o operator[T], t *torchJob, override []string) (*kubeflowv1.PyTorchJob, field.ErrorList) {
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
	} else if t.rdzv != nil || len(t.rdzvConf) > 0 || t.elasticRetry != nil {
		errs = append(errs, field.Forbidden(elasticPath, "rendezvous settings and ElasticRetry need Elastic(min, max)"))
	}
	nproc := t.nprocPerNode(podspec.Of(&o.pod.Handle).GPUCount())
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
	r, renderErrs := o.render(layout{specsField: pytorchSpecs, container: kubeflowv1.PyTorchJobDefaultContainerName, roles: roles, gangSize: gangSize})
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

func (t *torchJob) renderRendezvous(policy *kubeflowv1.ElasticPolicy, path *field.Path) field.ErrorList {
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
	if t.elasticRetry != nil {
		policy.MaxRestarts = retryLimit(*t.elasticRetry, path.Child("maxRestarts"), field.NewPath("elasticRetry"), 0, "torchrun", &errs)
	}
	return errs
}

// PyTorchJob builds a training-operator PyTorchJob: a Master and Workers
// (or elastic Workers) running the same command, usually torchrun, with
// one process per accelerator. Create one with PyTorch.
//
// Its settings are its own methods below, every torchrun setting of the
// embedded Torch (Workers, Nodes, Elastic, Rendezvous, RendezvousConf,
// ElasticRetry, NprocPerNode: go doc train.Torch), every pod setting (image,
// command, env, resources, Accelerators, On, Fabric…: go doc pod.Builder)
// and every run-policy setting (CleanPodPolicy, RestartPolicy, Gang,
// TTLAfterFinished, ActiveDeadline, Retry, Suspend: go doc train.RunPolicy
// and go doc train.Lifecycle).
type PyTorchJob struct {
	pod.Builder[PyTorchJob]
	RunPolicy[PyTorchJob]
	Torch[PyTorchJob]
	roles roleResources
}

// PyTorch starts a PyTorchJob named name with one Master and one Worker
// (Nodes(2)); Nodes(1) or Workers(0) makes it a single pod.
func PyTorch(name string) *PyTorchJob {
	j := &PyTorchJob{}
	initOperator(j, &j.Builder, &j.RunPolicy, "pytorchjob", name)
	j.initTorch(j)
	return j
}

func (j *PyTorchJob) operator() operator[PyTorchJob] {
	return operator[PyTorchJob]{pod: &j.Builder, run: &j.RunPolicy, roles: j.roles}
}

// Torchrun replaces the command and arguments with TorchrunCommand(script,
// args...).
func (j *PyTorchJob) Torchrun(script string, args ...string) *PyTorchJob {
	if j == nil {
		return nil
	}
	j.Command(TorchrunCommand(script, args...)...)
	return j.Args()
}

// RoleResources gives one replica role (kubeflowv1.PyTorchJobReplicaTypeMaster
// or Worker) its own CPU and memory, as TFJob.RoleResources.
func (j *PyTorchJob) RoleResources(role kubeflowv1.ReplicaType, cpu, memory string) *PyTorchJob {
	if j == nil {
		return nil
	}
	j.roles.set(role, cpu, memory)
	return j
}

// Build validates the settings and returns the PyTorchJob, or every
// problem at once.
func (j *PyTorchJob) Build() (*kubeflowv1.PyTorchJob, error) {
	if j == nil || unmade(&j.Builder) {
		return result[*kubeflowv1.PyTorchJob](nil, unmadeErrors("train.PyTorchJob", "PyTorch"))
	}
	return result(buildPyTorchJob(j.operator(), &j.Torch.torch, nil))
}

// Objects returns the PyTorchJob; it implements cube.Workload.
func (j *PyTorchJob) Objects() ([]client.Object, error) {
	if j != nil {
		if err := noClaims(&j.Builder); err != nil {
			return nil, err
		}
	}
	return objects(j.Build())
}

// Torch holds the torchrun settings that PyTorchJob, DeepSpeedJob and
// ColossalAIJob share, written once: Workers, Nodes, Elastic, Rendezvous,
// RendezvousConf, ElasticRetry and NprocPerNode. Each of those jobs embeds
// it, so its settings are the job's own; it is not used alone.
type Torch[T any] struct {
	self  *T
	torch torchJob
}

func (t *Torch[T]) initTorch(self *T) { t.self = self }

// Workers sets how many Worker replicas run besides the Master (default 1;
// 0 runs the Master alone, one pod). Under Elastic no Master runs and it is
// the initial Worker count (default: the maximum). Nodes counts the Master
// too; the later of the two calls wins.
func (t *Torch[T]) Workers(n int) *T {
	if t == nil {
		return nil
	}
	t.torch.workers(n)
	return t.self
}

// Nodes sets how many pods train, the Master included: Nodes(1) is a
// single pod (a Master alone), Nodes(4) a Master and three Workers. It is
// the count of Arena's --workers, the Kubeflow SDK's num_workers and
// torchrun's --nnodes. Under Elastic, where no Master runs, it is the
// initial Worker count. Workers counts the Worker replicas only; the later
// of the two calls wins.
func (t *Torch[T]) Nodes(n int) *T {
	if t == nil {
		return nil
	}
	t.torch.nodes(n)
	return t.self
}

// Elastic makes the job elastic: between min and max Worker replicas
// rendezvous through torchrun's c10d backend (see Rendezvous), and no
// Master runs. Gang scheduling then needs min pods.
func (t *Torch[T]) Elastic(min, max int) *T {
	if t == nil {
		return nil
	}
	t.torch.setElastic(min, max)
	return t.self
}

// Rendezvous sets the elastic rendezvous backend (kubeflowv1.BackendC10D,
// BackendETCD or BackendETCDV2) and endpoint; an empty host means the
// first worker and port 0 the worker's port, as the operator defaults.
// It needs Elastic.
func (t *Torch[T]) Rendezvous(backend kubeflowv1.RDZVBackend, host string, port int) *T {
	if t == nil {
		return nil
	}
	t.torch.rendezvous(backend, host, port)
	return t.self
}

// RendezvousConf adds a rendezvous configuration entry (torchrun's
// --rdzv-conf key=value). It needs Elastic.
func (t *Torch[T]) RendezvousConf(key, value string) *T {
	if t == nil {
		return nil
	}
	t.torch.rendezvousConf(key, value)
	return t.self
}

// ElasticRetry sets how many times torchrun restarts the worker group in
// place, inside the pods, before it gives up and the pods fail: r.Limit
// becomes elasticPolicy.maxRestarts, which the training-operator v1.8.1
// hands to torchrun as PET_MAX_RESTARTS (--max-restarts;
// pkg/controller.v1/pytorch/elastic.go). It needs Elastic. The pods' own
// restarts after that are counted by Retry (runPolicy.backoffLimit), a
// different layer, hence a setting of its own. torchrun restarts at once
// and has no retry window, so a Backoff, Factor, MaxBackoff or MaxDuration
// is refused.
func (t *Torch[T]) ElasticRetry(r retry.Policy) *T {
	if t == nil {
		return nil
	}
	t.torch.elasticRetry = &r
	return t.self
}

// NprocPerNode sets how many processes torchrun starts in each pod. By
// default it is the accelerators per pod, or 1 for pods without
// accelerators.
func (t *Torch[T]) NprocPerNode(n int) *T {
	if t == nil {
		return nil
	}
	t.torch.nproc = &n
	return t.self
}
