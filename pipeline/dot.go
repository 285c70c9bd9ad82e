package pipeline

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/cubestudio/cube/internal/podspec"
)

// DOT returns the pipeline's DAG in Graphviz DOT: one box per step labelled
// with its name and kind (fan-out and condition noted), an edge from each
// step to the steps that wait for it, and the exit handler dashed. It draws
// pipelines that do not validate too, as far as they can be understood.
func (p *Pipeline) DOT() string {
	if p == nil {
		p = &Pipeline{}
	}
	g, _ := p.analyze()
	return g.dot(nil)
}

// Mermaid returns the pipeline's DAG as a Mermaid flowchart.
func (p *Pipeline) Mermaid() string {
	if p == nil {
		p = &Pipeline{}
	}
	g, _ := p.analyze()
	return g.mermaid(nil)
}

// DOT returns the run's DAG in Graphviz DOT, each step filled with the
// colour of its status.
func (r *Result) DOT() string { return r.g.dot(r.statuses()) }

// Mermaid returns the run's DAG as a Mermaid flowchart, each step styled by
// its status.
func (r *Result) Mermaid() string { return r.g.mermaid(r.statuses()) }

func (r *Result) statuses() map[string]Phase {
	out := make(map[string]Phase, len(r.Steps))
	for _, s := range r.Steps {
		out[s.Name] = s.Phase
	}
	return out
}

// statusColors are the fill and border colours of each status.
var statusColors = map[Phase][2]string{
	PhaseSucceeded: {"#c8e6c9", "#2e7d32"},
	PhaseCached:    {"#bbdefb", "#1565c0"},
	PhaseFailed:    {"#ffcdd2", "#c62828"},
	PhaseSkipped:   {"#eeeeee", "#757575"},
	PhaseOmitted:   {"#fff9c4", "#9e9d24"},
}

func (g *graph) drawn() []*node {
	all := g.nodes
	if g.exit != nil {
		all = append(all[:len(all):len(all)], g.exit)
	}
	return all
}

func (n *node) caption() string {
	parts := []string{n.typ.String()}
	switch {
	case n.c.itemsSet:
		parts = append(parts, fmt.Sprintf("× %d items", len(n.c.items)))
	case n.c.itemsFrom != "":
		parts = append(parts, "× each item")
	}
	if n.c.when != "" {
		parts = append(parts, "when")
	}
	if n.exit {
		parts = append(parts, "on exit")
	}
	return strings.Join(parts, ", ")
}

func (g *graph) dot(status map[string]Phase) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", strconv.Quote(podspec.Of(&g.p.Handle).Name()))
	b.WriteString("  rankdir=LR;\n  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\"];\n")
	for _, n := range g.drawn() {
		label := n.c.name + "\n" + n.caption()
		attrs := []string{"label=" + strconv.Quote(label)}
		if st, ok := status[n.c.name]; ok {
			attrs[0] = "label=" + strconv.Quote(label+"\n"+string(st))
			if col, ok := statusColors[st]; ok {
				attrs = append(attrs, "fillcolor="+strconv.Quote(col[0]), "color="+strconv.Quote(col[1]))
			}
		}
		if n.exit {
			attrs = append(attrs, "style=\"rounded,filled,dashed\"")
		}
		fmt.Fprintf(&b, "  %s [%s];\n", strconv.Quote(n.c.name), strings.Join(attrs, ", "))
	}
	for _, n := range g.nodes {
		for _, d := range n.down {
			fmt.Fprintf(&b, "  %s -> %s;\n", strconv.Quote(n.c.name), strconv.Quote(g.nodes[d].c.name))
		}
	}
	b.WriteString("}\n")
	return b.String()
}

func (g *graph) mermaid(status map[string]Phase) string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	id := func(n *node) string { return "s" + strconv.Itoa(n.index) }
	for _, n := range g.drawn() {
		label := n.c.name + "<br/>" + n.caption()
		if st, ok := status[n.c.name]; ok {
			label += "<br/>" + string(st)
		}
		label = strings.ReplaceAll(label, `"`, "#quot;")
		if n.exit {
			fmt.Fprintf(&b, "  %s([\"%s\"])\n", id(n), label)
		} else {
			fmt.Fprintf(&b, "  %s[\"%s\"]\n", id(n), label)
		}
	}
	for _, n := range g.nodes {
		for _, d := range n.down {
			fmt.Fprintf(&b, "  %s --> %s\n", id(n), id(g.nodes[d]))
		}
	}
	if status != nil {
		for _, st := range []Phase{PhaseSucceeded, PhaseCached, PhaseFailed, PhaseSkipped, PhaseOmitted} {
			var ids []string
			for _, n := range g.drawn() {
				if status[n.c.name] == st {
					ids = append(ids, id(n))
				}
			}
			if len(ids) == 0 {
				continue
			}
			col := statusColors[st]
			cls := strings.ToLower(string(st))
			fmt.Fprintf(&b, "  classDef %s fill:%s,stroke:%s\n", cls, col[0], col[1])
			fmt.Fprintf(&b, "  class %s %s\n", strings.Join(ids, ","), cls)
		}
	}
	return b.String()
}
