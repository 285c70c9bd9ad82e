package pipeline

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

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
		up, ok := g.byName[a.name()]
		if !ok {
			errs = append(errs, field.NotFound(n.path.Child("after").Index(j), a.name()))
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
