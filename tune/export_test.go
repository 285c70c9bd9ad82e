package tune

import (
	"fmt"
	"math/rand/v2"

	"github.com/cubestudio/cube"
)

// SpaceOf gives the external tests an experiment's search space, which
// the builder keeps to itself.
func SpaceOf(e *Experiment) []Param { return e.space() }

// LocalAlgorithms are the algorithm names Local.Algorithm accepts.
var LocalAlgorithms = localAlgorithms

// ParzenSigmas1D are the bandwidths univariate TPE gives the points xs of
// a Float in [lo, hi] (the prior's last).
func ParzenSigmas1D(xs []float64, lo, hi float64) []float64 {
	pz := parzen1D(xs, lo, hi)
	out := make([]float64, len(pz.sigmas))
	for i, s := range pz.sigmas {
		out[i] = s[0]
	}
	return out
}

// ParzenLogDensity1D is the log density of univariate TPE's mixture for
// the points xs of a Float in [lo, hi], in the order they ran, at each of
// at.
func ParzenLogDensity1D(xs []float64, lo, hi float64, at []float64) []float64 {
	pz := parzen1D(xs, lo, hi)
	out := make([]float64, len(at))
	for i, x := range at {
		out[i] = pz.logDensity([]float64{x})
	}
	return out
}

// parzen1D is univariate TPE's mixture (prior weight 1) for the points xs
// of a Float in [lo, hi].
func parzen1D(xs []float64, lo, hi float64) parzen {
	points := make([][]float64, len(xs))
	for i, x := range xs {
		points[i] = []float64{x}
	}
	return fitParzen(dimsOf([]Param{Float("x", lo, hi)}), points, 1)
}

// TPEAgeWeights are the weights univariate TPE gives n trials in the order
// they ran.
var TPEAgeWeights = ageWeights

// QuadraticProposal is what Auto's quadratic model proposes after the
// succeeded trials values (minimised objective ys) over params, and
// whether it fits them well enough to join Auto's portfolio.
func QuadraticProposal(params []Param, values []map[string]any, ys []float64) (map[string]any, bool) {
	l := NewLocal(Minimize("y"), params...)
	h := historyOf(values, ys)
	q := newQuadSampler(l)
	return q.sample(len(h), h, nil), q.useful(h)
}

// CMAStart draws count points (in the unit cube) from the first
// distribution of the CMA-ES that Auto's portfolio starts after the
// succeeded trials values (minimised objective ys) over params, and
// returns them with its step size.
func CMAStart(params []Param, values []map[string]any, ys []float64, count int) ([][]float64, float64) {
	l := NewLocal(Minimize("y"), params...).Seed(3)
	h := historyOf(values, ys)
	c := (&autoSampler{l: l}).newCMA(h)
	var gen [][]float64
	for k := range count {
		gen = append(gen, c.sampleUnit(k, nil))
	}
	st := c.states[0]
	return gen, st.sigma
}

// GPDirection fits the GP to the succeeded trials values (minimised
// objective ys) over params as the sampler does, and returns the learned
// direction's weight on each parameter's feature (a Choice's by value,
// "name=value") and whether the fit kept it.
func GPDirection(params []Param, values []map[string]any, ys []float64) (map[string]float64, bool) {
	l := NewLocal(Minimize("y"), params...)
	h := historyOf(values, ys)
	s := &gpSampler{l: l}
	dims := dimsOf(params)
	m, y, _ := s.model(dims, h, nil, true)
	hyper, _ := m.fitHyper(y)
	dir := regressionDirection(m, y)
	if dir == nil {
		return nil, hyper.dir != nil
	}
	out := map[string]float64{}
	f := 0
	for _, dm := range dims {
		if dm.category {
			for _, c := range dm.p.choices {
				out[fmt.Sprintf("%s=%v", dm.p.name, c)] = dir[f]
				f++
			}
			continue
		}
		out[dm.p.name] = dir[f]
		f++
	}
	return out, hyper.dir != nil
}

// The kernels GPKernel names.
const (
	KernelProduct  = "product"
	KernelAdditive = "additive"
	KernelByChoice = "additive by Choice"
)

// GPKernel fits the GP to the succeeded trials values (minimised
// objective ys) over params as the sampler does, and names the kernel it
// chose, with the parameter values of the additive mean's minimum when
// that is additive (nil otherwise).
func GPKernel(params []Param, values []map[string]any, ys []float64) (string, map[string]any) {
	return gpKernel(&gpSampler{l: NewLocal(Minimize("y"), params...)}, values, ys)
}

