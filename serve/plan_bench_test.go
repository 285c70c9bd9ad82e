package serve

import (
	"testing"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/models"
)

// linearPlan is Plan as it was before its search over pipeline stages
// became a bisection: the same options, checks and sizing, with the stage
// counts tried one by one. It is the baseline the Plan benchmarks measure
// against in the same run.
func linearPlan(model models.Model, acc hardware.Profile, opts ...PlanOption) (PlanResult, bool) {
	tokens, sequences := defaultBatching(acc)
	o := planOptions{
		contextLength: model.ContextLength, utilization: DefaultMemoryUtilization,
		kvDType: defaultKVDType(model.DType), weightDType: model.DType,
		maxTP: acc.MaxPerNode, maxNodes: DefaultMaxNodes, overhead: DefaultOverheadBytes,
		maxBatchedTokens: tokens, maxSequences: sequences,
	}
	for _, opt := range opts {
		opt.applyPlan(&o)
	}
	if validatePlan(model, acc, o) != nil {
		return PlanResult{}, false
	}
	p := planner{model: model, acc: acc, o: o}
	var tps []int
	for tp := 1; tp <= min(acc.MaxPerNode, o.maxTP); tp *= 2 {
		if p.splits(tp) {
			tps = append(tps, tp)
		}
	}
	for _, tp := range tps {
		if r := p.size(tp, 1); r.fits() {
			return r, true
		}
	}
	tp := tps[len(tps)-1]
	stages := pipelineStages(max(1, acc.MaxPerNode/tp), model.Layers, o.maxNodes)
	for i := range stages.count() {
		if r := p.size(tp, stages.at(i)); r.fits() {
			return r, true
		}
	}
	return PlanResult{}, false
}

// The baseline finds the plans Plan finds, so the benchmarks compare the
// same work.
func TestLinearPlanAgreesWithPlan(t *testing.T) {
	for _, m := range models.Catalogue() {
		if !m.Generates() {
			continue
		}
		for _, acc := range []hardware.Profile{hardware.H100, hardware.L4, hardware.L4.PerNode(1)} {
			want, err := Plan(m, acc, ContextLength(32768))
			got, ok := linearPlan(m, acc, ContextLength(32768))
			if ok != (err == nil) || ok && got != want {
				t.Errorf("%s on %s: linear %+v (%v), Plan %+v (%v)", m.Name, acc.Name, got, ok, want, err)
			}
		}
	}
}

// BenchmarkPlan plans every catalogue model on each of four accelerators
// per iteration; the baseline searches pipeline stages one by one.
func BenchmarkPlan(b *testing.B) {
	catalogue := models.Catalogue()
	accs := []hardware.Profile{hardware.H100, hardware.A100_40G, hardware.L4, hardware.H200}
	for _, bench := range []struct {
		name string
		plan func(models.Model, hardware.Profile) bool
	}{
		{"cube", func(m models.Model, acc hardware.Profile) bool {
			_, err := Plan(m, acc, ContextLength(32768))
			return err == nil
		}},
		{"baseline", func(m models.Model, acc hardware.Profile) bool {
			_, ok := linearPlan(m, acc, ContextLength(32768))
			return ok
		}},
	} {
		b.Run(bench.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, m := range catalogue {
					if !m.Generates() {
						continue // encoders are TEI's, which is not planned
					}
					for _, acc := range accs {
						if !bench.plan(m, acc) {
							b.Fatalf("%s on %s does not plan", m.Name, acc.Name)
						}
					}
				}
			}
			b.ReportMetric(float64(len(catalogue)*len(accs)), "plans/op")
		})
	}
}

// BenchmarkPlanOne plans one model that needs pipeline stages across
// nodes (Llama-3.1-70B at its full context on one-device L4 nodes), where
// the bisection and the linear search differ most.
func BenchmarkPlanOne(b *testing.B) {
	m, err := models.Lookup("meta-llama/Llama-3.1-70B-Instruct")
	if err != nil {
		b.Fatal(err)
	}
	acc := hardware.L4.PerNode(1)
	opts := []PlanOption{MaxNodes(1 << 10)}
	b.Run("cube", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Plan(m, acc, opts...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok := linearPlan(m, acc, opts...); !ok {
				b.Fatal("does not plan")
			}
		}
	})
}
