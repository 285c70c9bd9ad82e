package pipeline

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube"
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
	if t := p.ttl; t.completion != nil || t.success != nil || t.failure != nil {
		spec.TTLStrategy = &wfv1.TTLStrategy{
			SecondsAfterCompletion: seconds32(t.completion),
			SecondsAfterSuccess:    seconds32(t.success),
			SecondsAfterFailure:    seconds32(t.failure),
		}
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

// containerTemplate is a container step's template as containers
// compiled it, with the image pull secrets it needs and its errors.
type containerTemplate struct {
	tmpl wfv1.Template
	pull []corev1.LocalObjectReference
	errs field.ErrorList
}

// parallelFrom is the number of container steps from which containers
// compiles them on every core: below it, starting goroutines costs more
// than it saves.
const parallelFrom = 256

// containers compiles the container steps among nodes, each into the slot
// of its node (nil for other steps). A container step's template depends
// on its node and the pipeline alone, never on another step's, so in a
// large pipeline they compile on every core; step takes them in the
// nodes' order, so the Workflow and its errors are the same either way.
func (c *compiler) containers(nodes []*node) []*containerTemplate {
	slots := make([]containerTemplate, len(nodes)) // one allocation
	out := make([]*containerTemplate, len(nodes))
	var work []int
	for i, n := range nodes {
		if _, ok := n.step.(*ContainerStep); ok && !n.badName {
			work = append(work, i)
		}
	}
	one := func(i int) {
		slot := &slots[i]
		slot.tmpl, slot.pull, slot.errs = c.container(nodes[i], nodes[i].step.(*ContainerStep))
		out[i] = slot
	}
	workers := min(goruntime.GOMAXPROCS(0), len(work)/parallelFrom+1)
	if workers <= 1 {
		for _, i := range work {
			one(i)
		}
		return out
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for k := int(next.Add(1)) - 1; k < len(work); k = int(next.Add(1)) - 1 {
				one(work[k])
			}
		})
	}
	wg.Wait()
	return out
}

