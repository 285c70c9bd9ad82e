package graph

import (
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/jsonpath"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/retry"
)

// Step names follow Argo's template and DAG task name rule
// (workflow/validate: workflowFieldNameFmt "[a-zA-Z0-9][-a-zA-Z0-9]*", at most
// 128 characters), without the leading digit Argo rejects in DAG tasks that
// have dependencies, and at most 63 characters because the name is also the
// value of the cube.dev/step pod label.
var stepNameRe = regexp.MustCompile(`^[a-zA-Z][-a-zA-Z0-9]*$`)

const maxStepNameLen = 63

// Type is the kind of a step.
type Type int

// The kinds of step.
const (
	Container Type = iota + 1
	Workload
	Func
	Serve
)

func (t Type) String() string {
	switch t {
	case Container:
		return "container"
	case Workload:
		return "workload"
	case Func:
		return "func"
	case Serve:
		return "serve"
	}
	return "unknown"
}

// Source carries a pipeline's definition to the backends: pipeline.Pipeline
// embeds it, and a backend reads the definition with Of. It has no exported
// fields or methods.
type Source struct{ def func() *Pipeline }

// Bind makes s read its definition from def; pipeline.New and the
// pipeline's settings call it.
func Bind(s *Source, def func() *Pipeline) { s.def = def }

// Of returns the definition behind s, or nil for a pipeline that New did
// not make.
func Of(s *Source) *Pipeline {
	if s.def == nil {
		return nil
	}
	return s.def()
}

// Pipeline is what a pipeline was given, as the analysis and the backends
// read it. Name and MetaErrors come from its pod.Meta.
type Pipeline struct {
	Name           string
	MetaErrors     field.ErrorList
	Steps          []Step
	OnExit         *Step
	Params         []NamedValue
	Workspace      *Workspace
	Parallelism    int
	ParallelismSet bool
	TTL            *time.Duration
	PodGC          string
	ServiceAccount string
	Kinds          []cube.Kind
}

// Workspace is pipeline.Workspace.
type Workspace struct {
	Size         string
	StorageClass string
	AccessMode   corev1.PersistentVolumeAccessMode
	MountPath    string
}

// NamedValue is a pipeline parameter or a function step's input.
type NamedValue struct{ Name, Value string }

// SetNamed replaces the entry of the same name, or appends.
func SetNamed(list []NamedValue, v NamedValue) []NamedValue {
	for i := range list {
		if list[i].Name == v.Name {
			list[i] = v
			return list
		}
	}
	return append(list, v)
}

// Step is one step as the pipeline was given it.
type Step struct {
	// Nil: the step is nil. Unmade: a zero value no constructor made.
	// Foreign: the type name of a Step that is not one of pipeline's.
	Nil, Unmade bool
	Foreign     string
	Type        Type
	Core        *Core
	// Value is the pipeline.Step itself (*pipeline.ContainerStep…).
	Value any
	// Texts lists the strings of a container step that may hold
	// placeholders: image, command, args and env values.
	Texts     []Text
	Workload  cube.Workload
	JSONPaths map[string]string // workload step outputs
	Func      any               // pipeline.StepFunc; nil when the function is nil
	Inputs    []NamedValue      // function step inputs
}

// Core holds what every kind of step shares.
type Core struct {
	Name       string
	After      []*Core // nil for a nil dependency
	Outputs    []string
	Retry      *retry.Policy
	RetryOn    string
	Timeout    time.Duration
	TimeoutSet bool
	When       string
	Items      []string
	ItemsSet   bool
	ItemsFrom  string
	MaxPar     int
	MaxParSet  bool
}

// Retry conditions (Argo's retryPolicy).
const (
	OnFailure        = "OnFailure"
	OnError          = "OnError"
	OnTransientError = "OnTransientError"
	Always           = "Always"
)

// WorkflowKind is an Argo Workflow; WorkflowCompletion is when it has
// finished. A workload step can run a Workflow without the pipeline being
// given its kind.
var (
	WorkflowKind       = schema.GroupKind{Group: "argoproj.io", Kind: "Workflow"}
	WorkflowCompletion = cube.Completion{
		Success: "status.phase == Succeeded",
		Failure: "status.phase in (Failed, Error)",
	}
)

