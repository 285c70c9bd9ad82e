package tune_test

import (
	"github.com/cubestudio/cube"

	"context"
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/tune"
)

func quadratic(_ context.Context, t *tune.Trial) (float64, error) {
	return math.Pow(t.Float("x")-1, 2) + math.Pow(float64(t.Int("n")-3), 2), nil
}

var quadSpace = []tune.Param{tune.Float("x", -5, 5), tune.Int("n", 0, 10)}

// TestLocalDeterministic runs each sampler twice at several parallelisms:
// a seed fixes every trial's values whatever the scheduling, and a
// different seed changes them.
func TestLocalDeterministic(t *testing.T) {
	for _, alg := range []tune.Algorithm{tune.Random(), tune.TPE(), tune.MultivariateTPE(), tune.Sobol(), tune.CMAES(), tune.Bayesian(), tune.Auto()} {
		t.Run(alg.Name(), func(t *testing.T) {
			run := func(parallel int, seed int) []map[string]string {
				res, err := tune.NewLocal(tune.Minimize("loss"), quadSpace...).Algorithm(alg).MaxTrials(30).Parallelism(parallel).Seed(seed).
					Run(t.Context(), func(ctx context.Context, tr *tune.Trial) (float64, error) {
						// Finish out of order.
						time.Sleep(time.Duration((tr.Number*7)%5) * time.Millisecond)
						return quadratic(ctx, tr)
					})
				require.NoError(t, err)
				require.Len(t, res.Trials, 30)
				out := make([]map[string]string, len(res.Trials))
				for i, r := range res.Trials {
					assert.Equal(t, i, r.Number)
					out[i] = r.Values
				}
				return out
			}
			for _, p := range []int{1, 4} {
				assert.Equal(t, run(p, 1), run(p, 1), "parallel %d", p)
			}
			assert.NotEqual(t, run(1, 1), run(1, 2))
		})
	}
}

func TestLocalFindsTheOptimum(t *testing.T) {
	res, err := tune.NewLocal(tune.Minimize("loss"), quadSpace...).Algorithm(tune.TPE()).MaxTrials(80).Parallelism(2).Seed(3).Run(t.Context(), quadratic)
	require.NoError(t, err)
	require.NotNil(t, res.Best)
	assert.Equal(t, 3, res.Best.Int("n"))
	assert.InDelta(t, 1, res.Best.Float("x"), 0.3)
	assert.Less(t, res.Best.Value, 0.1)
	for _, r := range res.Trials {
		assert.GreaterOrEqual(t, r.Value, res.Best.Value)
	}
	// Maximising the negation finds the same point.
	maxRes, err := tune.NewLocal(tune.Maximize("score"), quadSpace...).Algorithm(tune.TPE()).MaxTrials(80).Parallelism(2).Seed(3).
		Run(t.Context(), func(ctx context.Context, tr *tune.Trial) (float64, error) {
			v, err := quadratic(ctx, tr)
			return -v, err
		})
	require.NoError(t, err)
	assert.Equal(t, res.Best.Values, maxRes.Best.Values)
}

func TestLocalValuesStayInTheSpace(t *testing.T) {
	space := []tune.Param{
		tune.Float("lr", 1e-5, 1e-1).Log(), tune.Int("layers", 2, 8).Step(2), tune.Int("units", 16, 512).Log(),
		tune.Choice("opt", "adam", "sgd"), tune.Discrete("batch", 16, 32, 64), tune.Float("drop", 0, 0.5).Step(0.1),
	}
	for _, alg := range []tune.Algorithm{tune.Random(), tune.TPE(), tune.MultivariateTPE(), tune.Sobol(), tune.CMAES(), tune.Bayesian(), tune.Auto()} {
		res, err := tune.NewLocal(tune.Minimize("loss"), space...).Algorithm(alg).MaxTrials(60).Run(t.Context(),
			func(_ context.Context, tr *tune.Trial) (float64, error) {
				return tr.Float("lr") + float64(tr.Int("layers")) + tr.Float("batch") + tr.Float("drop"), nil
			})
		require.NoError(t, err, alg.Name())
		for _, r := range res.Trials {
			assert.True(t, r.Float("lr") >= 1e-5 && r.Float("lr") <= 1e-1, "lr %v", r.Float("lr"))
			assert.Contains(t, []int{2, 4, 6, 8}, r.Int("layers"))
			assert.True(t, r.Int("units") >= 16 && r.Int("units") <= 512)
			assert.Contains(t, []string{"adam", "sgd"}, r.String("opt"))
			assert.Contains(t, []float64{16, 32, 64}, r.Float("batch"))
			d := r.Float("drop") * 10
			assert.InDelta(t, math.Round(d), d, 1e-9)
		}
	}
}

