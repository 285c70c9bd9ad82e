package argo

import (
	"errors"
	"fmt"
	"math"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/internal/graph"
)

// Names and paths the compiled Workflow uses.
const (
	// OutputsPath is where container steps write outputs in Argo (an emptyDir).
	OutputsPath = "/tmp/cube/outputs"
	// DefaultWorkspacePath is where the workspace is mounted in Argo.
	DefaultWorkspacePath = "/workspace"

	outputsVolume   = "cube-outputs"
	workspaceVolume = "workspace"
	fanOutSuffix    = "-fanout"
	mainContainer   = "main"
	workflowVersion = "argoproj.io/v1alpha1"
)

// WorkflowBuilder compiles a pipeline to an Argo Workflow. It is a
// cube.Workload: cube.Client.Apply(ctx, argo.Workflow(p)) runs the pipeline
// once on the cluster. It reads the pipeline when it is built, so later
// changes to the pipeline are included.
type WorkflowBuilder struct {
	p            *pipeline.Pipeline
	executorRBAC bool
}

// Workflow returns the Workflow builder of p.
func Workflow(p *pipeline.Pipeline) *WorkflowBuilder { return &WorkflowBuilder{p: p} }

// ExecutorRBAC makes Objects also render the service account the pipeline
// runs under, with a Role and RoleBinding granting it exactly what Argo's
// executor needs (create and patch on workflowtaskresults; create and get
// on each kind its workload steps run). The account is the one named with
// Pipeline.ServiceAccount, or PIPELINE-executor when none is named; the
// Role and the RoleBinding have its name.
func (w *WorkflowBuilder) ExecutorRBAC() *WorkflowBuilder {
	if w == nil {
		return nil
	}
	w.executorRBAC = true
	return w
}

// Build compiles the pipeline to a fresh Argo Workflow, or returns every
// problem found.
func (w *WorkflowBuilder) Build() (*wfv1.Workflow, error) {
	wf, _, err := w.compile()
	return wf, err
}

// Objects compiles the pipeline: the executor's RBAC (ExecutorRBAC), the
// objects workload steps create around their jobs (ConfigMaps, Services…),
// relabelled into this release, and the Workflow.
func (w *WorkflowBuilder) Objects() ([]client.Object, error) {
	wf, extra, err := w.compile()
	if err != nil {
		return nil, err
	}
	return append(extra, wf), nil
}

// errNilPipeline is what Build and Objects return for a nil pipeline or
// builder.
var errNilPipeline = errors.New("pipeline: the *Pipeline is nil: make one with pipeline.New")

// analyze reads and analyses p.
func analyze(p *pipeline.Pipeline, executorRBAC bool) (*dag, field.ErrorList, error) {
	if p == nil {
		return nil, nil, errNilPipeline
	}
	def := graph.Of(&p.Source)
	if def == nil { // a zero Pipeline never given a setting
		m := podspec.Of(&p.Handle)
		def = &graph.Pipeline{Name: m.Name(), MetaErrors: m.ValidateMeta(63)}
	}
	g, errs := graph.Analyze(def)
	return &dag{Graph: g, p: p, executorRBAC: executorRBAC}, errs, nil
}

// dag is an analysed pipeline with what the Argo backend adds to it.
type dag struct {
	*graph.Graph
	p            *pipeline.Pipeline
	executorRBAC bool
}

// compileSpec analyses the pipeline and compiles its Workflow spec, and
// returns the objects applied beside it: the executor's RBAC (ExecutorRBAC),
// then the objects workload steps create around their jobs.
func compileSpec(p *pipeline.Pipeline, executorRBAC bool) (wfv1.WorkflowSpec, []client.Object, field.ErrorList, error) {
	g, errs, err := analyze(p, executorRBAC)
	if err != nil {
		return wfv1.WorkflowSpec{}, nil, nil, err
	}
	spec, aux, cerrs := g.workflowSpec()
	extra := g.rbacObjects()
	for _, u := range aux {
		extra = append(extra, u)
	}
	return spec, extra, append(errs, cerrs...), nil
}

func (w *WorkflowBuilder) compile() (*wfv1.Workflow, []client.Object, error) {
	if w == nil {
		return nil, nil, errNilPipeline
	}
	spec, aux, errs, err := compileSpec(w.p, w.executorRBAC)
	if err != nil {
		return nil, nil, err
	}
	if len(errs) > 0 {
		return nil, nil, errs.ToAggregate()
	}
	m := podspec.Of(&w.p.Handle)
	return &wfv1.Workflow{
		TypeMeta:   metav1.TypeMeta{APIVersion: workflowVersion, Kind: "Workflow"},
		ObjectMeta: m.ObjectMeta(m.Name()),
		Spec:       spec,
	}, aux, nil
}

func (g *dag) workspacePath() string {
	if g.P.Workspace != nil && g.P.Workspace.MountPath != "" {
		return g.P.Workspace.MountPath
	}
	return DefaultWorkspacePath
}

