package tune

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
)

// tpeSampler is the Tree-structured Parzen Estimator (Bergstra et al.,
// "Algorithms for Hyper-Parameter Optimization", NeurIPS 2011): the
// finished trials are split into the best gamma(n) and the rest, a Parzen
// mixture (one kernel per trial, plus a wide prior) is fitted to each, and
// the candidate drawn from the good mixture with the highest l(x)/g(x)
// wins. Univariate ("tpe", as hyperopt) it does so for each parameter on
// its own, with 24 candidates; multivariate ("multivariate-tpe", as
// Optuna's multivariate TPE) numeric parameters share one truncated
// Gaussian product kernel per trial, a Choice's kernel part of it, and 128
// candidates are scored jointly. Trials that failed or stopped early
// (unranked) join the bad trials, and with the constant liar running ones.
type tpeSampler struct {
	l            *Local
	multivariate bool
}

const (
	tpeStartup      = 10  // random trials first, as Optuna and Katib's defaults
	tpeCandidates   = 128 // candidates scored per trial, multivariate
	tpeCandidates1D = 24  // candidates scored per parameter, univariate (hyperopt's and Optuna's default)
)

// dim is one parameter on the sampler's continuous (or categorical) scale.
type dim struct {
	p        Param
	lo, hi   float64 // numeric bounds on the model's scale
	k        int     // categories of a Choice
	category bool
}

func dimsOf(params []Param) []dim {
	out := make([]dim, len(params))
	for d, p := range params {
		switch p.kind {
		case ChoiceKind:
			out[d] = dim{p: p, k: len(p.choices), category: true}
		case DiscreteKind:
			out[d] = dim{p: p, lo: -0.5, hi: float64(len(p.values)) - 0.5}
		default:
			lo, hi := p.min, p.max
			if p.kind == IntKind {
				lo, hi = lo-0.5, hi+0.5
			}
			if p.log {
				lo, hi = math.Log(lo), math.Log(hi)
			}
			if hi <= lo {
				hi = lo + 1e-12
			}
			out[d] = dim{p: p, lo: lo, hi: hi}
		}
	}
	return out
}

// encode puts a parameter value on the model's scale.
func (d dim) encode(v any) float64 {
	switch d.p.kind {
	case ChoiceKind:
		s, _ := v.(string)
		for i, c := range d.p.choices {
			if c == s {
				return float64(i)
			}
		}
		return 0
	case DiscreteKind:
		f, _ := v.(float64)
		for i, c := range d.p.values {
			if c == f {
				return float64(i)
			}
		}
		return 0
	case IntKind:
		n, _ := v.(int)
		if d.p.log {
			return math.Log(float64(n))
		}
		return float64(n)
	}
	f, _ := v.(float64)
	if d.p.log {
		return math.Log(f)
	}
	return f
}

// decode turns a point on the model's scale into a parameter value.
func (d dim) decode(x float64) any {
	switch d.p.kind {
	case ChoiceKind:
		return d.p.choices[clampIndex(x, d.k)]
	case DiscreteKind:
		return d.p.values[clampIndex(x, len(d.p.values))]
	}
	if d.p.log {
		x = math.Exp(x)
	}
	return d.p.snap(x)
}

func clampIndex(x float64, n int) int {
	return min(max(int(math.Round(x)), 0), n-1)
}

// parzen is a mixture of product kernels over the dims, one component per
// point plus a prior.
type parzen struct {
	dims    []dim
	centers [][]float64 // per component, per dim
	sigmas  [][]float64 // per component, per dim
	weights []float64   // per component (normalised)
	// logConst is, per component, the log of its weight less the log of
	// each numeric kernel's normaliser (sigma·sqrt(2π) times the mass
	// inside the bounds; sqrt(2π) times the mass in one dimension, as
	// Optuna 3.1's, see fitParzen), so that a density costs no erfc.
	logConst []float64
	// A Choice is part of each component, as the numeric dims are: the
	// point's own category has mass 1+eps and every category eps, before
	// normalising (eps = priorWeight/(n+1), the kernel of Optuna's TPE);
	// the prior's kernel is uniform. Modelling Choices jointly with the
	// rest keeps what a good trial's category and numbers have together,
	// which counts per Choice lose.
	eps float64
}