func TestLocalGridVisitsEveryPoint(t *testing.T) {
	res, err := tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1).Step(0.25), tune.Choice("c", "a", "b")).
		Algorithm(tune.Grid()).MaxTrials(10).Run(t.Context(), func(_ context.Context, tr *tune.Trial) (float64, error) { return tr.Float("x"), nil })
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, r := range res.Trials {
		seen[r.Values["x"]+"/"+r.Values["c"]] = true
	}
	assert.Len(t, seen, 10)
	assert.Equal(t, "0", res.Best.Values["x"])
}

func TestLocalMedianStop(t *testing.T) {
	// Trials report ten steps; the bad half of the space stays bad.
	var calls atomic.Int32
	res, err := tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1)).
		EarlyStop(tune.MedianStop().MinTrials(3).StartStep(2)).MaxTrials(30).Seed(5).
		Run(t.Context(), func(_ context.Context, tr *tune.Trial) (float64, error) {
			calls.Add(1)
			v := tr.Float("x")
			for step := 1; step <= 10; step++ {
				v = tr.Float("x") + 1/float64(step)
				if err := tr.Report(v); err != nil {
					return 0, err
				}
			}
			return v, nil
		})
	require.NoError(t, err)
	stopped, succeeded := 0, 0
	for _, r := range res.Trials {
		switch r.State {
		case tune.EarlyStopped:
			stopped++
			assert.Len(t, r.Reports, 2, "stopped at the start step")
		case cube.Succeeded:
			succeeded++
			assert.Len(t, r.Reports, 10)
		}
	}
	assert.Greater(t, stopped, 5)
	assert.Greater(t, succeeded, 3)
	assert.Equal(t, int32(30), calls.Load())
	assert.Equal(t, cube.Succeeded, res.Best.State)
}

func TestLocalTrialFailures(t *testing.T) {
	boom := errors.New("boom")
	res, err := tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1)).MaxTrials(4).Run(t.Context(),
		func(_ context.Context, tr *tune.Trial) (float64, error) {
			switch tr.Number {
			case 0:
				return 0, boom
			case 1:
				panic("bad trial")
			case 2:
				return math.NaN(), nil
			}
			return 0.5, nil
		})
	require.NoError(t, err)
	assert.ErrorIs(t, res.Trials[0].Err, boom)
	assert.Equal(t, cube.Failed, res.Trials[0].State)
	assert.ErrorContains(t, res.Trials[1].Err, "trial 1 panicked: bad trial")
	assert.ErrorContains(t, res.Trials[2].Err, "trial 2 returned NaN")
	assert.Equal(t, 3, res.Best.Number)
}

func TestLocalContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	res, err := tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1)).MaxTrials(100).Parallelism(2).Run(ctx,
		func(ctx context.Context, tr *tune.Trial) (float64, error) {
			if tr.Number == 5 {
				cancel()
			}
			return tr.Float("x"), nil
		})
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, len(res.Trials), 100)
	assert.GreaterOrEqual(t, len(res.Trials), 6)
}

func TestLocalFromExperiment(t *testing.T) {
	e := baseExperiment("from").Algorithm(tune.TPE().Seed(9)).MaxTrials(15).Parallelism(3)
	res, err := tune.LocalFrom(e).Run(t.Context(), func(_ context.Context, tr *tune.Trial) (float64, error) {
		return tr.Float("lr") * float64(tr.Int("layers")), nil
	})
	require.NoError(t, err)
	assert.Len(t, res.Trials, 15)
	again, err := tune.NewLocal(tune.Maximize("accuracy"), tune.SpaceOf(e)...).Algorithm(tune.TPE()).MaxTrials(15).Parallelism(3).Seed(9).
		Run(t.Context(), func(_ context.Context, tr *tune.Trial) (float64, error) {
			return tr.Float("lr") * float64(tr.Int("layers")), nil
		})
	require.NoError(t, err)
	assert.Equal(t, res.Best.Values, again.Best.Values, "LocalFrom takes the experiment's seed, counts and objective")
}