// TrustKernel is GPKernel's name for the model of Auto's trust region.
func TrustKernel(params []Param, values []map[string]any, ys []float64) string {
	kernel, _ := gpKernel(&gpSampler{l: NewLocal(Minimize("y"), params...), offsetQ: trustOffsetQ}, values, ys)
	return kernel
}

func gpKernel(s *gpSampler, values []map[string]any, ys []float64) (string, map[string]any) {
	h := historyOf(values, ys)
	m, dims, _, _ := s.fit(h, nil)
	switch {
	case !m.additive:
		return KernelProduct, nil
	case m.byChoice:
		return KernelByChoice, s.decode(dims, m.additiveMinimum(dims))
	}
	return KernelAdditive, s.decode(dims, m.additiveMinimum(dims))
}

// historyOf is the succeeded trials of values with objective values ys,
// numbered in order.
func historyOf(values []map[string]any, ys []float64) []TrialResult {
	h := make([]TrialResult, len(values))
	for i := range values {
		h[i] = TrialResult{Number: i, State: cube.Succeeded, Value: ys[i], params: values[i]}
	}
	return h
}

// TrustLength is the side of Auto's trust region after trials with the
// values ys (minimised) over params, trust saying which of them the trust
// region proposed.
func TrustLength(params []Param, ys []float64, trust []bool) float64 {
	s := newAutoSampler(NewLocal(Minimize("y"), params...))
	for _, t := range trust {
		s.decided = append(s.decided, map[bool]string{true: samplerTrust, false: AlgorithmBayesian}[t])
	}
	return s.trustLength(historyOf(make([]map[string]any, len(ys)), ys))
}

// TrustProposal is what Auto's trust region of side length proposes after
// the succeeded trials values (ys minimised) over numeric params, and the
// box it searched, all in the unit cube of the parameters.
func TrustProposal(params []Param, values []map[string]any, ys []float64, length float64) (x, lo, hi []float64) {
	l := NewLocal(Minimize("y"), params...)
	h := historyOf(values, ys)
	g := &gpSampler{l: l, offsetQ: trustOffsetQ}
	proposal := g.sampleWithin(len(h), h, nil, length)
	dims := dimsOf(params)
	m, _, _ := g.model(dims, h, nil, true)
	for _, hyper := range g.fitted {
		m.setHyper(hyper)
	}
	lo, hi = m.trustBox(length)
	return gpFeatures(dims, proposal), lo, hi
}

// WarpAt is the GP's warping of the values v at quantile q: 0 for the
// global model, TrustQuantile for the trust region's.
func WarpAt(v []float64, q float64) []float64 {
	w, _ := warpAt(v, q)
	return w
}

// TrustQuantile is the quantile of the values at which the trust region's
// model cuts them.
const TrustQuantile = trustOffsetQ

// TrustDraws are count draws, in the unit cube, of the trust region's
// Gaussian of side length after the succeeded trials values (ys
// minimised) over numeric params, around the best trial; nil when the
// trials give it no shape.
func TrustDraws(params []Param, values []map[string]any, ys []float64, length float64, count int) [][]float64 {
	g := &gpSampler{l: NewLocal(Minimize("y"), params...), offsetQ: trustOffsetQ}
	m, _, _ := g.model(dimsOf(params), historyOf(values, ys), nil, true)
	shape := m.betterShape()
	if shape == nil {
		return nil
	}
	rng := rand.New(rand.NewPCG(7, 8))
	out := make([][]float64, count)
	for k := range out {
		out[k] = shape.draw(m.x[0], gpShapeScale*length, rng)
	}
	return out
}

// Improvements says, for trials with values ys (minimised; NaN: failed)
// run parallel at a time, which improved on every trial their proposer
// could see (Auto's portfolio and stall counts).
func Improvements(ys []float64, parallel int) []bool {
	s := newAutoSampler(NewLocal(Minimize("y"), Float("x", 0, 1)).Parallelism(parallel))
	h := historyOf(make([]map[string]any, len(ys)), ys)
	for i := range h {
		if ys[i] != ys[i] {
			h[i].State = cube.Failed
		}
	}
	return s.improvements(h)
}
