package tune_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/internal/testsupport/ci"
	"github.com/cubestudio/cube/tune"
)

// debianPython is the python3 that Debian's python3-optuna installs into
// (the python3 first on PATH may be another one, without optuna).
const debianPython = "/usr/bin/python3"

// optunaPython returns $TUNE_PYTHON or /usr/bin/python3 if it imports
// optuna; without one the caller skips, and fails under CI=true.
func optunaPython(tb testing.TB) string {
	tb.Helper()
	py := debianPython
	if v := os.Getenv("TUNE_PYTHON"); v != "" {
		py = v
	}
	if err := exec.Command(py, "-c", "import optuna").Run(); err != nil {
		ci.Skip(tb, "%s with optuna (Debian package python3-optuna; or set TUNE_PYTHON): %v", py, err)
		return ""
	}
	return py
}

// writeSuite writes the suite as JSON for the Python side and returns the
// file's path.
func writeSuite(tb testing.TB, fs []benchFunction) string {
	tb.Helper()
	var entries []suiteEntry
	for _, f := range fs {
		entries = append(entries, f.entry())
	}
	data, err := json.Marshal(entries)
	require.NoError(tb, err)
	path := filepath.Join(tb.TempDir(), "suite.json")
	require.NoError(tb, os.WriteFile(path, data, 0o600))
	return path
}

// run is one study's outcome: the clean value of the best observed trial
// after each budget, and the sampler's seconds per trial.
type run struct {
	Function string             `json:"function"`
	Sampler  string             `json:"sampler"`
	Seed     int                `json:"seed"`
	Best     map[string]float64 `json:"best"`
	PerTrial float64            `json:"seconds_per_trial"`
}

// localSamplers are the local tuner's samplers the benchmark can run;
// TUNE_BENCH_SAMPLERS picks some (the default is cube-auto, the default
// algorithm, and cube-random).
var localSamplers = []struct {
	name string
	alg  tune.Algorithm
}{
	{"cube-auto", tune.Auto()},
	{"cube-gp", tune.Bayesian()},
	{"cube-tpe", tune.TPE()},
	{"cube-mvtpe", tune.MultivariateTPE()},
	{"cube-cmaes", tune.CMAES()},
	{"cube-sobol", tune.Sobol()},
	{"cube-random", tune.Random()},
}

// localRun runs one study of the local tuner.
func localRun(tb testing.TB, f benchFunction, name string, alg tune.Algorithm, seed int, budgets []int) run {
	trials := slices.Max(budgets)
	study := tune.NewLocal(tune.Minimize("y"), f.params...).Algorithm(alg).MaxTrials(trials).Seed(seed)
	start := time.Now()
	res, err := study.Run(tb.Context(), objectiveOf(f))
	elapsed := time.Since(start)
	require.NoError(tb, err)
	best := map[string]float64{}
	for _, b := range budgets {
		bi := 0
		for i, r := range res.Trials[:b] {
			if r.Value < res.Trials[bi].Value {
				bi = i
			}
		}
		best[strconv.Itoa(b)] = cleanOf(f, res.Trials[bi])
	}
	return run{f.name, name, seed, best, elapsed.Seconds() / float64(trials)}
}

// localRuns runs the named local samplers on fs, seeds first..first+seeds-1.
func localRuns(tb testing.TB, fs []benchFunction, names []string, first, seeds int, budgets []int) []run {
	var out []run
	for _, f := range fs {
		for _, s := range localSamplers {
			if !slices.Contains(names, s.name) {
				continue
			}
			for seed := first; seed < first+seeds; seed++ {
				out = append(out, localRun(tb, f, s.name, s.alg, seed, budgets))
			}
		}
	}
	return out
}

// optunaRuns runs testdata/optuna_bench.py on fs.
func optunaRuns(tb testing.TB, py string, fs []benchFunction, first, seeds int, budgets []int) []run {
	return startOptuna(tb, py, fs, first, seeds, budgets)()
}

