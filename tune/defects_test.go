package tune_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/tune"
)

// valuesOf runs a study and returns each trial's values.
func valuesOf(t *testing.T, l *tune.Local) []map[string]string {
	t.Helper()
	res, err := l.MaxTrials(15).Run(t.Context(), func(_ context.Context, tr *tune.Trial) (float64, error) {
		return tr.Float("x") * tr.Float("y"), nil
	})
	require.NoError(t, err)
	var out []map[string]string
	for _, r := range res.Trials {
		out = append(out, r.Values)
	}
	return out
}

// TestLocalAlgorithmSeed: an algorithm's Seed is the study's seed, with
// NewLocal as with LocalFrom; a later Local.Seed replaces it, and both
// take the same type.
func TestLocalAlgorithmSeed(t *testing.T) {
	space := []tune.Param{tune.Float("x", 0, 1), tune.Float("y", 0, 1)}
	for _, alg := range []tune.Algorithm{tune.TPE(), tune.Random(), tune.CMAES(), tune.Auto()} {
		t.Run(alg.Name(), func(t *testing.T) {
			seven := valuesOf(t, tune.NewLocal(tune.Minimize("y"), space...).Algorithm(alg.Seed(7)))
			assert.Equal(t, valuesOf(t, tune.NewLocal(tune.Minimize("y"), space...).Algorithm(alg).Seed(7)), seven)
			assert.NotEqual(t, valuesOf(t, tune.NewLocal(tune.Minimize("y"), space...).Algorithm(alg)), seven, "seed 7 is not seed 0")
			exp := tune.New("e").Objective(tune.Minimize("y")).Param(space...).Algorithm(alg.Seed(7)).MaxTrials(15)
			assert.Equal(t, valuesOf(t, tune.LocalFrom(exp)), seven)
			assert.Equal(t, valuesOf(t, tune.NewLocal(tune.Minimize("y"), space...).Algorithm(alg.Seed(7)).Seed(0)),
				valuesOf(t, tune.NewLocal(tune.Minimize("y"), space...).Algorithm(alg)), "a later Seed replaces the algorithm's")
		})
	}
	_, err := tune.NewLocal(tune.Minimize("y"), space...).Seed(-1).Run(t.Context(), func(context.Context, *tune.Trial) (float64, error) { return 0, nil })
	assert.EqualError(t, err, "seed: Invalid value: -1: must be at least 0")
}

// TestLocalRunAllNaN: a study whose every trial returned NaN or an
// infinity is an error, not a result without a best trial.
func TestLocalRunAllNaN(t *testing.T) {
	res, err := tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1)).MaxTrials(4).Run(t.Context(),
		func(_ context.Context, tr *tune.Trial) (float64, error) {
			if tr.Number%2 == 0 {
				return math.NaN(), nil
			}
			return math.Inf(1), nil
		})
	assert.EqualError(t, err, "run local study: all 4 trials failed; the first: trial 0 returned NaN")
	require.NotNil(t, res)
	assert.Nil(t, res.Best)
	for _, r := range res.Trials {
		assert.Equal(t, cube.Failed, r.State)
	}
}

// TestExperimentTrialReplacesPlacements: a second Trial call replaces the
// first call's placements instead of rendering --lr twice.
func TestExperimentTrialReplacesPlacements(t *testing.T) {
	e := tune.New("twice").Objective(tune.Minimize("loss")).Param(tune.Float("lr", 0.001, 0.1)).
		Trial(batchJob("t"), tune.Arg("lr", "--lr")).
		Trial(batchJob("t"), tune.Arg("lr", "--lr"), tune.Env("lr", "LR"))
	exp, err := e.Build()
	require.NoError(t, err)
	c := exp.Spec.TrialTemplate.TrialSpec.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
	assert.Equal(t, []any{"--lr", "${trialParameters.lr}"}, c["args"])
	assert.Equal(t, []any{map[string]any{"name": "LR", "value": "${trialParameters.lr}"}}, c["env"])

}

// TestLocalAlgorithmDocListsEveryAlgorithm: the doc of Local.Algorithm
// names the constructor of every algorithm it accepts.
func TestLocalAlgorithmDocListsEveryAlgorithm(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "local.go", nil, parser.ParseComments)
	require.NoError(t, err)
	var doc string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "Algorithm" && fn.Recv != nil {
			doc = fn.Doc.Text()
		}
	}
	require.NotEmpty(t, doc)
	constructors := map[string]string{
		tune.AlgorithmAuto: "Auto", tune.AlgorithmRandom: "Random", tune.AlgorithmGrid: "Grid", tune.AlgorithmSobol: "Sobol",
		tune.AlgorithmTPE: "TPE", tune.AlgorithmMultivariateTPE: "MultivariateTPE", tune.AlgorithmCMAES: "CMAES", tune.AlgorithmBayesian: "Bayesian",
	}
	for _, name := range tune.LocalAlgorithms {
		ctor, ok := constructors[name]
		require.True(t, ok, "no constructor known for %s", name)
		assert.True(t, strings.Contains(doc, ctor+",") || strings.Contains(doc, ctor+" ") || strings.Contains(doc, ctor+"."), "the doc misses %s: %s", ctor, doc)
	}
}
