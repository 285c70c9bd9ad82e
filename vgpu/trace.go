package vgpu

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/cubestudio/cube/hardware"
)

// TraceMix is the share of each kind of demand in a synthetic trace; the
// shares need not sum to one.
type TraceMix struct {
	// Inference services: 5–20 GiB and 10–30 % compute on one device.
	Inference float64
	// Notebooks: 4–10 GiB and 5–20 % compute on one device.
	Notebooks float64
	// Training: whole devices, 1, 2 or 4 on one node.
	Training float64
	// MIG: one instance of a random profile of the card (cards without MIG
	// get a notebook instead).
	MIG float64
}

// DefaultTraceMix is the benchmark's mix: mostly inference and notebooks,
// a few whole-device training jobs.
var DefaultTraceMix = TraceMix{Inference: 0.5, Notebooks: 0.45, Training: 0.05}

// SyntheticTrace generates n demands from seed: the same seed gives the
// same trace. Each demand targets one of profiles, chosen with probability
// proportional to weights (equal when weights is nil or its length
// differs). It is the generator behind the package benchmark.
func SyntheticTrace(seed uint64, n int, mix TraceMix, profiles []hardware.Profile, weights []float64) []Demand {
	if len(profiles) == 0 || n <= 0 {
		return nil
	}
	if len(weights) != len(profiles) {
		weights = make([]float64, len(profiles))
		for i := range weights {
			weights[i] = 1
		}
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	pick := func(ws []float64) int {
		total := 0.0
		for _, w := range ws {
			total += w
		}
		r := rng.Float64() * total
		for i, w := range ws {
			if r < w {
				return i
			}
			r -= w
		}
		return len(ws) - 1
	}
	between := func(lo, hi int) int { return lo + rng.IntN(hi-lo+1) }
	kinds := []float64{mix.Inference, mix.Notebooks, mix.Training, mix.MIG}
	out := make([]Demand, n)
	for i := range out {
		p := profiles[pick(weights)]
		switch pick(kinds) {
		case 0:
			out[i] = Demand{Name: fmt.Sprintf("inference-%04d", i),
				Spec: Slice(p).Memory(fmt.Sprintf("%dGi", between(5, 20))).Cores(between(10, 30))}
		case 1:
			out[i] = Demand{Name: fmt.Sprintf("notebook-%04d", i),
				Spec: Slice(p).Memory(fmt.Sprintf("%dGi", between(4, 10))).Cores(between(5, 20))}
		case 2:
			gpus := []int{1, 1, 1, 2, 2, 4}[rng.IntN(6)]
			out[i] = Demand{Name: fmt.Sprintf("train-%04d", i), Spec: Whole(p, gpus)}
		default:
			var names []string
			for _, m := range p.MIGProfiles() {
				if m.ComputeSlices < hardware.MIGComputeSlices && !strings.Contains(m.Name, "+") {
					names = append(names, m.Name)
				}
			}
			if len(names) == 0 {
				out[i] = Demand{Name: fmt.Sprintf("notebook-%04d", i),
					Spec: Slice(p).Memory(fmt.Sprintf("%dGi", between(4, 10))).Cores(between(5, 20))}
				continue
			}
			out[i] = Demand{Name: fmt.Sprintf("mig-%04d", i), Spec: MIG(p, names[rng.IntN(len(names))])}
		}
	}
	return out
}

// SyntheticInventory is nodes[profile name] full nodes (MaxPerNode devices,
// 8 when unset) of each profile, named <profile>-<n>.
func SyntheticInventory(nodes map[string]int, profiles ...hardware.Profile) hardware.Inventory {
	var inv hardware.Inventory
	for _, p := range profiles {
		per := p.MaxPerNode
		if per <= 0 {
			per = 8
		}
		for i := 0; i < nodes[p.Name]; i++ {
			inv.Add(fmt.Sprintf("%s-%02d", p.Name, i), p, per)
		}
	}
	return inv
}