// startOptuna starts testdata/optuna_bench.py on fs in three processes (the
// objectives dealt between them), and returns a function that waits for
// their studies.
func startOptuna(tb testing.TB, py string, fs []benchFunction, first, seeds int, budgets []int) func() []run {
	parts := make([]string, len(budgets))
	for i, b := range budgets {
		parts[i] = strconv.Itoa(b)
	}
	type proc struct {
		cmd            *exec.Cmd
		stdout, stderr bytes.Buffer
	}
	var procs []*proc
	for w := range 3 {
		var share []benchFunction
		for i := w; i < len(fs); i += 3 {
			share = append(share, fs[i])
		}
		if len(share) == 0 {
			continue
		}
		p := &proc{cmd: exec.CommandContext(tb.Context(), py, filepath.Join("testdata", "optuna_bench.py"), "run", writeSuite(tb, share),
			strconv.Itoa(seeds), strings.Join(parts, ","), strconv.Itoa(first))}
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		require.NoError(tb, p.cmd.Start())
		procs = append(procs, p)
	}
	return func() []run {
		var out []run
		for _, p := range procs {
			require.NoError(tb, p.cmd.Wait(), p.stderr.String())
			sc := bufio.NewScanner(&p.stdout)
			for sc.Scan() {
				var r run
				require.NoError(tb, json.Unmarshal(sc.Bytes(), &r))
				out = append(out, r)
			}
		}
		return out
	}
}

// stat is the median and interquartile range of regrets.
type stat struct{ median, q1, q3 float64 }

func (s stat) String() string { return fmt.Sprintf("%.3g [%.3g, %.3g]", s.median, s.q1, s.q3) }

