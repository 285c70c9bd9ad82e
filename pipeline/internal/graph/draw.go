package graph

import (
	"github.com/cubestudio/cube"

	"fmt"
	"strconv"
	"strings"
)

// The outcomes of a step in a local run that cube.Phase has no word for
// (pipeline/local exports them).
const (
	Skipped cube.Phase = "Skipped"
	Cached  cube.Phase = "Cached"
	Omitted cube.Phase = "Omitted"
)

// statusColors are the fill and border colours of each status.
var statusColors = map[cube.Phase][2]string{
	cube.Succeeded: {"#c8e6c9", "#2e7d32"},
	Cached:         {"#bbdefb", "#1565c0"},
	cube.Failed:    {"#ffcdd2", "#c62828"},
	Skipped:        {"#eeeeee", "#757575"},
	Omitted:        {"#fff9c4", "#9e9d24"},
}

func (g *Graph) drawn() []*Node {
	all := g.Nodes
	if g.Exit != nil {
		all = append(all[:len(all):len(all)], g.Exit)
	}
	return all
}

func (n *Node) caption() string {
	parts := []string{n.Type.String()}
	switch {
	case n.C.ItemsSet:
		parts = append(parts, fmt.Sprintf("× %d items", len(n.C.Items)))
	case n.C.ItemsFrom != "":
		parts = append(parts, "× each item")
	}
	if n.C.When != "" {
		parts = append(parts, "when")
	}
	if n.Exit {
		parts = append(parts, "on exit")
	}
	return strings.Join(parts, ", ")
}

// DOT draws the graph in Graphviz DOT, each step coloured by its status
// in status (nil for none).
func (g *Graph) DOT(status map[string]cube.Phase) string {
	var b strings.Builder
	fmt.Fprintf(&b, "digraph %s {\n", strconv.Quote(g.P.Name))
	b.WriteString("  rankdir=LR;\n  node [shape=box, style=\"rounded,filled\", fillcolor=white, fontname=\"Helvetica\"];\n")
	for _, n := range g.drawn() {
		label := n.C.Name + "\n" + n.caption()
		attrs := []string{"label=" + strconv.Quote(label)}
		if st, ok := status[n.C.Name]; ok {
			attrs[0] = "label=" + strconv.Quote(label+"\n"+string(st))
			if col, ok := statusColors[st]; ok {
				attrs = append(attrs, "fillcolor="+strconv.Quote(col[0]), "color="+strconv.Quote(col[1]))
			}
		}
		if n.Exit {
			attrs = append(attrs, "style=\"rounded,filled,dashed\"")
		}
		fmt.Fprintf(&b, "  %s [%s];\n", strconv.Quote(n.C.Name), strings.Join(attrs, ", "))
	}
	for _, n := range g.Nodes {
		for _, d := range n.Down {
			fmt.Fprintf(&b, "  %s -> %s;\n", strconv.Quote(n.C.Name), strconv.Quote(g.Nodes[d].C.Name))
		}
	}
	b.WriteString("}\n")
	return b.String()
}

// Mermaid draws the graph as a Mermaid flowchart, each step styled by its
// status in status (nil for none).
func (g *Graph) Mermaid(status map[string]cube.Phase) string {
	var b strings.Builder
	b.WriteString("flowchart LR\n")
	id := func(n *Node) string { return "s" + strconv.Itoa(n.Index) }
	for _, n := range g.drawn() {
		label := n.C.Name + "<br/>" + n.caption()
		if st, ok := status[n.C.Name]; ok {
			label += "<br/>" + string(st)
		}
		label = strings.ReplaceAll(label, `"`, "#quot;")
		if n.Exit {
			fmt.Fprintf(&b, "  %s([\"%s\"])\n", id(n), label)
		} else {
			fmt.Fprintf(&b, "  %s[\"%s\"]\n", id(n), label)
		}
	}
	for _, n := range g.Nodes {
		for _, d := range n.Down {
			fmt.Fprintf(&b, "  %s --> %s\n", id(n), id(g.Nodes[d]))
		}
	}
	if status != nil {
		for _, st := range []cube.Phase{cube.Succeeded, Cached, cube.Failed, Skipped, Omitted} {
			var ids []string
			for _, n := range g.drawn() {
				if status[n.C.Name] == st {
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
