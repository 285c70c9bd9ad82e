package tune_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	katibv1beta1 "github.com/kubeflow/katib/pkg/apis/controller/experiments/v1beta1"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
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

// experimentInput is one input of FuzzExperiment.
type experimentInput struct {
	name, floatName     string
	lo, hi, step        float64
	log                 bool
	intName             string
	imin, imax          int
	c1, c2, metric      string
	maximize            bool
	alg                 uint8
	parallel, maxTrials int32
	maxFailed           int32
}

// experiment builds the experiment an input describes.
func (in experimentInput) experiment() *tune.Experiment {
	objective := tune.Minimize(in.metric)
	if in.maximize {
		objective = tune.Maximize(in.metric)
	}
	fp := tune.Float(in.floatName, in.lo, in.hi)
	if in.log {
		fp = fp.Log()
	}
	if in.step != 0 {
		fp = fp.Step(in.step)
	}
	algorithm := fuzzAlgorithms[int(in.alg)%len(fuzzAlgorithms)](in.intName)
	return tune.New(in.name).Objective(objective).Algorithm(algorithm).
		Param(fp, tune.Int(in.intName, in.imin, in.imax), tune.Choice("opt", in.c1, in.c2)).
		Trial(batchJob("trial"), tune.Arg(in.floatName, "--f"), tune.Env(in.intName, "INT_PARAM"), tune.Env("opt", "OPT")).
		Parallelism(int(in.parallel)).MaxTrials(int(in.maxTrials)).MaxFailedTrials(int(in.maxFailed))
}

// experimentSeeds are FuzzExperiment's seeds; TestFuzzCorpusApplies runs
// them too.
var experimentSeeds = []experimentInput{
	{"fuzz", "lr", 0.001, 0.1, 0.0, true, "layers", 1, 8, "adam", "sgd", "accuracy", true, 0, 2, 10, 1},
	{"grid", "lr", 0.1, 0.5, 0.1, false, "layers", 2, 4, "a", "b", "loss", false, 2, 1, 6, 0},
	{"hb", "lr", 0.01, 0.05, 0.0, false, "epochs", 1, 1, "a", "b", "loss", false, 7, 3, 3, 0},
	{"cm", "x", -1.0, 1.0, 0.0, false, "y", -3, 3, "p", "q", "score", true, 4, 3, 30, 2},
	{"Bad", "1x", 1.0, -1.0, -2.0, true, "", 5, 1, "", "", "", true, 200, -1, 0, -5},
}

// FuzzExperiment builds experiments from arbitrary input: the builder
// never panics, and whatever it accepts Katib's validator and Katib's
// contract accept too (TestFuzzCorpusApplies applies the accepted corpus
// to the API server).
func FuzzExperiment(f *testing.F) {
	for _, s := range experimentSeeds {
		f.Add(s.name, s.floatName, s.lo, s.hi, s.step, s.log, s.intName, s.imin, s.imax, s.c1, s.c2, s.metric, s.maximize, s.alg, s.parallel, s.maxTrials, s.maxFailed)
	}
	f.Fuzz(func(t *testing.T, name, floatName string, lo, hi, step float64, log bool, intName string, imin, imax int,
		c1, c2, metric string, maximize bool, alg uint8, parallel, maxTrials, maxFailed int32) {
		in := experimentInput{name, floatName, lo, hi, step, log, intName, imin, imax, c1, c2, metric, maximize, alg, parallel, maxTrials, maxFailed}
		exp, err := in.experiment().Build()
		if err != nil {
			return
		}
		katibValidate(t, exp)
		// And Katib's suggestion services, early stopping and collectors.
		require.NoError(t, checkKatibContract("fuzz", exp))
		u, err := cube.ToUnstructured(exp)
		require.NoError(t, err)
		require.Equal(t, katibv1beta1.SchemeGroupVersion.String(), u.GetAPIVersion())
		// The API server's side of "whatever it accepts" is
		// TestFuzzCorpusApplies: one apply per execution would hold the
		// fuzzer to the server's ~100 requests a second.
	})
}

