package vgpu_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/cputime"
	"github.com/cubestudio/cube/internal/testsupport/golden"
	"github.com/cubestudio/cube/vgpu"
)

// The benchmark trace: a fixed seed, the default mix (50 % inference
// 5–20 GiB, 45 % notebooks 4–10 GiB, 5 % whole-GPU training), two A100-80G
// demands for every H100 one.
const traceSeed = 20261130

var traceProfiles = []hardware.Profile{hardware.A100_80G, hardware.H100}

func benchTrace(n int) []vgpu.Demand {
	return vgpu.SyntheticTrace(traceSeed, n, vgpu.DefaultTraceMix, traceProfiles, []float64{2, 1})
}

// benchInventory is scale × (64 A100-80G + 32 H100), 8 per node.
func benchInventory(scale int) hardware.Inventory {
	return vgpu.SyntheticInventory(map[string]int{hardware.A100_80G.Name: 8 * scale, hardware.H100.Name: 4 * scale}, traceProfiles...)
}

func table(title string, plans []*vgpu.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", title)
	fmt.Fprintf(&b, "%-13s %7s %6s %9s %9s %8s %7s %8s %9s\n",
		"policy", "placed", "used", "bound", "used/bnd", "memory", "compute", "stranded", "free devs")
	for _, p := range plans {
		s := p.Summary
		fmt.Fprintf(&b, "%-13s %7d %6d %9d %9.3f %7.1f%% %6.1f%% %7.1f%% %9d\n",
			p.Policy, s.Placed, s.DevicesUsed, s.LowerBound, float64(s.DevicesUsed)/float64(s.LowerBound),
			100*s.MemoryUtilisation, 100*s.ComputeUtilisation, 100*s.Fragmentation, s.FreeDevices)
	}
	return b.String()
}

func byPolicy(plans []*vgpu.Plan) map[vgpu.Policy]vgpu.Summary {
	out := map[vgpu.Policy]vgpu.Summary{}
	for _, p := range plans {
		out[p.Policy] = p.Summary
	}
	return out
}

