package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/jsonpath"

	"github.com/cubestudio/cube/internal/podspec"
)

// run is one local execution.
type run struct {
	g         *graph
	o         runOptions
	dir       string
	workspace string
	params    map[string]string
	limit     int
	nodes     []*nodeState // by node index; the exit handler last
	done      chan instanceDone
	running   int
	stopped   string // why no more steps start, once set
	status    string // the pipeline status the exit handler sees
	cache     *cache
	ready     []*nodeState // activated steps with instances not yet started

	emitMu   sync.Mutex
	handlers []func(Event)
}

type nodeState struct {
	n         *node
	status    Phase // "" while pending or running
	reason    string
	err       error
	waiting   int // dependencies not finished
	activated bool
	items     []json.RawMessage // nil without fan-out
	fanned    bool
	insts     []*instance
	next      int // next instance to start
	running   int
	finished  int
	limit     int
	outputs   map[string]string
	start     time.Time
	end       time.Time
	// key sums up what the step's finished instances ran (their cache
	// keys) and how it ended, for the cache keys of the steps after it.
	key string
}

type instance struct {
	index    int // -1 without fan-out
	key      string
	item     string
	status   Phase
	attempts int
	start    time.Time
	duration time.Duration
	outputs  map[string]string
	err      error
	log      string
}

type instanceDone struct{ ns *nodeState }

func newRun(g *graph, o runOptions) (*run, error) {
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "cube-pipeline-"+podspec.Of(&g.p.Handle).Name()+"-")
		if err != nil {
			return nil, fmt.Errorf("create run directory: %w", err)
		}
		dir = d
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	r := &run{g: g, o: o, dir: dir, workspace: filepath.Join(dir, "workspace"), params: map[string]string{}, done: make(chan instanceDone)}
	for _, sub := range []string{"params", "workspace", "cache", "steps"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("create run directory: %w", err)
		}
	}
	for _, pr := range g.p.params {
		v := pr.value
		if ov, ok := o.params[pr.name]; ok {
			v = ov
		}
		r.params[pr.name] = v
		if err := os.WriteFile(filepath.Join(dir, "params", pr.name), []byte(v), 0o644); err != nil {
			return nil, fmt.Errorf("write parameter %s: %w", pr.name, err)
		}
	}
	if r.cache, err = openCache(dir); err != nil {
		return nil, err
	}
	r.limit = o.parallelism
	if g.p.parallelismSet && g.p.parallelism < r.limit {
		r.limit = g.p.parallelism
	}
	r.handlers = slices.Clone(o.handlers)
	if o.progress != nil {
		r.handlers = append(r.handlers, NewPrinter(o.progress).Handle)
	}
	for _, n := range g.nodes {
		r.nodes = append(r.nodes, &nodeState{n: n, waiting: len(n.deps)})
	}
	if g.exit != nil {
		r.nodes = append(r.nodes, &nodeState{n: g.exit})
	}
	return r, nil
}

func (r *run) emit(ev Event) {
	ev.Time = time.Now()
	r.emitMu.Lock()
	defer r.emitMu.Unlock()
	for _, h := range r.handlers {
		h(ev)
	}
}

func (r *run) run(ctx context.Context) (*Result, error) {
	defer r.cache.close()
	began := time.Now()
	steps := r.nodes
	if r.g.exit != nil {
		steps = r.nodes[:len(r.nodes)-1]
	}
	for _, ns := range steps {
		if ns.waiting == 0 {
			r.activate(ctx, ns)
		}
	}
	r.loop(ctx)
	for _, i := range r.g.order {
		r.settle(steps[i])
	}
	for _, ns := range steps { // steps in a cycle have no order; analyze rejected them
		r.settle(ns)
	}
	failed := slices.ContainsFunc(steps, func(ns *nodeState) bool { return ns.status == PhaseFailed })
	r.status = string(PhaseSucceeded)
	if failed {
		r.status = string(PhaseFailed)
	}
	if r.g.exit != nil {
		exit := r.nodes[len(r.nodes)-1]
		if ctx.Err() == nil {
			r.stopped = ""
			r.activate(ctx, exit)
			r.loop(ctx)
		}
		r.settle(exit)
	}
	return r.result(ctx, began)
}

