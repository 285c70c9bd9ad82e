package pipeline

import (
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
)

// Names and paths the compiled Workflow uses.
const (
	// EnvOutputs names the directory a step writes its outputs to, one file
	// per output.
	EnvOutputs = "CUBE_OUTPUTS"
	// EnvWorkspace names the shared workspace directory.
	EnvWorkspace = "CUBE_WORKSPACE"

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

// Build compiles the pipeline to a fresh Argo Workflow, or returns every
// problem found.
func (p *Pipeline) Build() (*wfv1.Workflow, error) {
	wf, _, err := p.compile()
	return wf, err
}

// Objects compiles the pipeline: the objects workload steps create around
// their jobs (ConfigMaps, Services…), relabelled into this release, and the
// Workflow. It makes Pipeline a cube.Workload.
func (p *Pipeline) Objects() ([]client.Object, error) {
	wf, extra, err := p.compile()
	if err != nil {
		return nil, err
	}
	return append(extra, wf), nil
}

// compileSpec analyses the pipeline and compiles its Workflow spec, and
// returns the objects applied beside it: the executor's RBAC (ExecutorRBAC),
// then the objects workload steps create around their jobs.
func (p *Pipeline) compileSpec() (wfv1.WorkflowSpec, []client.Object, field.ErrorList) {
	g, errs := p.analyze()
	spec, aux, cerrs := g.workflowSpec()
	extra := g.rbacObjects()
	for _, u := range aux {
		extra = append(extra, u)
	}
	return spec, extra, append(errs, cerrs...)
}

func (p *Pipeline) compile() (*wfv1.Workflow, []client.Object, error) {
	if p == nil {
		return nil, nil, errNilPipeline
	}
	spec, aux, errs := p.compileSpec()
	if len(errs) > 0 {
		return nil, nil, errs.ToAggregate()
	}
	return &wfv1.Workflow{
		TypeMeta:   metav1.TypeMeta{APIVersion: workflowVersion, Kind: "Workflow"},
		ObjectMeta: podspec.Of(&p.Handle).ObjectMeta(podspec.Of(&p.Handle).Name()),
		Spec:       spec,
	}, aux, nil
}

func (g *graph) workspacePath() string {
	if g.p.workspace != nil && g.p.workspace.MountPath != "" {
		return g.p.workspace.MountPath
	}
	return DefaultWorkspacePath
}

// workflowSpec compiles the spec shared by Workflow and CronWorkflow.
func (g *graph) workflowSpec() (wfv1.WorkflowSpec, []*unstructured.Unstructured, field.ErrorList) {
	p := g.p
	var errs field.ErrorList
	spec := wfv1.WorkflowSpec{
		Entrypoint:         podspec.Of(&p.Handle).Name(),
		ServiceAccountName: p.serviceAccountName(),
		PodMetadata:        &wfv1.Metadata{Labels: podspec.Of(&p.Handle).PodLabels(nil)},
	}
	for _, pr := range p.params {
		spec.Arguments.Parameters = append(spec.Arguments.Parameters, wfv1.Parameter{Name: pr.name, Value: wfv1.AnyStringPtr(pr.value)})
	}
	if p.parallelismSet {
		n := int64(p.parallelism)
		spec.Parallelism = &n
	}
	if p.ttl != nil {
		spec.TTLStrategy = &wfv1.TTLStrategy{SecondsAfterCompletion: seconds32(p.ttl)}
	}
	if p.podGC != "" {
		switch p.podGC {
		case PodGCOnPodCompletion, PodGCOnPodSuccess, PodGCOnWorkflowCompletion, PodGCOnWorkflowSuccess:
			spec.PodGC = &wfv1.PodGC{Strategy: p.podGC}
		default:
			errs = append(errs, field.NotSupported(field.NewPath("podGC"), p.podGC,
				[]PodGCStrategy{PodGCOnPodCompletion, PodGCOnPodSuccess, PodGCOnWorkflowCompletion, PodGCOnWorkflowSuccess}))
		}
	}
	if w := p.workspace; w != nil {
		pvc, werrs := workspaceClaim(*w, g.concurrentMount())
		errs = append(errs, werrs...)
		spec.VolumeClaimTemplates = []corev1.PersistentVolumeClaim{pvc}
	}

	// Templates are large structs: the slice is sized once, not grown. One
	// for the DAG, one per step, one per bounded fan-out, one for onExit.
	size := len(g.nodes) + 2
	for _, n := range g.nodes {
		if n.c.maxParSet {
			size++
		}
	}
	c := &compiler{g: g, names: make(map[string]claimant, size), templates: make([]wfv1.Template, 1, size)}
	c.names[podspec.Of(&p.Handle).Name()] = claimant{what: "the DAG template"}
	dag := wfv1.Template{Name: podspec.Of(&p.Handle).Name(), DAG: &wfv1.DAGTemplate{Tasks: make([]wfv1.DAGTask, 0, len(g.nodes))}}
	pre := c.containers(g.nodes)
	for i, n := range g.nodes {
		task, ok, terrs := c.step(n, pre[i])
		errs = append(errs, terrs...)
		if ok {
			dag.DAG.Tasks = append(dag.DAG.Tasks, task)
		}
	}
	if g.exit != nil {
		if task, ok, terrs := c.step(g.exit, nil); len(terrs) > 0 {
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
func workspaceClaim(w Workspace, shared string) (corev1.PersistentVolumeClaim, field.ErrorList) {
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
func (n *node) mountsWorkspace() bool {
	return n.typ == containerType || (n.typ == workloadType && n.usesWorkspace)
}

// concurrentMount says why several pods of a run may mount the workspace
// at once, or returns "": a fanned-out step that mounts it, a workload step
// whose job mounts it in each of its pods, or two steps that mount it with
// no dependency path between them, which Argo may run side by side.
func (g *graph) concurrentMount() string {
	var mounting []*node
	for _, n := range g.nodes {
		if !n.mountsWorkspace() {
			continue
		}
		switch {
		case n.c.itemsSet || n.c.itemsFrom != "":
			return "step " + n.c.name + " fans out"
		case n.typ == workloadType:
			return "every pod of step " + n.c.name + "'s job mounts it"
		}
		mounting = append(mounting, n)
	}
	if g.cyclic {
		return ""
	}
	reach := g.reachability()
	for i, a := range mounting {
		for _, b := range mounting[i+1:] {
			if !reach[a.index][b.index] && !reach[b.index][a.index] {
				return "steps " + a.c.name + " and " + b.c.name + " may run at the same time"
			}
		}
	}
	return ""
}

// reachability returns, for an acyclic graph, whether step j runs after
// step i (a path of dependencies leads from i to j).
func (g *graph) reachability() [][]bool {
	reach := make([][]bool, len(g.nodes))
	for i := range reach {
		reach[i] = make([]bool, len(g.nodes))
	}
	for k := len(g.order) - 1; k >= 0; k-- { // downstream steps first
		i := g.order[k]
		for _, d := range g.nodes[i].down {
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
	g           *graph
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
func (c *compiler) inTemplate(r ref) string {
	switch r.kind {
	case refParam:
		return "{{workflow.parameters." + r.name + "}}"
	case refOutput: // inputName, in one concatenation
		return "{{inputs.parameters." + r.step + "_" + r.name + "}}"
	case refItem:
		return "{{inputs.parameters." + inputName(r) + "}}"
	case refOutputPath:
		return OutputsPath + "/" + r.name
	case refWorkspace:
		return c.g.workspacePath()
	case refPipelineName:
		return "{{workflow.name}}"
	case refPipelineStatus:
		return "{{workflow.status}}"
	}
	return ""
}

// inTask rewrites a placeholder in a DAG task (when, withParam, arguments).
func inTask(r ref) string {
	switch r.kind {
	case refParam:
		return "{{workflow.parameters." + r.name + "}}"
	case refOutput:
		return "{{tasks." + r.step + ".outputs.parameters." + r.name + "}}"
	case refItem:
		if r.name == "" {
			return "{{item}}"
		}
		return "{{item." + r.name + "}}"
	case refPipelineName:
		return "{{workflow.name}}"
	case refPipelineStatus:
		return "{{workflow.status}}"
	}
	return ""
}