// step compiles one step into its templates and returns its DAG task; a
// container step's template is taken from pre when containers compiled it.
func (c *compiler) step(n *node, pre *containerTemplate) (task wfv1.DAGTask, ok bool, errs field.ErrorList) {
	var tmpl wfv1.Template
	if n.badName {
		return task, false, nil
	}
	switch s := n.step.(type) {
	case *FuncStep:
		return task, false, field.ErrorList{field.Invalid(n.path, n.c.name,
			"a Go function step runs only locally: use a container or workload step to compile the pipeline for Argo")}
	case *ContainerStep:
		if pre == nil {
			var pull []corev1.LocalObjectReference
			tmpl, pull, errs = c.container(n, s)
			pre = &containerTemplate{tmpl: tmpl, pull: pull, errs: errs}
		}
		tmpl, errs = pre.tmpl, pre.errs
		for _, ps := range pre.pull {
			if !slices.Contains(c.pullSecrets, ps) {
				c.pullSecrets = append(c.pullSecrets, ps)
			}
		}
	case *WorkloadStep:
		tmpl, errs = c.workload(n)
	}
	tmpl.Name = n.c.name
	names := make([]string, len(n.inputs))
	if len(n.inputs) > 0 {
		tmpl.Inputs.Parameters = make([]wfv1.Parameter, len(n.inputs))
	}
	for i, r := range n.inputs {
		names[i] = inputName(r)
		tmpl.Inputs.Parameters[i] = wfv1.Parameter{Name: names[i]}
	}
	if r := n.c.retry; r != nil {
		tmpl.RetryStrategy = retryStrategy(*r)
	}
	if n.c.timeoutSet && n.c.timeout > 0 {
		secs := int32(math.Ceil(n.c.timeout.Seconds()))
		deadline := intstr.FromInt32(secs)
		tmpl.ActiveDeadlineSeconds = &deadline
	}
	errs = append(errs, c.claim(tmpl.Name, claimant{step: n.c.name}, n.path)...)

	task = wfv1.DAGTask{Name: n.c.name, Template: tmpl.Name}
	if len(n.deps) > 0 {
		task.Dependencies = make([]string, len(n.deps))
	}
	for i, d := range n.deps {
		task.Dependencies[i] = c.g.nodes[d].c.name
	}
	task.When = substitute(n.c.when, inTask)
	fanned := n.c.itemsSet || n.c.itemsFrom != ""
	var items []wfv1.Item
	for _, it := range n.c.items {
		raw, _ := json.Marshal(it) // a string always marshals
		items = append(items, wfv1.Item{Value: raw})
	}
	withParam := substitute(n.c.itemsFrom, inTask)
	args := make([]wfv1.Parameter, 0, len(n.inputs))
	for i, r := range n.inputs {
		args = append(args, wfv1.Parameter{Name: names[i], Value: wfv1.AnyStringPtr(inTask(r))})
	}

	if !fanned || !n.c.maxParSet {
		task.Arguments.Parameters = nilIfEmpty(args)
		task.WithItems, task.WithParam = items, withParam
		c.templates = append(c.templates, tmpl)
		return task, true, errs
	}

	// A bounded fan-out runs inside a DAG template of its own, whose
	// parallelism limits the items running at once.
	wrapper := wfv1.Template{Name: n.c.name + fanOutSuffix, Parallelism: ptrInt64(int64(n.c.maxPar))}
	errs = append(errs, c.claim(wrapper.Name, claimant{step: n.c.name, fanOut: true}, n.path)...)
	inner := wfv1.DAGTask{Name: n.c.name, Template: tmpl.Name, WithItems: items}
	var outer []wfv1.Parameter
	for _, a := range args {
		if a.Name == "item" || len(a.Name) > 6 && a.Name[:6] == "item__" {
			inner.Arguments.Parameters = append(inner.Arguments.Parameters, a)
			continue
		}
		wrapper.Inputs.Parameters = append(wrapper.Inputs.Parameters, wfv1.Parameter{Name: a.Name})
		inner.Arguments.Parameters = append(inner.Arguments.Parameters, wfv1.Parameter{Name: a.Name, Value: wfv1.AnyStringPtr("{{inputs.parameters." + a.Name + "}}")})
		outer = append(outer, a)
	}
	if withParam != "" {
		wrapper.Inputs.Parameters = append(wrapper.Inputs.Parameters, wfv1.Parameter{Name: "items"})
		inner.WithParam = "{{inputs.parameters.items}}"
		outer = append(outer, wfv1.Parameter{Name: "items", Value: wfv1.AnyStringPtr(withParam)})
	}
	for _, o := range n.c.outputs {
		wrapper.Outputs.Parameters = append(wrapper.Outputs.Parameters, wfv1.Parameter{Name: o,
			ValueFrom: &wfv1.ValueFrom{Parameter: "{{tasks." + n.c.name + ".outputs.parameters." + o + "}}"}})
	}
	wrapper.DAG = &wfv1.DAGTemplate{Tasks: []wfv1.DAGTask{inner}}
	task.Template = wrapper.Name
	task.Arguments.Parameters = nilIfEmpty(outer)
	c.templates = append(c.templates, wrapper, tmpl)
	return task, true, errs
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

func ptrInt64(v int64) *int64 { return &v }

// int32Clamped keeps a count Argo holds as an int32 in range; analyze
// reports a count out of range, so the clamp only keeps intstr quiet.
func int32Clamped(n int) int32 { return int32(max(math.MinInt32, min(n, math.MaxInt32))) }

func retryStrategy(r Retry) *wfv1.RetryStrategy {
	limit := intstr.FromInt32(int32Clamped(r.Limit))
	rs := &wfv1.RetryStrategy{Limit: &limit, RetryPolicy: wfv1.RetryPolicy(r.Policy)}
	if r.Backoff > 0 || r.Factor > 0 || r.MaxBackoff > 0 || r.MaxDuration > 0 {
		rs.Backoff = &wfv1.Backoff{}
		if r.Backoff > 0 {
			rs.Backoff.Duration = r.Backoff.String()
		}
		if r.Factor > 0 {
			f := intstr.FromInt32(int32Clamped(r.Factor))
			rs.Backoff.Factor = &f
		}
		if r.MaxBackoff > 0 {
			rs.Backoff.Cap = r.MaxBackoff.String()
		}
		if r.MaxDuration > 0 {
			rs.Backoff.MaxDuration = r.MaxDuration.String()
		}
	}
	return rs
}

// standardLabels are the cube labels the Workflow's podMetadata gives every
// pod; a step's own pod labels would otherwise name the step as a release.
var standardLabels = []string{cube.LabelName, cube.LabelManagedBy, cube.LabelPartOf, cube.LabelKind, cube.LabelRelease}

// container compiles a container step to a container template and
// returns the image pull secrets it needs (the Workflow has them, see
// fromPodSpec). It only reads the compiler: containers calls it from
// several goroutines.
func (c *compiler) container(n *node, s *ContainerStep) (wfv1.Template, []corev1.LocalObjectReference, field.ErrorList) {
	var errs field.ErrorList
	if podspec.Of(&s.Handle).NamespaceName() != "" {
		errs = append(errs, field.Forbidden(n.path.Child("namespace"), "steps run in the pipeline's namespace: set it on the pipeline"))
	}
	pt, terrs := podspec.Of(&s.Handle).Template(n.path.Child("template"), podspec.TemplateOptions{Container: mainContainer})
	errs = append(errs, terrs...)
	spec := &pt.Spec
	ctr := &spec.Containers[0]
	if len(n.c.outputs) > 0 {
		ctr.Env = setDefaultEnv(ctr.Env, EnvOutputs, OutputsPath)
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: outputsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: outputsVolume, MountPath: OutputsPath})
	}
	if c.g.p.workspace != nil {
		ctr.Env = setDefaultEnv(ctr.Env, EnvWorkspace, c.g.workspacePath())
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: workspaceVolume, MountPath: c.g.workspacePath()})
	}
	rewrite := func(v string) string { return substitute(v, c.inTemplate) }
	ctr.Image = rewrite(ctr.Image)
	ctr.WorkingDir = rewrite(ctr.WorkingDir)
	for i := range ctr.Command {
		ctr.Command[i] = rewrite(ctr.Command[i])
	}
	for i := range ctr.Args {
		ctr.Args[i] = rewrite(ctr.Args[i])
	}
	for i := range ctr.Env {
		ctr.Env[i].Value = rewrite(ctr.Env[i].Value)
	}

	t := wfv1.Template{}
	for _, o := range n.c.outputs {
		t.Outputs.Parameters = append(t.Outputs.Parameters, wfv1.Parameter{Name: o, ValueFrom: &wfv1.ValueFrom{Path: OutputsPath + "/" + o}})
	}
	labels := pt.Labels // Template's own map
	for _, k := range standardLabels {
		delete(labels, k)
	}
	labels[LabelStep] = n.c.name
	annotations := maps.Clone(pt.Annotations)
	if extra := podspec.Of(&s.Handle).Annotations(); len(extra) > 0 {
		if annotations == nil {
			annotations = map[string]string{}
		}
		maps.Copy(annotations, extra)
	}
	t.Metadata = wfv1.Metadata{Labels: labels, Annotations: annotations}
	pull, err := fromPodSpec(&t, spec)
	if err != nil {
		errs = append(errs, field.InternalError(n.path, err))
	}
	return t, pull, errs
}

