package tune_test

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	common "github.com/kubeflow/katib/pkg/apis/controller/common/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/tune"
)

// TestAutoPlan: Auto's choice follows the space, the budget and the
// parallelism, says why, and an Experiment renders the Katib algorithm it
// names (with the seed), which Katib's services accept for that space.
func TestAutoPlan(t *testing.T) {
	numeric := []tune.Param{tune.Float("a", 0, 1), tune.Float("b", -1, 1), tune.Int("c", 1, 9)}
	logs := []tune.Param{tune.Float("lr", 1e-5, 1e-1).Log(), tune.Float("wd", 1e-6, 1e-2).Log(), tune.Int("layers", 1, 8)}
	mixed := []tune.Param{tune.Float("lr", 1e-5, 1e-1).Log(), tune.Choice("opt", "adam", "sgd"), tune.Int("n", 1, 10), tune.Float("dropout", 0, 0.5)}
	choices := []tune.Param{tune.Choice("a", "x", "y"), tune.Choice("b", "x", "y"), tune.Choice("c", "x", "y"), tune.Float("u", 0, 1)}
	cases := map[string]struct {
		params             []tune.Param
		trials, parallel   int
		katib, localModel  string
		reason, katibWords string
	}{
		"numeric, large budget": {numeric, 200, 3, "cmaes", "bayesianoptimization", "3 dimensions, 0 of them Choices", "cmaes with IPOP restarts: 3 Float or Int parameters without Log and a budget of 200 trials"},
		"numeric, small budget": {numeric, 40, 1, "multivariate-tpe", "bayesianoptimization", "Gaussian process", "a budget of 40 trials, too few for CMA-ES's generations"},
		"log floats":            {logs, 50, 2, "bayesianoptimization", "bayesianoptimization", "constant liar", "every Float has Log"},
		"mixed":                 {mixed, 100, 3, "multivariate-tpe", "bayesianoptimization", "4 dimensions, 1 of them Choices", "Choices or Discretes"},
		"mostly choices":        {choices, 100, 1, "multivariate-tpe", "multivariate-tpe", "3 of 4 dimensions are Choices", "Choices or Discretes"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			plan := tune.NewLocal(tune.Minimize("loss"), c.params...).MaxTrials(c.trials).Parallelism(c.parallel).Seed(5).Plan()
			assert.Equal(t, c.katib, plan.Katib.Name())
			if c.localModel == "bayesianoptimization" {
				assert.Contains(t, plan.Local, "then a portfolio of bayesianoptimization, tpe (univariate) and cmaes")
			} else {
				// On a space of mostly Choices, multivariate TPE alone.
				assert.True(t, strings.HasSuffix(plan.Local, "then "+c.localModel), plan.Local)
			}
			assert.Contains(t, plan.Reason, c.reason)
			assert.Contains(t, plan.Reason, c.katibWords)
			assert.Equal(t, plan, tune.Auto().Seed(5).Plan(c.params, c.trials, c.parallel))

			refs := []string{}
			for _, p := range c.params {
				refs = append(refs, tune.Ref(p.Name()))
			}
			exp, err := tune.New("auto").Objective(tune.Minimize("loss")).Param(c.params...).Algorithm(tune.Auto().Seed(5)).
				Trial(pytorch("t").Torchrun("m.py", refs...)).MaxTrials(c.trials).Parallelism(c.parallel).Build()
			require.NoError(t, err)
			assert.Equal(t, c.katib, exp.Spec.Algorithm.AlgorithmName)
			assert.Contains(t, exp.Spec.Algorithm.AlgorithmSettings, common.AlgorithmSetting{Name: "random_state", Value: "5"})
		})
	}
	// Without Algorithm an Experiment runs Auto too; without MaxTrials the
	// budget is unlimited.
	exp, err := tune.New("auto").Objective(tune.Minimize("loss")).Param(numeric...).Trial(pytorch("t").Torchrun("m.py", tune.Ref("a"), tune.Ref("b"), tune.Ref("c"))).Build()
	require.NoError(t, err)
	assert.Equal(t, "cmaes", exp.Spec.Algorithm.AlgorithmName)
	// A set algorithm is kept, and Auto takes no other setting.
	assert.Equal(t, "set with Algorithm", tune.NewLocal(tune.Minimize("l"), numeric...).Algorithm(tune.TPE()).Plan().Reason)
	_, err = tune.New("auto").Objective(tune.Minimize("loss")).Param(numeric...).Algorithm(tune.Auto().Sigma(0.3)).
		Trial(pytorch("t").Torchrun("m.py", tune.Ref("a"), tune.Ref("b"), tune.Ref("c"))).Build()
	assert.ErrorContains(t, err, `spec.algorithm.algorithmSettings[0].name: Unsupported value: "sigma"`)
}

// TestAutoAdapts: Auto starts with a design (the centre, then Sobol
// points), then its portfolio, the GP first, CMA-ES among its samplers; each trial says which sampler proposed it, and
// a resumed study proposes what an uninterrupted one does.
func TestAutoAdapts(t *testing.T) {
	rastrigin := suiteSubset(t, "rastrigin6")[0]
	study := func() *tune.Local {
		return tune.NewLocal(tune.Minimize("y"), rastrigin.params...).MaxTrials(90).Parallelism(2).Seed(3)
	}
	res, err := study().Run(t.Context(), objectiveOf(rastrigin))
	require.NoError(t, err)
	var samplers []string
	for _, r := range res.Trials {
		samplers = append(samplers, r.Sampler)
	}
	assert.Equal(t, slices.Repeat([]string{"sobol"}, 8), samplers[:8], "a Sobol design of dims+2 trials")
	assert.Equal(t, "bayesianoptimization", samplers[8])
	assert.Contains(t, samplers, "cmaes", "CMA-ES is one of the portfolio's samplers: %v", samplers)
	assert.Equal(t, 0.0, res.Trials[0].Float("x0"), "the first trial is the centre of the space")
	assert.True(t, strings.HasPrefix(study().Plan().Local, "a design of 8 trials (the centre of the space, then sobol), then a portfolio of bayesianoptimization, tpe"))

	// Stop after 40 trials, then resume from the study file.
	path := filepath.Join(t.TempDir(), "study.jsonl")
	ctx, cancel := context.WithCancel(t.Context())
	_, err = study().StudyFile(path).OnProgress(func(p tune.LocalProgress) {
		if p.Finished >= 40 {
			cancel()
		}
	}).Run(ctx, objectiveOf(rastrigin))
	require.ErrorIs(t, err, context.Canceled)
	resumed, err := study().StudyFile(path).Run(t.Context(), objectiveOf(rastrigin))
	require.NoError(t, err)
	for i := range res.Trials {
		assert.Equal(t, res.Trials[i].Values, resumed.Trials[i].Values, "trial %d", i)
		assert.Equal(t, res.Trials[i].Sampler, resumed.Trials[i].Sampler, "trial %d", i)
	}
	assert.False(t, math.IsNaN(resumed.Best.Value))
}
