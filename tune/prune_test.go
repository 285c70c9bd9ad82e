package tune_test

import (
	"github.com/cubestudio/cube"

	"context"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/tune"
)

// curve is a learning curve whose ranking of x changes with the step, so
// that every rung decides differently.
func curve(x float64, step int) float64 {
	return math.Pow(x-0.3, 2) + math.Sin(7*x+float64(step))/float64(step+1)
}

const curveSteps = 30

func curveTrial(_ context.Context, t *tune.Trial) (float64, error) {
	var v float64
	for step := 1; step <= curveSteps; step++ {
		v = curve(t.Float("x"), step)
		if err := t.Report(v); err != nil {
			return 0, err
		}
	}
	return v, nil
}

// expectedHalving replays successive halving from its definition: at the
// rungs start·eta^(rate+k) a trial goes on only if its report is no worse
// than the ⌊n/eta⌋-th best (the best when n < eta) of the n reports there,
// its own and those of the trials it may see (numbers 0..i-parallel) in
// the same bracket. It returns the number of reports each trial makes.
func expectedHalving(xs []float64, parallel, start, eta int, rateOf func(i int) int) []int {
	reports := make([][]float64, len(xs))
	isRung := func(step, rate int) bool {
		for r := start * int(math.Pow(float64(eta), float64(rate))); r <= step; r *= eta {
			if r == step {
				return true
			}
		}
		return false
	}
	out := make([]int, len(xs))
	for i, x := range xs {
		for step := 1; step <= curveSteps; step++ {
			v := curve(x, step)
			reports[i] = append(reports[i], v)
			if !isRung(step, rateOf(i)) {
				continue
			}
			competing := []float64{v}
			for j := 0; j <= i-parallel; j++ {
				if rateOf(j) == rateOf(i) && len(reports[j]) >= step {
					competing = append(competing, reports[j][step-1])
				}
			}
			slices.Sort(competing)
			if competing[max(len(competing)/eta-1, 0)] < v {
				break
			}
		}
		out[i] = len(reports[i])
	}
	return out
}

func checkPruning(t *testing.T, res *tune.Result, want []int) {
	t.Helper()
	stopped := 0
	for i, r := range res.Trials {
		require.Len(t, r.Reports, want[i], "trial %d (x=%v)", i, r.Float("x"))
		if want[i] < curveSteps {
			stopped++
			assert.Equal(t, tune.EarlyStopped, r.State, "trial %d", i)
			assert.Equal(t, r.Reports[len(r.Reports)-1], r.Value)
		} else {
			assert.Equal(t, cube.Succeeded, r.State, "trial %d", i)
		}
	}
	assert.Greater(t, stopped, len(res.Trials)/3, "the rule stopped too few trials to prove anything")
	assert.Less(t, stopped, len(res.Trials), "the rule stopped every trial")
}

func TestLocalHalvingStop(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		parallel, start, eta int
		rate                 int
		es                   tune.EarlyStopping
	}{
		{"defaults", 1, 1, 3, 0, tune.HalvingStop()},
		{"parallel", 3, 1, 3, 0, tune.HalvingStop()},
		{"settings", 2, 2, 2, 1, tune.HalvingStop().StartStep(2).Eta(2).EarlyStoppingRate(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1)).EarlyStop(tc.es).
				MaxTrials(40).Parallelism(tc.parallel).Seed(8).Run(t.Context(), curveTrial)
			require.NoError(t, err)
			xs := make([]float64, len(res.Trials))
			for i, r := range res.Trials {
				xs[i] = r.Float("x")
			}
			checkPruning(t, res, expectedHalving(xs, tc.parallel, tc.start, tc.eta, func(int) int { return tc.rate }))
		})
	}
}

func TestLocalHyperbandStop(t *testing.T) {
	// max 27 steps, eta 3: s_max = 3, brackets of ⌈4/(4-b)·3^(3-b)⌉ =
	// 27, 12, 6 and 4 trials per round of 49, with first rungs at 1, 3, 9
	// and 27 reports.
	slots := []int{27, 12, 6, 4}
	bracket := func(i int) int {
		p := i % 49
		for b, n := range slots {
			if p < n {
				return b
			}
			p -= n
		}
		return -1
	}
	res, err := tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1)).EarlyStop(tune.HyperbandStop(27)).
		MaxTrials(60).Parallelism(2).Seed(4).Run(t.Context(), curveTrial)
	require.NoError(t, err)
	xs := make([]float64, len(res.Trials))
	for i, r := range res.Trials {
		xs[i] = r.Float("x")
	}
	want := expectedHalving(xs, 2, 1, 3, bracket)
	checkPruning(t, res, want)
	// Bracket 3's trials (numbers 45..48) are judged at report 27 only.
	for i := 45; i < 49; i++ {
		assert.Contains(t, []int{27, curveSteps}, want[i], "trial %d", i)
	}
}

func TestLocalEarlyStoppingValidation(t *testing.T) {
	run := func(es tune.EarlyStopping) []string {
		_, err := tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1)).EarlyStop(es).Run(t.Context(), curveTrial)
		return errorStrings(t, err)
	}
	assert.Equal(t, []string{
		`earlyStopping.algorithmSettings[0].value: Invalid value: "1": eta: must be at least 2`,
		`earlyStopping.algorithmSettings[1].value: Invalid value: "-1": early_stopping_rate: must be at least 0`,
	}, run(tune.HalvingStop().Eta(1).EarlyStoppingRate(-1)))
	assert.Equal(t, []string{`earlyStopping.algorithmSettings[0].value: Invalid value: "0": max_step: must be at least 1`},
		run(tune.HyperbandStop(0)))
	assert.Equal(t, []string{`earlyStopping.algorithmSettings[max_step]: Invalid value: 2: must be at least start_step (3)`},
		run(tune.HyperbandStop(2).StartStep(3)))
	assert.Equal(t, []string{`earlyStopping.algorithmSettings[0].name: Unsupported value: "eta": supported values: "min_trials_required", "start_step"`},
		run(tune.MedianStop().Eta(3)))
	assert.Equal(t, []string{`earlyStopping.algorithmSettings[0].name: Unsupported value: "min_trials_required": supported values: "early_stopping_rate", "eta", "start_step"`},
		run(tune.HalvingStop().MinTrials(3)))

	// Katib runs medianstop only: an Experiment refuses the local rules.
	_, err := baseExperiment("asha").EarlyStop(tune.HalvingStop()).Build()
	assert.ErrorContains(t, err, `spec.earlyStopping.algorithmName: Unsupported value: "successive-halving": supported values: "medianstop"`)
}