func setDefaultEnv(env []corev1.EnvVar, name, value string) []corev1.EnvVar {
	if slices.ContainsFunc(env, func(e corev1.EnvVar) bool { return e.Name == name }) {
		return env
	}
	return append(env, corev1.EnvVar{Name: name, Value: value})
}

// fromPodSpec moves a pod spec into an Argo template: the fields a template
// has, the image pull secrets returned for the Workflow (Argo has them only
// there), and whatever is left as a podSpecPatch. It takes spec over: the
// template shares its container, and spec is left with what the patch has.
func fromPodSpec(t *wfv1.Template, spec *corev1.PodSpec) ([]corev1.LocalObjectReference, error) {
	t.Container = &spec.Containers[0]
	if len(spec.InitContainers) > 0 {
		t.InitContainers = make([]wfv1.UserContainer, len(spec.InitContainers))
		for i, ic := range spec.InitContainers {
			t.InitContainers[i] = wfv1.UserContainer{Container: ic}
		}
	}
	t.Volumes = spec.Volumes
	t.NodeSelector = spec.NodeSelector
	t.Affinity = spec.Affinity
	t.Tolerations = spec.Tolerations
	t.SchedulerName = spec.SchedulerName
	t.PriorityClassName = spec.PriorityClassName
	t.ServiceAccountName = spec.ServiceAccountName
	t.SecurityContext = spec.SecurityContext
	t.HostAliases = spec.HostAliases
	pull := spec.ImagePullSecrets

	// What the template took is cleared: the rest is the patch.
	spec.Containers, spec.InitContainers, spec.Volumes = nil, nil, nil
	spec.NodeSelector, spec.Affinity, spec.Tolerations = nil, nil, nil
	spec.SchedulerName, spec.PriorityClassName, spec.ServiceAccountName = "", "", ""
	spec.SecurityContext, spec.HostAliases, spec.ImagePullSecrets = nil, nil, nil
	spec.RestartPolicy = "" // Argo sets it
	if reflect.ValueOf(spec).Elem().IsZero() {
		return pull, nil
	}
	// A copy goes to the converter, so that spec (the caller's template,
	// usually on its stack) does not escape to the heap for the converter.
	patch := new(corev1.PodSpec)
	*patch = *spec
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(patch)
	if err != nil {
		return nil, fmt.Errorf("pod spec patch: %w", err)
	}
	delete(m, "containers")
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("pod spec patch: %w", err)
	}
	t.PodSpecPatch = string(b)
	return pull, nil
}

