package pipeline

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pipeline/internal/graph"
	"github.com/cubestudio/cube/pod"
)

// Kind is the cube.dev/kind of a pipeline's objects.
const Kind = "pipeline"

// LabelStep labels the pods of a step with the step name.
const LabelStep = "cube.dev/step"

// Pipeline is a DAG of steps. A backend runs it: package pipeline/argo
// compiles it to an Argo Workflow (argo.Workflow(p), a cube.Workload), and
// package pipeline/local runs it in-process (local.Run). Its methods record
// what they are given; the backends validate it all and report every
// problem at once. Every setting of pod.Meta (Namespace, Label,
// Annotation, PartOf) applies to the Workflow.
//
// graph.Source carries the definition to the backends; it has nothing a
// user can call.
type Pipeline struct {
	pod.Meta[Pipeline]
	graph.Source

	steps          []Step
	params         []graph.NamedValue
	workspace      *Workspace
	parallelism    int
	parallelismSet bool
	ttl            *time.Duration
	podGC          PodGCStrategy
	serviceAccount string
	onExit         Step
	onExitSet      bool
	kinds          []cube.Kind
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

// PodGCStrategy says when the pods of a run are deleted. Argo reads it as
// podGC.strategy (pipeline/argo maps each to its wfv1.PodGCStrategy of the
// same value); a local run has no pods.
type PodGCStrategy string

// Pod GC strategies: delete each pod when it completes, or when it
// succeeds; delete all of them when the run completes, or when it succeeds.
const (
	PodGCOnPodCompletion      PodGCStrategy = "OnPodCompletion"
	PodGCOnPodSuccess         PodGCStrategy = "OnPodSuccess"
	PodGCOnWorkflowCompletion PodGCStrategy = "OnWorkflowCompletion"
	PodGCOnWorkflowSuccess    PodGCStrategy = "OnWorkflowSuccess"
)

// New returns an empty pipeline named name. The name names the Workflow (a
// DNS-1123 label of at most 63 characters) and its DAG template.
func New(name string) *Pipeline {
	p := &Pipeline{}
	podspec.Of(&p.Handle).InitMeta(p, Kind, name)
	p.bind()
	return p
}

// Kinds adds the kinds the pipeline's workload steps create (appends),
// such as train.Kinds() for training jobs: a workload step runs a job of
// a kind whose Completion tells Argo when it has finished. The Kubernetes
// API's own (a batch Job) and an Argo Workflow need none.
func (p *Pipeline) Kinds(kinds ...cube.Kind) *Pipeline {
	if p == nil {
		return nil
	}
	p.bind()
	p.kinds = append(p.kinds, kinds...)
	return p
}

// Step adds steps (appends), in the order they are listed in the Workflow.
func (p *Pipeline) Step(steps ...Step) *Pipeline {
	if p == nil {
		return nil
	}
	p.bind()
	p.steps = append(p.steps, steps...)
	return p
}

// Param declares a pipeline parameter with its default value, replacing one
// of the same name. Steps read it through ParamRef(name); a local run
// overrides it with local.SetParam, Argo with the Workflow's arguments.
func (p *Pipeline) Param(name, defaultValue string) *Pipeline {
	if p == nil {
		return nil
	}
	p.bind()
	p.params = graph.SetNamed(p.params, graph.NamedValue{Name: name, Value: defaultValue})
	return p
}

// Workspace gives every run a shared volume for files and artifacts.
func (p *Pipeline) Workspace(w Workspace) *Pipeline {
	if p == nil {
		return nil
	}
	p.bind()
	p.workspace = &w
	return p
}

// Parallelism bounds how many steps of a run execute at once (Argo's
// spec.parallelism; locally it caps local.Parallelism).
func (p *Pipeline) Parallelism(n int) *Pipeline {
	if p == nil {
		return nil
	}
	p.bind()
	p.parallelism, p.parallelismSet = n, true
	return p
}

// TTLAfterFinished deletes a Workflow d after it finished, succeeded or
// failed (ttlStrategy.secondsAfterCompletion, whole seconds rounded up;
// argo-workflows v3.7.6 pkg/apis/workflow/v1alpha1/workflow_types.go,
// TTLStrategy). A local run keeps its directory.
func (p *Pipeline) TTLAfterFinished(d time.Duration) *Pipeline {
	if p == nil {
		return nil
	}
	p.bind()
	p.ttl = &d
	return p
}

// PodGC sets when Argo deletes the step pods (podGC.strategy).
func (p *Pipeline) PodGC(strategy PodGCStrategy) *Pipeline {
	if p == nil {
		return nil
	}
	p.bind()
	p.podGC = strategy
	return p
}

// ServiceAccount sets the service account every pod of a run uses
// (spec.serviceAccountName): the step pods, and the argoexec pods that
// create the jobs of workload steps and wait for them. Without it Argo uses
// the namespace's default account. Argo's executor needs RBAC on that
// account; argo.Workflow(p).ExecutorRBAC() renders it. A local run has no
// service account.
func (p *Pipeline) ServiceAccount(name string) *Pipeline {
	if p == nil {
		return nil
	}
	p.bind()
	p.serviceAccount = name
	return p
}

// OnExit sets the exit handler: a step that runs after all others whatever
// their outcome, and reads the outcome through PipelineStatus. It takes no
// dependencies, outputs of other steps, condition or fan-out.
func (p *Pipeline) OnExit(step Step) *Pipeline {
	if p == nil {
		return nil
	}
	p.bind()
	p.onExit, p.onExitSet = step, true
	return p
}

// bind makes graph.Of read p's definition. New and every setting call it,
// so that a zero Pipeline that was given steps is analysed (and refused
// for its missing name) like one New made.
func (p *Pipeline) bind() { graph.Bind(&p.Source, p.definition) }

// definition is what graph.Of returns: a snapshot of the settings, read
// when a backend validates or compiles the pipeline.
func (p *Pipeline) definition() *graph.Pipeline {
	m := podspec.Of(&p.Handle)
	def := &graph.Pipeline{
		Name:           m.Name(),
		MetaErrors:     m.ValidateMeta(63),
		Params:         p.params,
		Parallelism:    p.parallelism,
		ParallelismSet: p.parallelismSet,
		TTL:            p.ttl,
		PodGC:          string(p.podGC),
		ServiceAccount: p.serviceAccount,
		Kinds:          p.kinds,
		Steps:          make([]graph.Step, len(p.steps)),
	}
	if w := p.workspace; w != nil {
		def.Workspace = &graph.Workspace{Size: w.Size, StorageClass: w.StorageClass, AccessMode: w.AccessMode, MountPath: w.MountPath}
	}
	for i, s := range p.steps {
		def.Steps[i] = stepDef(s)
	}
	if p.onExitSet {
		exit := stepDef(p.onExit)
		def.OnExit = &exit
	}
	return def
}
