package tune

import (
	"context"
	"errors"
	"fmt"
	"math"
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

// TrialState is how a local trial ended.
type TrialState string

// The states of a finished local trial.
const (
	TrialSucceeded    TrialState = "Succeeded"
	TrialFailed       TrialState = "Failed"
	TrialEarlyStopped TrialState = "EarlyStopped"
)

// Trial is one evaluation in a local study: its parameter values and a way
// to report intermediate values.
type Trial struct {
	Number  int
	values  map[string]any
	order   []string
	study   *Local
	prior   []TrialResult // the completed trials early stopping compares with
	reports []float64
	pruned  bool
}

// Float returns the value of a Float or Discrete parameter (0 if absent).
func (t *Trial) Float(name string) float64 {
	if t == nil {
		return 0
	}
	v, _ := t.values[name].(float64)
	return v
}

// Int returns the value of an Int parameter (0 if absent).
func (t *Trial) Int(name string) int {
	if t == nil {
		return 0
	}
	v, _ := t.values[name].(int)
	return v
}

// String returns the value of a Choice parameter ("" if absent).
func (t *Trial) String(name string) string {
	if t == nil {
		return ""
	}
	v, _ := t.values[name].(string)
	return v
}

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
// step 1). With MedianStop it returns ErrPruned once the trial falls behind;
// the trial function should then return.
func (t *Trial) Report(value float64) error {
	if t == nil || t.study == nil {
		return errNoStudy
	}
	t.reports = append(t.reports, value)
	es := t.study.earlyStopping
	if es == nil || t.pruned {
		if t.pruned {
			return ErrPruned
		}
		return nil
	}
	start := intSetting(es.settings, "start_step", 4)
	minTrials := intSetting(es.settings, "min_trials_required", 3)
	if len(t.reports) < start {
		return nil
	}
	// Katib's medianstop: the median over completed trials of the average of
	// their first start_step reports; a trial whose best value so far is
	// worse is stopped.
	var avgs []float64
	for _, r := range t.prior {
		if r.State != TrialSucceeded || len(r.Reports) < start {
			continue
		}
		sum := 0.0
		for _, v := range r.Reports[:start] {
			sum += v
		}
		avgs = append(avgs, sum/float64(start))
	}
	if len(avgs) < minTrials {
		return nil
	}
	median := medianOf(avgs)
	best := t.reports[0]
	for _, v := range t.reports[1:] {
		if t.study.objective.better(v, best) {
			best = v
		}
	}
	if t.study.objective.better(median, best) {
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
	State   TrialState
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
}

// NewLocal starts a local study over params towards objective, with Random
// sampling, one trial at a time, 10 trials and seed 0 until set otherwise.
func NewLocal(objective Objective, params ...Param) *Local {
	return &Local{params: slices.Clone(params), objective: objective, algorithm: Random(), trials: 10, parallel: 1}
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
		l.trials = int(*e.maxTrials)
	}
	if e.parallel != nil {
		l.parallel = int(*e.parallel)
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
func (l *Local) Algorithm(a Algorithm) *Local { l.algorithm = a; return l }

// EarlyStop sets early stopping (MedianStop).
func (l *Local) EarlyStop(s EarlyStopping) *Local { l.earlyStopping = &s; return l }

// Trials sets the number of trials.
func (l *Local) Trials(n int) *Local { l.trials = n; return l }

// Parallel sets how many trials run at once.
func (l *Local) Parallel(n int) *Local { l.parallel = n; return l }

// Seed sets the seed of the sampler.
func (l *Local) Seed(seed uint64) *Local { l.seed = seed; return l }

// localAlgorithms are the samplers the local tuner runs.
var localAlgorithms = []string{AlgorithmRandom, AlgorithmGrid, AlgorithmTPE, AlgorithmMultivariateTPE}

func (l *Local) validate() error {
	if l == nil {
		return field.ErrorList{field.Required(field.NewPath("local"), "the study is nil: start it with tune.NewLocal")}.ToAggregate()
	}
	errs := l.objective.validate(field.NewPath("objective"))
	errs = append(errs, validateSpace(l.params, field.NewPath("parameters"))...)
	if !slices.Contains(localAlgorithms, l.algorithm.name) {
		errs = append(errs, field.NotSupported(field.NewPath("algorithm"), l.algorithm.name, localAlgorithms))
	}
	if l.trials < 1 {
		errs = append(errs, field.Invalid(field.NewPath("trials"), l.trials, "must be at least 1"))
	}
	if l.parallel < 1 {
		errs = append(errs, field.Invalid(field.NewPath("parallel"), l.parallel, "must be at least 1"))
	}
	if l.earlyStopping != nil {
		errs = append(errs, l.earlyStopping.validate(field.NewPath("earlyStopping"))...)
	}
	if l.algorithm.name == AlgorithmGrid {
		for i, p := range l.params {
			if p.gridSize() == 0 {
				errs = append(errs, field.Required(field.NewPath("parameters").Index(i).Child("step"), fmt.Sprintf("grid needs a step on Float %q", p.name)))
			}
		}
	}
	return errs.ToAggregate()
}

// Run runs the study: fn is called once per trial, at most Parallel at a
// time. It returns when every trial has finished, or when ctx ends (with the
// trials finished so far and ctx's error). A trial's error fails that
// trial, not the study.
func (l *Local) Run(ctx context.Context, fn Func) (*Result, error) {
	if err := l.validate(); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, errors.New("run local study: the trial function is nil")
	}
	s := newSampler(l)
	results := make([]TrialResult, l.trials)
	done := make([]bool, l.trials)
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	var wg sync.WaitGroup
	running := 0
	var runErr error
	for i := 0; i < l.trials; i++ {
		mu.Lock()
		// Trial i sees exactly trials 0..i-parallel: wait for them, and for a
		// free slot.
		for (running >= l.parallel || !prefixDone(done, i-l.parallel)) && ctx.Err() == nil {
			cond.Wait()
		}
		if ctx.Err() != nil {
			mu.Unlock()
			runErr = ctx.Err()
			break
		}
		history := slices.Clone(results[:max(0, i-l.parallel+1)])
		running++
		mu.Unlock()

		values := s.sample(i, history)
		t := &Trial{Number: i, values: values, study: l, prior: history}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := l.runOne(ctx, fn, t)
			mu.Lock()
			results[t.Number] = r
			done[t.Number] = true
			running--
			cond.Broadcast()
			mu.Unlock()
		}()
		if i == 0 {
			// Wake the waiting loop when ctx ends.
			stop := context.AfterFunc(ctx, func() { mu.Lock(); cond.Broadcast(); mu.Unlock() })
			defer stop()
		}
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
		if r.State == TrialSucceeded && (out.Best == nil || l.objective.better(r.Value, out.Best.Value)) {
			out.Best = r
		}
	}
	return out, runErr
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
			r.State, r.Err = TrialFailed, fmt.Errorf("trial %d panicked: %v", t.Number, p)
		}
		r.Reports = slices.Clone(t.reports)
	}()
	v, err := fn(ctx, t)
	switch {
	case errors.Is(err, ErrPruned) || (err == nil && t.pruned):
		r.State = TrialEarlyStopped
		if len(t.reports) > 0 {
			r.Value = t.reports[len(t.reports)-1]
		}
	case err != nil:
		r.State, r.Err = TrialFailed, err
	case math.IsNaN(v) || math.IsInf(v, 0):
		r.State, r.Err = TrialFailed, fmt.Errorf("trial %d returned %v", t.Number, v)
	default:
		r.State, r.Value = TrialSucceeded, v
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
type sampler interface {
	sample(i int, history []TrialResult) map[string]any
}

func newSampler(l *Local) sampler {
	switch l.algorithm.name {
	case AlgorithmGrid:
		return newGridSampler(l)
	case AlgorithmTPE, AlgorithmMultivariateTPE:
		return &tpeSampler{l: l}
	}
	return &randomSampler{l: l}
}

// rngFor is the random stream of trial i: the same for a seed whatever the
// order trials run in.
func (l *Local) rngFor(i int, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(l.seed, uint64(i)<<8|stream))
}