// Node is one step of an analysed pipeline.
type Node struct {
	// Completion is the success and failure conditions of a workload
	// step's job, from its kind.
	Completion cube.Completion
	Index      int
	Def        *Step
	C          *Core
	Type       Type
	Path       *field.Path
	Exit       bool
	// BadName: the name failed validation, so the step is not compiled
	// (its errors would only repeat the name's).
	BadName bool

	Deps []int // upstream steps, in pipeline order
	Down []int // downstream steps, in pipeline order

	// Inputs are the references a step's own strings make to values it must
	// be given: other steps' outputs and the item, in first-use order.
	Inputs []Ref
	// Params are the pipeline parameters the step reads (for cache keys).
	Params []string
	// UsesWorkspace: the step's own strings mention {{workspace}}.
	UsesWorkspace bool
	// Texts are the step's strings that may hold placeholders.
	Texts []Text

	Primary *unstructured.Unstructured // workload steps
	Aux     []*unstructured.Unstructured
}

// Graph is a pipeline after analysis.
type Graph struct {
	P      *Pipeline
	Nodes  []*Node // steps in pipeline order
	Exit   *Node
	ByName map[string]*Node
	Params map[string]string
	Order  []int // a topological order when acyclic
	Cyclic bool
}

// Text is one string a step carries, with where it is: the step's field,
// and an index or a key in it (index -1 and key "" for neither). The path
// is built only when asked for, which is when the text is wrong.
type Text struct {
	Field string
	Index int
	Key   string
	Value string
}

// At returns the path of the text under the step's path.
func (t Text) At(step *field.Path) *field.Path {
	p := step.Child(t.Field)
	switch {
	case t.Key != "":
		return p.Key(t.Key)
	case t.Index >= 0:
		return p.Index(t.Index)
	}
	return p
}

// Analyze validates everything a pipeline's backends share and builds its
// graph. The graph is usable for drawing even when errors are returned.
func Analyze(p *Pipeline) (*Graph, field.ErrorList) {
	g := &Graph{P: p, ByName: map[string]*Node{}, Params: map[string]string{}}
	errs := slices.Clone(p.MetaErrors)
	for i, pr := range p.Params {
		if !IsParamName(pr.Name) {
			errs = append(errs, field.Invalid(field.NewPath("params").Index(i).Child("name"), pr.Name,
				"must consist of letters, digits, '-' or '_' and start with a letter or digit"))
		}
		g.Params[pr.Name] = pr.Value
	}
	errs = append(errs, p.validateSettings()...)

	stepsPath := field.NewPath("steps")
	if len(p.Steps) == 0 {
		errs = append(errs, field.Required(stepsPath, "a pipeline needs at least one step"))
	}
	kinds := p.completions()
	for i := range p.Steps {
		n, nerrs := newNode(i, &p.Steps[i], stepsPath.Index(i), false, kinds)
		errs = append(errs, nerrs...)
		if n == nil {
			continue
		}
		if _, dup := g.ByName[n.C.Name]; dup {
			errs = append(errs, field.Duplicate(n.Path.Child("name"), n.C.Name))
			continue
		}
		if n.C.Name == p.Name && n.C.Name != "" {
			errs = append(errs, field.Invalid(n.Path.Child("name"), n.C.Name, "must differ from the pipeline name, which names the DAG template"))
			n.BadName = true
		}
		g.ByName[n.C.Name] = n
		g.Nodes = append(g.Nodes, n)
	}
	if p.OnExit != nil {
		n, nerrs := newNode(len(p.Steps), p.OnExit, field.NewPath("onExit"), true, kinds)
		errs = append(errs, nerrs...)
		if n != nil {
			if _, dup := g.ByName[n.C.Name]; dup {
				errs = append(errs, field.Duplicate(n.Path.Child("name"), n.C.Name))
				n.BadName = true
			} else if n.C.Name == p.Name {
				errs = append(errs, field.Invalid(n.Path.Child("name"), n.C.Name, "must differ from the pipeline name, which names the DAG template"))
				n.BadName = true
			}
			g.Exit = n
		}
	}
	for i, n := range g.Nodes {
		n.Index = i
	}
	all := slices.Clone(g.Nodes)
	if g.Exit != nil {
		g.Exit.Index = len(g.Nodes)
		all = append(all, g.Exit)
	}
	for _, n := range all {
		errs = append(errs, g.link(n)...)
	}
	errs = append(errs, g.sort()...)
	return g, errs
}

