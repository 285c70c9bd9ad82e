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
	for _, t := range []struct {
		name string
		d    *time.Duration
	}{{"ttl", p.ttl.completion}, {"ttlAfterSuccess", p.ttl.success}, {"ttlAfterFailure", p.ttl.failure}} {
		if t.d != nil && (*t.d < 0 || *t.d > math.MaxInt32*time.Second) {
			errs = append(errs, field.Invalid(field.NewPath(t.name), t.d.String(), "must be between 0 and 2^31-1 seconds"))
		}
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
		if r.Limit < 0 || r.Limit > math.MaxInt32 {
			errs = append(errs, field.Invalid(rp.Child("limit"), r.Limit, "must be between 0 and 2^31-1"))
		}
		if r.Backoff < 0 {
			errs = append(errs, field.Invalid(rp.Child("backoff"), r.Backoff.String(), "must not be negative"))
		}
		if r.Factor < 0 || r.Factor > math.MaxInt32 {
			errs = append(errs, field.Invalid(rp.Child("factor"), r.Factor, "must be between 0 and 2^31-1"))
		}
		if r.MaxBackoff < 0 {
			errs = append(errs, field.Invalid(rp.Child("maxBackoff"), r.MaxBackoff.String(), "must not be negative"))
		}
		if r.MaxDuration < 0 {
			errs = append(errs, field.Invalid(rp.Child("maxDuration"), r.MaxDuration.String(), "must not be negative"))
		}
		switch r.Policy {
		case "", RetryOnFailure, RetryOnError, RetryOnTransientError, RetryAlways:
		default:
			errs = append(errs, field.NotSupported(rp.Child("policy"), r.Policy,
				[]RetryPolicy{RetryOnFailure, RetryOnError, RetryOnTransientError, RetryAlways}))
		}
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

// link resolves a step's dependencies and references.
func (g *graph) link(n *node) field.ErrorList {
	var errs field.ErrorList
	c := n.c
	deps := map[int]bool{}
	for j, a := range c.after {
		if isNilStep(a) {
			errs = append(errs, field.Required(n.path.Child("after").Index(j), "dependency is nil"))
			continue
		}
		up, ok := g.byName[a.Name()]
		if !ok {
			errs = append(errs, field.NotFound(n.path.Child("after").Index(j), a.Name()))
			continue
		}
		deps[up.index] = true
	}
	fanned := c.itemsSet || c.itemsFrom != ""
	inputSeen := map[string]bool{}
	paramSeen := map[string]bool{}
	check := func(where func() *field.Path, s string, taskLevel bool) {
		refs, perrs := scanRefs(s)
		if len(refs) == 0 && len(perrs) == 0 {
			return
		}
		var path *field.Path
		at := func() *field.Path { // built only for an error
			if path == nil {
				path = where()
			}
			return path
		}
		for _, e := range perrs {
			errs = append(errs, field.Invalid(at(), s, e.Error()))
		}
		for _, r := range refs {
			switch r.kind {
			case refParam:
				if _, ok := g.params[r.name]; !ok {
					errs = append(errs, field.Invalid(at(), s, fmt.Sprintf("parameter %q is not declared: call Param(%q, default)", r.name, r.name)))
					continue
				}
				if !paramSeen[r.name] {
					paramSeen[r.name] = true
					n.params = append(n.params, r.name)
				}
			case refOutput:
				up, ok := g.byName[r.step]
				switch {
				case n.exit:
					errs = append(errs, field.Invalid(at(), s, "the exit handler cannot read the outputs of steps"))
					continue
				case !ok:
					errs = append(errs, field.Invalid(at(), s, fmt.Sprintf("refers to step %q, which is not in the pipeline", r.step)))
					continue
				case up == n:
					errs = append(errs, field.Invalid(at(), s, "refers to the step's own output: use OutputFile to name the file it writes"))
					continue
				}
				deps[up.index] = true // even for a missing output: the step is meant to wait
				if !slices.Contains(up.c.outputs, r.name) {
					errs = append(errs, field.Invalid(at(), s, fmt.Sprintf("step %q has no output %q (declared: %s)", r.step, r.name, declared(up.c.outputs))))
					continue
				}
				if name := inputName(r); !taskLevel && !inputSeen[name] {
					inputSeen[name] = true
					n.inputs = append(n.inputs, r)
				}
			case refOutputPath:
				if taskLevel || n.typ != containerType {
					errs = append(errs, field.Invalid(at(), s, "an output file belongs in a container step's command, args or env"))
				} else if !slices.Contains(c.outputs, r.name) {
					errs = append(errs, field.Invalid(at(), s, fmt.Sprintf("output %q is not declared: call Outputs(%q)", r.name, r.name)))
				}
			case refItem:
				switch {
				case !fanned:
					errs = append(errs, field.Invalid(at(), s, "only a step with ForEach or ForEachIn has an item"))
				case taskLevel:
					errs = append(errs, field.Invalid(at(), s, "the item is known only inside the step"))
				case !inputSeen[inputName(r)]: // a constant for items
					inputSeen[inputName(r)] = true
					n.inputs = append(n.inputs, r)
				}
			case refWorkspace:
				switch {
				case g.p.workspace == nil:
					errs = append(errs, field.Invalid(at(), s, "the pipeline has no workspace: call Workspace"))
				case taskLevel:
					errs = append(errs, field.Invalid(at(), s, "the workspace is known only inside the step"))
				default:
					n.usesWorkspace = true
				}
			case refPipelineStatus:
				if !n.exit {
					errs = append(errs, field.Invalid(at(), s, "the pipeline status is known only in the exit handler"))
				}
			}
		}
	}
	for _, t := range n.texts() {
		check(func() *field.Path { return t.path(n.path) }, t.value, false)
	}
	if c.when != "" {
		wp := n.path.Child("when")
		check(func() *field.Path { return wp }, c.when, true)
		if _, err := parseWhen(substitute(c.when, func(ref) string { return "x" })); err != nil {
			errs = append(errs, field.Invalid(wp, c.when, err.Error()))
		}
	}
	if c.itemsFrom != "" {
		fp := n.path.Child("forEachIn")
		check(func() *field.Path { return fp }, c.itemsFrom, true)
		if r, ok := soleRef(c.itemsFrom); !ok || (r.kind != refParam && r.kind != refOutput) {
			errs = append(errs, field.Invalid(fp, c.itemsFrom, "must be one ParamRef or step Output holding a JSON list"))
		}
	}
	n.deps = make([]int, 0, len(deps))
	for d := range deps {
		n.deps = append(n.deps, d)
	}
	slices.Sort(n.deps)
	if !n.exit {
		for _, d := range n.deps {
			g.nodes[d].down = append(g.nodes[d].down, n.index)
		}
	}
	return errs
}

func declared(outputs []string) string {
	if len(outputs) == 0 {
		return "none"
	}
	return strings.Join(outputs, ", ")
}

// sort orders the steps topologically (Kahn's algorithm, ties broken by
// pipeline order) and reports every dependency cycle.
func (g *graph) sort() field.ErrorList {
	for _, n := range g.nodes {
		slices.Sort(n.down)
		n.down = slices.Compact(n.down)
	}
	indeg := make([]int, len(g.nodes))
	for _, n := range g.nodes {
		indeg[n.index] = len(n.deps)
	}
	ready := make([]int, 0, len(g.nodes))
	for i, d := range indeg {
		if d == 0 {
			ready = append(ready, i)
		}
	}
	order := make([]int, 0, len(g.nodes))
	for len(ready) > 0 {
		i := ready[0]
		ready = ready[1:]
		order = append(order, i)
		for _, d := range g.nodes[i].down {
			indeg[d]--
			if indeg[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	g.order = order
	if len(order) == len(g.nodes) {
		return nil
	}
	g.cyclic = true
	var errs field.ErrorList
	for _, cycle := range g.cycles() {
		names := make([]string, len(cycle))
		for i, idx := range cycle {
			names[i] = g.nodes[idx].c.name
		}
		errs = append(errs, field.Invalid(field.NewPath("steps"), strings.Join(names, " → "), "dependency cycle"))
	}
	return errs
}

// cycles returns one cycle per strongly connected component that has one,
// each starting and ending at its first step in pipeline order, with edges
// pointing from a step to the steps that wait for it.
func (g *graph) cycles() [][]int {
	n := len(g.nodes)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	var comps [][]int
	next := 0
	// Iterative Tarjan: deep chains would overflow a recursive one.
	type frame struct{ v, edge int }
	for root := range n {
		if index[root] >= 0 {
			continue
		}
		frames := []frame{{root, 0}}
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(frames) > 0 {
			f := &frames[len(frames)-1]
			down := g.nodes[f.v].down
			if f.edge < len(down) {
				w := down[f.edge]
				f.edge++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					frames = append(frames, frame{w, 0})
				} else if onStack[w] {
					low[f.v] = min(low[f.v], index[w])
				}
				continue
			}
			v := f.v
			frames = frames[:len(frames)-1]
			if len(frames) > 0 {
				parent := frames[len(frames)-1].v
				low[parent] = min(low[parent], low[v])
			}
			if low[v] == index[v] {
				var comp []int
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp = append(comp, w)
					if w == v {
						break
					}
				}
				comps = append(comps, comp)
			}
		}
	}
	var out [][]int
	for _, comp := range comps {
		start := slices.Min(comp)
		if len(comp) == 1 && !slices.Contains(g.nodes[start].down, start) {
			continue
		}
		in := map[int]bool{}
		for _, v := range comp {
			in[v] = true
		}
		out = append(out, g.pathBack(start, in))
	}
	slices.SortFunc(out, func(a, b []int) int { return a[0] - b[0] })
	return out
}

// pathBack finds the shortest cycle through start inside one component (BFS).
func (g *graph) pathBack(start int, in map[int]bool) []int {
	prev := map[int]int{}
	queue := []int{start}
	seen := map[int]bool{start: true}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range g.nodes[v].down {
			if !in[w] {
				continue
			}
			if w == start {
				path := []int{start}
				for u := v; u != start; u = prev[u] {
					path = append(path, u)
				}
				slices.Reverse(path[1:])
				return append(path, start)
			}
			if !seen[w] {
				seen[w] = true
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return []int{start, start}
}
