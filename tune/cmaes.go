package tune

import (
	"math"
	"strconv"
)

// cmaSampler is the covariance matrix adaptation evolution strategy with
// the update equations and default constants of Hansen, "The CMA Evolution
// Strategy: A Tutorial" (arXiv:1604.00772), with positive recombination
// weights only, over the unit cube of the parameters (each on its own (log)
// scale; a Choice or Discrete by equal slices). Generation g is the trials
// g·λ..g·λ+λ-1, λ = 4+⌊3 ln n⌋; a trial samples from the distribution after
// every generation it may see in full, so a seed fixes every trial whatever
// the parallelism, and a resumed study recomputes the same distributions
// from the recorded trials. The search starts at the centre with step size
// Sigma (1/6 of the cube, as Optuna, unless set); a sample outside the
// cube is redrawn, up to 100 times, then clipped.
type cmaSampler struct {
	l      *Local
	dims   []dim
	n      int
	lambda int
	mu     int
	w      []float64 // recombination weights of the best mu
	states []*cmaState
}

type cmaState struct {
	mean   []float64
	sigma  float64
	c      [][]float64
	pc, ps []float64
	b      [][]float64 // eigenvectors of c, as columns
	d      []float64   // square roots of its eigenvalues
	gen    int
}

func newCMASampler(l *Local) *cmaSampler {
	n := len(l.params)
	s := &cmaSampler{l: l, dims: dimsOf(l.params), n: n, lambda: 4 + int(math.Floor(3*math.Log(float64(n))))}
	s.mu = s.lambda / 2
	sigma := 1.0 / 6
	if v, ok := l.algorithm.setting("sigma"); ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 {
			sigma = f
		}
	}
	st := &cmaState{mean: make([]float64, n), sigma: sigma, c: identity(n), pc: make([]float64, n), ps: make([]float64, n),
		b: identity(n), d: make([]float64, n)}
	for k := range n {
		st.mean[k], st.d[k] = 0.5, 1
	}
	s.states = []*cmaState{st}
	return s
}

func identity(n int) [][]float64 {
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
		m[i][i] = 1
	}
	return m
}

// weights are ln((μ'+1)/2) - ln i normalised, for the μ' best of a
// generation.
func cmaWeights(mu int) ([]float64, float64) {
	w := make([]float64, mu)
	sum, sq := 0.0, 0.0
	for i := range w {
		w[i] = math.Log(float64(mu)+0.5) - math.Log(float64(i+1))
		sum += w[i]
	}
	for i := range w {
		w[i] /= sum
		sq += w[i] * w[i]
	}
	return w, 1 / sq
}

func (s *cmaSampler) toUnit(values map[string]any) []float64 {
	u := make([]float64, s.n)
	for d, dm := range s.dims {
		x := dm.encode(values[dm.p.name])
		switch {
		case dm.category:
			u[d] = (x + 0.5) / float64(dm.k)
		default:
			u[d] = (x - dm.lo) / (dm.hi - dm.lo)
		}
	}
	return u
}

