package local

import (
	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/pipeline/internal/graph"
)

// DOT returns the run's DAG in Graphviz DOT, each step filled with the
// colour of its status.
func (r *Result) DOT() string { return r.graph().DOT(r.statuses()) }

// Mermaid returns the run's DAG as a Mermaid flowchart, each step styled by
// its status.
func (r *Result) Mermaid() string { return r.graph().Mermaid(r.statuses()) }

// graph is the run's graph; a nil or zero Result (no run) draws empty.
func (r *Result) graph() *graph.Graph {
	if r == nil || r.g == nil {
		g, _ := graph.Analyze(&graph.Pipeline{})
		return g
	}
	return r.g
}

func (r *Result) statuses() map[string]cube.Phase {
	if r == nil {
		return nil
	}
	out := make(map[string]cube.Phase, len(r.Steps))
	for _, s := range r.Steps {
		out[s.Name] = s.Phase
	}
	return out
}