func TestLocalValidation(t *testing.T) {
	var nilStudy *tune.Local
	_, err := nilStudy.Run(t.Context(), quadratic)
	assert.ErrorContains(t, err, "local: Required value: the study is nil")

	_, err = tune.NewLocal(tune.Objective{}, tune.Float("x", 1, 0)).Algorithm(tune.PBT("/ckpt", 5, 0.2)).MaxTrials(0).Parallelism(0).
		EarlyStop(tune.MedianStop().StartStep(0)).StudyFile("").Run(t.Context(), quadratic)
	errs := errorStrings(t, err)
	assert.Empty(t, missing(errs,
		"objective: Required value",
		"parameters[0].feasibleSpace.max: Invalid value: 0: must not be below min",
		`algorithm: Unsupported value: "pbt"`,
		"maxTrials: Invalid value: 0: must be at least 1",
		"parallelism: Invalid value: 0: must be at least 1",
		`earlyStopping.algorithmSettings[0].value: Invalid value: "0": start_step`,
		"studyFile: Required value: the study file needs a path",
	), "%q", errs)
	assert.Len(t, errs, 7, "%q", errs)

	// Settings are checked as Katib's services check them, and refused
	// where the local sampler cannot honour them.
	for _, tc := range []struct {
		alg  tune.Algorithm
		want string
	}{
		{tune.CMAES().RestartStrategy("bipop"), `algorithm.algorithmSettings[0].value: Unsupported value: "bipop": supported values: "ipop", "none"`},
		{tune.CMAES().Sigma(-1), `algorithm.algorithmSettings[0].value: Invalid value: "-1": sigma: must be in (0, `},
		{tune.Bayesian().AcquisitionFunc("LCB"), `algorithm.algorithmSettings[0].value: Unsupported value: "LCB": supported values: "EI"`},
		{tune.Bayesian().BaseEstimator("RF"), `algorithm.algorithmSettings[0].value: Unsupported value: "RF": supported values: "GP"`},
		{tune.Bayesian().AcquisitionOptimizer("lbfgs"), `algorithm.algorithmSettings[0].value: Unsupported value: "lbfgs": supported values: "auto", "sampling"`},
		{tune.TPE().Setting("n_startup_trials", "3"), `algorithm.algorithmSettings[0].name: Unsupported value: "n_startup_trials"`},
		{tune.MultivariateTPE().EICandidates(-2), `algorithm.algorithmSettings[0].value: Invalid value: "-2": n_ei_candidates: must be at least 0`},
		{tune.Sobol().Seed(1), `algorithm.algorithmSettings[0].name: Unsupported value: "random_state"`},
	} {
		_, err := tune.NewLocal(tune.Minimize("l"), tune.Float("x", 0, 1)).Algorithm(tc.alg).Run(t.Context(), quadratic)
		assert.ErrorContains(t, err, tc.want)
	}
	many := make([]tune.Param, 33)
	for i := range many {
		many[i] = tune.Float(fmt.Sprintf("x%d", i), 0, 1)
	}
	_, err = tune.NewLocal(tune.Minimize("l"), many...).Algorithm(tune.Sobol()).Run(t.Context(), quadratic)
	assert.ErrorContains(t, err, "parameters: Too many: 33: must have at most 32 items")

	_, err = tune.NewLocal(tune.Minimize("l"), tune.Float("x", 0, 1)).Algorithm(tune.Grid()).Run(t.Context(), quadratic)
	assert.ErrorContains(t, err, `parameters[0].step: Required value: grid needs a step on Float "x"`)

	_, err = tune.NewLocal(tune.Minimize("l"), tune.Float("x", 0, 1)).Run(t.Context(), nil)
	assert.ErrorContains(t, err, "the trial function is nil")
}