// workload compiles a workload step to a resource template that creates its
// job and waits on the completion conditions of the job's kind.
func (c *compiler) workload(n *node) (wfv1.Template, field.ErrorList) {
	wp := n.path.Child("workload")
	if n.primary == nil {
		return wfv1.Template{}, nil // analyze reported why
	}
	gk := n.primary.GroupVersionKind().GroupKind()
	done := n.completion
	if done == (cube.Completion{}) {
		// Kinds cannot help with a kind of the Kubernetes API (a bare
		// Pod): cube reads those itself, and has no Argo conditions for it.
		advice := "give the pipeline its kind with Kinds (train.Kinds()… or kinds.All())"
		if slices.ContainsFunc(cube.CoreKinds(), func(k cube.Kind) bool { return k.GroupKind == gk }) {
			advice = "run it in a batch Job"
		}
		return wfv1.Template{}, field.ErrorList{field.Invalid(wp, gk.String(), fmt.Sprintf(
			"step %q: the pipeline has no Completion for %s, so Argo cannot tell when it finishes: %s", n.c.name, gk, advice))}
	}
	obj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(n.primary.Object)}
	rewriteStrings(obj.Object, func(v string) string { return substitute(v, c.inTemplate) })
	if n.usesWorkspace {
		mountWorkspace(obj.Object, c.g.workspacePath())
	}
	var errs field.ErrorList
	if n.c.timeoutSet && n.c.timeout > 0 {
		errs = append(errs, stopAtDeadline(obj, gk, n.c.timeout, n.path.Child("activeDeadline"))...)
	}
	// The job, its pods and the objects around it join the pipeline's
	// release, so that Release.Wait on the pipeline sees the job's pods and
	// their problems; selectors move with the labels they select.
	release := n.primary.GetLabels()[cube.LabelRelease]
	relabel(obj.Object, release, podspec.Of(&c.g.p.Handle).Name())
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[cube.LabelRelease] = podspec.Of(&c.g.p.Handle).Name()
	labels[LabelStep] = n.c.name
	obj.SetLabels(labels)
	// Every run (and retry) creates its own job.
	if name := obj.GetName(); name != "" {
		obj.SetGenerateName(name + "-")
		obj.SetName("")
	}
	manifest, err := yaml.Marshal(obj.Object)
	if err != nil {
		return wfv1.Template{}, field.ErrorList{field.Invalid(wp, gk.String(), fmt.Sprintf("render manifest: %v", err))}
	}
	for _, a := range n.aux {
		u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(a.Object)}
		relabel(u.Object, release, podspec.Of(&c.g.p.Handle).Name())
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[cube.LabelRelease] = podspec.Of(&c.g.p.Handle).Name()
		u.SetLabels(labels)
		if u.GetNamespace() == "" && podspec.Of(&c.g.p.Handle).NamespaceName() != "" {
			u.SetNamespace(podspec.Of(&c.g.p.Handle).NamespaceName())
		}
		c.aux = append(c.aux, u)
	}
	var outputs wfv1.Outputs
	if ws, ok := n.step.(*WorkloadStep); ok {
		for _, o := range n.c.outputs {
			outputs.Parameters = append(outputs.Parameters, wfv1.Parameter{Name: o, ValueFrom: &wfv1.ValueFrom{JSONPath: ws.jsonPaths[o]}})
		}
	}
	return wfv1.Template{
		Metadata: wfv1.Metadata{Labels: map[string]string{LabelStep: n.c.name}},
		Outputs:  outputs,
		Resource: &wfv1.ResourceTemplate{
			Action:            "create",
			SetOwnerReference: true,
			Manifest:          string(manifest),
			SuccessCondition:  done.Success,
			FailureCondition:  done.Failure,
		},
	}, errs
}

// relabel replaces the value from of every cube.dev/release key in a
// JSON-like value (labels, pod template labels, selectors) with to, and
// gives every pod template (a map whose spec has containers) that label.
func relabel(v any, from, to string) {
	switch t := v.(type) {
	case map[string]any:
		if cur, ok := t[cube.LabelRelease].(string); ok && from != "" && cur == from {
			t[cube.LabelRelease] = to
		}
		if spec, ok := t["spec"].(map[string]any); ok {
			if _, ok := spec["containers"].([]any); ok {
				meta, _ := t["metadata"].(map[string]any)
				if meta == nil {
					meta = map[string]any{}
					t["metadata"] = meta
				}
				labels, _ := meta["labels"].(map[string]any)
				if labels == nil {
					labels = map[string]any{}
					meta["labels"] = labels
				}
				labels[cube.LabelRelease] = to
			}
		}
		for _, child := range t {
			relabel(child, from, to)
		}
	case []any:
		for _, child := range t {
			relabel(child, from, to)
		}
	}
}

