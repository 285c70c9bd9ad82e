package pipeline

import (
	"errors"
	"slices"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pod"
)

// Kind is the cube.dev/kind of a pipeline's objects.
const Kind = "pipeline"

// Pipeline is a DAG of steps. It compiles to an Argo Workflow (Build,
// Objects: it is a cube.Workload) and runs in-process with Run. Its methods
// record what they are given; Build, Objects and Run validate it all and
// report every problem at once.
type Pipeline struct {
	pod.Meta[Pipeline]

	steps          []Step
	params         []namedValue
	workspace      *Workspace
	parallelism    int
	parallelismSet bool
	ttl            ttl
	podGC          PodGCStrategy
	serviceAccount string
	executorRBAC   bool
	onExit         Step
	onExitSet      bool
	kinds          []cube.Kind
}

// namedValue is a pipeline parameter or a function step's input.
type namedValue struct{ name, value string }

// setNamed replaces the entry of the same name, or appends.
func setNamed(list []namedValue, v namedValue) []namedValue {
	for i := range list {
		if list[i].name == v.name {
			list[i] = v
			return list
		}
	}
	return append(list, v)
}

type ttl struct {
	completion, success, failure *time.Duration
}

// Workspace is a volume shared by every container step of a run: Argo
// creates one PersistentVolumeClaim per Workflow (volumeClaimTemplates) and
// mounts it at MountPath; locally it is the run directory's workspace
// folder. Either way its path is $CUBE_WORKSPACE and {{workspace}}.
//
// AccessMode defaults to ReadWriteMany when pods of a run may mount the
// workspace at the same time — a fanned-out step, a workload step whose job
// mounts it (every pod of the job does), or two steps with no dependency
// between them — and to ReadWriteOnce when the steps mount it one after
// another. ReadWriteMany needs a storage class that offers it (NFS, CephFS,
// a cloud file store); a claim the class cannot satisfy stays Pending. An
// explicit ReadWriteOnce is kept: it works only while the pods that share
// the workspace land on one node. ReadWriteOncePod is refused when pods
// share it.
type Workspace struct {
	Size         string                            // e.g. "20Gi"; required
	StorageClass string                            // default: the cluster's
	AccessMode   corev1.PersistentVolumeAccessMode // default: see above
	MountPath    string                            // default /workspace
}

// PodGCStrategy says when Argo deletes the pods of a run.
type PodGCStrategy = wfv1.PodGCStrategy

// Pod GC strategies.
const (
	PodGCOnPodCompletion      = wfv1.PodGCOnPodCompletion
	PodGCOnPodSuccess         = wfv1.PodGCOnPodSuccess
	PodGCOnWorkflowCompletion = wfv1.PodGCOnWorkflowCompletion
	PodGCOnWorkflowSuccess    = wfv1.PodGCOnWorkflowSuccess
)

// New returns an empty pipeline named name. The name names the Workflow (a
// DNS-1123 label of at most 63 characters) and its DAG template.
func New(name string) *Pipeline {
	p := &Pipeline{}
	podspec.Of(&p.Handle).InitMeta(p, Kind, name)
	return p
}

// Kinds adds the kinds the pipeline's workload steps create (appends),
// such as train.Kinds() for training jobs: a workload step runs a job of
// a kind whose Completion tells Argo when it has finished. The Kubernetes
// API's own (a batch Job) and this package's (a Workflow) need none.
func (p *Pipeline) Kinds(kinds ...cube.Kind) *Pipeline {
	if p == nil {
		return nil
	}
	p.kinds = append(p.kinds, kinds...)
	return p
}

// Step adds steps (appends), in the order they are listed in the Workflow.
func (p *Pipeline) Step(steps ...Step) *Pipeline {
	if p == nil {
		return nil
	}
	p.steps = append(p.steps, steps...)
	return p
}

// Param declares a pipeline parameter with its default value, replacing one
// of the same name. Steps read it through ParamRef(name); Run overrides it
// with SetParam, Argo with the Workflow's arguments.
func (p *Pipeline) Param(name, defaultValue string) *Pipeline {
	if p == nil {
		return nil
	}
	p.params = setNamed(p.params, namedValue{name, defaultValue})
	return p
}

// Workspace gives every run a shared volume for files and artifacts.
func (p *Pipeline) Workspace(w Workspace) *Pipeline {
	if p == nil {
		return nil
	}
	p.workspace = &w
	return p
}

// Parallelism bounds how many steps of a run execute at once (Argo's
// spec.parallelism; locally it caps the Parallelism run option).
func (p *Pipeline) Parallelism(n int) *Pipeline {
	if p == nil {
		return nil
	}
	p.parallelism, p.parallelismSet = n, true
	return p
}

// TTL deletes a finished Workflow after d (ttlStrategy.secondsAfterCompletion).
func (p *Pipeline) TTL(d time.Duration) *Pipeline {
	if p == nil {
		return nil
	}
	p.ttl.completion = &d
	return p
}

// TTLAfterSuccess deletes a succeeded Workflow after d.
func (p *Pipeline) TTLAfterSuccess(d time.Duration) *Pipeline {
	if p == nil {
		return nil
	}
	p.ttl.success = &d
	return p
}

// TTLAfterFailure deletes a failed Workflow after d.
func (p *Pipeline) TTLAfterFailure(d time.Duration) *Pipeline {
	if p == nil {
		return nil
	}
	p.ttl.failure = &d
	return p
}

// PodGC sets when Argo deletes the step pods (podGC.strategy).
func (p *Pipeline) PodGC(strategy PodGCStrategy) *Pipeline {
	if p == nil {
		return nil
	}
	p.podGC = strategy
	return p
}

// ServiceAccount sets the service account every pod of a run uses
// (spec.serviceAccountName): the step pods, and the argoexec pods that
// create the jobs of workload steps and wait for them. Without it Argo uses
// the namespace's default account. Argo's executor needs RBAC on that
// account; ExecutorRBAC renders it.
func (p *Pipeline) ServiceAccount(name string) *Pipeline {
	if p == nil {
		return nil
	}
	p.serviceAccount = name
	return p
}

// ExecutorRBAC makes Objects also render the service account the pipeline
// runs under, with a Role and RoleBinding granting it exactly what Argo's
// executor needs: see ExecutorRules. The account is the one named with
// ServiceAccount, or PIPELINE-executor when none is named; the Role and the
// RoleBinding have its name.
func (p *Pipeline) ExecutorRBAC() *Pipeline {
	if p == nil {
		return nil
	}
	p.executorRBAC = true
	return p
}

// OnExit sets the exit handler: a step that runs after all others whatever
// their outcome, and reads the outcome through PipelineStatus. It takes no
// dependencies, outputs of other steps, condition or fan-out.
func (p *Pipeline) OnExit(step Step) *Pipeline {
	if p == nil {
		return nil
	}
	p.onExit, p.onExitSet = step, true
	return p
}

// Steps returns the pipeline's steps in order (a fresh slice).
func (p *Pipeline) Steps() []Step {
	if p == nil {
		return nil
	}
	return slices.Clone(p.steps)
}

// errNilPipeline is what every method that validates returns on a nil
// *Pipeline. A nil receiver records nothing: its chained methods return nil.
var errNilPipeline = errors.New("pipeline: the *Pipeline is nil: make one with pipeline.New")