var fuzzLocalAlgorithms = []tune.Algorithm{
	tune.Random(), tune.Grid(), tune.TPE(), tune.MultivariateTPE().StartupTrials(2), tune.Sobol(),
	tune.CMAES(), tune.CMAES().Sigma(0.05), tune.Bayesian().InitialPoints(2), tune.TPE().Gamma(0.5).PriorWeight(2),
}

var fuzzEarlyStopping = []func(a, b int) *tune.EarlyStopping{
	func(int, int) *tune.EarlyStopping { return nil },
	func(a, b int) *tune.EarlyStopping { es := tune.MedianStop().StartStep(a).MinTrials(b); return &es },
	func(a, b int) *tune.EarlyStopping { es := tune.HalvingStop().StartStep(a).Eta(b); return &es },
	func(a, b int) *tune.EarlyStopping { es := tune.HyperbandStop(a).Eta(b); return &es },
}

// FuzzLocal runs local studies over arbitrary spaces, samplers, early
// stopping and counts: Run never panics, and when it accepts the study
// every trial's values lie in the space and every trial is there.
func FuzzLocal(f *testing.F) {
	f.Add(-1.0, 1.0, 0.0, false, 0, 5, uint8(2), uint8(0), 3, 2, 12, 2, uint64(1))
	f.Add(1e-4, 1.0, 0.0, true, 1, 1, uint8(7), uint8(2), 1, 3, 15, 3, uint64(2))
	f.Add(0.0, 1.0, 0.25, false, -3, 3, uint8(1), uint8(3), 9, 3, 20, 1, uint64(3))
	f.Add(0.0, 0.0, 0.0, false, 4, 4, uint8(5), uint8(1), 1, 1, 10, 4, uint64(4))
	f.Add(2.0, -1.0, -1.0, true, 5, 1, uint8(200), uint8(9), 0, 0, 0, 0, uint64(5))
	f.Fuzz(func(t *testing.T, lo, hi, step float64, log bool, imin, imax int, alg, es uint8, esA, esB, trials, parallel int, seed uint64) {
		if trials > 40 || parallel > 8 || imax-imin > 1000 {
			return // keep each run short
		}
		fp := tune.Float("x", lo, hi)
		if log {
			fp = fp.Log()
		}
		if step != 0 {
			fp = fp.Step(step)
		}
		study := tune.NewLocal(tune.Minimize("loss"), fp, tune.Int("n", imin, imax), tune.Choice("c", "a", "b", "c")).
			Algorithm(fuzzLocalAlgorithms[int(alg)%len(fuzzLocalAlgorithms)]).MaxTrials(trials).Parallelism(parallel).Seed(int(seed &^ (1 << 63)))
		if e := fuzzEarlyStopping[int(es)%len(fuzzEarlyStopping)](esA, esB); e != nil {
			study.EarlyStop(*e)
		}
		res, err := study.Run(t.Context(), func(_ context.Context, tr *tune.Trial) (float64, error) {
			v := math.Abs(tr.Float("x")) + float64(tr.Int("n"))
			for range 5 {
				if err := tr.Report(v); err != nil {
					return 0, err
				}
				v /= 2
			}
			return v, nil
		})
		if err != nil {
			require.Nil(t, res)
			return
		}
		require.Len(t, res.Trials, trials)
		for _, r := range res.Trials {
			require.NotEqual(t, cube.Failed, r.State, "trial %d: %v", r.Number, r.Err)
			x := r.Float("x")
			require.True(t, x >= math.Min(lo, hi) && x <= math.Max(lo, hi), "x=%v outside [%v, %v]", x, lo, hi)
			require.True(t, r.Int("n") >= imin && r.Int("n") <= imax, "n=%d outside [%d, %d]", r.Int("n"), imin, imax)
			require.Contains(t, []string{"a", "b", "c"}, r.String("c"))
		}
	})
}

