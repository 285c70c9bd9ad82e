package pipeline

import (
	"slices"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"

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
	onExit         Step
	onExitSet      bool
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
type Workspace struct {
	Size         string                            // e.g. "20Gi"; required
	StorageClass string                            // default: the cluster's
	AccessMode   corev1.PersistentVolumeAccessMode // default ReadWriteOnce
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
	p.InitMeta(p, Kind, name)
	return p
}

// Step adds steps (appends), in the order they are listed in the Workflow.
func (p *Pipeline) Step(steps ...Step) *Pipeline {
	p.steps = append(p.steps, steps...)
	return p
}

// Param declares a pipeline parameter with its default value, replacing one
// of the same name. Steps read it through ParamRef(name); Run overrides it
// with SetParam, Argo with the Workflow's arguments.
func (p *Pipeline) Param(name, defaultValue string) *Pipeline {
	p.params = setNamed(p.params, namedValue{name, defaultValue})
	return p
}

// Workspace gives every run a shared volume for files and artifacts.
func (p *Pipeline) Workspace(w Workspace) *Pipeline { p.workspace = &w; return p }

// Parallelism bounds how many steps of a run execute at once (Argo's
// spec.parallelism; locally it caps Concurrency).
func (p *Pipeline) Parallelism(n int) *Pipeline {
	p.parallelism, p.parallelismSet = n, true
	return p
}

// TTL deletes a finished Workflow after d (ttlStrategy.secondsAfterCompletion).
func (p *Pipeline) TTL(d time.Duration) *Pipeline { p.ttl.completion = &d; return p }

// TTLAfterSuccess deletes a succeeded Workflow after d.
func (p *Pipeline) TTLAfterSuccess(d time.Duration) *Pipeline { p.ttl.success = &d; return p }

// TTLAfterFailure deletes a failed Workflow after d.
func (p *Pipeline) TTLAfterFailure(d time.Duration) *Pipeline { p.ttl.failure = &d; return p }

// PodGC sets when Argo deletes the step pods (podGC.strategy).
func (p *Pipeline) PodGC(strategy PodGCStrategy) *Pipeline { p.podGC = strategy; return p }

// ServiceAccount sets the service account of the step pods (and the one
// workload steps create their objects with).
func (p *Pipeline) ServiceAccount(name string) *Pipeline { p.serviceAccount = name; return p }

// OnExit sets the exit handler: a step that runs after all others whatever
// their outcome, and reads the outcome through PipelineStatus. It takes no
// dependencies, outputs of other steps, condition or fan-out.
func (p *Pipeline) OnExit(step Step) *Pipeline {
	p.onExit, p.onExitSet = step, true
	return p
}

// Steps returns the pipeline's steps in order (a fresh slice).
func (p *Pipeline) Steps() []Step { return slices.Clone(p.steps) }