// loop starts what may start and collects what finishes until nothing runs.
func (r *run) loop(ctx context.Context) {
	ctxDone := ctx.Done()
	for {
		if ctx.Err() != nil && r.stopped == "" {
			r.stopped = "the run was cancelled"
		}
		r.launch(ctx)
		if r.running == 0 {
			return
		}
		select {
		case d := <-r.done:
			r.running--
			d.ns.running--
			d.ns.finished++
			r.checkNode(ctx, d.ns)
		case <-ctxDone:
			ctxDone = nil
			r.stopped = "the run was cancelled"
		}
	}
}

// launch starts instances while the bounds allow, taking the ready steps
// in the order they became ready.
func (r *run) launch(ctx context.Context) {
	for r.stopped == "" && r.running < r.limit && len(r.ready) > 0 {
		pending := r.ready
		r.ready = nil // steps that become ready during this pass land here
		var kept []*nodeState
		for i, ns := range pending {
			for r.running < r.limit && ns.status == "" && ns.next < len(ns.insts) && (ns.limit == 0 || ns.running < ns.limit) {
				inst := ns.insts[ns.next]
				ns.next++
				spec, err := r.prepare(ns, inst)
				if err != nil {
					inst.status, inst.err = PhaseFailed, &StepError{Step: ns.n.c.name, Item: inst.index, Err: err}
					r.emit(Event{Type: EventFailed, Step: ns.n.c.name, Index: inst.index, Item: inst.item, Err: err})
					ns.finished++
					r.checkNode(ctx, ns)
					continue
				}
				r.running++
				ns.running++
				if ns.start.IsZero() {
					ns.start = time.Now()
				}
				go r.runInstance(ctx, spec)
			}
			if ns.status == "" && ns.next < len(ns.insts) {
				kept = append(kept, ns)
			}
			if r.running >= r.limit {
				kept = append(kept, pending[i+1:]...)
				break
			}
		}
		fresh := r.ready
		r.ready = append(kept, fresh...)
		if len(fresh) == 0 {
			return
		}
	}
}

func (r *run) runInstance(ctx context.Context, spec *taskSpec) {
	r.execute(ctx, spec)
	r.done <- instanceDone{spec.ns}
}

// activate is called once every dependency of a step has finished.
func (r *run) activate(ctx context.Context, ns *nodeState) {
	if ns.activated {
		return
	}
	ns.activated = true
	name := ns.n.c.name
	for _, d := range ns.n.deps {
		up := r.nodes[d]
		if !up.status.done() {
			r.omit(ctx, ns, fmt.Sprintf("step %s %s", up.n.c.name, strings.ToLower(string(up.status))))
			return
		}
	}
	if r.stopped != "" {
		r.omit(ctx, ns, r.stopped)
		return
	}
	if w := ns.n.c.when; w != "" {
		text, err := r.resolve(ns, nil, w)
		var ok bool
		if err == nil {
			ok, err = evalWhen(text)
		}
		if err != nil {
			r.fail(ctx, ns, err)
			return
		}
		if !ok {
			ns.status, ns.reason = PhaseSkipped, "when "+text+" is false"
			r.emit(Event{Type: EventSkipped, Step: name, Index: -1, Reason: ns.reason})
			r.finishNode(ctx, ns)
			return
		}
	}
	c := ns.n.c
	switch {
	case c.itemsSet:
		ns.fanned = true
		for _, it := range c.items {
			raw, _ := json.Marshal(it) // a string always marshals
			ns.items = append(ns.items, raw)
		}
	case c.itemsFrom != "":
		ns.fanned = true
		text, err := r.resolve(ns, nil, c.itemsFrom)
		if err == nil {
			err = json.Unmarshal([]byte(text), &ns.items)
			if err != nil {
				err = fmt.Errorf("ForEachIn: %q is not a JSON list: %w", text, err)
			}
		}
		if err != nil {
			r.fail(ctx, ns, err)
			return
		}
	}
	if c.maxParSet {
		ns.limit = c.maxPar
	}
	if !ns.fanned {
		ns.insts = []*instance{{index: -1}}
		r.ready = append(r.ready, ns)
		return
	}
	if len(ns.items) == 0 {
		ns.status, ns.reason = PhaseSucceeded, "no items"
		ns.outputs = map[string]string{}
		for _, o := range c.outputs {
			ns.outputs[o] = "[]"
		}
		r.emit(Event{Type: EventSucceeded, Step: name, Index: -1, Reason: ns.reason})
		r.finishNode(ctx, ns)
		return
	}
	for i, raw := range ns.items {
		ns.insts = append(ns.insts, &instance{index: i, item: itemText(raw)})
	}
	r.ready = append(r.ready, ns)
}