// trainingOperatorGroup is the API group of the training-operator's jobs,
// which all keep their deadline in spec.runPolicy.
const trainingOperatorGroup = "kubeflow.org"

// jobDeadlines are where the kinds a workload step runs keep a deadline of
// their own, enforced by their controller: batch/v1 Job
// (spec.activeDeadlineSeconds, k8s.io/api/batch/v1 JobSpec), training-operator
// v1.8.1 jobs (spec.runPolicy.activeDeadlineSeconds, pkg/apis/kubeflow.org/v1
// common_types.go RunPolicy) and KubeRay v1.5.0 RayJob
// (spec.activeDeadlineSeconds, apis/ray/v1 rayjob_types.go).
var jobDeadlines = map[schema.GroupKind][]string{
	{Group: "batch", Kind: "Job"}:     {"spec", "activeDeadlineSeconds"},
	{Group: "ray.io", Kind: "RayJob"}: {"spec", "activeDeadlineSeconds"},
}

// stopAtDeadline gives the job the step's timeout as its own deadline, the
// smaller one when it has one already. Argo's activeDeadlineSeconds on a
// resource template bounds only the argoexec pod that created the job
// (workflow/controller/operator.go executeResource: the Workflow owns the
// job through setOwnerReference, not the pod), so without this the job
// would run on after the step timed out and a retry would start a second
// one beside it.
func stopAtDeadline(obj *unstructured.Unstructured, gk schema.GroupKind, timeout time.Duration, path *field.Path) field.ErrorList {
	fields, ok := jobDeadlines[gk]
	if !ok && gk.Group == trainingOperatorGroup {
		fields, ok = []string{"spec", "runPolicy", "activeDeadlineSeconds"}, true
	}
	if !ok {
		return field.ErrorList{field.Invalid(path, timeout.String(), fmt.Sprintf(
			"%s has no deadline of its own, so a timeout would stop only the step and leave the job running: bound the job inside the workload instead", gk))}
	}
	secs := int64(math.Ceil(timeout.Seconds()))
	if have, found, _ := unstructured.NestedFieldNoCopy(obj.Object, fields...); found {
		if cur, ok := have.(int64); ok && cur > 0 && cur < secs {
			secs = cur
		}
	}
	if err := unstructured.SetNestedField(obj.Object, secs, fields...); err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	return nil
}

// mountWorkspace mounts the run's workspace claim, which Argo names
// WORKFLOW-workspace, in every pod spec of a job (every map with a
// "containers" list) that does not have a volume of that name already.
func mountWorkspace(v any, mountPath string) {
	switch t := v.(type) {
	case map[string]any:
		if containers, ok := t["containers"].([]any); ok {
			volumes, _ := t["volumes"].([]any)
			for _, vol := range volumes {
				if m, ok := vol.(map[string]any); ok && m["name"] == workspaceVolume {
					return
				}
			}
			t["volumes"] = append(volumes, map[string]any{
				"name":                  workspaceVolume,
				"persistentVolumeClaim": map[string]any{"claimName": "{{workflow.name}}-" + workspaceVolume},
			})
			for _, ctr := range containers {
				m, ok := ctr.(map[string]any)
				if !ok {
					continue
				}
				mounts, _ := m["volumeMounts"].([]any)
				m["volumeMounts"] = append(mounts, map[string]any{"name": workspaceVolume, "mountPath": mountPath})
				env, _ := m["env"].([]any)
				m["env"] = append(env, map[string]any{"name": EnvWorkspace, "value": mountPath})
			}
			return
		}
		for _, child := range t {
			mountWorkspace(child, mountPath)
		}
	case []any:
		for _, child := range t {
			mountWorkspace(child, mountPath)
		}
	}
}

// rewriteStrings replaces every string in a JSON-like value with fn(string).
func rewriteStrings(v any, fn func(string) string) {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if s, ok := child.(string); ok {
				t[k] = fn(s)
				continue
			}
			rewriteStrings(child, fn)
		}
	case []any:
		for i, child := range t {
			if s, ok := child.(string); ok {
				t[i] = fn(s)
				continue
			}
			rewriteStrings(child, fn)
		}
	}
}
