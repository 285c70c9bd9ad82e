package tune

import (
	"github.com/cubestudio/cube"

	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

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
	seed          int
	constantLiar  bool
	studyPath     *string
	onProgress    func(LocalProgress)
}

// NewLocal starts a local study over params towards objective, with Auto
// choosing the sampler, one trial at a time, 10 trials and seed 0 until set
// otherwise.
func NewLocal(objective Objective, params ...Param) *Local {
	return &Local{params: slices.Clone(params), objective: objective, algorithm: Auto(), trials: 10, parallel: 1, constantLiar: true}
}

// LocalFrom starts a local study with an experiment's search space,
// objective, algorithm, early stopping, MaxTrials and Parallelism.
func LocalFrom(e *Experiment) *Local {
	if e == nil {
		return NewLocal(Objective{})
	}
	l := NewLocal(e.objective, e.params...)
	if e.algorithm != nil {
		l.Algorithm(*e.algorithm)
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
	return l
}

// Algorithm sets the sampler (replaces): Auto (the default), Random, Grid,
// Sobol, TPE, MultivariateTPE, CMAES or Bayesian. An algorithm's Seed
// becomes the study's seed, as a later Local.Seed does.
func (l *Local) Algorithm(a Algorithm) *Local {
	if l == nil {
		return nil
	}
	a.settings = slices.Clone(a.settings)
	l.algorithm = a
	if v, ok := a.setting("random_state"); ok {
		if n, err := strconv.Atoi(v); err == nil {
			l.seed = n
		}
	}
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

// MaxTrials sets how many trials the study runs (10 by default), as
// Experiment.MaxTrials does.
func (l *Local) MaxTrials(n int) *Local {
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

// Seed sets the seed of the sampler, at least 0 (replaces an Algorithm's
// Seed; 0 unless set). It takes an int, as Algorithm.Seed does.
func (l *Local) Seed(seed int) *Local {
	if l == nil {
		return nil
	}
	l.seed = seed
	return l
}

// ConstantLiar sets whether the model-based samplers (TPE, MultivariateTPE,
// Bayesian) count the trials still running as bad ones, so that parallel
// trials spread out instead of all sampling the same promising spot (on by
// default; it only matters with Parallelism above 1). TPE puts the running
// trials among the bad ones (Optuna's constant_liar); the Gaussian process
// takes their value to be the worst seen so far. Either way Auto does not
// propose a configuration a running trial has.
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
// ignored. MaxTrials may be raised between runs.
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
var localAlgorithms = []string{AlgorithmAuto, AlgorithmRandom, AlgorithmGrid, AlgorithmTPE, AlgorithmMultivariateTPE,
	AlgorithmSobol, AlgorithmCMAES, AlgorithmBayesian}

// localUnsupported are settings Katib's services take that the local
// samplers cannot honour, with the values they can.
var localUnsupported = map[string]map[string][]string{
	AlgorithmCMAES:    {"restart_strategy": {"ipop", "none"}},
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
		rules := algorithmRules[l.algorithm.name]
		if l.algorithm.name == AlgorithmAuto {
			rules = autoRules
		}
		errs = append(errs, validateSettings(l.algorithm.name, l.algorithm.settings, rules, nil, algPath)...)
		for i, st := range l.algorithm.settings {
			if ok, limited := localUnsupported[l.algorithm.name][st.name]; limited && !slices.Contains(ok, st.value) {
				errs = append(errs, field.NotSupported(algPath.Child("algorithmSettings").Index(i).Child("value"), st.value, ok))
			}
		}
	}
	switch {
	case l.trials < 1:
		errs = append(errs, field.Invalid(field.NewPath("maxTrials"), l.trials, "must be at least 1"))
	case l.trials > maxLocalTrials:
		// Run holds every trial's result: 2^40 trials were an allocation
		// that killed the process.
		errs = append(errs, field.Invalid(field.NewPath("maxTrials"), l.trials, fmt.Sprintf("must be at most %d", maxLocalTrials)))
	}
	if l.seed < 0 {
		errs = append(errs, field.Invalid(field.NewPath("seed"), l.seed, "must be at least 0"))
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

// Run runs the study: fn is called once per trial, at most Parallelism at a
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
		pending := slices.Clone(params[seen:i])
		running++
		mu.Unlock()

		values := s.sample(i, history, pending)
		params[i] = values
		t := &Trial{Number: i, values: values, study: l, prior: history, sampler: proposerOf(s, l, i)}
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
	r = TrialResult{Number: t.Number, Values: formatValues(t.values), Value: math.NaN(), Sampler: t.sampler, params: t.values}
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
