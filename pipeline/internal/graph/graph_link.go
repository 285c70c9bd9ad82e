package graph

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// link resolves a step's dependencies and references.
func (g *Graph) link(n *Node) field.ErrorList {
	var errs field.ErrorList
	c := n.C
	deps := map[int]bool{}
	for j, a := range c.After {
		if a == nil {
			errs = append(errs, field.Required(n.Path.Child("after").Index(j), "dependency is nil"))
			continue
		}
		up, ok := g.ByName[a.Name]
		if !ok {
			errs = append(errs, field.NotFound(n.Path.Child("after").Index(j), a.Name))
			continue
		}
		deps[up.Index] = true
	}
	fanned := c.ItemsSet || c.ItemsFrom != ""
	inputSeen := map[string]bool{}
	paramSeen := map[string]bool{}
	check := func(where func() *field.Path, s string, taskLevel bool) {
		refs, perrs := ScanRefs(s)
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
			switch r.Kind {
			case RefParam:
				if _, ok := g.Params[r.Name]; !ok {
					errs = append(errs, field.Invalid(at(), s, fmt.Sprintf("parameter %q is not declared: call Param(%q, default)", r.Name, r.Name)))
					continue
				}
				if !paramSeen[r.Name] {
					paramSeen[r.Name] = true
					n.Params = append(n.Params, r.Name)
				}
			case RefOutput:
				up, ok := g.ByName[r.Step]
				switch {
				case n.Exit:
					errs = append(errs, field.Invalid(at(), s, "the exit handler cannot read the outputs of steps"))
					continue
				case !ok:
					errs = append(errs, field.Invalid(at(), s, fmt.Sprintf("refers to step %q, which is not in the pipeline", r.Step)))
					continue
				case up == n:
					errs = append(errs, field.Invalid(at(), s, "refers to the step's own output: use OutputFile to name the file it writes"))
					continue
				}
				deps[up.Index] = true // even for a missing output: the step is meant to wait
				if !slices.Contains(up.C.Outputs, r.Name) {
					errs = append(errs, field.Invalid(at(), s, fmt.Sprintf("step %q has no output %q (declared: %s)", r.Step, r.Name, declared(up.C.Outputs))))
					continue
				}
				if name := InputName(r); !taskLevel && !inputSeen[name] {
					inputSeen[name] = true
					n.Inputs = append(n.Inputs, r)
				}
			case RefOutputPath:
				if taskLevel || n.Type != Container {
					errs = append(errs, field.Invalid(at(), s, "an output file belongs in a container step's command, args or env"))
				} else if !slices.Contains(c.Outputs, r.Name) {
					errs = append(errs, field.Invalid(at(), s, fmt.Sprintf("output %q is not declared: call Outputs(%q)", r.Name, r.Name)))
				}
			case RefItem:
				switch {
				case !fanned:
					errs = append(errs, field.Invalid(at(), s, "only a step with ForEach or ForEachIn has an item"))
				case taskLevel:
					errs = append(errs, field.Invalid(at(), s, "the item is known only inside the step"))
				case !inputSeen[InputName(r)]: // a constant for items
					inputSeen[InputName(r)] = true
					n.Inputs = append(n.Inputs, r)
				}
			case RefWorkspace:
				switch {
				case g.P.Workspace == nil:
					errs = append(errs, field.Invalid(at(), s, "the pipeline has no workspace: call Workspace"))
				case taskLevel:
					errs = append(errs, field.Invalid(at(), s, "the workspace is known only inside the step"))
				case n.Type == Serve:
					errs = append(errs, field.Invalid(at(), s, "a serving step outlives the run, and the workspace is deleted with the run"))
				default:
					n.UsesWorkspace = true
				}
			case RefPipelineStatus:
				if !n.Exit {
					errs = append(errs, field.Invalid(at(), s, "the pipeline status is known only in the exit handler"))
				}
			}
		}
	}
	for _, t := range n.Texts {
		check(func() *field.Path { return t.At(n.Path) }, t.Value, false)
	}
	if c.When != "" {
		wp := n.Path.Child("when")
		check(func() *field.Path { return wp }, c.When, true)
		if _, err := parseWhen(Substitute(c.When, func(Ref) string { return "x" })); err != nil {
			errs = append(errs, field.Invalid(wp, c.When, err.Error()))
		}
	}
	if c.ItemsFrom != "" {
		fp := n.Path.Child("forEachIn")
		check(func() *field.Path { return fp }, c.ItemsFrom, true)
		if r, ok := SoleRef(c.ItemsFrom); !ok || (r.Kind != RefParam && r.Kind != RefOutput) {
			errs = append(errs, field.Invalid(fp, c.ItemsFrom, "must be one ParamRef or step Output holding a JSON list"))
		}
	}
	n.Deps = make([]int, 0, len(deps))
	for d := range deps {
		n.Deps = append(n.Deps, d)
	}
	slices.Sort(n.Deps)
	if !n.Exit {
		for _, d := range n.Deps {
			g.Nodes[d].Down = append(g.Nodes[d].Down, n.Index)
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
func (g *Graph) sort() field.ErrorList {
	for _, n := range g.Nodes {
		slices.Sort(n.Down)
		n.Down = slices.Compact(n.Down)
	}
	indeg := make([]int, len(g.Nodes))
	for _, n := range g.Nodes {
		indeg[n.Index] = len(n.Deps)
	}
	ready := make([]int, 0, len(g.Nodes))
	for i, d := range indeg {
		if d == 0 {
			ready = append(ready, i)
		}
	}
	order := make([]int, 0, len(g.Nodes))
	for len(ready) > 0 {
		i := ready[0]
		ready = ready[1:]
		order = append(order, i)
		for _, d := range g.Nodes[i].Down {
			indeg[d]--
			if indeg[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	g.Order = order
	if len(order) == len(g.Nodes) {
		return nil
	}
	g.Cyclic = true
	var errs field.ErrorList
	for _, cycle := range g.cycles() {
		names := make([]string, len(cycle))
		for i, idx := range cycle {
			names[i] = g.Nodes[idx].C.Name
		}
		errs = append(errs, field.Invalid(field.NewPath("steps"), strings.Join(names, " → "), "dependency cycle"))
	}
	return errs
}

// cycles returns one cycle per strongly connected component that has one,
// each starting and ending at its first step in pipeline order, with edges
// pointing from a step to the steps that wait for it.
func (g *Graph) cycles() [][]int {
	n := len(g.Nodes)
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
			down := g.Nodes[f.v].Down
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
		if len(comp) == 1 && !slices.Contains(g.Nodes[start].Down, start) {
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
func (g *Graph) pathBack(start int, in map[int]bool) []int {
	prev := map[int]int{}
	queue := []int{start}
	seen := map[int]bool{start: true}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range g.Nodes[v].Down {
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
