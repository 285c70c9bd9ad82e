package tune_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/internal/testsupport/ci"
	"github.com/cubestudio/cube/tune"
)

// optunaPython returns a python3 that imports optuna: $TUNE_PYTHON, the
// python3 on PATH, or Debian's /usr/bin/python3 (python3-optuna installs
// there). Without one the test skips, and fails under CI=true.
func optunaPython(tb testing.TB) string {
	tb.Helper()
	candidates := []string{os.Getenv("TUNE_PYTHON"), "python3", "/usr/bin/python3"}
	for _, py := range candidates {
		if py == "" {
			continue
		}
		if err := exec.Command(py, "-c", "import optuna").Run(); err == nil {
			return py
		}
	}
	msg := "no python3 with optuna (Debian package python3-optuna; or set TUNE_PYTHON): the comparison with Optuna cannot run"
	ci.Skip(tb, "%s", msg)
	return ""
}

// run is one study's outcome: the best value after each budget and the
// sampler's seconds per trial.
type run struct {
	Function string             `json:"function"`
	Sampler  string             `json:"sampler"`
	Seed     int                `json:"seed"`
	Best     map[string]float64 `json:"best"`
	PerTrial float64            `json:"seconds_per_trial"`
}

// localSamplers are the local tuner's samplers the benchmark runs.
var localSamplers = []struct {
	name string
	alg  tune.Algorithm
}{
	{"cube-gp", tune.Bayesian()},
	{"cube-tpe", tune.TPE()},
	{"cube-mvtpe", tune.MultivariateTPE()},
	{"cube-cmaes", tune.CMAES()},
	{"cube-sobol", tune.Sobol()},
	{"cube-random", tune.Random()},
}

// localRuns runs the local tuner's samplers on every function, seeds
// first..first+seeds-1.
func localRuns(tb testing.TB, names []string, first, seeds int, budgets []int) []run {
	var out []run
	for _, f := range benchFunctions {
		for _, s := range localSamplers {
			if !slices.Contains(names, s.name) {
				continue
			}
			for seed := first; seed < first+seeds; seed++ {
				trials := slices.Max(budgets)
				var values []float64
				study := tune.NewLocal(tune.Minimize("y"), f.params...).Algorithm(s.alg).MaxTrials(trials).Seed(uint64(seed))
				start := time.Now()
				res, err := study.Run(tb.Context(), objectiveOf(f))
				elapsed := time.Since(start)
				require.NoError(tb, err)
				for _, r := range res.Trials {
					values = append(values, r.Value)
				}
				best := map[string]float64{}
				for _, b := range budgets {
					best[strconv.Itoa(b)] = slices.Min(values[:b])
				}
				out = append(out, run{f.name, s.name, seed, best, elapsed.Seconds() / float64(trials)})
			}
		}
	}
	return out
}

// optunaRuns runs testdata/optuna_bench.py.
func optunaRuns(tb testing.TB, py string, first, seeds int, budgets []int) []run {
	parts := make([]string, len(budgets))
	for i, b := range budgets {
		parts[i] = strconv.Itoa(b)
	}
	cmd := exec.CommandContext(tb.Context(), py, filepath.Join("testdata", "optuna_bench.py"), strconv.Itoa(seeds), strings.Join(parts, ","), strconv.Itoa(first))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	require.NoError(tb, err, stderr.String())
	var out []run
	sc := bufio.NewScanner(bytes.NewReader(outb))
	for sc.Scan() {
		var r run
		require.NoError(tb, json.Unmarshal(sc.Bytes(), &r))
		out = append(out, r)
	}
	return out
}

// stat is the median and interquartile range of regrets.
type stat struct{ median, q1, q3 float64 }