// itemText is how an item reads through {{item}}: strings bare, anything
// else as JSON.
func itemText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func (r *run) omit(ctx context.Context, ns *nodeState, reason string) {
	ns.status, ns.reason = PhaseOmitted, reason
	r.emit(Event{Type: EventSkipped, Step: ns.n.c.name, Index: -1, Reason: reason})
	r.finishNode(ctx, ns)
}

func (r *run) fail(ctx context.Context, ns *nodeState, err error) {
	ns.status, ns.err, ns.reason = PhaseFailed, err, err.Error()
	r.emit(Event{Type: EventFailed, Step: ns.n.c.name, Index: -1, Err: err})
	r.finishNode(ctx, ns)
}

func (r *run) checkNode(ctx context.Context, ns *nodeState) {
	if ns.finished < len(ns.insts) || ns.status != "" {
		return
	}
	r.conclude(ns)
	r.finishNode(ctx, ns)
}

// conclude sets a node's status and outputs from its instances.
func (r *run) conclude(ns *nodeState) {
	allCached := true
	started := false
	for _, in := range ns.insts {
		switch in.status {
		case PhaseFailed:
			ns.status, ns.err, ns.reason = PhaseFailed, in.err, in.err.Error()
		case "":
			if ns.status == "" {
				ns.status, ns.reason = PhaseOmitted, r.stopped
			}
			allCached = false
			continue
		}
		started = true
		if in.status != PhaseCached {
			allCached = false
		}
	}
	if ns.status == PhaseOmitted && !started {
		return
	}
	if ns.status == "" {
		ns.status = PhaseSucceeded
		if allCached {
			ns.status = PhaseCached
		}
	}
	if !ns.status.done() {
		return
	}
	ns.outputs = map[string]string{}
	for _, o := range ns.n.c.outputs {
		if !ns.fanned {
			ns.outputs[o] = ns.insts[0].outputs[o]
			continue
		}
		vals := make([]string, len(ns.insts))
		for i, in := range ns.insts {
			vals[i] = in.outputs[o]
		}
		b, _ := json.Marshal(vals) // strings always marshal
		ns.outputs[o] = string(b)
	}
}

// finishNode records a finished node and activates the steps waiting on it.
func (r *run) finishNode(ctx context.Context, ns *nodeState) {
	ns.end = time.Now()
	ns.key = nodeKey(ns)
	if ns.status == PhaseFailed && r.stopped == "" {
		// Argo's DAGs fail fast: no new step starts after a failure.
		r.stopped = "step " + ns.n.c.name + " failed"
	}
	if ns.n.exit {
		return
	}
	for _, d := range ns.n.down {
		down := r.nodes[d]
		down.waiting--
		if down.waiting == 0 {
			r.activate(ctx, down)
		}
	}
}

// settle gives a status to a step the run never finished.
func (r *run) settle(ns *nodeState) {
	if ns.status != "" {
		return
	}
	if len(ns.insts) > 0 {
		r.conclude(ns)
	}
	if ns.status == "" || (ns.status == PhaseOmitted && ns.reason == "") {
		reason := r.stopped
		if reason == "" {
			reason = "not started"
		}
		ns.status, ns.reason = PhaseOmitted, reason
	}
	if ns.end.IsZero() {
		ns.end = time.Now()
	}
}

// taskSpec is one instance made ready to execute.
type taskSpec struct {
	ns      *nodeState
	inst    *instance
	dir     string
	argv    []string
	env     []string
	fn      StepFunc
	task    *Task
	key     string
	inputs  map[string]string // file name → value, written to inputs/
	outputs []string          // read from the outputs directory
	// fixed are outputs known before the step runs: a workload step's,
	// read from its job with OutputFrom's JSONPath.
	fixed map[string]string
}