// TestTraceBenchmark is the issue's benchmark. The 1,000-demand trace asks
// for about 250 devices, more than the 96 of the issue's cluster, so it runs
// twice: on the issue's 64 A100-80G + 32 H100 (overloaded: the figures are
// how much each policy places and how full it keeps the devices) and on a
// cluster three times as large, where everything fits and devices used can
// be held against the lower bound of the whole trace. The deterministic
// figures are kept in testdata/benchmark.golden.
func TestTraceBenchmark(t *testing.T) {
	trace := benchTrace(1000)
	var report strings.Builder
	fmt.Fprintf(&report, "trace: %d demands, seed %d, lower bound of the whole trace %d devices\n\n",
		len(trace), traceSeed, vgpu.LowerBound(trace))

	issue := vgpu.Compare(benchInventory(1), trace)
	report.WriteString(table("64 A100-80G + 32 H100 (bound = devices the placed demands need at least)", issue))
	fits := vgpu.Compare(benchInventory(3), trace)
	report.WriteString("\n" + table("192 A100-80G + 96 H100 (everything fits for the sharing policies)", fits))

	for _, plans := range [][]*vgpu.Plan{issue, fits} {
		for _, p := range plans {
			checkPlan(t, benchInventory(len(p.Devices)/96), trace, p)
		}
	}
	is, fs := byPolicy(issue), byPolicy(fits)
	// The planner places the whole trace within 5 % of the bound.
	require.Equal(t, 1000, fs[vgpu.Planner].Placed)
	assert.Equal(t, fs[vgpu.Planner].TraceLowerBound, fs[vgpu.Planner].LowerBound)
	assert.LessOrEqual(t, float64(fs[vgpu.Planner].DevicesUsed), 1.05*float64(fs[vgpu.Planner].LowerBound))
	// At least twice the memory utilisation of whole-device allocation.
	assert.GreaterOrEqual(t, is[vgpu.Planner].MemoryUtilisation, 2*is[vgpu.WholeDevice].MemoryUtilisation)
	assert.GreaterOrEqual(t, fs[vgpu.Planner].MemoryUtilisation, 2*fs[vgpu.WholeDevice].MemoryUtilisation)
	// No baseline packs the fitting trace on fewer devices.
	for _, p := range []vgpu.Policy{vgpu.FirstFit, vgpu.Binpack, vgpu.Spread} {
		if fs[p].Placed == 1000 {
			assert.LessOrEqual(t, fs[vgpu.Planner].DevicesUsed, fs[p].DevicesUsed, p)
		}
	}
	// On the overloaded cluster the planner places more than any baseline.
	for _, p := range []vgpu.Policy{vgpu.WholeDevice, vgpu.FirstFit, vgpu.Binpack, vgpu.Spread} {
		assert.GreaterOrEqual(t, is[vgpu.Planner].Placed, is[p].Placed, p)
	}

	// 10,000 demands on 30 × the issue's cluster: time the planner (best of
	// three, the machine is shared) and record the devices.
	big := benchTrace(10000)
	bigInv := benchInventory(30)
	var bestWall, bestCPU time.Duration
	var plan *vgpu.Plan
	for i := 0; i < 3; i++ {
		cpu0, cpuOK := cputime.Process()
		start := time.Now()
		p, err := vgpu.Pack(bigInv, big, vgpu.Planner)
		wall := time.Since(start)
		cpu1, _ := cputime.Process()
		require.NoError(t, err)
		cpu := wall
		if cpuOK {
			cpu = cpu1 - cpu0
		}
		if plan == nil || wall < bestWall {
			bestWall, plan = wall, p
		}
		if i == 0 || cpu < bestCPU {
			bestCPU = cpu
		}
	}
	fmt.Fprintf(&report, "\n10,000 demands on 1920 A100-80G + 960 H100: planner placed %d on %d devices, lower bound %d (%.3f)\n",
		plan.Summary.Placed, plan.Summary.DevicesUsed, plan.Summary.LowerBound,
		float64(plan.Summary.DevicesUsed)/float64(plan.Summary.LowerBound))
	t.Logf("\n%s\nplanner time for 10,000 demands (best of 3): %v wall, %v CPU", report.String(), bestWall, bestCPU)
	// CPU time, not wall time: the machine running the tests may be shared.
	assert.Less(t, bestCPU, time.Second)
	assert.LessOrEqual(t, float64(plan.Summary.DevicesUsed), 1.05*float64(plan.Summary.LowerBound))
	golden.Assert(t, "benchmark.golden", []byte(report.String()))
}

// BenchmarkPack packs the benchmark traces with every policy in one run
// and reports, besides the time, the devices each used over the lower
// bound of the demands it placed (devices/bound), the demands it placed, and for the planner
// its devices over those of the best other policy that placed as many
// (planner/best-other; at most 1).
func BenchmarkPack(b *testing.B) {
	for _, bench := range []struct {
		name  string
		trace []vgpu.Demand
		inv   hardware.Inventory
	}{
		{"1000", benchTrace(1000), benchInventory(3)},
		{"1000-overloaded", benchTrace(1000), benchInventory(1)},
		{"10000", benchTrace(10000), benchInventory(30)},
	} {
		plans := map[vgpu.Policy]*vgpu.Plan{}
		for _, policy := range vgpu.Policies() {
			b.Run(fmt.Sprintf("%s/%s", bench.name, policy), func(b *testing.B) {
				b.ReportAllocs()
				var plan *vgpu.Plan
				for b.Loop() {
					var err error
					if plan, err = vgpu.Pack(bench.inv, bench.trace, policy); err != nil {
						b.Fatal(err)
					}
				}
				plans[policy] = plan
				b.ReportMetric(float64(plan.Summary.DevicesUsed)/float64(plan.Summary.LowerBound), "devices/bound")
				b.ReportMetric(float64(plan.Summary.Placed), "placed")
				if policy != vgpu.Planner {
					return
				}
				best := 0
				for other, p := range plans {
					if other != vgpu.Planner && p.Summary.Placed >= plan.Summary.Placed && (best == 0 || p.Summary.DevicesUsed < best) {
						best = p.Summary.DevicesUsed
					}
				}
				if best > 0 {
					b.ReportMetric(float64(plan.Summary.DevicesUsed)/float64(best), "planner/best-other")
				}
			})
		}
	}
}
