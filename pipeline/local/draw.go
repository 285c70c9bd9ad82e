package local

import "github.com/cubestudio/cube"

// DOT returns the run's DAG in Graphviz DOT, each step filled with the
// colour of its status.
func (r *Result) DOT() string { return r.g.DOT(r.statuses()) }

// Mermaid returns the run's DAG as a Mermaid flowchart, each step styled by
// its status.
func (r *Result) Mermaid() string { return r.g.Mermaid(r.statuses()) }

func (r *Result) statuses() map[string]cube.Phase {
	out := make(map[string]cube.Phase, len(r.Steps))
	for _, s := range r.Steps {
		out[s.Name] = s.Phase
	}
	return out
}