// tell updates st with generation st.gen's succeeded trials.
func (s *cmaSampler) tell(st *cmaState, history []TrialResult) *cmaState {
	n := float64(s.n)
	first := st.gen * s.lambda
	gen := history[first : first+s.lambda]
	ranked := sortByObjective(s.l.objective, gen)
	next := &cmaState{mean: st.mean, sigma: st.sigma, c: st.c, pc: st.pc, ps: st.ps, b: st.b, d: st.d, gen: st.gen + 1}
	mu := min(s.mu, len(ranked))
	if mu < 1 {
		return next
	}
	w, muEff := cmaWeights(mu)
	cs := (muEff + 2) / (n + muEff + 5)
	ds := 1 + 2*math.Max(0, math.Sqrt((muEff-1)/(n+1))-1) + cs
	cc := (4 + muEff/n) / (n + 4 + 2*muEff/n)
	c1 := 2 / ((n+1.3)*(n+1.3) + muEff)
	cmu := math.Min(1-c1, 2*(muEff-2+1/muEff)/((n+2)*(n+2)+muEff))
	chiN := math.Sqrt(n) * (1 - 1/(4*n) + 1/(21*n*n))

	ys := make([][]float64, mu)
	mean := make([]float64, s.n)
	for i := range mu {
		x := s.toUnit(ranked[i].params)
		ys[i] = make([]float64, s.n)
		for k := range x {
			ys[i][k] = (x[k] - st.mean[k]) / st.sigma
			mean[k] += w[i] * x[k]
		}
	}
	yw := make([]float64, s.n)
	for k := range yw {
		yw[k] = (mean[k] - st.mean[k]) / st.sigma
	}
	// C^{-1/2} yw = B D^{-1} Bᵀ yw.
	bt := make([]float64, s.n)
	for j := range bt {
		for k := range yw {
			bt[j] += st.b[k][j] * yw[k]
		}
		bt[j] /= st.d[j]
	}
	ps := make([]float64, s.n)
	psNorm := 0.0
	for k := range ps {
		inv := 0.0
		for j := range bt {
			inv += st.b[k][j] * bt[j]
		}
		ps[k] = (1-cs)*st.ps[k] + math.Sqrt(cs*(2-cs)*muEff)*inv
		psNorm += ps[k] * ps[k]
	}
	psNorm = math.Sqrt(psNorm)
	hs := 0.0
	if psNorm/math.Sqrt(1-math.Pow(1-cs, 2*float64(st.gen+1))) < (1.4+2/(n+1))*chiN {
		hs = 1
	}
	pc := make([]float64, s.n)
	for k := range pc {
		pc[k] = (1-cc)*st.pc[k] + hs*math.Sqrt(cc*(2-cc)*muEff)*yw[k]
	}
	c := make([][]float64, s.n)
	for a := range c {
		c[a] = make([]float64, s.n)
		for b := range c[a] {
			rankMu := 0.0
			for i := range mu {
				rankMu += w[i] * ys[i][a] * ys[i][b]
			}
			c[a][b] = (1-c1-cmu)*st.c[a][b] + c1*(pc[a]*pc[b]+(1-hs)*cc*(2-cc)*st.c[a][b]) + cmu*rankMu
		}
	}
	next.mean, next.ps, next.pc, next.c = mean, ps, pc, c
	next.sigma = st.sigma * math.Exp(math.Min(1, (cs/ds)*(psNorm/chiN-1)))
	vals, vecs := jacobiEigen(c)
	next.b, next.d = vecs, make([]float64, s.n)
	for k, v := range vals {
		next.d[k] = math.Sqrt(math.Max(v, 1e-20))
	}
	return next
}

func (s *cmaSampler) sample(i int, history []TrialResult, _ []map[string]any) map[string]any {
	// The distribution after every generation both before trial i's own and
	// wholly seen.
	g := min(i/s.lambda, len(history)/s.lambda)
	for len(s.states) <= g {
		s.states = append(s.states, s.tell(s.states[len(s.states)-1], history))
	}
	st := s.states[g]
	rng := s.l.rngFor(i, 3)
	x := make([]float64, s.n)
	z := make([]float64, s.n)
	for range 100 {
		for k := range z {
			z[k] = st.d[k] * rng.NormFloat64()
		}
		inside := true
		for k := range x {
			x[k] = st.mean[k]
			for j := range z {
				x[k] += st.sigma * st.b[k][j] * z[j]
			}
			inside = inside && x[k] >= 0 && x[k] < 1
		}
		if inside {
			break
		}
	}
	for k := range x {
		x[k] = math.Min(math.Max(x[k], 0), math.Nextafter(1, 0))
	}
	return fromUnit(s.l.params, x)
}

// jacobiEigen returns the eigenvalues and eigenvectors (as columns) of the
// symmetric matrix a, by cyclic Jacobi rotations.
func jacobiEigen(a [][]float64) ([]float64, [][]float64) {
	n := len(a)
	m := make([][]float64, n)
	for i := range m {
		m[i] = append([]float64(nil), a[i]...)
	}
	v := identity(n)
	for range 64 {
		off := 0.0
		for p := range n {
			for q := p + 1; q < n; q++ {
				off += m[p][q] * m[p][q]
			}
		}
		if off < 1e-30 {
			break
		}
		for p := range n {
			for q := p + 1; q < n; q++ {
				if math.Abs(m[p][q]) < 1e-300 {
					continue
				}
				theta := (m[q][q] - m[p][p]) / (2 * m[p][q])
				t := math.Copysign(1, theta) / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				for k := range n {
					mkp, mkq := m[k][p], m[k][q]
					m[k][p], m[k][q] = c*mkp-s*mkq, s*mkp+c*mkq
				}
				for k := range n {
					mpk, mqk := m[p][k], m[q][k]
					m[p][k], m[q][k] = c*mpk-s*mqk, s*mpk+c*mqk
				}
				for k := range n {
					vkp, vkq := v[k][p], v[k][q]
					v[k][p], v[k][q] = c*vkp-s*vkq, s*vkp+c*vkq
				}
			}
		}
	}
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = m[i][i]
	}
	return vals, v
}
