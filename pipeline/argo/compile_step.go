package argo

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

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/internal/graph"
	"github.com/cubestudio/cube/retry"
)

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
func (c *compiler) containers(nodes []*graph.Node) []*containerTemplate {
	slots := make([]containerTemplate, len(nodes)) // one allocation
	out := make([]*containerTemplate, len(nodes))
	var work []int
	for i, n := range nodes {
		if _, ok := n.Def.Value.(*pipeline.ContainerStep); ok && !n.BadName {
			work = append(work, i)
		}
	}
	one := func(i int) {
		slot := &slots[i]
		slot.tmpl, slot.pull, slot.errs = c.container(nodes[i], nodes[i].Def.Value.(*pipeline.ContainerStep))
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
func (c *compiler) step(n *graph.Node, pre *containerTemplate) (task wfv1.DAGTask, ok bool, errs field.ErrorList) {
	var tmpl wfv1.Template
	if n.BadName {
		return task, false, nil
	}
	switch s := n.Def.Value.(type) {
	case *pipeline.FuncStep:
		return task, false, field.ErrorList{field.Invalid(n.Path, n.C.Name,
			"a Go function step runs only locally: use a container or workload step to compile the pipeline for Argo")}
	case *pipeline.ContainerStep:
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
	case *pipeline.WorkloadStep, *pipeline.ServeStep:
		tmpl, errs = c.workload(n)
	}
	tmpl.Name = n.C.Name
	names := make([]string, len(n.Inputs))
	if len(n.Inputs) > 0 {
		tmpl.Inputs.Parameters = make([]wfv1.Parameter, len(n.Inputs))
	}
	for i, r := range n.Inputs {
		names[i] = graph.InputName(r)
		tmpl.Inputs.Parameters[i] = wfv1.Parameter{Name: names[i]}
	}
	if r := n.C.Retry; r != nil {
		tmpl.RetryStrategy = retryStrategy(*r, pipeline.RetryCondition(n.C.RetryOn))
	}
	if n.C.TimeoutSet && n.C.Timeout > 0 {
		secs := int32(math.Ceil(n.C.Timeout.Seconds()))
		deadline := intstr.FromInt32(secs)
		tmpl.ActiveDeadlineSeconds = &deadline
	}
	errs = append(errs, c.claim(tmpl.Name, claimant{step: n.C.Name}, n.Path)...)

	task = wfv1.DAGTask{Name: n.C.Name, Template: tmpl.Name}
	if len(n.Deps) > 0 {
		task.Dependencies = make([]string, len(n.Deps))
	}
	for i, d := range n.Deps {
		task.Dependencies[i] = c.g.Nodes[d].C.Name
	}
	task.When = graph.Substitute(n.C.When, inTask)
	fanned := n.C.ItemsSet || n.C.ItemsFrom != ""
	var items []wfv1.Item
	for _, it := range n.C.Items {
		raw, _ := json.Marshal(it) // a string always marshals
		items = append(items, wfv1.Item{Value: raw})
	}
	withParam := graph.Substitute(n.C.ItemsFrom, inTask)
	args := make([]wfv1.Parameter, 0, len(n.Inputs))
	for i, r := range n.Inputs {
		args = append(args, wfv1.Parameter{Name: names[i], Value: wfv1.AnyStringPtr(inTask(r))})
	}

	if !fanned || !n.C.MaxParSet {
		task.Arguments.Parameters = nilIfEmpty(args)
		task.WithItems, task.WithParam = items, withParam
		c.templates = append(c.templates, tmpl)
		return task, true, errs
	}

	// A bounded fan-out runs inside a DAG template of its own, whose
	// parallelism limits the items running at once.
	wrapper := wfv1.Template{Name: n.C.Name + fanOutSuffix, Parallelism: ptrInt64(int64(n.C.MaxPar))}
	errs = append(errs, c.claim(wrapper.Name, claimant{step: n.C.Name, fanOut: true}, n.Path)...)
	inner := wfv1.DAGTask{Name: n.C.Name, Template: tmpl.Name, WithItems: items}
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
	for _, o := range n.C.Outputs {
		wrapper.Outputs.Parameters = append(wrapper.Outputs.Parameters, wfv1.Parameter{Name: o,
			ValueFrom: &wfv1.ValueFrom{Parameter: "{{tasks." + n.C.Name + ".outputs.parameters." + o + "}}"}})
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

func retryStrategy(r retry.Policy, on pipeline.RetryCondition) *wfv1.RetryStrategy {
	limit := intstr.FromInt32(int32Clamped(r.Limit))
	rs := &wfv1.RetryStrategy{Limit: &limit, RetryPolicy: wfv1.RetryPolicy(on)}
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
func (c *compiler) container(n *graph.Node, s *pipeline.ContainerStep) (wfv1.Template, []corev1.LocalObjectReference, field.ErrorList) {
	var errs field.ErrorList
	if podspec.Of(&s.Handle).NamespaceName() != "" {
		errs = append(errs, field.Forbidden(n.Path.Child("namespace"), "steps run in the pipeline's namespace: set it on the pipeline"))
	}
	pt, terrs := podspec.Of(&s.Handle).Template(n.Path.Child("template"), podspec.TemplateOptions{Container: mainContainer})
	errs = append(errs, terrs...)
	spec := &pt.Spec
	ctr := &spec.Containers[0]
	if len(n.C.Outputs) > 0 {
		ctr.Env = setDefaultEnv(ctr.Env, pipeline.EnvOutputs, OutputsPath)
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: outputsVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: outputsVolume, MountPath: OutputsPath})
	}
	if c.g.P.Workspace != nil {
		ctr.Env = setDefaultEnv(ctr.Env, pipeline.EnvWorkspace, c.g.workspacePath())
		ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: workspaceVolume, MountPath: c.g.workspacePath()})
	}
	rewrite := func(v string) string { return graph.Substitute(v, c.inTemplate) }
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
	for _, o := range n.C.Outputs {
		t.Outputs.Parameters = append(t.Outputs.Parameters, wfv1.Parameter{Name: o, ValueFrom: &wfv1.ValueFrom{Path: OutputsPath + "/" + o}})
	}
	labels := pt.Labels // Template's own map
	for _, k := range standardLabels {
		delete(labels, k)
	}
	labels[pipeline.LabelStep] = n.C.Name
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
		errs = append(errs, field.InternalError(n.Path, err))
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