// resolve replaces the placeholders of s with this run's values.
func (r *run) resolve(ns *nodeState, inst *instance, s string) (string, error) {
	var errs []error
	out := substitute(s, func(ref ref) string {
		switch ref.kind {
		case refParam:
			return r.params[ref.name]
		case refOutput:
			up := r.nodes[r.g.byName[ref.step].index]
			if up.status == PhaseSkipped {
				errs = append(errs, fmt.Errorf("step %s was skipped, so its output %s does not exist", ref.step, ref.name))
				return ""
			}
			return up.outputs[ref.name]
		case refOutputPath:
			return filepath.Join(r.instanceDir(ns, inst), "outputs", ref.name)
		case refItem:
			if inst == nil || inst.index < 0 {
				return ""
			}
			if ref.name == "" {
				return inst.item
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(ns.items[inst.index], &obj); err != nil {
				errs = append(errs, fmt.Errorf("item %s is not a JSON object, so it has no field %s", inst.item, ref.name))
				return ""
			}
			v, ok := obj[ref.name]
			if !ok {
				errs = append(errs, fmt.Errorf("item %s has no field %s", inst.item, ref.name))
				return ""
			}
			return itemText(v)
		case refWorkspace:
			return r.workspace
		case refPipelineName:
			return podspec.Of(&r.g.p.Handle).Name()
		case refPipelineStatus:
			return r.status
		}
		return ""
	})
	return out, errors.Join(errs...)
}

func (r *run) instanceDir(ns *nodeState, inst *instance) string {
	d := filepath.Join(r.dir, "steps", ns.n.c.name)
	if inst != nil && inst.index >= 0 {
		d = filepath.Join(d, strconv.Itoa(inst.index))
	}
	return d
}

// prepare resolves an instance's strings and computes its cache key.
func (r *run) prepare(ns *nodeState, inst *instance) (*taskSpec, error) {
	n := ns.n
	spec := &taskSpec{ns: ns, inst: inst, dir: r.instanceDir(ns, inst), outputs: n.c.outputs, inputs: map[string]string{}}
	var errs []error
	res := func(s string) string {
		v, err := r.resolve(ns, inst, s)
		if err != nil {
			errs = append(errs, err)
		}
		return v
	}
	h := sha256.New()
	write := func(parts ...string) {
		for _, p := range parts {
			h.Write([]byte(strconv.Itoa(len(p))))
			h.Write([]byte{':'})
			h.Write([]byte(p))
		}
	}
	write("v2", n.typ.String(), n.c.name, inst.item)
	write(n.c.outputs...)
	if ws, ok := n.step.(*WorkloadStep); ok {
		for _, o := range n.c.outputs {
			write(ws.jsonPaths[o])
		}
	}
	// A step can read whatever the steps before it left in the workspace,
	// not only the outputs it names, so their keys are part of its own: a
	// step that re-ran with other inputs re-runs every step after it. The
	// exit handler comes after every step.
	upstream := n.deps
	if n.exit {
		upstream = r.g.order
	}
	for _, d := range upstream {
		write(r.nodes[d].key)
	}
	for _, t := range n.texts() {
		write(t.path(n.path).String(), res(t.value))
	}
	for _, in := range n.inputs {
		spec.inputs[inputName(in)] = res("{{" + refString(in) + "}}")
	}
	for _, pn := range n.params {
		spec.inputs["param_"+pn] = r.params[pn]
	}
	outDir := filepath.Join(spec.dir, "outputs")
	env := []string{EnvOutputs + "=" + outDir, EnvWorkspace + "=" + r.workspace, "CUBE_INPUTS=" + filepath.Join(spec.dir, "inputs")}
	if fn := r.o.replace[n.c.name]; fn != nil {
		write("replaced")
		spec.fn = fn
	} else {
		switch s := n.step.(type) {
		case *FuncStep:
			spec.fn = s.fn
		case *ContainerStep:
			cmd, args := podspec.Of(&s.Handle).CommandLine()
			for _, a := range append(cmd, args...) {
				spec.argv = append(spec.argv, res(a))
			}
			spec.env = append(env, envPairs(podspec.Of(&s.Handle).EnvVars(), res)...)
		case *WorkloadStep:
			argv, cenv := localCommand(n.primary)
			for _, a := range argv {
				spec.argv = append(spec.argv, res(a))
			}
			spec.env = append(env, envPairs(cenv, res)...)
			spec.outputs, spec.fixed = nil, map[string]string{}
			for _, o := range n.c.outputs {
				v, err := readJSONPath(n.primary.Object, s.jsonPaths[o])
				if err != nil {
					errs = append(errs, fmt.Errorf("output %s: %w", o, err))
				}
				spec.fixed[o] = res(v)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if spec.fn != nil {
		t := &Task{step: n.c.name, item: inst.item, index: inst.index, params: r.params, workspace: r.workspace, dir: spec.dir, declared: n.c.outputs}
		if fs, ok := n.step.(*FuncStep); ok && r.o.replace[n.c.name] == nil {
			t.inputs = map[string]string{}
			for _, in := range fs.inputs {
				t.inputs[in.name] = res(in.value)
			}
		}
		spec.task = t
	}
	spec.key = hex.EncodeToString(h.Sum(nil))
	inst.key = spec.key
	return spec, nil
}

// nodeKey hashes a finished step's status, reason and its instances' cache
// keys in item order. A step served from the cache counts as the run that
// filled the cache, so that the steps after it stay cached too.
func nodeKey(ns *nodeState) string {
	status := ns.status
	if status == PhaseCached {
		status = PhaseSucceeded
	}
	h := sha256.New()
	for _, p := range append([]string{ns.n.c.name, string(status), ns.reason}, instanceKeys(ns)...) {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func instanceKeys(ns *nodeState) []string {
	keys := make([]string, len(ns.insts))
	for i, in := range ns.insts {
		keys[i] = in.key
	}
	return keys
}

// readJSONPath evaluates a kubectl JSONPath template on a JSON-like
// object, as Argo's executor does on the job it created; a path to a field
// the object lacks reads as empty, as kubectl prints it.
func readJSONPath(obj map[string]any, path string) (string, error) {
	jp := jsonpath.New("output").AllowMissingKeys(true)
	if err := jp.Parse(path); err != nil {
		return "", err
	}
	var b strings.Builder
	if err := jp.Execute(&b, obj); err != nil {
		return "", err
	}
	return b.String(), nil
}

func refString(r ref) string {
	switch r.kind {
	case refOutput:
		return "steps." + r.step + ".outputs." + r.name
	case refItem:
		if r.name == "" {
			return "item"
		}
		return "item." + r.name
	}
	return ""
}

// envPairs turns a step's plain env values into KEY=VALUE pairs; values
// taken from Secrets, ConfigMaps or pod fields do not exist locally.
func envPairs(env []corev1.EnvVar, res func(string) string) []string {
	out := make([]string, 0, len(env))
	for _, e := range env {
		if e.ValueFrom == nil {
			out = append(out, e.Name+"="+res(e.Value))
		}
	}
	return out
}

// cacheEntry is what the cache keeps of a succeeded instance.
type cacheEntry struct {
	Key     string            `json:"key"`
	Step    string            `json:"step"`
	Outputs map[string]string `json:"outputs"`
}

// cache records the instances that succeeded in a run directory: one JSON
// line each in cache/index.jsonl, read once when a run starts and appended to
// as steps succeed. A torn last line (a crash mid-write) is ignored.
type cache struct {
	mu      sync.Mutex
	entries map[string]cacheEntry
	f       *os.File
}

func openCache(dir string) (*cache, error) {
	path := filepath.Join(dir, "cache", "index.jsonl")
	c := &cache{entries: map[string]cacheEntry{}}
	if b, err := os.ReadFile(path); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			var e cacheEntry
			if json.Unmarshal([]byte(line), &e) == nil && e.Key != "" {
				c.entries[e.Key] = e
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read cache: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open cache: %w", err)
	}
	c.f = f
	return c, nil
}

func (c *cache) get(key string) (cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	return e, ok
}

// put records an entry; losing one only costs a rerun, so errors are not
// reported.
func (c *cache) put(e cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[e.Key]; ok && old.Step == e.Step && maps.Equal(old.Outputs, e.Outputs) {
		return // already recorded: reruns do not grow the index
	}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	c.entries[e.Key] = e
	_, _ = c.f.Write(append(b, '\n'))
}

func (c *cache) close() error { return c.f.Close() }

// stepLog is a step's log file, created on the first write so that function
// steps that log nothing cost no file.
type stepLog struct {
	path string
	mu   sync.Mutex
	f    *os.File
	err  error
}

func (l *stepLog) open() (*os.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && l.err == nil {
		l.f, l.err = os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	}
	return l.f, l.err
}

func (l *stepLog) Write(p []byte) (int, error) {
	f, err := l.open()
	if err != nil {
		return 0, err
	}
	return f.Write(p)
}

func (l *stepLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}

// execute runs one instance with its retries.
func (r *run) execute(ctx context.Context, spec *taskSpec) {
	inst, name := spec.inst, spec.ns.n.c.name
	inst.log = filepath.Join(spec.dir, "log")
	inst.start = time.Now()
	defer func() { inst.duration = time.Since(inst.start) }()
	if !r.o.noCache {
		if e, ok := r.cache.get(spec.key); ok && e.Step == name {
			inst.status, inst.outputs = PhaseCached, e.Outputs
			r.emit(Event{Type: EventSkipped, Step: name, Index: inst.index, Item: inst.item, Reason: "cached"})
			return
		}
	}
	retry := Retry{}
	if rp := spec.ns.n.c.retry; rp != nil {
		retry = *rp
	}
	for {
		inst.attempts++
		r.emit(Event{Type: EventStarted, Step: name, Index: inst.index, Item: inst.item, Attempt: inst.attempts, Log: inst.log})
		began := time.Now()
		outputs, err := r.attempt(ctx, spec)
		if err == nil {
			inst.status, inst.outputs = PhaseSucceeded, outputs
			r.cache.put(cacheEntry{Key: spec.key, Step: name, Outputs: outputs})
			r.emit(Event{Type: EventSucceeded, Step: name, Index: inst.index, Item: inst.item, Attempt: inst.attempts, Duration: time.Since(began), Log: inst.log})
			return
		}
		if delay, ok := r.retryAfter(ctx, retry, inst, err); ok {
			r.emit(Event{Type: EventRetried, Step: name, Index: inst.index, Item: inst.item, Attempt: inst.attempts, Err: err, Duration: delay, Log: inst.log})
			t := time.NewTimer(delay)
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				err = errors.Join(err, ctx.Err())
			}
		}
		inst.status, inst.err = PhaseFailed, &StepError{Step: name, Item: inst.index, Log: inst.log, Err: err}
		r.emit(Event{Type: EventFailed, Step: name, Index: inst.index, Item: inst.item, Attempt: inst.attempts, Err: err, Duration: time.Since(began), Log: inst.log})
		return
	}
}

// retryAfter says whether a failed attempt is retried, and after how long.
func (r *run) retryAfter(ctx context.Context, retry Retry, inst *instance, err error) (time.Duration, bool) {
	if ctx.Err() != nil || inst.attempts > retry.Limit {
		return 0, false
	}
	var se *startError
	isError := errors.As(err, &se)
	switch retry.Policy {
	case RetryOnError, RetryOnTransientError:
		if !isError {
			return 0, false
		}
	case RetryAlways:
	default:
		if isError {
			return 0, false
		}
	}
	delay := retry.delay(inst.attempts)
	if retry.MaxDuration > 0 && time.Since(inst.start)+delay > retry.MaxDuration {
		return 0, false
	}
	return delay, true
}

// startError is a step that could not start: Argo calls it an error, not a
// failure, for retry policies.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// attempt runs an instance once and reads its outputs.
func (r *run) attempt(ctx context.Context, spec *taskSpec) (map[string]string, error) {
	outDir := filepath.Join(spec.dir, "outputs")
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, &startError{fmt.Errorf("create step directory: %w", err)}
	}
	for _, o := range spec.outputs { // an earlier attempt's or run's value must not count
		if err := os.Remove(filepath.Join(outDir, o)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, &startError{fmt.Errorf("clear output %s: %w", o, err)}
		}
	}
	if len(spec.inputs) > 0 {
		inDir := filepath.Join(spec.dir, "inputs")
		if err := os.MkdirAll(inDir, 0o755); err != nil {
			return nil, &startError{fmt.Errorf("create inputs: %w", err)}
		}
		for name, v := range spec.inputs {
			if err := os.WriteFile(filepath.Join(inDir, name), []byte(v), 0o644); err != nil {
				return nil, &startError{fmt.Errorf("write input %s: %w", name, err)}
			}
		}
	}
	log := &stepLog{path: filepath.Join(spec.dir, "log")}
	defer log.close()
	if spec.inst.attempts > 1 {
		fmt.Fprintf(log, "--- attempt %d ---\n", spec.inst.attempts)
	}
	actx, cancel := ctx, context.CancelFunc(func() {})
	if c := spec.ns.n.c; c.timeoutSet {
		actx, cancel = context.WithTimeoutCause(ctx, c.timeout, fmt.Errorf("timed out after %s", c.timeout))
	}
	defer cancel()
	var err error
	if spec.fn != nil {
		t := *spec.task
		t.attempt, t.log = spec.inst.attempts, log
		err = callFunc(actx, spec.fn, &t)
	} else {
		var f *os.File
		if f, err = log.open(); err != nil {
			return nil, &startError{fmt.Errorf("open log: %w", err)}
		}
		err = runProcess(actx, spec.argv, append(os.Environ(), spec.env...), f)
	}
	if err != nil {
		if cause := context.Cause(actx); cause != nil && ctx.Err() == nil {
			return nil, cause // the step's own timeout, not the run's end
		}
		return nil, err
	}
	outputs := make(map[string]string, len(spec.outputs)+len(spec.fixed))
	maps.Copy(outputs, spec.fixed)
	for _, o := range spec.outputs {
		b, err := os.ReadFile(filepath.Join(outDir, o))
		if err != nil {
			return nil, fmt.Errorf("output %s was not written to %s", o, filepath.Join(outDir, o))
		}
		outputs[o] = strings.TrimSuffix(string(b), "\n")
	}
	return outputs, nil
}

func callFunc(ctx context.Context, fn StepFunc, t *Task) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn(ctx, t)
}

// result builds the Result and the run's error.
func (r *run) result(ctx context.Context, began time.Time) (*Result, error) {
	res := &Result{Pipeline: podspec.Of(&r.g.p.Handle).Name(), Dir: r.dir, Phase: PhaseSucceeded, Duration: time.Since(began), g: r.g}
	var errs []error
	for _, ns := range r.nodes {
		sr := StepResult{Name: ns.n.c.name, Phase: ns.status, Reason: ns.reason, Outputs: ns.outputs, Err: ns.err}
		if !ns.start.IsZero() {
			sr.Duration = ns.end.Sub(ns.start)
		}
		for _, in := range ns.insts {
			sr.Attempts += in.attempts
			if in.status == PhaseFailed {
				errs = append(errs, in.err)
			}
			if !ns.fanned {
				sr.Log, sr.Duration = in.log, in.duration
				if in.err != nil {
					sr.Err = in.err
				}
				continue
			}
			st := in.status
			if st == "" {
				st = PhaseOmitted
			}
			sr.Items = append(sr.Items, ItemResult{Item: in.item, Phase: st, Attempts: in.attempts, Duration: in.duration, Outputs: in.outputs, Err: in.err, Log: in.log})
		}
		if ns.status == PhaseFailed {
			res.Phase = PhaseFailed
			if len(ns.insts) == 0 { // failed before any item started (When, ForEachIn)
				errs = append(errs, &StepError{Step: ns.n.c.name, Item: -1, Err: ns.err})
			}
		}
		res.Steps = append(res.Steps, sr)
	}
	if ctx.Err() != nil {
		res.Phase = PhaseFailed
		errs = append(errs, ctx.Err())
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("run %s: %w", podspec.Of(&r.g.p.Handle).Name(), errors.Join(errs...))
	}
	return res, nil
}
