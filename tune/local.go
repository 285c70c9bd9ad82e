package tune

import (
	"github.com/cubestudio/cube"

	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrPruned is what Trial.Report returns once early stopping stops the
// trial; the trial function returns it (or any error wrapping it) and the
// trial counts as early-stopped, not failed.
var ErrPruned = errors.New("trial stopped early")

// EarlyStopped is how a local trial ends when early stopping stops it
// (it returned ErrPruned); a trial otherwise ends cube.Succeeded or
// cube.Failed.
const EarlyStopped cube.Phase = "EarlyStopped"

// Trial is one evaluation in a local study: its parameter values and a way
// to report intermediate values.
//
// Float, Int and String return a value, not an error, to keep trial code
// short; reading a parameter the space does not have, or one of another
// kind, returns the zero value and fails the trial once it returns, with an
// error naming the parameter, so that a misspelt name cannot turn the
// search into the optimisation of a constant.
type Trial struct {
	Number  int
	values  map[string]any
	order   []string
	study   *Local
	prior   []TrialResult // the completed trials early stopping compares with
	reports []float64
	pruned  bool
	misuse  []error // wrong reads and reports; they fail the trial
}

// param returns the value of the parameter name as a T, recording a misuse
// when the trial has no such parameter or it is of another kind.
func param[T any](t *Trial, method, name string) T {
	var zero T
	if t == nil {
		return zero
	}
	v, ok := t.values[name]
	if !ok {
		t.misuse = append(t.misuse, fmt.Errorf("%s(%q): the search space has no such parameter (it has %q)", method, name, slices.Sorted(maps.Keys(t.values))))
		return zero
	}
	x, ok := v.(T)
	if !ok {
		t.misuse = append(t.misuse, fmt.Errorf("%s(%q): the parameter is %s", method, name, kindReader(v)))
		return zero
	}
	return x
}

func kindReader(v any) string {
	switch v.(type) {
	case int:
		return "an Int: read it with Int"
	case string:
		return "a Choice: read it with String"
	}
	return "a Float or Discrete: read it with Float"
}

// Float returns the value of a Float or Discrete parameter. Any other name
// returns 0 and fails the trial.
func (t *Trial) Float(name string) float64 { return param[float64](t, "Float", name) }

// Int returns the value of an Int parameter. Any other name returns 0 and
// fails the trial.
func (t *Trial) Int(name string) int { return param[int](t, "Int", name) }

// String returns the value of a Choice parameter. Any other name returns
// "" and fails the trial.
func (t *Trial) String(name string) string { return param[string](t, "String", name) }

// Values returns the parameter values formatted as Katib assigns them.
func (t *Trial) Values() map[string]string {
	if t == nil {
		return map[string]string{}
	}
	return formatValues(t.values)
}

// errNoStudy is what Report returns on a Trial that no study made.
var errNoStudy = errors.New("report: the trial belongs to no study (trials come from Local.Run)")

// Report records the objective's value after step (the first report is
// step 1). With early stopping (MedianStop, HalvingStop, HyperbandStop) it
// returns ErrPruned once the trial is stopped; the trial function should
// then return.
func (t *Trial) Report(value float64) error {
	if t == nil || t.study == nil {
		return errNoStudy
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		// Early stopping would compare it, and Katib's collectors would
		// record it as text no service parses back: fail the trial.
		err := fmt.Errorf("report %d: %v is not a finite number", len(t.reports)+1, value)
		t.misuse = append(t.misuse, err)
		return err
	}
	t.reports = append(t.reports, value)
	if t.pruned {
		return ErrPruned
	}
	if es := t.study.earlyStopping; es != nil && t.study.stops(*es, t.Number, t.reports, t.prior) {
		t.pruned = true
		return ErrPruned
	}
	return nil
}

func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// TrialResult is a finished local trial.
type TrialResult struct {
	Number  int
	Values  map[string]string // as Katib assigns them
	Value   float64           // the objective value (NaN unless Succeeded)
	State   cube.Phase
	Reports []float64
	Err     error
	params  map[string]any
}

// Float returns the value of a Float or Discrete parameter (0 if absent).
func (r TrialResult) Float(name string) float64 { v, _ := r.params[name].(float64); return v }

// Int returns the value of an Int parameter (0 if absent).
func (r TrialResult) Int(name string) int { v, _ := r.params[name].(int); return v }

// String returns the value of a Choice parameter ("" if absent).
func (r TrialResult) String(name string) string { v, _ := r.params[name].(string); return v }

// Result is a finished local study.
type Result struct {
	Trials []TrialResult // by trial number
	Best   *TrialResult  // nil when no trial succeeded
}

// Func is a trial run as a Go function: it reads its parameters from the
// trial and returns the objective value.
type Func func(ctx context.Context, t *Trial) (float64, error)

// Local is the in-process tuner: the same search space, objective,
// algorithm and early stopping as an Experiment, with trials run as Go
// functions. Runs are deterministic for a seed, whatever the parallelism:
// trial i is sampled, and judged by early stopping, against exactly the
// trials 0..i-parallel, waiting for them to finish if needed.
type Local struct {
	params        []Param
	objective     Objective
	algorithm     Algorithm
	earlyStopping *EarlyStopping
	trials        int
	parallel      int
	seed          uint64
	constantLiar  bool
	studyPath     *string
	onProgress    func(LocalProgress)
}

// NewLocal starts a local study over params towards objective, with Random
// sampling, one trial at a time, 10 trials and seed 0 until set otherwise.
func NewLocal(objective Objective, params ...Param) *Local {
	return &Local{params: slices.Clone(params), objective: objective, algorithm: Random(), trials: 10, parallel: 1, constantLiar: true}
}

// LocalFrom starts a local study with an experiment's search space,
// objective, algorithm, early stopping, MaxTrials and Parallel.
func LocalFrom(e *Experiment) *Local {
	if e == nil {
		return NewLocal(Objective{})
	}
	l := NewLocal(e.objective, e.params...)
	if e.algorithm != nil {
		l.algorithm = *e.algorithm
	}
	if e.earlyStopping != nil {
		es := *e.earlyStopping
		l.earlyStopping = &es
	}
	if e.maxTrials != nil {
		l.trials = *e.maxTrials
	}
	if e.parallel != nil {
		l.parallel = *e.parallel
	}
	if v, ok := l.algorithm.setting("random_state"); ok {
		var s int
		if _, err := fmt.Sscan(v, &s); err == nil && s >= 0 {
			l.seed = uint64(s)
		}
	}
	return l
}

// Algorithm sets the sampler: Random, Grid, TPE or MultivariateTPE
// (replaces).
func (l *Local) Algorithm(a Algorithm) *Local {
	if l == nil {
		return nil
	}
	l.algorithm = a
	return l
}

// EarlyStop sets early stopping (MedianStop).
func (l *Local) EarlyStop(s EarlyStopping) *Local {
	if l == nil {
		return nil
	}
	l.earlyStopping = &s
	return l
}

// Trials sets the number of trials.
func (l *Local) Trials(n int) *Local {
	if l == nil {
		return nil
	}
	l.trials = n
	return l
}

// Parallelism sets how many trials run at once.
func (l *Local) Parallelism(n int) *Local {
	if l == nil {
		return nil
	}
	l.parallel = n
	return l
}

// Seed sets the seed of the sampler.
func (l *Local) Seed(seed uint64) *Local {
	if l == nil {
		return nil
	}
	l.seed = seed
	return l
}

// ConstantLiar sets whether the model-based samplers (TPE, MultivariateTPE,
// Bayesian) count the trials still running as bad ones, so that parallel
// trials spread out instead of all sampling the same promising spot (on by
// default; it only matters with Parallel above 1). TPE puts the running
// trials among the bad ones (Optuna's constant_liar); the Gaussian process
// takes their value to be the worst seen so far.
func (l *Local) ConstantLiar(on bool) *Local {
	if l == nil {
		return nil
	}
	l.constantLiar = on
	return l
}

// StudyFile stores the study in the file at path: every finished trial is
// appended and fsynced as it ends. Run on an existing file resumes the
// study: the trials it records are not run again, and the others get the
// values they would have had in an uninterrupted run (the file must come
// from the same space, objective, algorithm, early stopping, seed and
// parallelism, or Run says which differs). A record torn by a crash is
// ignored. Trials may be raised between runs.
func (l *Local) StudyFile(path string) *Local {
	if l == nil {
		return nil
	}
	l.studyPath = &path
	return l
}

// OnProgress calls fn each time a trial finishes (and once at the start
// when a study file holds finished trials), from one goroutine at a time,
// with the counts and the best trial so far. fn must not block for long:
// the study waits for it.
func (l *Local) OnProgress(fn func(LocalProgress)) *Local {
	if l == nil {
		return nil
	}
	l.onProgress = fn
	return l
}

// LocalProgress is a local study's state when a trial finishes.
type LocalProgress struct {
	Trials       int // the study's trials in all
	Finished     int // trials finished, resumed ones included
	Resumed      int // trials read from the study file
	Running      int
	Succeeded    int
	Failed       int
	EarlyStopped int
	Last         *TrialResult // the trial that just finished; nil in the report of resumed trials
	Best         *TrialResult // the best succeeded trial so far; nil when none succeeded
}

// maxLocalTrials bounds a local study: Run keeps every trial's result in
// memory (about 100 bytes each before the trial's own values).
const maxLocalTrials = 1 << 20

// localAlgorithms are the samplers the local tuner runs.
var localAlgorithms = []string{AlgorithmRandom, AlgorithmGrid, AlgorithmTPE, AlgorithmMultivariateTPE,
	AlgorithmSobol, AlgorithmCMAES, AlgorithmBayesian}

// localUnsupported are settings Katib's services take that the local
// samplers cannot honour, with the values they can.
var localUnsupported = map[string]map[string][]string{
	AlgorithmCMAES:    {"restart_strategy": {"none"}},
	AlgorithmBayesian: {"base_estimator": {"GP"}, "acq_func": {"EI"}, "acq_optimizer": {"auto", "sampling"}},
}

func (l *Local) validate() error { return l.validateList().ToAggregate() }

func (l *Local) validateList() field.ErrorList {
	if l == nil {
		return field.ErrorList{field.Required(field.NewPath("local"), "the study is nil: start it with tune.NewLocal")}
	}
	errs := l.objective.validate(field.NewPath("objective"))
	errs = append(errs, validateSpace(l.params, field.NewPath("parameters"))...)
	algPath := field.NewPath("algorithm")
	if !slices.Contains(localAlgorithms, l.algorithm.name) {
		errs = append(errs, field.NotSupported(algPath, l.algorithm.name, localAlgorithms))
	} else {
		errs = append(errs, validateSettings(l.algorithm.name, l.algorithm.settings, algorithmRules[l.algorithm.name], nil, algPath)...)
		for i, st := range l.algorithm.settings {
			if ok, limited := localUnsupported[l.algorithm.name][st.name]; limited && !slices.Contains(ok, st.value) {
				errs = append(errs, field.NotSupported(algPath.Child("algorithmSettings").Index(i).Child("value"), st.value, ok))
			}
		}
	}
	switch {
	case l.trials < 1:
		errs = append(errs, field.Invalid(field.NewPath("trials"), l.trials, "must be at least 1"))
	case l.trials > maxLocalTrials:
		// Run holds every trial's result: 2^40 trials were an allocation
		// that killed the process.
		errs = append(errs, field.Invalid(field.NewPath("trials"), l.trials, fmt.Sprintf("must be at most %d", maxLocalTrials)))
	}
	if l.parallel < 1 {
		errs = append(errs, field.Invalid(field.NewPath("parallelism"), l.parallel, "must be at least 1"))
	}
	if l.earlyStopping != nil {
		errs = append(errs, l.earlyStopping.validateLocal(field.NewPath("earlyStopping"))...)
	}
	if l.studyPath != nil && *l.studyPath == "" {
		errs = append(errs, field.Required(field.NewPath("studyFile"), "the study file needs a path"))
	}
	switch l.algorithm.name {
	case AlgorithmGrid:
		for i, p := range l.params {
			if p.gridSize() == 0 {
				errs = append(errs, field.Required(field.NewPath("parameters").Index(i).Child("step"), fmt.Sprintf("grid needs a step on Float %q", p.name)))
			}
		}
	case AlgorithmSobol:
		if len(l.params) > len(joeKuo)+1 {
			errs = append(errs, field.TooMany(field.NewPath("parameters"), len(l.params), len(joeKuo)+1))
		}
	}
	return errs
}

// Run runs the study: fn is called once per trial, at most Parallel at a
// time. It returns when every trial has finished, or when ctx ends (with the
// trials finished so far and ctx's error). A trial's error fails that
// trial, not the study, unless every trial fails: then Run returns the
// result and an error naming the first failure. A trial that fails because ctx ended is not
// recorded in the study file, so a resumed study runs it again.
func (l *Local) Run(ctx context.Context, fn Func) (*Result, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, errors.New("run local study: the trial function is nil")
	}
	results := make([]TrialResult, l.trials)
	done := make([]bool, l.trials)
	params := make([]map[string]any, l.trials)
	var store *studyFile
	resumed := 0
	if l.studyPath != nil {
		st, recorded, err := l.openStudy(*l.studyPath)
		if err != nil {
			return nil, fmt.Errorf("run local study: %w", err)
		}
		defer st.close()
		store = st
		for _, r := range recorded {
			if r.Number < l.trials {
				results[r.Number], done[r.Number], params[r.Number] = r, true, r.params
				resumed++
			}
		}
	}
	s := newSampler(l)
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	var wg sync.WaitGroup
	running := 0
	var runErr, storeErr error
	report := func(last *TrialResult) {
		if l.onProgress != nil {
			l.onProgress(l.progress(results, done, resumed, running, last))
		}
	}
	if resumed > 0 {
		report(nil)
	}
	// Wake the waiting loop when ctx ends.
	stop := context.AfterFunc(ctx, func() { mu.Lock(); cond.Broadcast(); mu.Unlock() })
	defer stop()
	for i := 0; i < l.trials; i++ {
		mu.Lock()
		if done[i] {
			mu.Unlock()
			continue
		}
		// Trial i sees exactly trials 0..i-parallel: wait for them, and for a
		// free slot.
		for (running >= l.parallel || !prefixDone(done, i-l.parallel)) && ctx.Err() == nil && storeErr == nil {
			cond.Wait()
		}
		if ctx.Err() != nil || storeErr != nil {
			mu.Unlock()
			runErr = ctx.Err()
			break
		}
		seen := max(0, i-l.parallel+1)
		history := slices.Clone(results[:seen])
		// The trials between are running (or, after a resume, may have
		// finished): the same ones whatever the timing.
		var pending []map[string]any
		if l.constantLiar {
			pending = slices.Clone(params[seen:i])
		}
		running++
		mu.Unlock()

		values := s.sample(i, history, pending)
		params[i] = values
		t := &Trial{Number: i, values: values, study: l, prior: history}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := l.runOne(ctx, fn, t)
			var err error
			if store != nil && (r.State != cube.Failed || ctx.Err() == nil) {
				err = store.append(r)
			}
			mu.Lock()
			defer mu.Unlock()
			running--
			if err != nil {
				// Unrecorded, the trial would run again on resume: count it
				// as not finished, and start no more.
				storeErr = errors.Join(storeErr, err)
				cond.Broadcast()
				return
			}
			results[t.Number] = r
			done[t.Number] = true
			cond.Broadcast()
			report(&r)
		}()
	}
	wg.Wait()
	out := &Result{}
	for i, r := range results {
		if !done[i] {
			continue
		}
		out.Trials = append(out.Trials, r)
	}
	for i := range out.Trials {
		r := &out.Trials[i]
		if r.State == cube.Succeeded && (out.Best == nil || l.objective.better(r.Value, out.Best.Value)) {
			out.Best = r
		}
	}
	if storeErr != nil {
		return out, fmt.Errorf("run local study: %w", storeErr)
	}
	if runErr != nil {
		return out, runErr
	}
	if err := allFailed(out.Trials); err != nil {
		return out, fmt.Errorf("run local study: %w", err)
	}
	return out, nil
}