// catLog is the log mass component c's kernel puts on category k of dim d.
func (pz parzen) catLog(c, d, k int) float64 {
	dm := pz.dims[d]
	if c == len(pz.centers)-1 { // the prior
		return -math.Log(float64(dm.k))
	}
	mass := pz.eps
	if clampIndex(pz.centers[c][d], dm.k) == k {
		mass++
	}
	return math.Log(mass / (1 + float64(dm.k)*pz.eps))
}

// fitParzen fits a mixture with one component per point plus a prior
// centred in the box and as wide as it. Each numeric bandwidth is the wider
// gap to the point's neighbours along that dimension (the prior's centre
// and the bounds included), clipped to [range/min(100, 1+n), range]: the
// estimator of Bergstra et al. and Optuna's "magic clip", per dimension of
// a product kernel. In one dimension (univariate TPE) it is Optuna 3.1's
// estimator exactly: its bandwidths (optunaSigmas), its weights by age
// (ageWeights: points holds the trials in the order they ran) and its
// kernels, whose log density leaves out the log of the bandwidth
// (optuna/samplers/_tpe/_truncnorm.py in 3.1.0, logpdf: the standard
// normal's log density at (x-μ)/σ less the log of the mass inside the
// bounds). That makes a wide kernel, a trial far from the others, weigh
// more than its share. Optuna corrected it later (optuna/optuna#5110,
// November 2023), but on this package's benchmark (seeds 0 to 79)
// univariate TPE with the normalised kernels was behind Optuna 3.1's TPE
// (its median regret 1.11 times Optuna's, geometric mean over 72 cells)
// and with Optuna 3.1's estimator even with it (0.99). A product kernel
// keeps the normalised density: without it multivariate TPE was 1.05
// times worse (seeds 0 to 39).
func fitParzen(dims []dim, points [][]float64, priorWeight float64) parzen {
	n := len(points)
	oneD := len(dims) == 1 // univariate TPE: Optuna 3.1's estimator
	pz := parzen{dims: dims, eps: priorWeight / float64(n+1)}
	prior := make([]float64, len(dims))
	for d, dm := range dims {
		prior[d] = (dm.lo + dm.hi) / 2
		if dm.category {
			prior[d] = -1 // the uniform categorical kernel
		}
	}
	pz.centers = append(append(pz.centers, points...), prior)
	pz.sigmas = make([][]float64, len(pz.centers))
	for c := range pz.sigmas {
		pz.sigmas[c] = make([]float64, len(dims))
	}
	for d, dm := range dims {
		if dm.category {
			continue
		}
		width := dm.hi - dm.lo
		minSigma := width / math.Min(100, 1+float64(n))
		order := make([]int, n)
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return points[order[a]][d] < points[order[b]][d] })
		if oneD {
			// Univariate: Optuna 3.1's estimator (optuna/samplers/_tpe/
			// parzen_estimator.py, _calculate_numerical_params, with
			// consider_endpoints=False): each point's gap to its
			// neighbours among the points and the prior's centre, the
			// outermost ones their inner gap only, so that a lone good
			// point near one bound does not get a kernel as wide as the
			// distance to the other. The clip counts the prior too.
			sigmas := optunaSigmas(column1(points), prior[d], dm.lo, dm.hi)
			minSigma = width / math.Min(100, 2+float64(n))
			for idx := range n {
				pz.sigmas[idx][d] = math.Min(math.Max(sigmas[idx], minSigma), width)
			}
			pz.sigmas[n][d] = width
			continue
		}
		// The sorted positions with the prior centre and both bounds.
		for k, idx := range order {
			x := points[idx][d]
			left, right := dm.lo, dm.hi
			if k > 0 {
				left = points[order[k-1]][d]
			}
			if k < n-1 {
				right = points[order[k+1]][d]
			}
			if prior[d] > left && prior[d] < x {
				left = prior[d]
			}
			if prior[d] < right && prior[d] > x {
				right = prior[d]
			}
			pz.sigmas[idx][d] = math.Min(math.Max(math.Max(x-left, right-x), minSigma), width)
		}
		pz.sigmas[n][d] = width
	}
	pz.weights = make([]float64, len(pz.centers))
	age := ageWeights(n)
	if !oneD {
		for i := range age {
			age[i] = 1
		}
	}
	total := priorWeight
	for _, w := range age {
		total += w
	}
	for i, w := range age {
		pz.weights[i] = w / total
	}
	pz.weights[n] = priorWeight / total
	pz.logConst = make([]float64, len(pz.centers))
	for c := range pz.centers {
		lc := math.Log(pz.weights[c])
		for d, dm := range dims {
			if dm.category {
				continue
			}
			mu, sigma := pz.centers[c][d], pz.sigmas[c][d]
			mass := normCDF((dm.hi-mu)/sigma) - normCDF((dm.lo-mu)/sigma)
			lc -= math.Log(math.Sqrt(2*math.Pi)) + math.Log(math.Max(mass, 1e-300))
			if !oneD {
				lc -= math.Log(sigma)
			}
		}
		pz.logConst[c] = lc
	}
	return pz
}

