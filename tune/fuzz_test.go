package tune_test

import (
	"testing"

	katibv1beta1 "github.com/kubeflow/katib/pkg/apis/controller/experiments/v1beta1"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testenv"
	"github.com/cubestudio/cube/tune"
)

var fuzzAlgorithms = []func(resource string) tune.Algorithm{
	func(string) tune.Algorithm { return tune.Random().Seed(1) },
	func(string) tune.Algorithm { return tune.TPE().Gamma(0.3) },
	func(string) tune.Algorithm { return tune.Grid() },
	func(string) tune.Algorithm { return tune.MultivariateTPE().StartupTrials(3) },
	func(string) tune.Algorithm { return tune.CMAES().Sigma(0.5) },
	func(string) tune.Algorithm { return tune.Sobol() },
	func(string) tune.Algorithm { return tune.Bayesian().BaseEstimator("RF") },
	func(r string) tune.Algorithm { return tune.Hyperband(r, 3) },
	func(string) tune.Algorithm { return tune.PBT("/var/log/katib/checkpoints", 5, 0.2) },
}

// FuzzExperiment builds experiments from arbitrary input: the builder
// never panics, and whatever it accepts the API server and Katib's
// validator accept too.
func FuzzExperiment(f *testing.F) {
	f.Add("fuzz", "lr", 0.001, 0.1, 0.0, true, "layers", 1, 8, "adam", "sgd", "accuracy", true, uint8(0), int32(2), int32(10), int32(1))
	f.Add("grid", "lr", 0.1, 0.5, 0.1, false, "layers", 2, 4, "a", "b", "loss", false, uint8(2), int32(1), int32(6), int32(0))
	f.Add("hb", "lr", 0.01, 0.05, 0.0, false, "epochs", 1, 1, "a", "b", "loss", false, uint8(7), int32(3), int32(3), int32(0))
	f.Add("cm", "x", -1.0, 1.0, 0.0, false, "y", -3, 3, "p", "q", "score", true, uint8(4), int32(3), int32(30), int32(2))
	f.Add("Bad", "1x", 1.0, -1.0, -2.0, true, "", 5, 1, "", "", "", true, uint8(200), int32(-1), int32(0), int32(-5))
	f.Fuzz(func(t *testing.T, name, floatName string, lo, hi, step float64, log bool, intName string, imin, imax int,
		c1, c2, metric string, maximize bool, alg uint8, parallel, maxTrials, maxFailed int32) {
		objective := tune.Minimize(metric)
		if maximize {
			objective = tune.Maximize(metric)
		}
		fp := tune.Float(floatName, lo, hi)
		if log {
			fp = fp.Log()
		}
		if step != 0 {
			fp = fp.Step(step)
		}
		algorithm := fuzzAlgorithms[int(alg)%len(fuzzAlgorithms)](intName)
		e := tune.New(name).Objective(objective).Algorithm(algorithm).
			Param(fp, tune.Int(intName, imin, imax), tune.Choice("opt", c1, c2)).
			Trial(batchJob("trial"), tune.Arg(floatName, "--f"), tune.Env(intName, "INT_PARAM"), tune.Env("opt", "OPT")).
			Parallel(parallel).MaxTrials(maxTrials).MaxFailed(maxFailed)
		exp, err := e.Build()
		if err != nil {
			return
		}
		katibValidate(t, exp)
		env := testenv.Get(t)
		ns := env.Namespace(t)
		exp.Namespace = ns
		u, err := cube.ToUnstructured(exp)
		require.NoError(t, err)
		require.NoError(t, env.ApplyStrict(t.Context(), u, cube.ManagedBy))
		require.Equal(t, katibv1beta1.SchemeGroupVersion.String(), u.GetAPIVersion())
	})
}
