package vgpu

import (
	"math/rand/v2"
	"testing"

	"github.com/cubestudio/cube/hardware"
)

// runOf rebuilds from a plan the figures better compares: demands placed,
// device-work placed and devices used.
func runOf(plan *Plan, demands []Demand) run {
	r := run{needs: make([]need, len(demands)), assignments: make([]*Assignment, len(demands))}
	for i, d := range demands {
		r.needs[i] = toNeed(i, d)
	}
	for i := range plan.Assignments {
		a := &plan.Assignments[i]
		r.assignments[a.Demand] = a
	}
	r.placed, r.used = plan.Summary.Placed, plan.Summary.DevicesUsed
	return r
}

// TestPlannerNeverWorseThanBaselines is the planner's promise as a
// property: over many seeded traces (kinds, device types and cluster sizes
// drawn from the seed, some clusters too small for the trace), no other
// policy places more demands, more device-work, or the same on fewer
// devices.
func TestPlannerNeverWorseThanBaselines(t *testing.T) {
	catalogue := []hardware.Profile{hardware.A100_80G, hardware.H100, hardware.L40S, hardware.T4, hardware.A100_40G, hardware.Ascend910B3}
	traces := 300
	if testing.Short() {
		traces = 60
	}
	for seed := uint64(1); seed <= uint64(traces); seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		var profiles []hardware.Profile
		for _, p := range catalogue {
			if rng.IntN(2) == 0 {
				profiles = append(profiles, p)
			}
		}
		if len(profiles) == 0 {
			profiles = catalogue[:1]
		}
		mix := TraceMix{Inference: rng.Float64(), Notebooks: rng.Float64(), Training: rng.Float64() / 4, MIG: rng.Float64() / 2}
		demands := SyntheticTrace(seed, 20+rng.IntN(300), mix, profiles, nil)
		nodes := map[string]int{}
		for _, p := range profiles {
			nodes[p.Name] = 1 + rng.IntN(8)
		}
		inv := SyntheticInventory(nodes, profiles...)
		planner, err := Pack(inv, demands, Planner)
		if err != nil {
			t.Fatal(err)
		}
		best := runOf(planner, demands)
		for _, policy := range Policies() {
			if policy == Planner {
				continue
			}
			plan, err := Pack(inv, demands, policy)
			if err != nil {
				t.Fatal(err)
			}
			if other := runOf(plan, demands); other.better(best) {
				t.Errorf("seed %d: %s beats the planner: %d placed (work %d) on %d devices against %d (work %d) on %d",
					seed, policy, other.placed, other.work(), other.used, best.placed, best.work(), best.used)
			}
		}
	}
}
