package pipeline_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/cubestudio/cube/internal/cputime"
	"github.com/cubestudio/cube/pipeline"
)

// wideDAG is a 10,000-step layered DAG: each step reads the output of the
// step 1 before it and waits for the steps 7 and 97 before it.
func wideDAG(n int) *pipeline.Pipeline {
	steps := make([]*pipeline.ContainerStep, n)
	p := pipeline.New("big").Param("lr", "0.1")
	for i := range steps {
		s := pipeline.Container(fmt.Sprintf("step-%d", i)).Image("busybox").
			Command("sh", "-c", "echo "+pipeline.ParamRef("lr")+" > "+pipeline.OutputFile("o")).
			Outputs("o")
		if i >= 1 {
			s.Args(steps[i-1].Output("o"))
		}
		for _, back := range []int{7, 97} {
			if i >= back {
				s.After(steps[i-back])
			}
		}
		steps[i] = s
		p.Step(s)
	}
	return p
}

func BenchmarkCompile10000Steps(b *testing.B) {
	const n = 10000
	p := wideDAG(n)
	b.ReportAllocs()
	b.ResetTimer()
	meter := cputime.Start()
	for b.Loop() {
		wf, err := p.Build()
		if err != nil {
			b.Fatal(err)
		}
		if len(wf.Spec.Templates) != n+1 {
			b.Fatalf("%d templates", len(wf.Spec.Templates))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
	// CPU time, all threads (the garbage collector's too): the compile's
	// cost on a shared machine, where wall time includes the neighbours.
	if used, ok := meter.Elapsed(); ok {
		b.ReportMetric(float64(used.Milliseconds())/float64(b.N), "cpu-ms/op")
	}
}

func noop(context.Context, *pipeline.Task) error { return nil }

// BenchmarkLocalOverhead measures what the local runner adds per step:
// scheduling, the step's directory, log file, cache key and cache record.
func BenchmarkLocalOverhead(b *testing.B) {
	const n = 200
	for _, shape := range []string{"independent", "chain"} {
		b.Run(shape, func(b *testing.B) {
			p := pipeline.New("noop")
			var prev *pipeline.FuncStep
			for i := range n {
				s := pipeline.Func(fmt.Sprintf("s%d", i), noop)
				if shape == "chain" && prev != nil {
					s.After(prev)
				}
				prev = s
				p.Step(s)
			}
			dir := b.TempDir()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := p.Run(b.Context(), pipeline.RunDir(dir), pipeline.Progress(nil), pipeline.NoCache, pipeline.Parallelism(4)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
		})
	}
	b.Run("cached", func(b *testing.B) {
		p := pipeline.New("noop")
		for i := range n {
			p.Step(pipeline.Func(fmt.Sprintf("s%d", i), noop))
		}
		dir := b.TempDir()
		if _, err := p.Run(b.Context(), pipeline.RunDir(dir), pipeline.Progress(nil)); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			if _, err := p.Run(b.Context(), pipeline.RunDir(dir), pipeline.Progress(nil), pipeline.Parallelism(4)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
	})
}