func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(pos)
	if lo+1 >= len(sorted) {
		return sorted[lo]
	}
	return sorted[lo] + (pos-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// summary is regret statistics per function, sampler and budget, and the
// median time per trial per function and sampler.
type summary struct {
	regret   map[[3]string]stat
	perTrial map[[2]string]float64
}

func summarize(runs []run, budgets []int) summary {
	optimum := map[string]float64{}
	for _, f := range benchFunctions {
		optimum[f.name] = f.optimum
	}
	s := summary{regret: map[[3]string]stat{}, perTrial: map[[2]string]float64{}}
	groups := map[[3]string][]float64{}
	times := map[[2]string][]float64{}
	for _, r := range runs {
		for _, b := range budgets {
			k := [3]string{r.Function, r.Sampler, strconv.Itoa(b)}
			groups[k] = append(groups[k], r.Best[strconv.Itoa(b)]-optimum[r.Function])
		}
		times[[2]string{r.Function, r.Sampler}] = append(times[[2]string{r.Function, r.Sampler}], r.PerTrial)
	}
	for k, v := range groups {
		slices.Sort(v)
		s.regret[k] = stat{quantile(v, 0.5), quantile(v, 0.25), quantile(v, 0.75)}
	}
	for k, v := range times {
		slices.Sort(v)
		s.perTrial[k] = quantile(v, 0.5)
	}
	return s
}

var samplerOrder = []string{"cube-gp", "cube-tpe", "cube-mvtpe", "cube-cmaes", "cube-sobol", "cube-random", "optuna-tpe", "optuna-cmaes", "optuna-random"}

func (s summary) table(budgets []int) string {
	var buf bytes.Buffer
	w := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprint(w, "function\tsampler")
	for _, b := range budgets {
		fmt.Fprintf(w, "\tregret@%d median [IQR]", b)
	}
	fmt.Fprint(w, "\ttime/trial\n")
	for _, f := range benchFunctions {
		for _, name := range samplerOrder {
			if _, ok := s.perTrial[[2]string{f.name, name}]; !ok {
				continue
			}
			fmt.Fprintf(w, "%s\t%s", f.name, name)
			for _, b := range budgets {
				st := s.regret[[3]string{f.name, name, strconv.Itoa(b)}]
				fmt.Fprintf(w, "\t%.4g [%.4g, %.4g]", st.median, st.q1, st.q3)
			}
			fmt.Fprintf(w, "\t%.3gms\n", s.perTrial[[2]string{f.name, name}]*1000)
		}
	}
	w.Flush()
	return buf.String()
}

// benchSeeds reads TUNE_BENCH_FIRST_SEED (default 0: the seeds of the
// table in doc.go; 1000 gives the held-out seeds the doc also reports) and
// TUNE_BENCH_SAMPLERS (a comma-separated subset of the local samplers).
func benchSeeds(tb testing.TB) (int, []string) {
	first := 0
	if v := os.Getenv("TUNE_BENCH_FIRST_SEED"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(tb, err, "TUNE_BENCH_FIRST_SEED")
		first = n
	}
	var names []string
	for _, s := range localSamplers {
		names = append(names, s.name)
	}
	if v := os.Getenv("TUNE_BENCH_SAMPLERS"); v != "" {
		names = strings.Split(v, ",")
	}
	return first, names
}

// BenchmarkAgainstOptuna measures, in one run, the local tuner's samplers
// (GP, univariate and multivariate TPE, CMA-ES, Sobol, random) and
// Optuna's TPE, CMA-ES and random samplers on Branin, Hartmann-6,
// Rosenbrock-4D and a mixed space: the median and interquartile range of
// the regret (best found minus the optimum) over 20 seeds at 25, 50 and
// 100 trials, and the median time per trial (the functions cost nothing,
// so it is the sampler's). Run with
//
//	go test ./tune -run '^$' -bench AgainstOptuna -benchtime 1x
//
// The local tuner's runs are the sub-benchmark cube, Optuna's the
// baseline; the table compares both.
func BenchmarkAgainstOptuna(b *testing.B) {
	py := optunaPython(b)
	budgets := []int{25, 50, 100}
	first, names := benchSeeds(b)
	var local, optuna []run
	b.Run("cube", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			local = localRuns(b, names, first, 20, budgets)
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			optuna = optunaRuns(b, py, first, 20, budgets)
		}
	})
	// Printed, not logged: the benchmark log keeps only its first lines.
	fmt.Print(summarize(append(local, optuna...), budgets).table(budgets))
}

// BenchmarkLocalSamplers is the local half of BenchmarkAgainstOptuna, for
// a quick look without Optuna: the model-based samplers (cube) against
// uniform random sampling (baseline), which any sampler must beat.
func BenchmarkLocalSamplers(b *testing.B) {
	budgets := []int{25, 50, 100}
	first, names := benchSeeds(b)
	var models, random []string
	for _, n := range names {
		if n == "cube-random" {
			random = append(random, n)
		} else {
			models = append(models, n)
		}
	}
	var runs []run
	for _, sub := range []struct {
		name     string
		samplers []string
	}{{"cube", models}, {"baseline", random}} {
		b.Run(sub.name, func(b *testing.B) {
			b.ReportAllocs()
			var got []run
			for range b.N {
				got = localRuns(b, sub.samplers, first, 20, budgets)
			}
			runs = append(runs, got...)
		})
	}
	fmt.Print(summarize(runs, budgets).table(budgets))
}