// completions are the kinds a workload step can wait on besides a
// Workflow (completionOf): those given with Kinds (the Kubernetes API's own
// come with cube.CompletionOf).
func (p *Pipeline) completions() []cube.Kind { return p.Kinds }

// completionOf is when a job of kind gk has finished: a Workflow's is
// known, the others come from kinds.
func completionOf(gk schema.GroupKind, kinds []cube.Kind) (cube.Completion, bool) {
	if gk == WorkflowKind {
		return WorkflowCompletion, true
	}
	return cube.CompletionOf(gk, kinds...)
}

// validateSettings checks the pipeline-wide settings.
func (p *Pipeline) validateSettings() field.ErrorList {
	var errs field.ErrorList
	if p.ParallelismSet && p.Parallelism < 1 {
		errs = append(errs, field.Invalid(field.NewPath("parallelism"), p.Parallelism, "must be at least 1"))
	}
	if d := p.TTL; d != nil && (*d < 0 || *d > math.MaxInt32*time.Second) {
		errs = append(errs, field.Invalid(field.NewPath("ttlAfterFinished"), d.String(), "must be between 0 and 2^31-1 seconds"))
	}
	if p.ServiceAccount != "" {
		for _, msg := range validation.IsDNS1123Subdomain(p.ServiceAccount) {
			errs = append(errs, field.Invalid(field.NewPath("serviceAccount"), p.ServiceAccount, msg))
		}
	}
	if w := p.Workspace; w != nil {
		wp := field.NewPath("workspace")
		if w.Size == "" {
			errs = append(errs, field.Required(wp.Child("size"), "a workspace needs a size, e.g. 20Gi"))
		}
		if w.MountPath != "" && !strings.HasPrefix(w.MountPath, "/") {
			errs = append(errs, field.Invalid(wp.Child("mountPath"), w.MountPath, "must be an absolute path"))
		}
	}
	return errs
}

