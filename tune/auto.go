package tune

import (
	"github.com/cubestudio/cube"

	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// AlgorithmAuto is the default algorithm: Auto.
const AlgorithmAuto = "auto"

// Auto chooses the algorithm from the search space (how many dimensions,
// of which kinds), the budget (MaxTrials) and the parallelism, and is the
// default of NewLocal and New. Plan says what it chose and why.
//
// Locally it runs a design first: the centre of the space (the middle of
// every range on its own scale, where users mostly set what they expect to
// work), then space-filling Sobol points, for as long as every trial has
// had the same value (a flat region has nothing to model). On a mostly
// numeric space a Gaussian process with expected improvement follows (its
// kernel a product over the parameters, or from the 20th trial their sum
// where that fits the trials better, as on a separable objective), alone while it improves; once autoPatience of its proposals in a row have not, a
// portfolio opens: the GP, univariate TPE (Optuna's estimator: strong on
// separable objectives), CMA-ES started at the best trial so far with the
// shape of the better half of the trials (a warm start; with IPOP
// restarts: strong on multimodal and ill-conditioned ones) and, on a
// space without Choices, a quadratic model of the best trials while it
// fits them (the curvature of a rotated, ill-conditioned basin), and in
// the last two thirds of the budget (from trial 50 without MaxTrials) a
// trust region: expected improvement, of a GP fitted to the basin's
// values (those above their lower quartile cut to it), within a box
// around the best trial and a Gaussian with the shape of the better half
// of the trials, both of which grow after new bests and shrink without
// them (TuRBO-1), which refines the basin the study has found; each trial goes to the sampler whose
// recent proposals rank best among the trials so far. When most
// dimensions are Choices, or there are too many for a GP, multivariate TPE
// alone. Whichever proposes, Auto does not run a configuration again that
// a trial has run or is running while one is left: on a space with a grid
// (Ints, Choices, Discretes, Steps) a proposal that repeats one moves to
// the configuration not yet run, of its nearest and those along one
// parameter, that the GP expects best (a nearest one drawn from the seed
// where no GP runs). TrialResult.Sampler says which one
// proposed each trial (the centre counts as the design's, sobol). In an
// Experiment it renders the Katib algorithm Plan names (Katib's suggestion
// services run one algorithm per Experiment). Seed is its only setting.
func Auto() Algorithm { return Algorithm{name: AlgorithmAuto} }

// samplerQuadratic names the proposals of Auto's quadratic model
// (TrialResult.Sampler); it is not an Algorithm of its own.
const samplerQuadratic = "quadratic"

// samplerTrust names the proposals of Auto's trust region: expected
// improvement within a box around the best trial (TrialResult.Sampler); it
// is not an Algorithm of its own.
const samplerTrust = "trust-region"

// autoRules are Auto's settings: only the seed, which the Katib algorithm
// it maps to takes too.
var autoRules = map[string]settingRule{"random_state": numpySeed}

// Plan is what Auto chose for a study, and why.
type Plan struct {
	// Local is what the local tuner runs, in order.
	Local string
	// Katib is the algorithm an Experiment renders, with its settings.
	Katib Algorithm
	// Reason says which features of the study decided both.
	Reason string
}

// Plan returns what Auto chooses for a local study: the local samplers
// and the Katib algorithm an Experiment with the same space, MaxTrials,
// Parallelism and seed would run. For another algorithm it says that the
// algorithm was set.
func (l *Local) Plan() Plan {
	if l == nil {
		return Plan{}
	}
	if l.algorithm.name != AlgorithmAuto {
		return Plan{Local: l.algorithm.name, Katib: l.algorithm, Reason: "set with Algorithm"}
	}
	return planFor(l.params, l.trials, l.parallel, l.algorithm.Seed(l.seed))
}

// Plan returns what Auto (or another algorithm, which is kept as it is)
// runs over params with a budget of maxTrials (0: unset) and parallelism
// trials at once; an Experiment renders Plan().Katib.
func (a Algorithm) Plan(params []Param, maxTrials, parallelism int) Plan {
	if a.name != AlgorithmAuto {
		return Plan{Local: a.name, Katib: a, Reason: "set with Algorithm"}
	}
	return planFor(params, maxTrials, parallelism, a)
}

// spaceFeatures are what Auto reads from a search space.
type spaceFeatures struct {
	dims, floats, ints, choices, discretes int
	logs, steps                            int
	choiceShare                            float64
}

func featuresOf(params []Param) spaceFeatures {
	f := spaceFeatures{dims: len(params)}
	for _, p := range params {
		switch p.kind {
		case FloatKind:
			f.floats++
		case IntKind:
			f.ints++
		case ChoiceKind:
			f.choices++
		case DiscreteKind:
			f.discretes++
		}
		if p.log {
			f.logs++
		}
		if p.step != 0 {
			f.steps++
		}
	}
	if f.dims > 0 {
		f.choiceShare = float64(f.choices) / float64(f.dims)
	}
	return f
}

const (
	// autoMaxGPDims is the most dimensions Auto gives a GP: beyond, its
	// length scales are more than the trials of a tuning budget can fit.
	autoMaxGPDims = 32
	// autoMaxGPTrials is the trial from which Auto's model is TPE: the
	// GP's cost grows with the cube of the trials.
	autoMaxGPTrials = 400
	// The portfolio's window of proposals scored, the proposals a sampler
	// makes before it is scored, and every how many trials the runner-up
	// proposes.
	autoWindow  = 8
	autoTry     = 2
	autoRefresh = 6
	// autoPatience is how many proposals in a row the model makes without
	// a new best before the portfolio opens to the other samplers.
	autoPatience = 3
	// autoAxis is about how many values along each parameter's grid a
	// repeated proposal may move to (moveTo): all of a grid of up to 64
	// values, else the nearest 64.
	autoAxis = 64
	// autoMinInitial is the smallest design before the model: the GP's own
	// random start, which is Optuna's TPESampler n_startup_trials default
	// too (optuna/samplers/_tpe/sampler.py). With 6 points on a 3-D
	// Rastrigin the GP's first fit takes one ripple for the basin: Auto's
	// median regret at 25 trials was 1.23 times Optuna TPE's over 40
	// seeds, 0.97 with 10 (testdata/benchmark-2026-12-05.md, the third
	// held-out set).
	autoMinInitial = gpInitial
	// autoTrustUnbounded is the trial from which the trust region joins
	// the portfolio when MaxTrials is unset.
	autoTrustUnbounded = 50
	// trustOffsetQ is the quantile of the values whose tenth offsets the
	// trust region model's log warping (the global GP's is the median's):
	// around the best trial the values differ by less than a tenth of the
	// median, and that offset flattens the basin the region searches. The
	// values above it are cut to it (warpAt), the basin's rim.
	trustOffsetQ = 0.25
)

// autoTrustFrom is the trial from which the trust region joins the
// portfolio: the last two thirds of the budget, where a study refines the
// best basin it has found rather than looks for another. It joined at
// half the budget until the region followed valleys across the axes
// (maximizeLocalEI). From a third, over seeds 0 to 79 of the suite's 34
// objectives, Auto's median regret at 50 trials was 0.55 times as high
// (geometric mean; 24 lower, 10 higher) and at 100 trials 1.10 times (16
// lower, 17 higher), and the cells at or below Optuna's bar rose from 71
// and 68 of 72 to 72 and 70 (testdata/benchmark-2026-12-05.md,
// 2026-12-07).
func autoTrustFrom(trials int) int {
	if trials <= 0 {
		return autoTrustUnbounded
	}
	return trials / 3
}

// autoInitial is the size of the space-filling design: enough points to
// fit a first model, at least autoMinInitial and at most a fifth of the
// budget.
func autoInitial(dims, trials int) int {
	n := min(max(dims+2, autoMinInitial), 12)
	if trials > 0 {
		n = min(n, max(trials/5, 3))
	}
	return n
}

// autoModel is the local model Auto runs after the design, and why.
func autoModel(f spaceFeatures) (string, string) {
	switch {
	case f.dims > autoMaxGPDims:
		return AlgorithmMultivariateTPE, fmt.Sprintf("%d dimensions are more than a GP's length scales can be fitted to in a tuning budget (at most %d), so multivariate TPE", f.dims, autoMaxGPDims)
	case f.choiceShare > 0.5:
		return AlgorithmMultivariateTPE, fmt.Sprintf("%d of %d dimensions are Choices, which TPE models by their own counts rather than as one-hot coordinates of a GP, so multivariate TPE", f.choices, f.dims)
	}
	why := fmt.Sprintf("%d dimensions, %d of them Choices: a Gaussian process with expected improvement learns the most from each trial", f.dims, f.choices)
	if f.dims > 1 {
		why += fmt.Sprintf(" (its kernel a product over the parameters, or from trial %d their sum where that fits the trials better: an objective that is a sum of one term per parameter, per value of the Choices where they move the others' best values)", gpAdditiveFrom)
	}
	return AlgorithmBayesian, why
}

func planFor(params []Param, trials, parallel int, a Algorithm) Plan {
	f := featuresOf(params)
	model, why := autoModel(f)
	initial := autoInitial(f.dims, trials)
	local := fmt.Sprintf("a design of %d trials (the centre of the space, then sobol), then %s", initial, model)
	if model == AlgorithmBayesian {
		local = fmt.Sprintf("a design of %d trials (the centre of the space, then sobol), then %s until %d of its proposals in a row do not improve, then a portfolio of %s, tpe (univariate), cmaes started at the best trial so far with the shape of the better half of the trials (IPOP restarts)%s: each trial goes to the one whose last %d proposals did best",
			initial, model, autoPatience, model, quadText(f), autoWindow)
		local += fmt.Sprintf("; from trial %d a trust region joins it: the expected improvement of a GP fitted to the basin within a box around the best trial and a Gaussian with the shape of the better half of the trials, larger after new bests and smaller without them", autoTrustFrom(trials))
	}
	if model == AlgorithmBayesian && (trials == 0 || trials > autoMaxGPTrials) {
		local += fmt.Sprintf("; from trial %d, %s", autoMaxGPTrials, AlgorithmMultivariateTPE)
	}
	if f.ints+f.choices+f.discretes+f.steps > 0 {
		local += "; a proposal that repeats a trial run or running moves to "
		if model != AlgorithmBayesian {
			local += "a nearest configuration not yet run"
		} else {
			local += "the configuration not yet run, of its nearest and those along one parameter, that the GP expects best"
			if trials == 0 || trials > autoMaxGPTrials {
				local += fmt.Sprintf(" (from trial %d a nearest one)", autoMaxGPTrials)
			}
		}
	}
	reason := why
	if parallel > 1 {
		reason += fmt.Sprintf("; %d trials at once: the model counts running trials as bad ones (the constant liar)", parallel)
		if model == AlgorithmBayesian && f.dims > 1 {
			reason += ", with the product kernel while any are running"
		}
	}
	katib, katibWhy := autoKatib(f, params, trials, parallel)
	if seed, ok := a.setting("random_state"); ok {
		katib = katib.Seed(atoi(seed))
	}
	return Plan{Local: local, Katib: katib, Reason: reason + ". In Katib: " + katibWhy}
}

// quadText names the quadratic model in Plan when the space can have it.
func quadText(f spaceFeatures) string {
	if !quadSpace(f) {
		return ""
	}
	return " and a quadratic model of the best trials while it fits them"
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// autoKatib maps a study to the algorithm Katib v0.19.0 runs best for it
// among those its suggestion services implement (katib-config's
// runtime.suggestions; the services under pkg/suggestion/v1beta1):
//
//   - cmaes (goptuna, pkg/suggestion/v1beta1/goptuna/converter.go, which
//     reads restart_strategy) needs two or more Float or Int parameters and
//     no Log (goptuna ignores it) and, being a local search, a budget of
//     several generations: a numeric space with at least 100 trials gets it,
//     with IPOP restarts;
//   - bayesianoptimization (skopt, pkg/suggestion/v1beta1/skopt/service.py)
//     samples every Float log-uniformly and ignores steps: a space whose
//     Floats all have Log, with no Int Log and no Step, a budget up to 100
//     and at most 4 trials at once (its fit is sequential) gets it;
//   - multivariate-tpe (optuna, pkg/suggestion/v1beta1/optuna/service.py)
//     takes every kind, Log and Step and models parameters jointly: every
//     other study.
func autoKatib(f spaceFeatures, params []Param, trials, parallel int) (Algorithm, string) {
	numeric := f.floats + f.ints
	if numeric == f.dims && numeric >= 2 && f.logs == 0 && (trials == 0 || trials >= 100) {
		return CMAES().RestartStrategy("ipop"), fmt.Sprintf("cmaes with IPOP restarts: %d Float or Int parameters without Log and a budget of %s trials", numeric, budgetText(trials))
	}
	skopt := f.steps == 0 && f.floats > 0 && f.dims <= 10
	for _, p := range params {
		if (p.kind == FloatKind && !p.log) || (p.kind == IntKind && p.log) {
			skopt = false
		}
	}
	if skopt && trials > 0 && trials <= 100 && parallel <= 4 {
		return Bayesian(), fmt.Sprintf("bayesianoptimization (skopt's GP): every Float has Log, %d dimensions and %d trials", f.dims, trials)
	}
	var why []string
	switch {
	case f.choices+f.discretes > 0:
		why = append(why, "Choices or Discretes")
	case f.logs > 0:
		why = append(why, "Log parameters goptuna ignores")
	case numeric < 2:
		why = append(why, "fewer than two numeric parameters for CMA-ES")
	default:
		why = append(why, fmt.Sprintf("a budget of %s trials, too few for CMA-ES's generations", budgetText(trials)))
	}
	return MultivariateTPE(), "multivariate-tpe (Optuna): " + strings.Join(why, ", ") + ", which it models jointly with every other kind"
}

func budgetText(trials int) string {
	if trials == 0 {
		return "unlimited"
	}
	return strconv.Itoa(trials)
}

// autoSampler runs Auto's portfolio locally. Which sampler proposes trial
// j depends only on the trials j may see (those before j-parallel+1), so a
// seed fixes every trial whatever the timing, and a resumed study
// recomputes the same choices.
type autoSampler struct {
	l        *Local
	initial  int
	model    string
	sobol    *sobolSampler
	gp       *gpSampler
	trust    *gpSampler  // the trust region's model: the GP with a local warping
	tpe      *tpeSampler // multivariate
	tpe1     *tpeSampler // univariate
	quad     *quadSampler
	cma      *cmaSampler
	decided  []string // per trial, the sampler that proposed it
	opened   int      // the trial from which the portfolio is open; -1 while the model runs alone
	cmaTrial []int    // the trials CMA-ES proposed, in order
}

func newAutoSampler(l *Local) *autoSampler {
	f := featuresOf(l.params)
	model, _ := autoModel(f)
	s := &autoSampler{l: l, initial: autoInitial(f.dims, l.trials), model: model,
		gp: &gpSampler{l: l}, trust: &gpSampler{l: l, offsetQ: trustOffsetQ}, tpe: &tpeSampler{l: l, multivariate: true}, tpe1: &tpeSampler{l: l}, quad: newQuadSampler(l), opened: -1}
	if len(l.params) <= len(joeKuo)+1 {
		s.sobol = newSobolSampler(l)
	}
	return s
}

// decide is the sampler of trial j, given the trials it may see. The
// design goes on while fewer than two trials have succeeded or all have
// one value: a model has nothing to rank then, and its best trial would
// be an arbitrary one of the ties (on a needle in a flat 3-D space, found
// within 100 trials on 45 of 50 seeds, after a median 24; random search
// 49 and 19; the design going on, 50 and 15). After
// the design the model proposes alone until autoPatience of its proposals
// in a row have not improved on the best trial; then the portfolio opens.
// Each sampler (the model, univariate TPE, CMA-ES, while it fits the
// trials the quadratic, and from autoTrustFrom the trust region) is scored
// by where its last autoWindow proposals since the opening did among the
// trials seen (1 for a new best, else half
// the fourth power of its percentile, so that the proposals that improve,
// then those among the best, count most); a sampler with fewer than
// autoTry proposals scored goes first (the model last: it has just had its
// turn), the best scored proposes, and every autoRefresh-th trial one of
// the others does, in turn, so that no score goes stale. On a smooth
// objective the model's proposals rank best and it proposes most trials;
// on a rugged or separable one univariate TPE or CMA-ES takes over, in an
// ill-conditioned basin the quadratic.
func (s *autoSampler) decide(j int, seen []TrialResult) string {
	succeeded, lo, hi := 0, math.Inf(1), math.Inf(-1)
	for _, r := range seen {
		if r.State == cube.Succeeded {
			succeeded++
			lo, hi = math.Min(lo, r.Value), math.Max(hi, r.Value)
		}
	}
	if j < s.initial || succeeded < 2 || lo == hi {
		if s.sobol != nil {
			return AlgorithmSobol
		}
		return AlgorithmRandom
	}
	model := s.modelAt(j)
	if s.model != AlgorithmBayesian {
		// On a space of mostly Choices (or too many dimensions for a GP)
		// multivariate TPE alone: CMA-ES samples a continuous Gaussian and
		// wastes its trials on Choices (Optuna's CmaEsSampler leaves them
		// to independent sampling, optuna/samplers/_cmaes.py), and
		// univariate TPE loses the interactions between Choices that the
		// multivariate one keeps.
		return model
	}
	if s.opened < 0 {
		if !s.stalled(model, seen) {
			return model
		}
		s.opened = j
	}
	arms := []string{model, AlgorithmTPE, AlgorithmCMAES}
	if j >= autoTrustFrom(s.l.trials) && j < autoMaxGPTrials {
		arms = append(arms, samplerTrust)
	}
	if s.quad.useful(seen) {
		arms = append(arms, samplerQuadratic)
	}
	// The percentile of each seen succeeded trial (1 for the best), and
	// the trials that improved on every trial their proposer knew.
	ranked := sortByObjective(s.l.objective, seen)
	pct := make(map[int]float64, len(ranked))
	for k, r := range ranked {
		pct[r.Number] = 1 - float64(k)/float64(max(len(ranked)-1, 1))
	}
	improved := s.improvements(seen)
	type arm struct {
		name  string
		seen  int
		score float64
	}
	var scored []arm
	// Only proposals since the portfolio opened count: the model's
	// proposals before it, made on a handful of trials, explored. The
	// others get their first proposals before the model's are scored. A
	// sampler's first autoTry proposals are made whether or not they have
	// been seen yet; with several trials at once, one whose proposals are
	// all still running is not ranked (counting only seen proposals, TPE
	// and CMA-ES each took five trials in a row when the portfolio opened
	// with four at once, their first ones still running).
	for _, a := range append(slices.Clone(arms[1:]), model) {
		// The model's proposals count under either of its names.
		by := func(k int) bool { return s.decided[k] == a || (a == model && s.decided[k] == s.model) }
		made := 0
		for k := s.opened; k < len(s.decided); k++ {
			if by(k) {
				made++
			}
		}
		if made < autoTry {
			return a
		}
		sum, n := 0.0, 0
		for k := min(len(seen), len(s.decided)) - 1; k >= s.opened && n < autoWindow; k-- {
			if !by(k) {
				continue
			}
			switch p, ok := pct[seen[k].Number]; {
			case improved[k]:
				sum++
			case ok:
				sum += p * p * p * p / 2 // a proposal among the best counts most
			}
			n++
		}
		if n > 0 {
			scored = append(scored, arm{a, n, sum / float64(n)})
		}
	}
	if len(scored) == 0 {
		return model
	}
	slices.SortStableFunc(scored, func(a, b arm) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(b2f(b.name == model), b2f(a.name == model))
	})
	if j%autoRefresh == 0 && len(scored) > 1 {
		// The others in turn.
		return scored[1+(j/autoRefresh)%(len(scored)-1)].name
	}
	return scored[0].name
}

// modelAt is Auto's model at trial j: the GP hands over to multivariate
// TPE at autoMaxGPTrials.
func (s *autoSampler) modelAt(j int) string {
	if s.model == AlgorithmBayesian && j >= autoMaxGPTrials {
		return AlgorithmMultivariateTPE
	}
	return s.model
}

// trustLength is the side of the trust region after its proposals among
// the seen trials, by TuRBO-1's rule (Eriksson et al., NeurIPS 2019, for
// one trial at a time): 0.8 at first, doubled (up to 1.6) after 3 new bests
// in a row, halved after max(4, d) proposals in a row without one, and
// back to 0.8 once below 2⁻⁷ (TuRBO restarts there). Unlike TuRBO, any new
// best counts: TuRBO's success is an improvement by more than 1e-3 of the
// best value's magnitude (uber-research/TuRBO turbo/turbo_1.py,
// Turbo1._adjust_length), which depends on where the objective's zero is.
func (s *autoSampler) trustLength(seen []TrialResult) float64 {
	const initial, most, least = 0.8, 1.6, 1.0 / 128
	length, succ, fail := initial, 0, 0
	tauFail := max(4, len(s.l.params))
	for _, improved := range s.outcomes(seen, func(d string) bool { return d == samplerTrust }) {
		if improved {
			succ, fail = succ+1, 0
		} else {
			succ, fail = 0, fail+1
		}
		if succ == 3 {
			length, succ = min(2*length, most), 0
		}
		if fail == tauFail {
			length, fail = length/2, 0
		}
		if length < least {
			length = initial
		}
	}
	return length
}

// stalled says whether the model's last autoPatience proposals among the
// seen trials all failed to improve on the best trial before them.
func (s *autoSampler) stalled(model string, seen []TrialResult) bool {
	since := 0
	for _, improved := range s.outcomes(seen, func(d string) bool { return d == model || d == s.model }) {
		if improved {
			since = 0
		} else {
			since++
		}
	}
	return since >= autoPatience
}

// outcomes says, in order, for each seen trial that a sampler proposedBy
// accepts proposed, whether it improved on every trial its proposer knew
// (improvements).
func (s *autoSampler) outcomes(seen []TrialResult, proposedBy func(string) bool) []bool {
	var out []bool
	for k, improves := range s.improvements(seen) {
		if k < len(s.decided) && proposedBy(s.decided[k]) {
			out = append(out, improves)
		}
	}
	return out
}

// improvements says, for each seen trial, whether it succeeded with a
// value better than every trial seen when it was proposed: trial k saw
// those before k-parallel+1, as its proposer did. Against every trial
// before it instead, of trials proposed together at most one counts (the
// others ran beside it without its value), so with four at once the GP's
// proposals stalled three times as often and the portfolio opened early.
func (s *autoSampler) improvements(seen []TrialResult) []bool {
	out := make([]bool, len(seen))
	// known[m] is the best of the first m seen trials (nil: none yet).
	known := make([]*TrialResult, len(seen)+1)
	for k := range seen {
		known[k+1] = known[k]
		if r := &seen[k]; r.State == cube.Succeeded && (known[k] == nil || s.l.objective.better(r.Value, known[k].Value)) {
			known[k+1] = r
		}
	}
	for k := range seen {
		ref := known[max(0, k-s.l.parallel+1)]
		out[k] = seen[k].State == cube.Succeeded && (ref == nil || s.l.objective.better(seen[k].Value, ref.Value))
	}
	return out
}

func (s *autoSampler) sample(i int, history []TrialResult, pending []map[string]any) map[string]any {
	return s.fresh(i, s.propose(i, history, pending), history, pending)
}

func (s *autoSampler) propose(i int, history []TrialResult, pending []map[string]any) map[string]any {
	seenUpTo := func(j int) []TrialResult {
		return history[:min(max(0, j-s.l.parallel+1), len(history))]
	}
	for j := len(s.decided); j <= i; j++ {
		d := s.decide(j, seenUpTo(j))
		s.decided = append(s.decided, d)
		if d == AlgorithmCMAES {
			if s.cma == nil {
				s.cma = s.newCMA(seenUpTo(j))
			}
			s.cmaTrial = append(s.cmaTrial, j)
		}
	}
	switch d := s.decided[i]; {
	case i == 0 && (d == AlgorithmSobol || d == AlgorithmRandom):
		return s.centre()
	case d == AlgorithmSobol:
		return s.sobol.sample(i, history, pending)
	case d == AlgorithmRandom:
		return (&randomSampler{l: s.l}).sample(i, history, pending)
	}
	switch s.decided[i] {
	case AlgorithmBayesian:
		return s.gp.sample(i, history, pending)
	case AlgorithmMultivariateTPE:
		return s.tpe.sample(i, history, pending)
	case AlgorithmTPE:
		return s.tpe1.sample(i, history, pending)
	case samplerQuadratic:
		return s.quad.sample(i, history, pending)
	case samplerTrust:
		return s.trust.sampleWithin(i, history, pending, s.trustLength(seenUpTo(i)))
	}
	// CMA-ES sees its own trials only, numbered in its own order.
	var own []TrialResult
	k := 0
	for n, j := range s.cmaTrial {
		if j < len(history) {
			own = append(own, history[j])
		}
		if j == i {
			k = n
		}
	}
	return fromUnit(s.l.params, s.cma.sampleUnit(k, own))
}

// fresh returns values, unless a trial seen or running has them already:
// then a configuration none has (moveTo), of the nearest ones, by steps
// along the parameters with a grid (an Int, a Float with Step, a
// Discrete; a Choice's other values are one step away), and those along
// one parameter. On a grid a model's best proposal often rounds onto a
// trial it has run (its continuous optimum lies between grid points; on a
// 2-D Int grid a tenth of Auto's proposals did), and running it again
// learns nothing of a deterministic objective. The search for the nearest
// walks out from values through configurations that have run only, so it
// visits at most their neighbours. A space without a grid, or one whose
// every configuration has run, keeps values.
func (s *autoSampler) fresh(i int, values map[string]any, history []TrialResult, pending []map[string]any) map[string]any {
	taken := make(map[string]bool, len(history)+len(pending))
	for _, r := range history {
		taken[s.key(r.params)] = true
	}
	for _, p := range pending {
		taken[s.key(p)] = true
	}
	if !taken[s.key(values)] {
		return values
	}
	visited := map[string]bool{s.key(values): true}
	for frontier := []map[string]any{values}; len(frontier) > 0; {
		var next, near []map[string]any
		for _, at := range frontier {
			for _, p := range s.l.params {
				for _, v := range p.adjacent(at[p.name]) {
					c := maps.Clone(at)
					c[p.name] = v
					k := s.key(c)
					switch {
					case visited[k]:
					case taken[k]:
						next = append(next, c)
					default:
						near = append(near, c)
					}
					visited[k] = true
				}
			}
		}
		if len(near) > 0 {
			return s.moveTo(i, values, near, taken, history, pending)
		}
		frontier = next
	}
	return values
}

// moveTo is where a proposal (values) that repeats a configuration
// already run or running goes: of near, the nearest configurations not
// yet run, and those that differ from values in one parameter only (up to
// autoAxis values along its grid, nearest first), the one whose value the
// GP's posterior mean expects best. A repeat means the proposer has
// settled on a configuration that has run. Its nearest neighbours are
// where a local search goes next; the configurations along one parameter
// are where an objective that is separable, or nearly so, keeps its other
// basins. On Styblinski-Tang over three Ints in [-5, 5] (100 trials, 200
// seeds), with a repeat moved to a nearest configuration drawn from the
// seed, 130 studies ended above the minimum, most with one coordinate in
// the wrong basin; with this rule, none did. The mean rather than
// expected improvement: EI favoured the uncertain far ends of the axes,
// and on a rugged 2-D Int grid it found the exact optimum within 100
// trials on 41 of 200 seeds instead of 61 (the mean: 57, a difference
// within the sample). Where Auto runs no GP (modelAt), and before the GP
// can be fitted, a nearest configuration drawn from the seed.
func (s *autoSampler) moveTo(i int, values map[string]any, near []map[string]any, taken map[string]bool, history []TrialResult, pending []map[string]any) map[string]any {
	if s.modelAt(i) == AlgorithmBayesian {
		if c := s.gp.lowestMean(history, pending, slices.Concat(near, s.along(values, taken))); c != nil {
			return c
		}
	}
	return near[s.l.rngFor(i, 6).IntN(len(near))]
}

// along returns the configurations not taken that differ from values in
// one parameter, for each parameter its values along its grid nearest
// first, until about autoAxis of them have been visited.
func (s *autoSampler) along(values map[string]any, taken map[string]bool) []map[string]any {
	var out []map[string]any
	for _, p := range s.l.params {
		visited := map[any]bool{values[p.name]: true}
		for front := []any{values[p.name]}; len(front) > 0 && len(visited) < autoAxis; {
			var next []any
			for _, v := range front {
				for _, w := range p.adjacent(v) {
					if visited[w] {
						continue
					}
					visited[w] = true
					next = append(next, w)
					c := maps.Clone(values)
					c[p.name] = w
					if !taken[s.key(c)] {
						out = append(out, c)
					}
				}
			}
			front = next
		}
	}
	return out
}

// key is a configuration's identity: its values in the order of the
// parameters.
func (s *autoSampler) key(values map[string]any) string {
	var b strings.Builder
	for _, p := range s.l.params {
		fmt.Fprintf(&b, "%v\x00", values[p.name])
	}
	return b.String()
}

// centre is the design's first trial: the middle of every numeric range on
// its own scale (the geometric middle of a Log one) and of a Discrete's
// values, and a Choice drawn from the seed (its values have no middle).
// A user's ranges are mostly set around the values they expect to work
// (Optuna's CMA-ES starts at the same point, optuna/samplers/_cmaes.py
// _init_optimizer: mean = lower_bounds + (upper_bounds-lower_bounds)/2);
// when they are not, it costs one trial of the design.
func (s *autoSampler) centre() map[string]any {
	u := make([]float64, len(s.l.params))
	rng := s.l.rngFor(0, 5)
	for d, p := range s.l.params {
		u[d] = 0.5
		if p.kind == ChoiceKind {
			u[d] = rng.Float64()
		}
	}
	return fromUnit(s.l.params, u)
}

// newCMA starts CMA-ES at the best trial seen, with the shape of the
// better half of the trials seen: a warm start after Nomura et al.,
// "Warm Starting CMA-ES for Hyperparameter Optimization" (AAAI 2021,
// arXiv:2012.06932; the cmaes library's get_warm_start_mgd, which Optuna's
// CmaEsSampler calls for its source_trials, cmaes/_warm_start.py): the
// covariance Σ of those trials plus α²I (α = 0.1), split into the step
// size det(Σ)^(1/2n) and the covariance Σ/det(Σ)^(1/n). Here the trials
// are the study's own, weighted by CMA-ES's recombination weights and
// taken around the best trial rather than their mean, where the run
// starts. In a coupled basin (a valley across the axes) the first
// generation then samples along it rather than out of it. With fewer
// than three trials seen, and after an IPOP restart, a step of a fifth of
// the cube.
func (s *autoSampler) newCMA(seen []TrialResult) *cmaSampler {
	c := newCMASampler(s.l)
	c.sigma0 = 0.2
	c.stream = 1
	ranked := sortByObjective(s.l.objective, seen)
	if len(ranked) > 0 {
		c.x0 = c.toUnit(ranked[0].params)
	}
	if len(ranked) >= 3 {
		top := make([][]float64, max(3, len(ranked)/2))
		for i := range top {
			top[i] = c.toUnit(ranked[i].params)
		}
		c.sigmaC0, c.c0 = warmStart(c.x0, top, 0.1)
	}
	return c
}

// warmStart returns the step size and covariance of a CMA-ES run started
// at x0 with the shape of points (best first, weighted by CMA-ES's
// recombination weights around x0) plus alpha²I.
func warmStart(x0 []float64, points [][]float64, alpha float64) (float64, [][]float64) {
	n := len(x0)
	cov := spreadAround(x0, points, alpha)
	vals, _ := jacobiEigen(cov)
	logDet := 0.0
	for _, v := range vals {
		logDet += math.Log(math.Max(v, 1e-300))
	}
	sigma := math.Exp(logDet / float64(2*n))
	for a := range n {
		for b := range n {
			cov[a][b] /= sigma * sigma
		}
	}
	return sigma, cov
}

// spreadAround is the covariance around x0 of points (best first),
// weighted by CMA-ES's recombination weights, plus alpha²I: the shape of
// the better trials seen from the best one.
func spreadAround(x0 []float64, points [][]float64, alpha float64) [][]float64 {
	n := len(x0)
	w, _ := cmaWeights(len(points))
	cov := make([][]float64, n)
	for a := range cov {
		cov[a] = make([]float64, n)
		cov[a][a] = alpha * alpha
	}
	for i, x := range points {
		for a := range n {
			for b := range n {
				cov[a][b] += w[i] * (x[a] - x0[a]) * (x[b] - x0[b])
			}
		}
	}
	return cov
}

// proposer names the sampler that proposed trial i.
func (s *autoSampler) proposer(i int) string {
	if i < len(s.decided) {
		return s.decided[i]
	}
	return ""
}
