package tune

import (
	"math"
	"slices"
)

// quadSampler is one of Auto's portfolio on a space without Choices: a
// full quadratic model of the objective over the parameters (each on its
// own, log or linear, scale in the unit cube), fitted by least squares to
// the best trials and minimised over the box those trials span (widened
// by a quarter). It is the model step of derivative-free trust-region
// methods (Powell, "The NEWUOA software for unconstrained optimization
// without derivatives", 2006), and it knows what a GP's stationary kernel
// does not: the curvature of a rotated, ill-conditioned basin, which its
// cross terms take in from 1+q+q(q+1)/2 trials for q parameters. It joins
// the portfolio only while it describes the best trials (useful): with
// enough of them to fit, and an adjusted R² of at least quadMinR2. A
// Choice has no curvature, and a model that held the best trial's value
// of it kept the study from trying the others, so a space with a Choice
// has no quadratic.
type quadSampler struct {
	l    *Local
	dims []dim
	num  []int // the parameters' dimensions; nil unless quadSpace
	// The fit to the first lastN trials (fitFirst).
	lastN  int
	last   quadFit
	lastOK bool
}

func newQuadSampler(l *Local) *quadSampler {
	s := &quadSampler{l: l, dims: dimsOf(l.params)}
	if quadSpace(featuresOf(l.params)) {
		for d := range s.dims {
			s.num = append(s.num, d)
		}
	}
	return s
}

// quadSpace says whether a space can have the quadratic model: no Choice,
// and 2 to quadMaxDims parameters.
func quadSpace(f spaceFeatures) bool {
	return f.choices == 0 && f.dims >= 2 && f.dims <= quadMaxDims
}

// terms is the number of coefficients of the quadratic.
func (s *quadSampler) terms() int {
	q := len(s.num)
	return 1 + q + q*(q+1)/2
}

// quadMaxDims is the most parameters the quadratic takes: 20 have 231
// coefficients, fitted from 462 trials on every proposal.
const quadMaxDims = 20

// ready says whether succeeded trials are enough to fit the model with
// some left over (a fit through exactly as many points as coefficients
// interpolates the noise): at least terms+q, on a quadSpace.
func (s *quadSampler) ready(succeeded int) bool {
	return len(s.num) > 0 && succeeded >= s.terms()+len(s.num)
}

// unit is a trial's numeric coordinates in the unit cube.
func (s *quadSampler) unit(values map[string]any) []float64 {
	u := make([]float64, len(s.num))
	for k, d := range s.num {
		dm := s.dims[d]
		u[k] = (dm.encode(values[dm.p.name]) - dm.lo) / (dm.hi - dm.lo)
	}
	return u
}

// basis is the quadratic's features at u: 1, u_i, u_i·u_j (i ≤ j).
func quadBasis(u []float64, out []float64) []float64 {
	out = append(out[:0], 1)
	out = append(out, u...)
	for i := range u {
		for j := i; j < len(u); j++ {
			out = append(out, u[i]*u[j])
		}
	}
	return out
}

// quadFit is a fitted quadratic.
type quadFit struct {
	coef []float64
	xs   [][]float64 // the fitted trials' coordinates, best first
	// adjR2 is the fit's adjusted coefficient of determination: the share
	// of the fitted values' variance it explains, corrected for its
	// number of coefficients.
	adjR2 float64
}

// fit fits the quadratic to the best 2·terms succeeded trials of ranked
// (best first), if there are enough.
func (s *quadSampler) fit(ranked []TrialResult) (quadFit, bool) {
	p := s.terms()
	if !s.ready(len(ranked)) {
		return quadFit{}, false
	}
	m := min(len(ranked), 2*p)
	xs := make([][]float64, m)
	ys := make([]float64, m)
	lo, hi := math.Inf(1), math.Inf(-1)
	for k, r := range ranked[:m] {
		xs[k] = s.unit(r.params)
		ys[k] = r.Value
		if s.l.objective.maximize {
			ys[k] = -ys[k]
		}
		lo, hi = math.Min(lo, ys[k]), math.Max(hi, ys[k])
	}
	span := hi - lo
	if span <= 0 || math.IsInf(span, 0) || math.IsNaN(span) {
		return quadFit{}, false
	}
	// Normal equations with a small ridge, on the values scaled to [0, 1].
	a := make([][]float64, p)
	for r := range a {
		a[r] = make([]float64, r+1)
	}
	b := make([]float64, p)
	var f []float64
	for k := range xs {
		f = quadBasis(xs[k], f)
		ys[k] = (ys[k] - lo) / span
		for r := range p {
			b[r] += f[r] * ys[k]
			for c := 0; c <= r; c++ {
				a[r][c] += f[r] * f[c]
			}
		}
	}
	for r := range p {
		a[r][r] += 1e-6 * (1 + a[r][r])
	}
	l, ok := cholesky(a)
	if !ok {
		return quadFit{}, false
	}
	q := quadFit{coef: cholSolve(l, b), xs: xs}
	mean := 0.0
	for _, y := range ys {
		mean += y
	}
	mean /= float64(m)
	res, tot := 0.0, 0.0
	for k, x := range xs {
		d := q.predict(x, &f) - ys[k]
		res += d * d
		tot += (ys[k] - mean) * (ys[k] - mean)
	}
	q.adjR2 = 1 - res/tot*float64(m-1)/float64(m-p)
	return q, true
}

