package tune

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// cmaSampler is the covariance matrix adaptation evolution strategy with
// the update equations and default constants of Hansen, "The CMA Evolution
// Strategy: A Tutorial" (arXiv:1604.00772), with positive recombination
// weights only, over the unit cube of the parameters (each on its own (log)
// scale; a Choice, Discrete or Int by equal slices). A generation is λ
// consecutive trials, λ = 4+⌊3 ln n⌋ at first; a trial samples from the
// distribution after every generation it may see in full, so a seed fixes
// every trial whatever the parallelism, and a resumed study recomputes the
// same distributions from the recorded trials.
//
// A run starts at a point drawn from the seed (not the centre of the cube,
// which for a Choice is always its middle value), with step size Sigma (a
// quarter of the cube unless set). It restarts with twice the population
// (IPOP: Auger and Hansen, CEC 2005) from a new random point when its step
// size has collapsed or its best value has not improved for 8+⌈10n/λ⌉
// generations (RestartStrategy "ipop", the default; "none" turns it off).
// A Choice, Discrete or Int whose spread has shrunk below
// half a slice is moved to another value in one sample of five, as the
// integer mutation of Hansen's "A CMA-ES for Mixed-Integer Nonlinear
// Optimization" (INRIA RR-7751, 2011), so that a discrete dimension keeps
// being explored. A sample outside the cube is redrawn, up to 100 times,
// then clipped.
type cmaSampler struct {
	l      *Local
	dims   []dim
	n      int
	sigma0 float64
	// x0 is the first run's mean; nil draws it from the seed.
	x0 []float64
	// c0 and sigmaC0 are the first run's covariance and step size; nil
	// is the identity with sigma0 (restarts always are).
	c0      [][]float64
	sigmaC0 float64
	states  []*cmaState
	// restarts is off under RestartStrategy("none").
	restarts bool
	// stream separates the random streams of separate CMA-ES instances
	// in one study (Auto runs one per stagnation).
	stream uint64
}

type cmaState struct {
	mean   []float64
	sigma  float64
	c      [][]float64
	pc, ps []float64
	b      [][]float64 // eigenvectors of c, as columns
	d      []float64   // square roots of its eigenvalues
	gen    int         // generations since the run started
	first  int         // the index, in the sampler's trials, of the generation's first trial
	lambda int
	mu     int
	run    int     // restarts so far
	best   float64 // the run's best value so far (minimised)
	stall  int     // generations without improving best
}

func newCMASampler(l *Local) *cmaSampler {
	n := len(l.params)
	sigma := 0.25
	if v, ok := l.algorithm.setting("sigma"); ok {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 {
			sigma = f
		}
	}
	strategy, _ := l.algorithm.setting("restart_strategy")
	return &cmaSampler{l: l, dims: dimsOf(l.params), n: n, sigma0: sigma, restarts: strategy != "none"}
}

// fresh is the state of run number run, starting at trial first with
// population lambda.
func (s *cmaSampler) fresh(run, first, lambda int, mean []float64, sigma float64) *cmaState {
	n := s.n
	st := &cmaState{mean: mean, sigma: sigma, c: identity(n), pc: make([]float64, n), ps: make([]float64, n),
		b: identity(n), d: make([]float64, n), first: first, lambda: lambda, mu: lambda / 2, run: run, best: math.Inf(1)}
	for k := range n {
		st.d[k] = 1
	}
	return st
}