// newNode checks one step on its own and classifies it.
func newNode(i int, s *Step, path *field.Path, exit bool, kinds []cube.Kind) (*Node, field.ErrorList) {
	var errs field.ErrorList
	switch {
	case s.Nil:
		return nil, field.ErrorList{field.Required(path, "step is nil")}
	case s.Unmade:
		return nil, field.ErrorList{field.Invalid(path, fmt.Sprintf("%T", s.Value), "a step made without its constructor: use Container, Workload or Func")}
	case s.Foreign != "":
		return nil, field.ErrorList{field.Invalid(path, s.Foreign, "not a step of this package: use Container, Workload or Func")}
	}
	c := s.Core
	n := &Node{Index: i, Def: s, C: c, Path: path, Exit: exit, Type: s.Type}
	switch s.Type {
	case Workload:
		errs = append(errs, n.loadWorkload(s, kinds)...)
	case Func:
		if s.Func == nil {
			errs = append(errs, field.Required(path.Child("func"), "function is nil"))
		}
	case Serve:
		errs = append(errs, n.loadService(s)...)
		if len(s.Core.Outputs) > 0 {
			errs = append(errs, field.Forbidden(path.Child("outputs"), "a serving step has no outputs: later steps reach the service by its name"))
		}
		if s.Core.ItemsSet || s.Core.ItemsFrom != "" {
			errs = append(errs, field.Forbidden(path.Child("forEach"), "a serving step applies one service and cannot fan out"))
		}
	}
	n.BadName = true
	switch {
	case c.Name == "":
		errs = append(errs, field.Required(path.Child("name"), "a step name is required"))
	case len(c.Name) > maxStepNameLen:
		errs = append(errs, field.TooLong(path.Child("name"), c.Name, maxStepNameLen))
	case !stepNameRe.MatchString(c.Name):
		errs = append(errs, field.Invalid(path.Child("name"), c.Name, "must consist of letters, digits or '-' and start with a letter (Argo's template name rule)"))
	default:
		n.BadName = false
	}
	seen := map[string]bool{}
	for j, o := range c.Outputs {
		op := path.Child("outputs").Index(j)
		switch {
		case !IsParamName(o):
			errs = append(errs, field.Invalid(op, o, "must consist of letters, digits, '-' or '_' and start with a letter or digit"))
		case seen[o]:
			errs = append(errs, field.Duplicate(op, o))
		}
		seen[o] = true
	}
	if s.Type == Workload {
		for j, o := range c.Outputs {
			op := path.Child("outputs").Index(j)
			jp, ok := s.JSONPaths[o]
			if !ok {
				errs = append(errs, field.Invalid(op, o, "a workload step writes no output files: read the output from its job with OutputFrom(name, jsonPath)"))
				continue
			}
			if err := jsonpath.New(o).Parse(jp); err != nil || jp == "" {
				msg := "must be a kubectl JSONPath template such as {.metadata.name}"
				if err != nil {
					msg += ": " + err.Error()
				}
				errs = append(errs, field.Invalid(op.Child("jsonPath"), jp, msg))
			}
		}
	}
	if r := c.Retry; r != nil {
		rp := path.Child("retry")
		for _, pr := range r.Problems() {
			errs = append(errs, field.Invalid(rp.Child(pr.Field), pr.Value, pr.Detail))
		}
		// Argo's limit and backoff factor are int32s.
		if r.Limit > math.MaxInt32 {
			errs = append(errs, field.Invalid(rp.Child("limit"), r.Limit, "must be at most 2^31-1"))
		}
		if r.Factor > math.MaxInt32 {
			errs = append(errs, field.Invalid(rp.Child("factor"), r.Factor, "must be at most 2^31-1"))
		}
	}
	switch c.RetryOn {
	case "", OnFailure, OnError, OnTransientError, Always:
		if c.RetryOn != "" && c.Retry == nil {
			errs = append(errs, field.Required(path.Child("retry"), "RetryOn says which failures are retried; Retry says how often"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("retryOn"), c.RetryOn,
			[]string{OnFailure, OnError, OnTransientError, Always}))
	}
	switch {
	case c.TimeoutSet && c.Timeout <= 0:
		errs = append(errs, field.Invalid(path.Child("activeDeadline"), c.Timeout.String(), "must be positive"))
	case c.TimeoutSet && c.Timeout > math.MaxInt32*time.Second:
		// activeDeadlineSeconds is an int32 in Argo's template.
		errs = append(errs, field.Invalid(path.Child("activeDeadline"), c.Timeout.String(), "must be at most 2^31-1 seconds"))
	}
	fanned := c.ItemsSet || c.ItemsFrom != ""
	if c.ItemsSet && len(c.Items) == 0 {
		errs = append(errs, field.Required(path.Child("forEach"), "at least one item is required"))
	}
	if c.MaxParSet {
		switch {
		case c.MaxPar < 1:
			errs = append(errs, field.Invalid(path.Child("parallelism"), c.MaxPar, "must be at least 1"))
		case !fanned:
			errs = append(errs, field.Invalid(path.Child("parallelism"), c.MaxPar, "applies only to a step with ForEach or ForEachIn"))
		}
	}
	if exit {
		if len(c.After) > 0 {
			errs = append(errs, field.Forbidden(path.Child("after"), "the exit handler runs after every step and takes no dependencies"))
		}
		if c.When != "" {
			errs = append(errs, field.Forbidden(path.Child("when"), "the exit handler always runs"))
		}
		if fanned {
			errs = append(errs, field.Forbidden(path.Child("forEach"), "the exit handler cannot fan out"))
		}
	}
	n.Texts = n.texts()
	return n, errs
}

// auxiliaryKinds are kinds a workload creates around its job.
var auxiliaryKinds = map[schema.GroupKind]bool{
	{Kind: "ConfigMap"}: true, {Kind: "Secret"}: true, {Kind: "Service"}: true,
	{Kind: "PersistentVolumeClaim"}: true, {Kind: "ServiceAccount"}: true, {Kind: "Namespace"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}: true, {Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}: true,
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}: true, {Group: "policy", Kind: "PodDisruptionBudget"}: true,
	{Group: "scheduling.volcano.sh", Kind: "Queue"}: true, {Group: "scheduling.volcano.sh", Kind: "PodGroup"}: true,
}