// FuzzAuto runs the default over numeric spaces (where its quadratic
// model can join the portfolio) and arbitrary quadratic-ish objectives,
// with huge, tiny and failing values: Run never panics, and every trial's
// values lie in the space.
func FuzzAuto(f *testing.F) {
	f.Add(-5.0, 10.0, false, 0, 20, 1.0, -3.0, 0.5, 30, 1, uint64(1))
	f.Add(1e-6, 1.0, true, 1, 1, 1e300, 1e-300, 0.0, 40, 2, uint64(2))
	f.Add(0.0, 0.0, false, -4, 4, 0.0, 0.0, 0.0, 25, 3, uint64(3))
	f.Add(-1.0, 1.0, false, 0, 9, 1.0, 1.0, math.Inf(1), 35, 1, uint64(4))
	f.Fuzz(func(t *testing.T, lo, hi float64, log bool, imin, imax int, a, b, c float64, trials, parallel int, seed uint64) {
		if trials > 60 || parallel > 4 || imax-imin > 1000 {
			return // keep each run short
		}
		fp := tune.Float("x", lo, hi)
		if log {
			fp = fp.Log()
		}
		study := tune.NewLocal(tune.Minimize("loss"), fp, tune.Int("n", imin, imax), tune.Float("y", -1, 1)).
			MaxTrials(trials).Parallelism(parallel).Seed(int(seed &^ (1 << 63)))
		res, err := study.Run(t.Context(), func(_ context.Context, tr *tune.Trial) (float64, error) {
			x, n, y := tr.Float("x"), float64(tr.Int("n")), tr.Float("y")
			return a*x*x + b*n*n + c*x*y + y*y, nil
		})
		if res == nil {
			require.Error(t, err, "a study refused says why")
			return
		}
		if err != nil {
			// A study that ran, where no trial succeeded (every value NaN
			// or infinite).
			for _, r := range res.Trials {
				require.NotEqual(t, cube.Succeeded, r.State, "trial %d succeeded, yet Run says %v", r.Number, err)
			}
		}
		require.Len(t, res.Trials, trials)
		for _, r := range res.Trials {
			x, y := r.Float("x"), r.Float("y")
			require.True(t, x >= math.Min(lo, hi) && x <= math.Max(lo, hi), "x=%v outside [%v, %v]", x, lo, hi)
			require.True(t, y >= -1 && y <= 1, "y=%v outside [-1, 1]", y)
			require.True(t, r.Int("n") >= imin && r.Int("n") <= imax, "n=%d outside [%d, %d]", r.Int("n"), imin, imax)
		}
	})
}

// FuzzAutoGrid runs Auto on small spaces of Ints, Choices, Discretes and
// stepped Floats with arbitrary values (NaN and infinities fail their
// trials): its values stay in the space, and no configuration runs twice
// while the space has one left, one trial at a time or several.
func FuzzAutoGrid(f *testing.F) {
	f.Add(0, 3, 2, 0.5, 1.0, -2.0, 0.5, 30, 1, uint64(1))
	f.Add(-2, 0, 1, 0.25, 0.0, 0.0, 0.0, 40, 3, uint64(2))
	f.Add(5, 9, 4, 1e-9, math.NaN(), 1.0, 1.0, 25, 2, uint64(3))
	f.Add(1, 1, 3, 2.0, math.Inf(-1), 3.0, -1.0, 12, 4, uint64(4))
	f.Fuzz(func(t *testing.T, imin, imax, choices int, step, a, b, c float64, trials, parallel int, seed uint64) {
		if trials < 1 || trials > 60 || parallel < 1 || parallel > 4 || imax-imin > 20 || choices < 1 || choices > 4 || !(step >= 0.05) || step > 1 {
			return // a valid space, and each run short
		}
		values := []string{"p", "q", "r", "s"}[:choices]
		params := []tune.Param{tune.Int("n", imin, imax), tune.Choice("c", values...), tune.Float("y", 0, 1).Step(step), tune.Discrete("d", 1, 2, 4)}
		study := tune.NewLocal(tune.Minimize("loss"), params...).MaxTrials(trials).Parallelism(parallel).Seed(int(seed &^ (1 << 63)))
		res, err := study.Run(t.Context(), func(_ context.Context, tr *tune.Trial) (float64, error) {
			n, y := float64(tr.Int("n")), tr.Float("y")
			return a*n*n + b*y + c*tr.Float("d") + float64(slices.Index(values, tr.String("c"))), nil
		})
		if res == nil {
			require.Error(t, err, "a study refused says why")
			return
		}
		size := (imax - imin + 1) * choices * (int(math.Floor(1/step+1e-9)) + 1) * 3
		seen := map[string]int{}
		for _, r := range res.Trials {
			require.True(t, r.Int("n") >= imin && r.Int("n") <= imax, "n=%d outside [%d, %d]", r.Int("n"), imin, imax)
			require.Contains(t, values, r.String("c"))
			require.True(t, r.Float("y") >= 0 && r.Float("y") <= 1, "y=%v outside [0, 1]", r.Float("y"))
			key := fmt.Sprint(r.Values)
			if k, ok := seen[key]; ok && r.Number < size {
				t.Fatalf("trial %d (%s) runs %s again, as trial %d did, with %d of %d configurations run", r.Number, r.Sampler, key, k, len(seen), size)
			}
			seen[key] = r.Number
		}
	})
}