// startMean is the mean of run number run: x0 for the first run when set,
// otherwise a point drawn from the seed.
func (s *cmaSampler) startMean(run int) []float64 {
	if run == 0 && s.x0 != nil {
		return slices.Clone(s.x0)
	}
	rng := rand.New(rand.NewPCG(uint64(s.l.seed), 1<<61|s.stream<<20|uint64(run)))
	m := make([]float64, s.n)
	for k := range m {
		m[k] = 0.1 + 0.8*rng.Float64()
	}
	return m
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

// tell updates st with its generation's succeeded trials, or restarts.
func (s *cmaSampler) tell(st *cmaState, history []TrialResult) *cmaState {
	n := float64(s.n)
	gen := history[st.first : st.first+st.lambda]
	ranked := sortByObjective(s.l.objective, gen)
	next := &cmaState{mean: st.mean, sigma: st.sigma, c: st.c, pc: st.pc, ps: st.ps, b: st.b, d: st.d, gen: st.gen + 1,
		first: st.first + st.lambda, lambda: st.lambda, mu: st.mu, run: st.run, best: st.best, stall: st.stall + 1}
	if len(ranked) > 0 {
		if v := s.l.objective.minimised(ranked[0].Value); v < st.best {
			next.best, next.stall = v, 0
		}
	}
	if s.restarts && (next.stall >= 8+int(math.Ceil(10*n/float64(st.lambda))) || st.sigma*slices.Max(st.d) < 1e-4) {
		return s.fresh(st.run+1, next.first, 2*st.lambda, s.startMean(st.run+1), s.sigma0)
	}
	mu := min(st.mu, len(ranked))
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
	next.mean, next.ps, next.pc = mean, ps, pc
	next.sigma = st.sigma * math.Exp(math.Min(1, (cs/ds)*(psNorm/chiN-1)))
	next.setCovariance(c)
	return next
}

// setCovariance sets st's covariance c and its eigendecomposition: the
// eigenvectors as columns of b, the square roots of the eigenvalues in d.
func (st *cmaState) setCovariance(c [][]float64) {
	vals, vecs := jacobiEigen(c)
	st.c, st.b, st.d = c, vecs, make([]float64, len(vals))
	for k, v := range vals {
		st.d[k] = math.Sqrt(math.Max(v, 1e-20))
	}
}

func (s *cmaSampler) sample(i int, history []TrialResult, _ []map[string]any) map[string]any {
	return fromUnit(s.l.params, s.sampleUnit(i, history))
}

// sampleUnit is trial i's point of the unit cube, i and history counted
// in the sampler's own trials.
func (s *cmaSampler) sampleUnit(i int, history []TrialResult) []float64 {
	if len(s.states) == 0 {
		lambda := 4 + int(math.Floor(3*math.Log(float64(s.n))))
		st := s.fresh(0, 0, lambda, s.startMean(0), s.sigma0)
		if s.c0 != nil {
			st.sigma = s.sigmaC0
			st.setCovariance(s.c0)
		}
		s.states = []*cmaState{st}
	}
	// The distribution after every generation both before trial i's own and
	// wholly seen.
	for last := s.states[len(s.states)-1]; last.first+last.lambda <= len(history) && last.first+last.lambda <= i; last = s.states[len(s.states)-1] {
		s.states = append(s.states, s.tell(last, history))
	}
	st := s.states[0]
	for _, c := range s.states {
		if c.first <= i {
			st = c
		}
	}
	rng := rand.New(rand.NewPCG(uint64(s.l.seed), uint64(i)<<8|3|s.stream<<40))
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
	for k, dm := range s.dims {
		x[k] = math.Min(math.Max(x[k], 0), math.Nextafter(1, 0))
		ns := dm.slices()
		if ns == 0 || st.sigma*math.Sqrt(st.c[k][k]) >= 0.5/float64(ns) || rng.Float64() >= 0.2 {
			continue
		}
		// The integer mutation: another value of a dimension the
		// distribution no longer moves in.
		at := min(int(x[k]*float64(ns)), ns-1)
		to := at + 1 - 2*rng.IntN(2)
		if dm.category {
			to = (at + 1 + rng.IntN(ns-1)) % ns
		}
		if to < 0 || to >= ns {
			to = 2*at - to // the other neighbour
		}
		x[k] = (float64(to) + 0.5) / float64(ns)
	}
	return x
}

// slices is the number of values of a Choice, Discrete, Int or stepped
// Float on the unit scale, or 0 for a continuous Float (or one of more
// than 1000 values).
func (dm dim) slices() int {
	n := 0
	switch {
	case dm.category:
		n = dm.k
	case dm.p.kind == DiscreteKind:
		n = len(dm.p.values)
	case dm.p.kind == IntKind || dm.p.step != 0:
		n = dm.p.gridSize()
	}
	if n < 2 || n > 1000 {
		return 0
	}
	return n
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
