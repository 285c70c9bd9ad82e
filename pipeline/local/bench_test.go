package local_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/local"
)

func noop(context.Context, *pipeline.Task) error { return nil }

// BenchmarkLocalOverhead measures what the local runner adds per step
// (scheduling, the step's directory, log file, cache key and cache record)
// against calling the same functions directly, four at a time (baseline).
func BenchmarkLocalOverhead(b *testing.B) {
	const n = 200
	b.Run("cube", func(b *testing.B) {
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
					if _, err := local.Run(b.Context(), p, local.RunDir(dir), local.Progress(nil), local.NoCache, local.Parallelism(4)); err != nil {
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
			if _, err := local.Run(b.Context(), p, local.RunDir(dir), local.Progress(nil)); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := local.Run(b.Context(), p, local.RunDir(dir), local.Progress(nil), local.Parallelism(4)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
		})
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sem := make(chan struct{}, 4)
			var wg sync.WaitGroup
			for range n {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					if err := noop(b.Context(), nil); err != nil {
						b.Error(err)
					}
				})
			}
			wg.Wait()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
	})
}