// FuzzQuadratic fits Auto's quadratic model to arbitrary trials and
// values (huge, tiny, equal, at the bounds): it never panics, and what it
// proposes lies in the space.
func FuzzQuadratic(f *testing.F) {
	f.Add(uint64(1), 20, 1.0, -2.0, 0.5, false)
	f.Add(uint64(2), 9, 1e300, -1e300, 1e-300, true)
	f.Add(uint64(3), 40, 0.0, 0.0, 0.0, false)
	f.Add(uint64(4), 15, math.MaxFloat64, 1.0, -math.MaxFloat64, true)
	f.Fuzz(func(t *testing.T, seed uint64, n int, a, b, c float64, bounds bool) {
		if n < 0 || n > 200 || math.IsNaN(a+b+c) || math.IsInf(a, 0) || math.IsInf(b, 0) || math.IsInf(c, 0) {
			return
		}
		params := []tune.Param{tune.Float("x", -3, 7), tune.Float("lr", 1e-5, 1).Log(), tune.Int("k", 1, 9)}
		rng := rand.New(rand.NewPCG(seed, 7))
		var values []map[string]any
		var ys []float64
		for range n {
			x, lr, k := -3+10*rng.Float64(), math.Pow(10, -5+5*rng.Float64()), 1+rng.IntN(9)
			if bounds && rng.IntN(2) == 0 {
				x, lr, k = 7, 1, 9
			}
			y := a*x*x + b*math.Log10(lr)*float64(k) + c*x
			if math.IsNaN(y) || math.IsInf(y, 0) {
				continue
			}
			values, ys = append(values, map[string]any{"x": x, "lr": lr, "k": k}), append(ys, y)
		}
		next, _ := tune.QuadraticProposal(params, values, ys)
		x, _ := next["x"].(float64)
		lr, _ := next["lr"].(float64)
		k, _ := next["k"].(int)
		require.True(t, x >= -3 && x <= 7, "x=%v", next["x"])
		require.True(t, lr >= 1e-5 && lr <= 1, "lr=%v", next["lr"])
		require.True(t, k >= 1 && k <= 9, "k=%v", next["k"])
	})
}

// FuzzStudyFile opens arbitrary bytes as a study file: Run never panics,
// and either refuses the file or resumes with the trials it records, all
// within the space.
func FuzzStudyFile(f *testing.F) {
	dir := f.TempDir()
	seedPath := filepath.Join(dir, "seed.jsonl")
	study := func(path string) *tune.Local {
		return tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1), tune.Choice("c", "a", "b")).MaxTrials(4).Seed(1).StudyFile(path)
	}
	if _, err := study(seedPath).MaxTrials(2).Run(f.Context(), func(_ context.Context, tr *tune.Trial) (float64, error) { return tr.Float("x"), nil }); err != nil {
		f.Fatal(err)
	}
	valid, err := os.ReadFile(seedPath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(valid[:len(valid)-7])
	f.Add([]byte("{}\n"))
	f.Add(append(slices.Clone(valid), []byte(`{"number":1,"state":"Succeeded","values":{"x":"2","c":"a"},"value":"NaN"}`+"\n")...))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "study.jsonl")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		res, err := study(path).Run(t.Context(), func(_ context.Context, tr *tune.Trial) (float64, error) { return tr.Float("x"), nil })
		if err != nil {
			return
		}
		require.Len(t, res.Trials, 4)
		for _, r := range res.Trials {
			require.True(t, r.Float("x") >= 0 && r.Float("x") <= 1)
			require.Contains(t, []string{"a", "b"}, r.String("c"))
		}
	})
}