// workflowSpec compiles the spec shared by Workflow and CronWorkflow.
func (g *dag) workflowSpec() (wfv1.WorkflowSpec, []*unstructured.Unstructured, field.ErrorList) {
	p, m := g.P, podspec.Of(&g.p.Handle)
	var errs field.ErrorList
	spec := wfv1.WorkflowSpec{
		Entrypoint:         m.Name(),
		ServiceAccountName: g.serviceAccountName(),
		PodMetadata:        &wfv1.Metadata{Labels: m.PodLabels(nil)},
	}
	for _, pr := range p.Params {
		spec.Arguments.Parameters = append(spec.Arguments.Parameters, wfv1.Parameter{Name: pr.Name, Value: wfv1.AnyStringPtr(pr.Value)})
	}
	if p.ParallelismSet {
		n := int64(p.Parallelism)
		spec.Parallelism = &n
	}
	if p.TTL != nil {
		spec.TTLStrategy = &wfv1.TTLStrategy{SecondsAfterCompletion: seconds32(p.TTL)}
	}
	if p.PodGC != "" {
		if gc, ok := podGCStrategies[pipeline.PodGCStrategy(p.PodGC)]; ok {
			spec.PodGC = &wfv1.PodGC{Strategy: gc}
		} else {
			errs = append(errs, field.NotSupported(field.NewPath("podGC"), pipeline.PodGCStrategy(p.PodGC),
				[]pipeline.PodGCStrategy{pipeline.PodGCOnPodCompletion, pipeline.PodGCOnPodSuccess, pipeline.PodGCOnWorkflowCompletion, pipeline.PodGCOnWorkflowSuccess}))
		}
	}
	if w := p.Workspace; w != nil {
		pvc, werrs := workspaceClaim(*w, g.concurrentMount())
		errs = append(errs, werrs...)
		spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{pvc}
	}

	// Templates are large structs: the slice is sized once, not grown. One
	// for the DAG, one per step, one per bounded fan-out, one for onExit.
	size := len(g.Nodes) + 2
	for _, n := range g.Nodes {
		if n.C.MaxParSet {
			size++
		}
	}
	c := &compiler{g: g, names: make(map[string]claimant, size), templates: make([]wfv1.Template, 1, size)}
	c.names[m.Name()] = claimant{what: "the DAG template"}
	dag := wfv1.Template{Name: m.Name(), DAG: &wfv1.DAGTemplate{Tasks: make([]wfv1.DAGTask, 0, len(g.Nodes))}}
	pre := c.containers(g.Nodes)
	for i, n := range g.Nodes {
		task, ok, terrs := c.step(n, pre[i])
		errs = append(errs, terrs...)
		if ok {
			dag.DAG.Tasks = append(dag.DAG.Tasks, task)
		}
	}
	if g.Exit != nil {
		if task, ok, terrs := c.step(g.Exit, nil); len(terrs) > 0 {
			errs = append(errs, terrs...)
		} else if ok {
			spec.OnExit = task.Template
		}
	}
	c.templates[0] = dag
	spec.Templates = c.templates
	spec.ImagePullSecrets = c.pullSecrets
	return spec, c.aux, errs
}

// podGCStrategies maps cube's pod GC strategies to Argo's
// (pkg/apis/workflow/v1alpha1/workflow_types.go, PodGCStrategy, argo-workflows
// v3.7.6: the same four values).
var podGCStrategies = map[pipeline.PodGCStrategy]wfv1.PodGCStrategy{
	pipeline.PodGCOnPodCompletion:      wfv1.PodGCOnPodCompletion,
	pipeline.PodGCOnPodSuccess:         wfv1.PodGCOnPodSuccess,
	pipeline.PodGCOnWorkflowCompletion: wfv1.PodGCOnWorkflowCompletion,
	pipeline.PodGCOnWorkflowSuccess:    wfv1.PodGCOnWorkflowSuccess,
}

func seconds32(d *time.Duration) *int32 {
	if d == nil {
		return nil
	}
	s := int32(math.Ceil(d.Seconds()))
	return &s
}

// workspaceClaim is the volume claim template of the workspace. shared
// says why pods of a run may mount it at the same time ("" when they never
// do): then the default access mode is ReadWriteMany and ReadWriteOncePod,
// which admits one pod, is refused.
func workspaceClaim(w graph.Workspace, shared string) (corev1.PersistentVolumeClaim, field.ErrorList) {
	var errs field.ErrorList
	wp := field.NewPath("workspace")
	mode := w.AccessMode
	switch {
	case mode != "":
	case shared != "":
		mode = corev1.ReadWriteMany
	default:
		mode = corev1.ReadWriteOnce
	}
	switch mode {
	case corev1.ReadWriteOncePod:
		if shared != "" {
			errs = append(errs, field.Invalid(wp.Child("accessMode"), mode, "admits one pod at a time, but "+shared+": use ReadWriteMany"))
		}
	case corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany:
	default:
		errs = append(errs, field.NotSupported(wp.Child("accessMode"), mode,
			[]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod}))
	}
	pvc := corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: workspaceVolume},
		Spec:       corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{mode}},
	}
	if w.Size != "" {
		if q, err := podspec.ParseStorageSize(wp.Child("size"), w.Size); err != nil {
			errs = append(errs, err)
		} else {
			pvc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: q}
		}
	}
	if w.StorageClass != "" {
		sc := w.StorageClass
		pvc.Spec.StorageClassName = &sc
	}
	return pvc, errs
}