func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(pos)
	if lo+1 >= len(sorted) {
		return sorted[lo]
	}
	return sorted[lo] + (pos-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// summary is regret statistics per function, sampler and budget, and the
// median time per trial per sampler.
type summary struct {
	fs       []benchFunction
	regret   map[[3]string]stat
	perTrial map[string]float64
}

func summarize(fs []benchFunction, runs []run, budgets []int) summary {
	optimum := map[string]float64{}
	for _, f := range fs {
		optimum[f.name] = f.optimum
	}
	s := summary{fs: fs, regret: map[[3]string]stat{}, perTrial: map[string]float64{}}
	groups := map[[3]string][]float64{}
	times := map[string][]float64{}
	for _, r := range runs {
		for _, b := range budgets {
			k := [3]string{r.Function, r.Sampler, strconv.Itoa(b)}
			groups[k] = append(groups[k], math.Max(r.Best[strconv.Itoa(b)]-optimum[r.Function], 0))
		}
		times[r.Sampler] = append(times[r.Sampler], r.PerTrial)
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

var optunaSamplers = []string{"optuna-tpe", "optuna-cmaes", "optuna-random"}

// bestOptuna is the Optuna sampler with the lowest median regret on a cell.
func (s summary) bestOptuna(f string, b int) (string, stat) {
	name, best := "", stat{median: math.Inf(1)}
	for _, o := range optunaSamplers {
		if st, ok := s.regret[[3]string{f, o, strconv.Itoa(b)}]; ok && st.median < best.median {
			name, best = o, st
		}
	}
	return name, best
}

// verdict checks a cell against the bar: at or below the best
// Optuna sampler (Optuna's TPE at the smallest budget) and at or below
// random search, cube's and Optuna's both (the lower of their medians):
// "yes" or "NO", or "—" when a side of the comparison has no studies
// (cube-auto, the Optuna samplers or both random samplers did not run).
func (s summary) verdict(f string, b, smallest int) (string, string) {
	auto, ok := s.regret[[3]string{f, "cube-auto", strconv.Itoa(b)}]
	if !ok {
		return "—", "—"
	}
	bar, hasBar := s.regret[[3]string{f, "optuna-tpe", strconv.Itoa(b)}]
	if b != smallest {
		var name string
		name, bar = s.bestOptuna(f, b)
		hasBar = name != ""
	}
	random, hasRandom := math.Inf(1), false
	for _, name := range []string{"cube-random", "optuna-random"} {
		if st, ok := s.regret[[3]string{f, name, strconv.Itoa(b)}]; ok {
			random, hasRandom = math.Min(random, st.median), true
		}
	}
	beats, beatsRandom := "—", "—"
	if hasBar {
		beats = yes(auto.median <= bar.median)
	}
	if hasRandom {
		beatsRandom = yes(auto.median <= random)
	}
	return beats, beatsRandom
}

// table prints, as markdown, per objective and budget, the default's
// regret (median and interquartile range), the best Optuna sampler's,
// Optuna TPE's and CMA-ES's, random search's, and whether the default meets
// the bar (Optuna's TPE at the smallest budget, the best Optuna sampler at
// the others) and is at or below random search, with the count of cells
// that meet both; then the other local samplers' medians, if any ran, and
// the median time per suggestion.
func (s summary) table(budgets []int) string {
	var buf bytes.Buffer
	fmt.Fprintln(&buf, "| objective | trials | cube default | best Optuna | Optuna TPE | Optuna CMA-ES | cube random | Optuna random | ≤ bar | ≤ random |")
	fmt.Fprintln(&buf, "|---|---:|---|---|---|---|---|---|---|---|")
	met, cells := 0, 0
	for _, f := range s.fs {
		for _, b := range budgets {
			k := func(sampler string) [3]string { return [3]string{f.name, sampler, strconv.Itoa(b)} }
			bestName, best := s.bestOptuna(f.name, b)
			beats, beatsRandom := s.verdict(f.name, b, budgets[0])
			if beats != "—" {
				cells++
			}
			if beats == "yes" && beatsRandom != "NO" {
				met++
			}
			fmt.Fprintf(&buf, "| %s | %d | %s | %s (%s) | %s | %s | %.3g | %.3g | %s | %s |\n", f.name, b, s.regret[k("cube-auto")], best, strings.TrimPrefix(bestName, "optuna-"),
				s.regret[k("optuna-tpe")], s.regret[k("optuna-cmaes")], s.regret[k("cube-random")].median, s.regret[k("optuna-random")].median, beats, beatsRandom)
		}
	}
	if cells > 0 {
		fmt.Fprintf(&buf, "\nThe default meets the bar in %d of %d cells.\n", met, cells)
	}
	var others []string
	for _, name := range []string{"cube-gp", "cube-tpe", "cube-mvtpe", "cube-cmaes", "cube-sobol"} {
		if _, ok := s.perTrial[name]; ok {
			others = append(others, name)
		}
	}
	if len(others) > 0 {
		fmt.Fprintf(&buf, "\n| objective | trials | %s |\n|---|---:|%s\n", strings.Join(others, " | "), strings.Repeat("---|", len(others)))
		for _, f := range s.fs {
			for _, b := range budgets {
				fmt.Fprintf(&buf, "| %s | %d |", f.name, b)
				for _, name := range others {
					fmt.Fprintf(&buf, " %.3g |", s.regret[[3]string{f.name, name, strconv.Itoa(b)}].median)
				}
				fmt.Fprintln(&buf)
			}
		}
	}
	fmt.Fprintln(&buf, "\n| sampler | median time per suggestion |\n|---|---:|")
	for _, name := range append([]string{"cube-auto", "cube-gp", "cube-tpe", "cube-mvtpe", "cube-cmaes", "cube-sobol", "cube-random"}, optunaSamplers...) {
		if t, ok := s.perTrial[name]; ok {
			fmt.Fprintf(&buf, "| %s | %.3g ms |\n", name, t*1000)
		}
	}
	return buf.String()
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "NO"
}

// benchConfig reads TUNE_BENCH_SEEDS (20 by default), TUNE_BENCH_FIRST_SEED
// (0), TUNE_BENCH_SAMPLERS (a comma-separated list of local samplers;
// cube-auto and cube-random by default) and TUNE_BENCH_FUNCTIONS (a
// comma-separated subset of the suite).
func benchConfig(tb testing.TB) (first, seeds int, names []string, fs []benchFunction) {
	first, seeds = 0, 20
	for _, v := range []struct {
		env string
		to  *int
	}{{"TUNE_BENCH_FIRST_SEED", &first}, {"TUNE_BENCH_SEEDS", &seeds}} {
		if s := os.Getenv(v.env); s != "" {
			n, err := strconv.Atoi(s)
			require.NoError(tb, err, v.env)
			*v.to = n
		}
	}
	names = []string{"cube-auto", "cube-random"}
	if v := os.Getenv("TUNE_BENCH_SAMPLERS"); v != "" {
		names = strings.Split(v, ",")
	}
	fs = benchFunctions
	if v := os.Getenv("TUNE_BENCH_FUNCTIONS"); v != "" {
		fs = nil
		for _, f := range benchFunctions {
			if slices.Contains(strings.Split(v, ","), f.name) {
				fs = append(fs, f)
			}
		}
	}
	return first, seeds, names, fs
}

// BenchmarkAgainstOptuna measures, in one run, the local tuner's default
// (Auto) and random search (cube) against Optuna 3.1's TPE, CMA-ES and
// random samplers (baseline) on the suite of functions_test.go: the
// median and interquartile range of the regret (the clean value of the
// best trial found minus the optimum) over 20 seeds at 25, 50 and 100
// trials, and the median time per suggestion (the functions cost nothing,
// so it is the sampler's). Optuna runs in three processes beside cube's
// studies, so that the comparison fits in about a quarter of an hour on a
// shared two-core machine. Run with
//
//	go test ./tune -run '^$' -bench AgainstOptuna -benchtime 1x
//
// It skips when /usr/bin/python3 has no optuna (and fails under CI=true).
// With TUNE_BENCH_OPTUNA_RUNS=FILE the Optuna studies are written to FILE
// (JSON lines), and read from the files it matches (a glob) instead of run
// again when there are any, to compare changes on the cube side against
// the same Optuna studies; it prints how many seeds it read. With
// TUNE_BENCH_CUBE_RUNS=FILE the local studies are appended to FILE.
func BenchmarkAgainstOptuna(b *testing.B) {
	py := optunaPython(b)
	budgets := []int{25, 50, 100}
	first, seeds, names, fs := benchConfig(b)
	var local, optuna []run
	// Optuna's studies run in their own processes while cube's run: the
	// time per suggestion is measured inside each study, on both sides.
	var wait func() []run
	cache := os.Getenv("TUNE_BENCH_OPTUNA_RUNS")
	b.Run("baseline", func(sb *testing.B) {
		sb.ReportAllocs()
		for range sb.N {
			if cached, ok := readRuns(b, cache, fs, first, seeds); ok {
				wait = func() []run { return cached }
				continue
			}
			// The outer benchmark's: the sub-benchmark's context and
			// temporary directory end with it, before the studies do.
			wait = startOptuna(b, py, fs, first, seeds, budgets)
		}
	})
	b.Run("cube", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			local = localRuns(b, fs, names, first, seeds, budgets)
		}
	})
	optuna = wait()
	writeRuns(b, cache, optuna)
	appendRuns(b, os.Getenv("TUNE_BENCH_CUBE_RUNS"), local)
	// Printed, not logged: the benchmark log keeps only its first lines.
	fmt.Print(summarize(fs, append(local, optuna...), budgets).table(budgets))
}

// readRuns reads the studies of fs and the seeds from the files pattern
// matches (a glob; JSON lines as testdata/optuna_bench.py prints them),
// if any, and says how many seeds of each objective it found.
func readRuns(tb testing.TB, pattern string, fs []benchFunction, first, seeds int) ([]run, bool) {
	if pattern == "" {
		return nil, false
	}
	paths, err := filepath.Glob(pattern)
	require.NoError(tb, err)
	var out []run
	have := map[string]map[int]int{}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		require.NoError(tb, err)
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			var r run
			require.NoError(tb, json.Unmarshal(sc.Bytes(), &r), path)
			if r.Seed >= first && r.Seed < first+seeds && slices.ContainsFunc(fs, func(f benchFunction) bool { return f.name == r.Function }) {
				out = append(out, r)
				if have[r.Function] == nil {
					have[r.Function] = map[int]int{}
				}
				have[r.Function][r.Seed]++
			}
		}
	}
	if len(out) == 0 {
		return nil, false
	}
	for _, f := range fs {
		fmt.Printf("studies read from %s: %s, %d seeds of %d (%d studies)\n", pattern, f.name, len(have[f.name]), seeds, func() int {
			n := 0
			for _, c := range have[f.name] {
				n += c
			}
			return n
		}())
	}
	return out, true
}