// servingKinds run until they are deleted: they have no completion a step
// could wait for.
var servingKinds = map[schema.GroupKind]bool{
	{Group: "apps", Kind: "Deployment"}:                          true,
	{Group: "apps", Kind: "StatefulSet"}:                         true,
	{Group: "apps", Kind: "DaemonSet"}:                           true,
	{Group: "apps", Kind: "ReplicaSet"}:                          true,
	{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}: true,
	{Group: "ray.io", Kind: "RayService"}:                        true,
	{Group: "ray.io", Kind: "RayCluster"}:                        true,
	{Group: "serving.kserve.io", Kind: "InferenceService"}:       true,
}

// loadWorkload renders a workload step's objects and picks its primary
// object: the one whose kind has a Completion among kinds (and
// cube.CoreKinds), or else the one object that is not auxiliary.
func (n *Node) loadWorkload(s *Step, kinds []cube.Kind) field.ErrorList {
	wp := n.Path.Child("workload")
	if s.Workload == nil {
		return field.ErrorList{field.Required(wp, "workload is nil")}
	}
	objs, err := s.Workload.Objects()
	if err != nil {
		return nested(wp, err)
	}
	var all, completing, main []*unstructured.Unstructured
	for _, o := range objs {
		u, err := cube.ToUnstructured(o)
		if err != nil {
			return field.ErrorList{field.Invalid(wp, s.Core.Name, err.Error())}
		}
		all = append(all, u)
		gk := u.GroupVersionKind().GroupKind()
		if done, ok := completionOf(gk, kinds); ok {
			n.Completion = done
			completing = append(completing, u)
		}
		if !auxiliaryKinds[gk] {
			main = append(main, u)
		}
	}
	if len(completing) == 0 {
		for _, u := range all {
			if gk := u.GroupVersionKind().GroupKind(); servingKinds[gk] {
				return field.ErrorList{field.Invalid(wp, u.GetKind()+"/"+u.GetName(), fmt.Sprintf(
					"a workload step runs a job to completion, and a %s serves until it is deleted: give it to pipeline.Serve, which applies it and waits until it is available", gk.Kind))}
			}
		}
	}
	switch {
	case len(completing) == 1:
		n.Primary = completing[0]
	case len(completing) > 1:
		return field.ErrorList{field.Invalid(wp, kindsOf(completing), "a workload step runs one job, and this workload has several")}
	case len(main) == 1:
		n.Primary = main[0]
	case len(all) == 0:
		return field.ErrorList{field.Required(wp, "the workload has no objects")}
	default:
		return field.ErrorList{field.Invalid(wp, kindsOf(all), "cannot tell which object is the job: none has a cube.Completion among the pipeline's kinds (give the job's kind with Kinds)")}
	}
	for _, u := range all {
		if u != n.Primary {
			n.Aux = append(n.Aux, u)
		}
	}
	return nil
}

// availability is when a serving object is available, in Argo's
// successCondition syntax (a Kubernetes label selector evaluated on the
// object's JSON, read with gjson: matchConditions in
// workflow/executor/resource.go, argo-workflows v3.7.6), for each kind a
// serving step can wait on: at least spec.replicas (default 1) available
// pods of a Deployment (status.availableReplicas, apps/v1), ready groups
// of a LeaderWorkerSet (status.readyReplicas, leaderworkerset.x-k8s.io/v1).
// The selector syntax compares numbers with > and reaches list elements
// only by index, so neither kind has a failure condition it can express
// (a Deployment's ProgressDeadlineExceeded is a condition at no fixed
// index): a service that never becomes available fails the step at its
// ActiveDeadline.
var availability = map[schema.GroupKind]string{
	{Group: "apps", Kind: "Deployment"}:                          "status.availableReplicas",
	{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}: "status.readyReplicas",
}

