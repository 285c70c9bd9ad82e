package pipeline

import "github.com/cubestudio/cube/pipeline/internal/graph"

// DOT returns the pipeline's DAG in Graphviz DOT: one box per step labelled
// with its name and kind (fan-out and condition noted), an edge from each
// step to the steps that wait for it, and the exit handler dashed. It draws
// pipelines that do not validate too, as far as they can be understood.
func (p *Pipeline) DOT() string { return p.graph().DOT(nil) }

// Mermaid returns the pipeline's DAG as a Mermaid flowchart.
func (p *Pipeline) Mermaid() string { return p.graph().Mermaid(nil) }

// graph analyses p for drawing; a nil or unmade pipeline draws empty.
func (p *Pipeline) graph() *graph.Graph {
	var def *graph.Pipeline
	if p != nil {
		def = graph.Of(&p.Source)
	}
	if def == nil {
		def = &graph.Pipeline{}
	}
	g, _ := graph.Analyze(def)
	return g
}