// mountsWorkspace reports whether a step's pods mount the workspace:
// every container step does, a workload step's job when it mentions it.
func mountsWorkspace(n *graph.Node) bool {
	return n.Type == graph.Container || (n.Type == graph.Workload && n.UsesWorkspace)
}

// concurrentMount says why several pods of a run may mount the workspace
// at once, or returns "": a fanned-out step that mounts it, a workload step
// whose job mounts it in each of its pods, or two steps that mount it with
// no dependency path between them, which Argo may run side by side.
func (g *dag) concurrentMount() string {
	var mounting []*graph.Node
	for _, n := range g.Nodes {
		if !mountsWorkspace(n) {
			continue
		}
		switch {
		case n.C.ItemsSet || n.C.ItemsFrom != "":
			return "step " + n.C.Name + " fans out"
		case n.Type == graph.Workload:
			return "every pod of step " + n.C.Name + "'s job mounts it"
		}
		mounting = append(mounting, n)
	}
	if g.Cyclic {
		return ""
	}
	reach := g.reachability()
	for i, a := range mounting {
		for _, b := range mounting[i+1:] {
			if !reach[a.Index][b.Index] && !reach[b.Index][a.Index] {
				return "steps " + a.C.Name + " and " + b.C.Name + " may run at the same time"
			}
		}
	}
	return ""
}

// reachability returns, for an acyclic graph, whether step j runs after
// step i (a path of dependencies leads from i to j).
func (g *dag) reachability() [][]bool {
	reach := make([][]bool, len(g.Nodes))
	for i := range reach {
		reach[i] = make([]bool, len(g.Nodes))
	}
	for k := len(g.Order) - 1; k >= 0; k-- { // downstream steps first
		i := g.Order[k]
		for _, d := range g.Nodes[i].Down {
			reach[i][d] = true
			for j, r := range reach[d] {
				reach[i][j] = reach[i][j] || r
			}
		}
	}
	return reach
}

// compiler accumulates the templates of a Workflow.
type compiler struct {
	g           *dag
	templates   []wfv1.Template
	names       map[string]claimant // template name → what it is, to catch collisions
	pullSecrets []corev1.LocalObjectReference
	aux         []*unstructured.Unstructured
}

// claimant is what a template name belongs to: a step's template (or,
// with fanOut, its fan-out), or, with step empty, what says.
type claimant struct {
	step   string
	fanOut bool
	what   string
}

func (cl claimant) String() string {
	switch {
	case cl.step == "":
		return cl.what
	case cl.fanOut:
		return fmt.Sprintf("the fan-out of step %q", cl.step)
	}
	return fmt.Sprintf("step %q", cl.step)
}

// claim records a template name, reporting a collision at the name of
// the step at path. Nothing is formatted unless names collide: claim runs
// for every step.
func (c *compiler) claim(name string, who claimant, path *field.Path) field.ErrorList {
	if other, ok := c.names[name]; ok {
		return field.ErrorList{field.Invalid(path.Child("name"), name, fmt.Sprintf("template name %q of %s is already %s", name, who, other))}
	}
	c.names[name] = who
	return nil
}

// inTemplate rewrites a placeholder inside a step's template.
func (c *compiler) inTemplate(r graph.Ref) string {
	switch r.Kind {
	case graph.RefParam:
		return "{{workflow.parameters." + r.Name + "}}"
	case graph.RefOutput: // inputName, in one concatenation
		return "{{inputs.parameters." + r.Step + "_" + r.Name + "}}"
	case graph.RefItem:
		return "{{inputs.parameters." + graph.InputName(r) + "}}"
	case graph.RefOutputPath:
		return OutputsPath + "/" + r.Name
	case graph.RefWorkspace:
		return c.g.workspacePath()
	case graph.RefPipelineName:
		return "{{workflow.name}}"
	case graph.RefPipelineStatus:
		return "{{workflow.status}}"
	}
	return ""
}

// inTask rewrites a placeholder in a DAG task (when, withParam, arguments).
func inTask(r graph.Ref) string {
	switch r.Kind {
	case graph.RefParam:
		return "{{workflow.parameters." + r.Name + "}}"
	case graph.RefOutput:
		return "{{tasks." + r.Step + ".outputs.parameters." + r.Name + "}}"
	case graph.RefItem:
		if r.Name == "" {
			return "{{item}}"
		}
		return "{{item." + r.Name + "}}"
	case graph.RefPipelineName:
		return "{{workflow.name}}"
	case graph.RefPipelineStatus:
		return "{{workflow.status}}"
	}
	return ""
}