// ageWeights are the weights of Optuna's TPE for n trials in the order
// they ran (default_weights, optuna/samplers/_tpe/sampler.py in 3.1.0):
// 1 each below 25; from 25 on, the last 25 weigh 1 and the n-25 before
// them rise evenly from 1/n to 1, so that the oldest trials count least.
func ageWeights(n int) []float64 {
	w := make([]float64, n)
	ramp := max(n-25, 0)
	for i := range w {
		switch {
		case i >= ramp:
			w[i] = 1
		case ramp == 1:
			w[i] = 1 / float64(n)
		default:
			w[i] = 1/float64(n) + (1-1/float64(n))*float64(i)/float64(ramp-1)
		}
	}
	return w
}

// optunaSigmas are the bandwidths of Optuna's univariate estimator for
// the points xs with the prior centred at prior, before the clip: sorted
// with the prior between the bounds, each point's wider gap to its
// neighbours, the first and last of the points and prior their inner gap.
func optunaSigmas(xs []float64, prior, lo, hi float64) []float64 {
	mus := append(slices.Clone(xs), prior)
	order := make([]int, len(mus))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return mus[order[a]] < mus[order[b]] })
	with := make([]float64, 0, len(mus)+2)
	with = append(with, lo)
	for _, i := range order {
		with = append(with, mus[i])
	}
	with = append(with, hi)
	sorted := make([]float64, len(mus))
	for k := range sorted {
		sorted[k] = math.Max(with[k+1]-with[k], with[k+2]-with[k+1])
	}
	if len(with) >= 4 {
		sorted[0] = with[2] - with[1]
		sorted[len(sorted)-1] = with[len(with)-2] - with[len(with)-3]
	}
	out := make([]float64, len(xs))
	for k, i := range order {
		if i < len(xs) {
			out[i] = sorted[k]
		}
	}
	return out
}

func column1(points [][]float64) []float64 {
	out := make([]float64, len(points))
	for i, p := range points {
		out[i] = p[0]
	}
	return out
}

// sample draws one point: a component, then each dim from its kernel.
func (pz parzen) sample(rng *rand.Rand) []float64 {
	c := pickWeighted(rng, pz.weights)
	x := make([]float64, len(pz.dims))
	for d, dm := range pz.dims {
		if dm.category {
			p := make([]float64, dm.k)
			for k := range p {
				p[k] = math.Exp(pz.catLog(c, d, k))
			}
			x[d] = float64(pickWeighted(rng, p))
			continue
		}
		x[d] = truncatedNormal(rng, pz.centers[c][d], pz.sigmas[c][d], dm.lo, dm.hi)
	}
	return x
}

func pickWeighted(rng *rand.Rand, p []float64) int {
	u := rng.Float64()
	for i, w := range p {
		if u < w {
			return i
		}
		u -= w
	}
	return len(p) - 1
}

// logDensity is the log of the mixture's density at x.
func (pz parzen) logDensity(x []float64) float64 {
	best := math.Inf(-1)
	terms := make([]float64, len(pz.centers))
	for c, center := range pz.centers {
		lp := pz.logConst[c]
		sigmas := pz.sigmas[c]
		for d, dm := range pz.dims {
			if dm.category {
				lp += pz.catLog(c, d, clampIndex(x[d], dm.k))
				continue
			}
			z := (x[d] - center[d]) / sigmas[d]
			lp -= 0.5 * z * z
		}
		terms[c] = lp
		best = math.Max(best, lp)
	}
	sum := 0.0
	for _, t := range terms {
		sum += math.Exp(t - best)
	}
	return best + math.Log(sum)
}