func (q quadFit) predict(u []float64, f *[]float64) float64 {
	*f = quadBasis(u, *f)
	v := 0.0
	for r, c := range q.coef {
		v += c * (*f)[r]
	}
	return v
}

// newton is the stationary point of the quadratic over q coordinates when
// its Hessian is positive definite: the solution of H·u = -g.
func (q quadFit) newton(n int) ([]float64, bool) {
	g := make([]float64, n)
	h := make([][]float64, n)
	for i := range h {
		h[i] = make([]float64, i+1)
	}
	copy(g, q.coef[1:1+n])
	r := 1 + n
	for i := range n {
		for j := i; j < n; j++ {
			if i == j {
				h[i][i] = 2 * q.coef[r]
			} else {
				h[j][i] = q.coef[r]
			}
			r++
		}
	}
	l, ok := cholesky(h)
	if !ok {
		return nil, false
	}
	for i := range g {
		g[i] = -g[i]
	}
	return cholSolve(l, g), true
}

// quadMinR2 is the adjusted R² from which the quadratic describes the
// basin the best trials sit in: below it (a rugged or multimodal
// objective) its minimum is no guide, and Auto leaves it out.
const quadMinR2 = 0.9

// useful says whether the quadratic fits the seen trials well enough to
// propose from.
func (s *quadSampler) useful(seen []TrialResult) bool {
	if !s.ready(len(seen)) {
		return false
	}
	q, ok := s.fitFirst(seen)
	return ok && q.adjR2 >= quadMinR2
}

// fitFirst fits the model to the trials history holds, the study's first
// len(history): Auto's decide asks useful of the trials a proposal may
// see, and sample then fits the same trials, so the last fit is kept (a
// pure function of the first trials, as the GP's hyperparameters are).
func (s *quadSampler) fitFirst(history []TrialResult) (quadFit, bool) {
	if s.lastN != len(history) || s.lastN == 0 {
		s.last, s.lastOK = s.fit(sortByObjective(s.l.objective, history))
		s.lastN = len(history)
	}
	return s.last, s.lastOK
}

func (s *quadSampler) sample(i int, history []TrialResult, _ []map[string]any) map[string]any {
	qf, ok := s.fitFirst(history)
	if !ok {
		return (&randomSampler{l: s.l}).sample(i, history, nil)
	}
	// The box the fitted trials span, widened by a quarter on each side.
	q := len(s.num)
	boxLo, boxHi := make([]float64, q), make([]float64, q)
	for k := range q {
		boxLo[k], boxHi[k] = 1, 0
		for _, x := range qf.xs {
			boxLo[k], boxHi[k] = math.Min(boxLo[k], x[k]), math.Max(boxHi[k], x[k])
		}
		w := math.Max(boxHi[k]-boxLo[k], 1e-3) / 4
		boxLo[k], boxHi[k] = math.Max(boxLo[k]-w, 0), math.Min(boxHi[k]+w, 1)
	}
	rng := s.l.rngFor(i, 7)
	var f []float64
	best := slices.Clone(qf.xs[0])
	bestV := qf.predict(best, &f)
	try := func(u []float64) {
		if v := qf.predict(u, &f); v < bestV {
			best, bestV = u, v
		}
	}
	// The model's own minimum when it is convex (clipped to the box), the
	// box's random points, then perturbations of the best one at
	// shrinking scales: the quadratic is cheap to evaluate.
	if u, ok := qf.newton(q); ok {
		for k := range u {
			u[k] = math.Min(math.Max(u[k], boxLo[k]), boxHi[k])
		}
		try(u)
	}
	for range 40 * q {
		u := make([]float64, q)
		for k := range u {
			u[k] = boxLo[k] + (boxHi[k]-boxLo[k])*rng.Float64()
		}
		try(u)
	}
	for _, scale := range []float64{0.1, 0.03, 0.01, 0.003} {
		for range 20 * q {
			u := slices.Clone(best)
			for k := range u {
				u[k] = math.Min(math.Max(u[k]+scale*(boxHi[k]-boxLo[k])*rng.NormFloat64(), boxLo[k]), boxHi[k])
			}
			try(u)
		}
	}
	return s.decode(best)
}

// decode turns the coordinates u into values.
func (s *quadSampler) decode(u []float64) map[string]any {
	out := make(map[string]any, len(s.dims))
	for k, d := range s.num {
		dm := s.dims[d]
		out[dm.p.name] = dm.decode(dm.lo + u[k]*(dm.hi-dm.lo))
	}
	return out
}