type randomSampler struct{ l *Local }

func (s *randomSampler) sample(i int, _ []TrialResult) map[string]any {
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

// gridSampler walks the grid in a seeded order.
type gridSampler struct {
	l      *Local
	points [][]int
}

func newGridSampler(l *Local) *gridSampler {
	sizes := make([]int, len(l.params))
	total := 1
	for d, p := range l.params {
		sizes[d] = p.gridSize()
		total *= sizes[d]
		if total > 1<<20 {
			total = 1 << 20 // enough for any study; the grid is visited in a shuffled order
			break
		}
	}
	points := make([][]int, 0, total)
	for k := 0; k < total; k++ {
		idx := make([]int, len(sizes))
		r := k
		for d := len(sizes) - 1; d >= 0; d-- {
			idx[d] = r % sizes[d]
			r /= sizes[d]
		}
		points = append(points, idx)
	}
	rng := rand.New(rand.NewPCG(l.seed, 1<<62))
	rng.Shuffle(len(points), func(a, b int) { points[a], points[b] = points[b], points[a] })
	return &gridSampler{l: l, points: points}
}

func (s *gridSampler) sample(i int, _ []TrialResult) map[string]any {
	idx := s.points[i%len(s.points)]
	out := make(map[string]any, len(s.l.params))
	for d, p := range s.l.params {
		out[p.name] = p.gridValue(idx[d])
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
	return p.min + float64(k)*p.step
}

// sortByObjective returns the succeeded trials, best first (ties by
// number, so the order is deterministic).
func sortByObjective(o Objective, history []TrialResult) []TrialResult {
	var ok []TrialResult
	for _, r := range history {
		if r.State == TrialSucceeded {
			ok = append(ok, r)
		}
	}
	sort.SliceStable(ok, func(a, b int) bool { return o.better(ok[a].Value, ok[b].Value) })
	return ok
}