// allFailed is the error of a study in which every trial failed: its result
// holds nothing to choose from, and the cause is most often one bug in the
// trial function, which the first failure names.
func allFailed(trials []TrialResult) error {
	if len(trials) == 0 || slices.ContainsFunc(trials, func(r TrialResult) bool { return r.State != cube.Failed }) {
		return nil
	}
	return fmt.Errorf("all %d trials failed; the first: %w", len(trials), trials[0].Err)
}

// progress counts the finished trials; the caller holds the study's lock.
func (l *Local) progress(results []TrialResult, done []bool, resumed, running int, last *TrialResult) LocalProgress {
	p := LocalProgress{Trials: l.trials, Resumed: resumed, Running: running, Last: last}
	for i, r := range results {
		if !done[i] {
			continue
		}
		p.Finished++
		switch r.State {
		case cube.Succeeded:
			p.Succeeded++
			if p.Best == nil || l.objective.better(r.Value, p.Best.Value) {
				best := r
				p.Best = &best
			}
		case cube.Failed:
			p.Failed++
		case EarlyStopped:
			p.EarlyStopped++
		}
	}
	return p
}

// prefixDone reports whether trials 0..last are done.
func prefixDone(done []bool, last int) bool {
	for j := 0; j <= last && j < len(done); j++ {
		if !done[j] {
			return false
		}
	}
	return true
}

