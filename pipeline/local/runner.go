package local

import (
	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/pipeline/internal/graph"

	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// run is one local execution.
type run struct {
	g         *graph.Graph
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
	n         *graph.Node
	status    cube.Phase // "" while pending or running
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
	status   cube.Phase
	attempts int
	start    time.Time
	duration time.Duration
	outputs  map[string]string
	err      error
	log      string
}

type instanceDone struct{ ns *nodeState }

func newRun(g *graph.Graph, o runOptions) (*run, error) {
	dir := o.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "cube-pipeline-"+g.P.Name+"-")
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
	for _, pr := range g.P.Params {
		v := pr.Value
		if ov, ok := o.params[pr.Name]; ok {
			v = ov
		}
		r.params[pr.Name] = v
		if err := os.WriteFile(filepath.Join(dir, "params", pr.Name), []byte(v), 0o644); err != nil {
			return nil, fmt.Errorf("write parameter %s: %w", pr.Name, err)
		}
	}
	if r.cache, err = openCache(dir); err != nil {
		return nil, err
	}
	r.limit = o.parallelism
	if g.P.ParallelismSet && g.P.Parallelism < r.limit {
		r.limit = g.P.Parallelism
	}
	r.handlers = slices.Clone(o.handlers)
	if o.progress != nil {
		r.handlers = append(r.handlers, NewPrinter(o.progress).Handle)
	}
	for _, n := range g.Nodes {
		r.nodes = append(r.nodes, &nodeState{n: n, waiting: len(n.Deps)})
	}
	if g.Exit != nil {
		r.nodes = append(r.nodes, &nodeState{n: g.Exit})
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
	if r.g.Exit != nil {
		steps = r.nodes[:len(r.nodes)-1]
	}
	for _, ns := range steps {
		if ns.waiting == 0 {
			r.activate(ctx, ns)
		}
	}
	r.loop(ctx)
	for _, i := range r.g.Order {
		r.settle(steps[i])
	}
	for _, ns := range steps { // steps in a cycle have no order; analyze rejected them
		r.settle(ns)
	}
	failed := slices.ContainsFunc(steps, func(ns *nodeState) bool { return ns.status == cube.Failed })
	r.status = string(cube.Succeeded)
	if failed {
		r.status = string(cube.Failed)
	}
	if r.g.Exit != nil {
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
					inst.status, inst.err = cube.Failed, &StepError{Step: ns.n.C.Name, Item: inst.index, Err: err}
					r.emit(Event{Type: EventFailed, Step: ns.n.C.Name, Index: inst.index, Item: inst.item, Err: err})
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
	name := ns.n.C.Name
	for _, d := range ns.n.Deps {
		up := r.nodes[d]
		if !done(up.status) {
			r.omit(ctx, ns, fmt.Sprintf("step %s %s", up.n.C.Name, strings.ToLower(string(up.status))))
			return
		}
	}
	if r.stopped != "" {
		r.omit(ctx, ns, r.stopped)
		return
	}
	if w := ns.n.C.When; w != "" {
		text, err := r.resolve(ns, nil, w)
		var ok bool
		if err == nil {
			ok, err = graph.EvalWhen(text)
		}
		if err != nil {
			r.fail(ctx, ns, err)
			return
		}
		if !ok {
			ns.status, ns.reason = Skipped, "when "+text+" is false"
			r.emit(Event{Type: EventSkipped, Step: name, Index: -1, Reason: ns.reason})
			r.finishNode(ctx, ns)
			return
		}
	}
	c := ns.n.C
	switch {
	case c.ItemsSet:
		ns.fanned = true
		for _, it := range c.Items {
			raw, _ := json.Marshal(it) // a string always marshals
			ns.items = append(ns.items, raw)
		}
	case c.ItemsFrom != "":
		ns.fanned = true
		text, err := r.resolve(ns, nil, c.ItemsFrom)
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
	if c.MaxParSet {
		ns.limit = c.MaxPar
	}
	if !ns.fanned {
		ns.insts = []*instance{{index: -1}}
		r.ready = append(r.ready, ns)
		return
	}
	if len(ns.items) == 0 {
		ns.status, ns.reason = cube.Succeeded, "no items"
		ns.outputs = map[string]string{}
		for _, o := range c.Outputs {
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
	ns.status, ns.reason = Omitted, reason
	r.emit(Event{Type: EventSkipped, Step: ns.n.C.Name, Index: -1, Reason: reason})
	r.finishNode(ctx, ns)
}

func (r *run) fail(ctx context.Context, ns *nodeState, err error) {
	ns.status, ns.err, ns.reason = cube.Failed, err, err.Error()
	r.emit(Event{Type: EventFailed, Step: ns.n.C.Name, Index: -1, Err: err})
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
		case cube.Failed:
			ns.status, ns.err, ns.reason = cube.Failed, in.err, in.err.Error()
		case "":
			if ns.status == "" {
				ns.status, ns.reason = Omitted, r.stopped
			}
			allCached = false
			continue
		}
		started = true
		if in.status != Cached {
			allCached = false
		}
	}
	if ns.status == Omitted && !started {
		return
	}
	if ns.status == "" {
		ns.status = cube.Succeeded
		if allCached {
			ns.status = Cached
		}
	}
	if !done(ns.status) {
		return
	}
	ns.outputs = map[string]string{}
	for _, o := range ns.n.C.Outputs {
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
	if ns.status == cube.Failed && r.stopped == "" {
		// Argo's DAGs fail fast: no new step starts after a failure.
		r.stopped = "step " + ns.n.C.Name + " failed"
	}
	if ns.n.Exit {
		return
	}
	for _, d := range ns.n.Down {
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
	if ns.status == "" || (ns.status == Omitted && ns.reason == "") {
		reason := r.stopped
		if reason == "" {
			reason = "not started"
		}
		ns.status, ns.reason = Omitted, reason
	}
	if ns.end.IsZero() {
		ns.end = time.Now()
	}
}
