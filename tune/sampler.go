package tune

import (
	"github.com/cubestudio/cube"

	"math"
	"math/bits"
	"math/rand/v2"
	"sort"
)

// sampler proposes trial i's values from the finished trials it may see.
// pending holds the values of the trials sampled before i that it may not
// see (they are running); the models count them as bad ones only when the
// constant liar is on.
type sampler interface {
	sample(i int, history []TrialResult, pending []map[string]any) map[string]any
}

func newSampler(l *Local) sampler {
	switch l.algorithm.name {
	case AlgorithmGrid:
		return newGridSampler(l)
	case AlgorithmTPE:
		return &tpeSampler{l: l}
	case AlgorithmMultivariateTPE:
		return &tpeSampler{l: l, multivariate: true}
	case AlgorithmSobol:
		return newSobolSampler(l)
	case AlgorithmCMAES:
		return newCMASampler(l)
	case AlgorithmBayesian:
		return &gpSampler{l: l}
	case AlgorithmAuto:
		return newAutoSampler(l)
	}
	return &randomSampler{l: l}
}

// proposerOf names the sampler that proposed trial i: the algorithm, or
// the one Auto chose.
func proposerOf(s sampler, l *Local, i int) string {
	if a, ok := s.(*autoSampler); ok {
		return a.proposer(i)
	}
	return l.algorithm.name
}

// rngFor is the random stream of trial i: the same for a seed whatever the
// order trials run in.
func (l *Local) rngFor(i int, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(l.seed), uint64(i)<<8|stream))
}

type randomSampler struct{ l *Local }

func (s *randomSampler) sample(i int, _ []TrialResult, _ []map[string]any) map[string]any {
	rng := s.l.rngFor(i, 0)
	u := make([]float64, len(s.l.params))
	for d := range u {
		u[d] = rng.Float64()
	}
	return fromUnit(s.l.params, u)
}

// fromUnit maps a point of the unit cube to parameter values: uniform (or
// log-uniform) over numeric ranges, steps and lists by equal slices.
func fromUnit(params []Param, u []float64) map[string]any {
	out := make(map[string]any, len(params))
	for d, p := range params {
		out[p.name] = p.fromUnit(u[d])
	}
	return out
}

func (p Param) fromUnit(u float64) any {
	switch p.kind {
	case ChoiceKind:
		return p.choices[min(int(u*float64(len(p.choices))), len(p.choices)-1)]
	case DiscreteKind:
		return p.values[min(int(u*float64(len(p.values))), len(p.values)-1)]
	}
	lo, hi := p.min, p.max
	if p.kind == IntKind {
		lo, hi = lo-0.5, hi+0.5 // equal mass for every integer
	}
	x := lo + u*(hi-lo)
	if p.log {
		// lo is positive: a log-scaled Int starts at 1 or more.
		x = math.Exp(math.Log(lo) + u*(math.Log(hi)-math.Log(lo)))
	}
	return p.snap(x)
}

// snap clips x into the range and onto the step or the integers.
func (p Param) snap(x float64) any {
	x = math.Min(math.Max(x, p.min), p.max)
	if p.step != 0 {
		x = p.min + math.Round((x-p.min)/p.step)*p.step
		if x > p.max {
			x -= p.step
		}
	}
	if p.kind == IntKind {
		return int(math.Round(x))
	}
	return x
}

// gridSampler walks the grid in a seeded order without listing it: trial
// i takes point (a·i + b) mod total, a permutation of the grid for an a
// prime to total, and decodes it into one index per parameter. Listing
// and shuffling the points cost a million allocations for a grid of a
// million points before the first trial (a fuzz execution took over go's
// ten seconds under load), while a study visits a few hundred.
type gridSampler struct {
	l     *Local
	sizes []uint64
	total uint64
	a, b  uint64
}

// maxGridTotal bounds the number of grid points: far more than any study
// visits, and a·i stays exact in 128 bits.
const maxGridTotal = 1 << 62

func newGridSampler(l *Local) *gridSampler {
	sizes := make([]uint64, len(l.params))
	total := uint64(1)
	for d, p := range l.params {
		sizes[d] = uint64(max(p.gridSize(), 1))
		if hi, lo := bits.Mul64(total, sizes[d]); hi != 0 || lo > maxGridTotal {
			total = maxGridTotal
		} else {
			total = lo
		}
	}
	rng := rand.New(rand.NewPCG(uint64(l.seed), 1<<62))
	a := uint64(1)
	if total > 2 {
		for a = 1 + rng.Uint64N(total-1); gcd(a, total) != 1; a = 1 + rng.Uint64N(total-1) {
		}
	}
	return &gridSampler{l: l, sizes: sizes, total: total, a: a, b: rng.Uint64N(total)}
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func (s *gridSampler) sample(i int, _ []TrialResult, _ []map[string]any) map[string]any {
	hi, lo := bits.Mul64(s.a, uint64(i)%s.total)
	k := (bits.Rem64(hi, lo, s.total) + s.b) % s.total
	out := make(map[string]any, len(s.l.params))
	for d := len(s.sizes) - 1; d >= 0; d-- {
		p := s.l.params[d]
		out[p.name] = p.gridValue(int(k % s.sizes[d]))
		k /= s.sizes[d]
	}
	return out
}

func (p Param) gridValue(k int) any {
	switch p.kind {
	case ChoiceKind:
		return p.choices[k]
	case DiscreteKind:
		return p.values[k]
	case IntKind:
		step := p.step
		if step == 0 {
			step = 1
		}
		return int(p.min + float64(k)*step)
	}
	return math.Min(p.min+float64(k)*p.step, p.max) // the last point may round past the bound
}

// unranked returns the trials of history that ended without a value to
// rank: failed (an error, a panic, NaN or an infinity) or stopped early.
// The model-based samplers count them as bad ones, as the constant liar
// counts running trials: where trials fail (out of memory at a large
// batch) or are stopped, the study should leave, not keep exploring
// because no value was seen there. Optuna 3.1's TPE ranks a pruned trial
// below every complete one (optuna/samplers/_tpe/sampler.py,
// _get_observation_pairs: (-step, value) against (-inf, value)) but leaves
// failed ones out; SMAC3 models crashed trials at a crash cost
// (smac/scenario.py crash_cost; considered_states in
// smac/runhistory/encoder/abstract_encoder.py). Left out, a region where
// every trial fails looked unexplored to the GP's expected improvement:
// on Branin with x > 5 failing, Auto sent a median 20 of the 48 trials
// after its design there (all 48 on one seed of 20).
func unranked(history []TrialResult) []TrialResult {
	var out []TrialResult
	for _, r := range history {
		if r.State != cube.Succeeded && r.params != nil {
			out = append(out, r)
		}
	}
	return out
}

// sortByObjective returns the succeeded trials, best first (ties by
// number, so the order is deterministic).
func sortByObjective(o Objective, history []TrialResult) []TrialResult {
	var ok []TrialResult
	for _, r := range history {
		if r.State == cube.Succeeded {
			ok = append(ok, r)
		}
	}
	sort.SliceStable(ok, func(a, b int) bool { return o.better(ok[a].Value, ok[b].Value) })
	return ok
}
