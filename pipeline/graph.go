package pipeline

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/jsonpath"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/podspec"
)

// Step names follow Argo's template and DAG task name rule
// (workflow/validate: workflowFieldNameFmt "[a-zA-Z0-9][-a-zA-Z0-9]*", at most
// 128 characters), without the leading digit Argo rejects in DAG tasks that
// have dependencies, and at most 63 characters because the name is also the
// value of the cube.dev/step pod label.
var stepNameRe = regexp.MustCompile(`^[a-zA-Z][-a-zA-Z0-9]*$`)

const maxStepNameLen = 63

// LabelStep labels the pods of a step with the step name.
const LabelStep = "cube.dev/step"

type stepType int

const (
	containerType stepType = iota + 1
	workloadType
	funcType
)

func (t stepType) String() string {
	switch t {
	case containerType:
		return "container"
	case workloadType:
		return "workload"
	case funcType:
		return "func"
	}
	return "unknown"
}

// node is one step of an analysed pipeline.
type node struct {
	// completion is the success and failure conditions of a workload
	// step's job, from its kind.
	completion cube.Completion
	index      int
	step       Step
	c          *stepCore
	typ        stepType
	path       *field.Path
	exit       bool
	// badName: the name failed validation, so the step is not compiled
	// (its errors would only repeat the name's).
	badName bool

	deps []int // upstream steps, in pipeline order
	down []int // downstream steps, in pipeline order

	// inputs are the references a step's own strings make to values it must
	// be given: other steps' outputs and the item, in first-use order.
	inputs []ref
	// params are the pipeline parameters the step reads (for cache keys).
	params []string
	// usesWorkspace: the step's own strings mention {{workspace}}.
	usesWorkspace bool

	primary *unstructured.Unstructured // workload steps
	aux     []*unstructured.Unstructured
}

// graph is a pipeline after analysis.
type graph struct {
	p      *Pipeline
	nodes  []*node // steps in pipeline order
	exit   *node
	byName map[string]*node
	params map[string]string
	order  []int // a topological order when acyclic
	cyclic bool
}

// text is one string a step carries, with where it is: the step's field,
// and an index or a key in it (index -1 and key "" for neither). The path
// is built only when asked for, which is when the text is wrong.
type text struct {
	field string
	index int
	key   string
	value string
}

func (t text) path(step *field.Path) *field.Path {
	p := step.Child(t.field)
	switch {
	case t.key != "":
		return p.Key(t.key)
	case t.index >= 0:
		return p.Index(t.index)
	}
	return p
}

// analyze validates everything a pipeline's targets share and builds its
// graph. The graph is usable for drawing even when errors are returned.
func (p *Pipeline) analyze() (*graph, field.ErrorList) {
	g := &graph{p: p, byName: map[string]*node{}, params: map[string]string{}}
	errs := podspec.Of(&p.Handle).ValidateMeta(63)
	for i, pr := range p.params {
		if !isParamName(pr.name) {
			errs = append(errs, field.Invalid(field.NewPath("params").Index(i).Child("name"), pr.name,
				"must consist of letters, digits, '-' or '_' and start with a letter or digit"))
		}
		g.params[pr.name] = pr.value
	}
	errs = append(errs, p.validateSettings()...)

	stepsPath := field.NewPath("steps")
	if len(p.steps) == 0 {
		errs = append(errs, field.Required(stepsPath, "a pipeline needs at least one step"))
	}
	for i, s := range p.steps {
		n, nerrs := newNode(i, s, stepsPath.Index(i), false, p.completions())
		errs = append(errs, nerrs...)
		if n == nil {
			continue
		}
		if _, dup := g.byName[n.c.name]; dup {
			errs = append(errs, field.Duplicate(n.path.Child("name"), n.c.name))
			continue
		}
		if n.c.name == podspec.Of(&p.Handle).Name() && n.c.name != "" {
			errs = append(errs, field.Invalid(n.path.Child("name"), n.c.name, "must differ from the pipeline name, which names the DAG template"))
			n.badName = true
		}
		g.byName[n.c.name] = n
		g.nodes = append(g.nodes, n)
	}
	if p.onExitSet {
		n, nerrs := newNode(len(p.steps), p.onExit, field.NewPath("onExit"), true, p.completions())
		errs = append(errs, nerrs...)
		if n != nil {
			if _, dup := g.byName[n.c.name]; dup {
				errs = append(errs, field.Duplicate(n.path.Child("name"), n.c.name))
				n.badName = true
			} else if n.c.name == podspec.Of(&p.Handle).Name() {
				errs = append(errs, field.Invalid(n.path.Child("name"), n.c.name, "must differ from the pipeline name, which names the DAG template"))
				n.badName = true
			}
			g.exit = n
		}
	}
	for i, n := range g.nodes {
		n.index = i
	}
	all := slices.Clone(g.nodes)
	if g.exit != nil {
		g.exit.index = len(g.nodes)
		all = append(all, g.exit)
	}
	for _, n := range all {
		errs = append(errs, g.link(n)...)
	}
	errs = append(errs, g.sort()...)
	return g, errs
}