func truncatedNormal(rng *rand.Rand, mu, sigma, lo, hi float64) float64 {
	for range 32 {
		if x := mu + sigma*rng.NormFloat64(); x >= lo && x <= hi {
			return x
		}
	}
	return math.Min(math.Max(mu, lo), hi)
}

func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

func (s *tpeSampler) settingInt(name string, def int) int {
	if v, ok := s.l.algorithm.setting(name); ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return n
		}
	}
	return def
}

func (s *tpeSampler) settingFloat(name string, def float64) float64 {
	if v, ok := s.l.algorithm.setting(name); ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f
		}
	}
	return def
}

func (s *tpeSampler) sample(i int, history []TrialResult, pending []map[string]any) map[string]any {
	startup := s.settingInt("n_startup_trials", tpeStartup)
	candidates := tpeCandidates1D
	if s.multivariate {
		candidates = tpeCandidates
	}
	candidates = s.settingInt("n_ei_candidates", s.settingInt("n_EI_candidates", candidates))
	priorWeight := s.settingFloat("prior_weight", 1)
	ranked := sortByObjective(s.l.objective, history)
	if len(ranked) < max(startup, 2) || candidates == 0 {
		return (&randomSampler{l: s.l}).sample(i, history, pending)
	}
	dims := dimsOf(s.l.params)
	// Optuna's default split: the best ceil(0.1 n), at most 25.
	nGood := min(max(int(math.Ceil(0.1*float64(len(ranked)))), 1), 25)
	if g := s.settingFloat("gamma", 0); g > 0 && g < 1 {
		nGood = max(int(math.Ceil(g*float64(len(ranked)))), 1)
	}
	encode := func(values []map[string]any) [][]float64 {
		out := make([][]float64, len(values))
		for j, v := range values {
			out[j] = make([]float64, len(dims))
			for d, dm := range dims {
				out[j][d] = dm.encode(v[dm.p.name])
			}
		}
		return out
	}
	good, bad := ranked[:nGood], ranked[nGood:] // ranked is sortByObjective's own copy
	// Trials that failed or stopped early are bad ones (unranked).
	bad = slices.Concat(bad, unranked(history))
	if !s.multivariate || len(dims) == 1 {
		// In the order they ran, which the weights by age read (Optuna
		// sorts each side's trials by number: _split_observation_pairs in
		// optuna/samplers/_tpe/sampler.py).
		byNumber := func(a, b TrialResult) int { return cmp.Compare(a.Number, b.Number) }
		slices.SortFunc(good, byNumber)
		slices.SortFunc(bad, byNumber)
	}
	var goodValues, badValues []map[string]any
	for _, r := range good {
		goodValues = append(goodValues, r.params)
	}
	for _, r := range bad {
		badValues = append(badValues, r.params)
	}
	// The constant liar: a running trial counts as a bad one.
	if s.l.constantLiar {
		badValues = append(badValues, pending...)
	}
	goodPts, badPts := encode(goodValues), encode(badValues)
	rng := s.l.rngFor(i, 1)
	var best []float64
	if s.multivariate {
		best = tpeArgmax(dims, goodPts, badPts, priorWeight, candidates, rng)
	} else {
		best = make([]float64, len(dims))
		for d := range dims {
			best[d] = tpeArgmax(dims[d:d+1], column(goodPts, d), column(badPts, d), priorWeight, candidates, rng)[0]
		}
	}
	out := make(map[string]any, len(dims))
	for d, dm := range dims {
		out[dm.p.name] = dm.decode(best[d])
	}
	return out
}

// tpeArgmax draws candidates from the good mixture and returns the one
// with the highest l(x)/g(x).
func tpeArgmax(dims []dim, good, bad [][]float64, priorWeight float64, candidates int, rng *rand.Rand) []float64 {
	l, g := fitParzen(dims, good, priorWeight), fitParzen(dims, bad, priorWeight)
	var best []float64
	bestScore := math.Inf(-1)
	for range candidates {
		x := l.sample(rng)
		if score := l.logDensity(x) - g.logDensity(x); score > bestScore {
			best, bestScore = x, score
		}
	}
	return best
}

// column is dimension d of points, as one-dimensional points.
func column(points [][]float64, d int) [][]float64 {
	out := make([][]float64, len(points))
	for j, p := range points {
		out[j] = []float64{p[d]}
	}
	return out
}