// writeRuns keeps the Optuna studies in path (JSON lines) for a later run.
func writeRuns(tb testing.TB, path string, runs []run) {
	if path == "" || strings.ContainsAny(path, "*?[") {
		return
	}
	if _, err := os.Stat(path); err == nil {
		return
	}
	var buf bytes.Buffer
	for _, r := range runs {
		data, err := json.Marshal(r)
		require.NoError(tb, err)
		buf.Write(append(data, '\n'))
	}
	require.NoError(tb, os.WriteFile(path, buf.Bytes(), 0o600))
}

// appendRuns appends the local studies to path (TUNE_BENCH_CUBE_RUNS), as
// JSON lines, to summarise them later beside Optuna's.
func appendRuns(tb testing.TB, path string, runs []run) {
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	require.NoError(tb, err)
	defer f.Close()
	for _, r := range runs {
		data, err := json.Marshal(r)
		require.NoError(tb, err)
		_, err = f.Write(append(data, '\n'))
		require.NoError(tb, err)
	}
}

// BenchmarkLocalSamplers is the local half, for a quick look without
// Optuna: the default and the other samplers (cube) against uniform random
// sampling (baseline).
func BenchmarkLocalSamplers(b *testing.B) {
	budgets := []int{25, 50, 100}
	first, seeds, names, fs := benchConfig(b)
	var runs []run
	for _, sub := range []struct {
		name     string
		samplers []string
	}{{"cube", slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == "cube-random" })}, {"baseline", []string{"cube-random"}}} {
		b.Run(sub.name, func(b *testing.B) {
			b.ReportAllocs()
			var got []run
			for range b.N {
				got = localRuns(b, fs, sub.samplers, first, seeds, budgets)
			}
			runs = append(runs, got...)
		})
	}
	appendRuns(b, os.Getenv("TUNE_BENCH_CUBE_RUNS"), runs)
	fmt.Print(summarize(fs, runs, budgets).table(budgets))
}

// BenchmarkTableFromRuns prints the table of BenchmarkAgainstOptuna from
// studies written before (TUNE_BENCH_OPTUNA_RUNS and TUNE_BENCH_CUBE_RUNS,
// globs of JSON-lines files), without running any: to render a long run
// again. The local time (baseline) reads the files, the cube one
// summarises them.
func BenchmarkTableFromRuns(b *testing.B) {
	budgets := []int{25, 50, 100}
	first, seeds, _, fs := benchConfig(b)
	var runs []run
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			optuna, _ := readRuns(b, os.Getenv("TUNE_BENCH_OPTUNA_RUNS"), fs, first, seeds)
			local, _ := readRuns(b, os.Getenv("TUNE_BENCH_CUBE_RUNS"), fs, first, seeds)
			runs = append(optuna, local...)
		}
	})
	var table string
	b.Run("cube", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			table = summarize(fs, runs, budgets).table(budgets)
		}
	})
	fmt.Print(table)
}