// validateSettings checks the pipeline-wide settings.
func (p *Pipeline) validateSettings() field.ErrorList {
	var errs field.ErrorList
	if p.parallelismSet && p.parallelism < 1 {
		errs = append(errs, field.Invalid(field.NewPath("parallelism"), p.parallelism, "must be at least 1"))
	}
	if d := p.ttl; d != nil && (*d < 0 || *d > math.MaxInt32*time.Second) {
		errs = append(errs, field.Invalid(field.NewPath("ttlAfterFinished"), d.String(), "must be between 0 and 2^31-1 seconds"))
	}
	if p.serviceAccount != "" {
		for _, msg := range validation.IsDNS1123Subdomain(p.serviceAccount) {
			errs = append(errs, field.Invalid(field.NewPath("serviceAccount"), p.serviceAccount, msg))
		}
	}
	if w := p.workspace; w != nil {
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
func newNode(i int, s Step, path *field.Path, exit bool, kinds []cube.Kind) (*node, field.ErrorList) {
	var errs field.ErrorList
	if isNilStep(s) {
		return nil, field.ErrorList{field.Required(path, "step is nil")}
	}
	if !s.made() {
		return nil, field.ErrorList{field.Invalid(path, fmt.Sprintf("%T", s), "a step made without its constructor: use Container, Workload or Func")}
	}
	c := s.core()
	n := &node{index: i, step: s, c: c, path: path, exit: exit}
	switch st := s.(type) {
	case *ContainerStep:
		n.typ = containerType
	case *WorkloadStep:
		n.typ = workloadType
		errs = append(errs, n.loadWorkload(st, kinds)...)
	case *FuncStep:
		n.typ = funcType
		if st.fn == nil {
			errs = append(errs, field.Required(path.Child("func"), "function is nil"))
		}
	default:
		return nil, field.ErrorList{field.Invalid(path, fmt.Sprintf("%T", s), "not a step of this package: use Container, Workload or Func")}
	}
	n.badName = true
	switch {
	case c.name == "":
		errs = append(errs, field.Required(path.Child("name"), "a step name is required"))
	case len(c.name) > maxStepNameLen:
		errs = append(errs, field.TooLong(path.Child("name"), c.name, maxStepNameLen))
	case !stepNameRe.MatchString(c.name):
		errs = append(errs, field.Invalid(path.Child("name"), c.name, "must consist of letters, digits or '-' and start with a letter (Argo's template name rule)"))
	default:
		n.badName = false
	}
	seen := map[string]bool{}
	for j, o := range c.outputs {
		op := path.Child("outputs").Index(j)
		switch {
		case !isParamName(o):
			errs = append(errs, field.Invalid(op, o, "must consist of letters, digits, '-' or '_' and start with a letter or digit"))
		case seen[o]:
			errs = append(errs, field.Duplicate(op, o))
		}
		seen[o] = true
	}
	if ws, ok := s.(*WorkloadStep); ok {
		for j, o := range c.outputs {
			op := path.Child("outputs").Index(j)
			jp, ok := ws.jsonPaths[o]
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
	if r := c.retry; r != nil {
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
	switch c.retryOn {
	case "", OnFailure, OnError, OnTransientError, Always:
		if c.retryOn != "" && c.retry == nil {
			errs = append(errs, field.Required(path.Child("retry"), "RetryOn says which failures are retried; Retry says how often"))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("retryOn"), c.retryOn,
			[]RetryCondition{OnFailure, OnError, OnTransientError, Always}))
	}
	switch {
	case c.timeoutSet && c.timeout <= 0:
		errs = append(errs, field.Invalid(path.Child("activeDeadline"), c.timeout.String(), "must be positive"))
	case c.timeoutSet && c.timeout > math.MaxInt32*time.Second:
		// activeDeadlineSeconds is an int32 in Argo's template.
		errs = append(errs, field.Invalid(path.Child("activeDeadline"), c.timeout.String(), "must be at most 2^31-1 seconds"))
	}
	fanned := c.itemsSet || c.itemsFrom != ""
	if c.itemsSet && len(c.items) == 0 {
		errs = append(errs, field.Required(path.Child("forEach"), "at least one item is required"))
	}
	if c.maxParSet {
		switch {
		case c.maxPar < 1:
			errs = append(errs, field.Invalid(path.Child("parallelism"), c.maxPar, "must be at least 1"))
		case !fanned:
			errs = append(errs, field.Invalid(path.Child("parallelism"), c.maxPar, "applies only to a step with ForEach or ForEachIn"))
		}
	}
	if exit {
		if len(c.after) > 0 {
			errs = append(errs, field.Forbidden(path.Child("after"), "the exit handler runs after every step and takes no dependencies"))
		}
		if c.when != "" {
			errs = append(errs, field.Forbidden(path.Child("when"), "the exit handler always runs"))
		}
		if fanned {
			errs = append(errs, field.Forbidden(path.Child("forEach"), "the exit handler cannot fan out"))
		}
	}
	return n, errs
}

// isNilStep reports a nil step, typed or not: a typed nil's methods would
// dereference it.
func isNilStep(s Step) bool {
	switch t := s.(type) {
	case nil:
		return true
	case *ContainerStep:
		return t == nil
	case *WorkloadStep:
		return t == nil
	case *FuncStep:
		return t == nil
	}
	return false
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
func (n *node) loadWorkload(s *WorkloadStep, kinds []cube.Kind) field.ErrorList {
	wp := n.path.Child("workload")
	if s.workload == nil {
		return field.ErrorList{field.Required(wp, "workload is nil")}
	}
	objs, err := s.workload.Objects()
	if err != nil {
		return nested(wp, err)
	}
	var all, completing, main []*unstructured.Unstructured
	for _, o := range objs {
		u, err := cube.ToUnstructured(o)
		if err != nil {
			return field.ErrorList{field.Invalid(wp, s.c.name, err.Error())}
		}
		all = append(all, u)
		gk := u.GroupVersionKind().GroupKind()
		if done, ok := cube.CompletionOf(gk, kinds...); ok {
			n.completion = done
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
					"a workload step runs a job to completion, and a %s serves until it is deleted: apply the service with cube.Client.Apply and let a container step call it", gk.Kind))}
			}
		}
	}
	switch {
	case len(completing) == 1:
		n.primary = completing[0]
	case len(completing) > 1:
		return field.ErrorList{field.Invalid(wp, kindsOf(completing), "a workload step runs one job, and this workload has several")}
	case len(main) == 1:
		n.primary = main[0]
	case len(all) == 0:
		return field.ErrorList{field.Required(wp, "the workload has no objects")}
	default:
		return field.ErrorList{field.Invalid(wp, kindsOf(all), "cannot tell which object is the job: none has a cube.Completion among the pipeline's kinds (give the job's kind with Kinds)")}
	}
	for _, u := range all {
		if u != n.primary {
			n.aux = append(n.aux, u)
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
func (n *node) texts() []text {
	var out []text
	switch s := n.step.(type) {
	case *ContainerStep:
		cmd, args := podspec.Of(&s.Handle).CommandLine()
		env := podspec.Of(&s.Handle).EnvVars()
		out = make([]text, 0, 1+len(cmd)+len(args)+len(env))
		if img := podspec.Of(&s.Handle).ImageName(); img != "" {
			out = append(out, text{"image", -1, "", img})
		}
		for i, v := range cmd {
			out = append(out, text{"command", i, "", v})
		}
		for i, v := range args {
			out = append(out, text{"args", i, "", v})
		}
		for _, e := range env {
			if e.ValueFrom == nil {
				out = append(out, text{"env", -1, e.Name, e.Value})
			}
		}
	case *FuncStep:
		for _, in := range s.inputs {
			out = append(out, text{"inputs", -1, in.name, in.value})
		}
	case *WorkloadStep:
		if n.primary != nil {
			walkStrings(n.primary.Object, func(v string) {
				out = append(out, text{"workload", -1, "", v})
			})
		}
	}
	return out
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