// BenchmarkLocalTPE measures the TPE sampler's cost per trial of a
// 100-trial study on Hartmann-6 (the function itself costs nothing).
func BenchmarkLocalTPE(b *testing.B) {
	f := benchFunctions[1]
	for b.Loop() {
		_, err := tune.NewLocal(tune.Minimize("y"), f.params...).Algorithm(tune.TPE()).MaxTrials(100).Run(b.Context(), objectiveOf(f))
		require.NoError(b, err)
	}
}

func TestTrialZeroValues(t *testing.T) {
	var nilTrial *tune.Trial
	assert.Zero(t, nilTrial.Float("x"))
	assert.Zero(t, nilTrial.Int("x"))
	assert.Empty(t, nilTrial.String("x"))
	assert.Empty(t, nilTrial.Values())
	assert.ErrorContains(t, nilTrial.Report(1), "the trial belongs to no study")
	assert.ErrorContains(t, (&tune.Trial{}).Report(1), "the trial belongs to no study")
	var zero tune.Local
	_, err := zero.Run(t.Context(), quadratic)
	assert.ErrorContains(t, err, "objective: Required value")
}

// TestGridVisitsEveryPointOnce: the grid's seeded order is a permutation,
// so as many trials as points visit each point once; and a grid of 10^15
// points starts at once (it is not listed).
func TestGridVisitsEveryPointOnce(t *testing.T) {
	for seed := range 5 {
		res, err := tune.NewLocal(tune.Minimize("loss"), tune.Int("a", 0, 2), tune.Int("b", 0, 3), tune.Choice("c", "x", "y", "z", "w", "v")).
			Algorithm(tune.Grid()).MaxTrials(60).Seed(seed).
			Run(t.Context(), func(_ context.Context, tr *tune.Trial) (float64, error) { return float64(tr.Int("a")), nil })
		require.NoError(t, err)
		seen := map[string]bool{}
		for _, r := range res.Trials {
			key := fmt.Sprint(r.Int("a"), r.Int("b"), r.String("c"))
			require.False(t, seen[key], "seed %d: %s twice", seed, key)
			seen[key] = true
		}
		require.Len(t, seen, 60)
	}
	start := time.Now()
	_, err := tune.NewLocal(tune.Minimize("loss"), tune.Int("a", 0, 999999), tune.Int("b", 0, 999999), tune.Int("c", 0, 999)).
		Algorithm(tune.Grid()).MaxTrials(5).
		Run(t.Context(), func(_ context.Context, tr *tune.Trial) (float64, error) { return 0, nil })
	require.NoError(t, err)
	require.Less(t, time.Since(start), 2*time.Second)
}

// TestTrialMisreadFailsTheTrial: reading a parameter the space does not
// have, or one of another kind, used to return 0 and let the search
// optimise a constant; it fails the trial, naming the read.
func TestTrialMisreadFailsTheTrial(t *testing.T) {
	space := []tune.Param{tune.Float("lr", 0.1, 1), tune.Int("layers", 1, 4), tune.Choice("opt", "adam", "sgd"), tune.Discrete("batch", 32, 64)}
	reads := map[string]struct {
		read func(*tune.Trial)
		want string
	}{
		"misspelt Float":       {func(tr *tune.Trial) { tr.Float("lrr") }, `Float("lrr"): the search space has no such parameter (it has ["batch" "layers" "lr" "opt"])`},
		"Float of an Int":      {func(tr *tune.Trial) { tr.Float("layers") }, `Float("layers"): the parameter is an Int: read it with Int`},
		"Int of a Float":       {func(tr *tune.Trial) { tr.Int("lr") }, `Int("lr"): the parameter is a Float or Discrete: read it with Float`},
		"Int of a Choice":      {func(tr *tune.Trial) { tr.Int("opt") }, `Int("opt"): the parameter is a Choice: read it with String`},
		"String of a Discrete": {func(tr *tune.Trial) { tr.String("batch") }, `String("batch"): the parameter is a Float or Discrete: read it with Float`},
		"report of +Inf":       {func(tr *tune.Trial) { _ = tr.Report(math.Inf(1)) }, "report 1: +Inf is not a finite number"},
		"report of NaN":        {func(tr *tune.Trial) { _ = tr.Report(math.NaN()) }, "report 1: NaN is not a finite number"},
	}
	for name, c := range reads {
		t.Run(name, func(t *testing.T) {
			res, err := tune.NewLocal(tune.Minimize("loss"), space...).MaxTrials(3).Run(t.Context(),
				func(_ context.Context, tr *tune.Trial) (float64, error) {
					if tr.Number == 1 {
						c.read(tr)
					}
					return tr.Float("lr") + float64(tr.Int("layers")), nil
				})
			require.NoError(t, err, "two trials succeeded")
			assert.Equal(t, cube.Failed, res.Trials[1].State)
			assert.EqualError(t, res.Trials[1].Err, "trial 1: "+c.want)
			assert.Equal(t, cube.Succeeded, res.Trials[0].State)
			assert.Equal(t, cube.Succeeded, res.Trials[2].State)
		})
	}
	// Every read right: the values are the sampled ones, not zeros.
	res, err := tune.NewLocal(tune.Minimize("loss"), space...).MaxTrials(1).Run(t.Context(),
		func(_ context.Context, tr *tune.Trial) (float64, error) {
			assert.Equal(t, tr.Values()["opt"], tr.String("opt"))
			assert.Contains(t, []float64{32, 64}, tr.Float("batch"))
			assert.GreaterOrEqual(t, tr.Int("layers"), 1)
			return tr.Float("lr"), nil
		})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, res.Best.Value, 0.1)
}