// loadService renders a serving step's objects and picks the one it waits
// on: its Deployment or LeaderWorkerSet. The others (its Service, routes,
// autoscaler…) are applied with the pipeline.
func (n *Node) loadService(s *Step) field.ErrorList {
	wp := n.Path.Child("workload")
	if s.Workload == nil {
		return field.ErrorList{field.Required(wp, "workload is nil")}
	}
	objs, err := s.Workload.Objects()
	if err != nil {
		return nested(wp, err)
	}
	var all, serving []*unstructured.Unstructured
	for _, o := range objs {
		u, err := cube.ToUnstructured(o)
		if err != nil {
			return field.ErrorList{field.Invalid(wp, s.Core.Name, err.Error())}
		}
		all = append(all, u)
		if _, ok := availability[u.GroupVersionKind().GroupKind()]; ok {
			serving = append(serving, u)
		}
	}
	switch {
	case len(serving) == 0 && len(all) == 0:
		return field.ErrorList{field.Required(wp, "the workload has no objects")}
	case len(serving) == 0:
		return field.ErrorList{field.Invalid(wp, kindsOf(all), "a serving step waits for a Deployment or a LeaderWorkerSet to be available, and the workload has neither")}
	case len(serving) > 1:
		return field.ErrorList{field.Invalid(wp, kindsOf(serving), "a serving step waits for one service, and this workload has several")}
	}
	replicas, found, err := unstructured.NestedInt64(serving[0].Object, "spec", "replicas")
	if err != nil || !found {
		replicas = 1
	}
	if replicas < 1 {
		return field.ErrorList{field.Invalid(wp.Child("spec", "replicas"), replicas, "a serving step waits for the service to be available, and it has no replicas")}
	}
	n.Primary = serving[0]
	n.Completion = cube.Completion{Success: fmt.Sprintf("%s > %d", availability[n.Primary.GroupVersionKind().GroupKind()], replicas-1)}
	for _, u := range all {
		if u != n.Primary {
			n.Aux = append(n.Aux, u)
		}
	}
	return nil
}

// nested places the errors of a workload under path: field errors keep
// their own paths below it, anything else becomes one error at path.
func nested(path *field.Path, err error) field.ErrorList {
	var errs []error
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		errs = agg.Errors()
	} else {
		errs = []error{err}
	}
	var out field.ErrorList
	for _, e := range errs {
		var fe *field.Error
		if !errors.As(e, &fe) {
			out = append(out, field.Invalid(path, field.OmitValueType{}, e.Error()))
			continue
		}
		placed := *fe
		placed.Field = path.String()
		if fe.Field != "" && fe.Field != "<nil>" {
			placed.Field += "." + fe.Field
		}
		out = append(out, &placed)
	}
	return out
}

func kindsOf(us []*unstructured.Unstructured) []string {
	out := make([]string, len(us))
	for i, u := range us {
		out[i] = u.GetKind() + "/" + u.GetName()
	}
	return out
}

// texts returns the strings of a step that may hold placeholders, in a
// stable order.
func (n *Node) texts() []Text {
	switch n.Type {
	case Container:
		return n.Def.Texts
	case Func:
		out := make([]Text, 0, len(n.Def.Inputs))
		for _, in := range n.Def.Inputs {
			out = append(out, Text{"inputs", -1, in.Name, in.Value})
		}
		return out
	case Workload, Serve:
		var out []Text
		if n.Primary != nil {
			walkStrings(n.Primary.Object, func(v string) {
				out = append(out, Text{"workload", -1, "", v})
			})
		}
		return out
	}
	return nil
}

// walkStrings calls fn with every string in a JSON-like value, in a
// deterministic order.
func walkStrings(v any, fn func(string)) {
	switch t := v.(type) {
	case string:
		fn(t)
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			walkStrings(t[k], fn)
		}
	case []any:
		for _, e := range t {
			walkStrings(e, fn)
		}
	}
}

// TaskHandle carries a function step's task inside pipeline.Task, which
// embeds it. It has no exported fields or methods; the local backend fills
// the task with TaskOf.
type TaskHandle struct{ t TaskState }

// TaskOf returns the state behind h.
func TaskOf(h *TaskHandle) *TaskState { return &h.t }

// TaskState is one execution of a function step: one attempt of one item.
type TaskState struct {
	Step      string
	Item      string
	Index     int
	Attempt   int
	Inputs    map[string]string
	Params    map[string]string
	Workspace string
	Dir       string // outputs go to Dir/outputs
	Declared  []string
	Log       io.Writer
}