func (l *Local) runOne(ctx context.Context, fn Func, t *Trial) (r TrialResult) {
	r = TrialResult{Number: t.Number, Values: formatValues(t.values), Value: math.NaN(), params: t.values}
	defer func() {
		if p := recover(); p != nil {
			r.State, r.Err = cube.Failed, fmt.Errorf("trial %d panicked: %v", t.Number, p)
		}
		r.Reports = slices.Clone(t.reports)
	}()
	v, err := fn(ctx, t)
	switch {
	case len(t.misuse) > 0:
		r.State, r.Err = cube.Failed, fmt.Errorf("trial %d: %w", t.Number, errors.Join(append(t.misuse, err)...))
	case errors.Is(err, ErrPruned) || (err == nil && t.pruned):
		r.State = EarlyStopped
		if len(t.reports) > 0 {
			r.Value = t.reports[len(t.reports)-1]
		}
	case err != nil:
		r.State, r.Err = cube.Failed, err
	case math.IsNaN(v) || math.IsInf(v, 0):
		r.State, r.Err = cube.Failed, fmt.Errorf("trial %d returned %v", t.Number, v)
	default:
		r.State, r.Value = cube.Succeeded, v
	}
	return r
}

func formatValues(values map[string]any) map[string]string {
	out := make(map[string]string, len(values))
	for k, v := range values {
		switch x := v.(type) {
		case float64:
			out[k] = formatFloat(x)
		case int:
			out[k] = fmt.Sprint(x)
		case string:
			out[k] = x
		}
	}
	return out
}

// sampler proposes trial i's values from the finished trials it may see.
// pending holds the values of the trials sampled before i that it may not
// see (they are running), when the constant liar is on.
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
	}
	return &randomSampler{l: l}
}

// rngFor is the random stream of trial i: the same for a seed whatever the
// order trials run in.
func (l *Local) rngFor(i int, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(l.seed, uint64(i)<<8|stream))
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
	rng := rand.New(rand.NewPCG(l.seed, 1<<62))
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