// TestReportRefusesNonFinite: Report(+Inf) and Report(NaN) return an error,
// are not recorded, and fail the trial even when it ignores the error.
func TestReportRefusesNonFinite(t *testing.T) {
	var reportErr error
	res, err := tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1)).MaxTrials(1).Run(t.Context(),
		func(_ context.Context, tr *tune.Trial) (float64, error) {
			require.NoError(t, tr.Report(0.5))
			reportErr = tr.Report(math.Inf(-1))
			return 0.25, nil
		})
	assert.EqualError(t, reportErr, "report 2: -Inf is not a finite number")
	assert.EqualError(t, err, "run local study: all 1 trials failed; the first: trial 0: report 2: -Inf is not a finite number")
	require.NotNil(t, res)
	assert.Equal(t, []float64{0.5}, res.Trials[0].Reports)
	assert.Equal(t, cube.Failed, res.Trials[0].State)
}

// TestLocalRunAllFailed: a study in which every trial failed is an error
// naming the first failure, with the result still returned; one success
// or one early stop is not.
func TestLocalRunAllFailed(t *testing.T) {
	boom := errors.New("boom")
	res, err := tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1)).MaxTrials(3).Parallelism(2).Run(t.Context(),
		func(_ context.Context, tr *tune.Trial) (float64, error) { return 0, fmt.Errorf("trial code: %w", boom) })
	assert.ErrorIs(t, err, boom)
	assert.EqualError(t, err, "run local study: all 3 trials failed; the first: trial code: boom")
	require.NotNil(t, res)
	assert.Len(t, res.Trials, 3)
	assert.Nil(t, res.Best)

	_, err = tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1)).MaxTrials(3).Run(t.Context(),
		func(_ context.Context, tr *tune.Trial) (float64, error) {
			if tr.Number == 2 {
				return 0, tune.ErrPruned
			}
			return 0, boom
		})
	assert.NoError(t, err, "an early-stopped trial is not a failure")
}

// TestLocalHostileCounts: counts and bounds that killed the process or
// silently changed are refused before anything runs.
func TestLocalHostileCounts(t *testing.T) {
	ran := false
	_, err := tune.NewLocal(tune.Minimize("loss"), tune.Int("n", math.MinInt, 1<<62+1)).MaxTrials(1<<40).
		Run(t.Context(), func(context.Context, *tune.Trial) (float64, error) { ran = true; return 0, nil })
	assert.EqualError(t, err, `[parameters[0].feasibleSpace.min: Invalid value: -9223372036854775808: must be within ±2^53 (9007199254740992), `+
		`parameters[0].feasibleSpace.max: Invalid value: 4611686018427387904: must be within ±2^53 (9007199254740992), `+
		`maxTrials: Invalid value: 1099511627776: must be at most 1048576]`)
	assert.False(t, ran)
}
