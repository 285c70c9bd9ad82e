package tune_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	common "github.com/kubeflow/katib/pkg/apis/controller/common/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/tune"
)

// studyChildEnv makes TestHelperStudyProcess run the study of
// killableStudy in the directory it names: the test binary re-executed as
// the process TestStudyFileSurvivesSIGKILL kills.
const studyChildEnv = "TUNE_STUDY_CHILD_DIR"

const killableTrials = 24

func killableStudy(dir string) *tune.Local {
	return tune.NewLocal(tune.Minimize("loss"), tune.Float("x", -2, 2), tune.Int("n", 0, 6), tune.Choice("c", "a", "b")).
		Algorithm(tune.MultivariateTPE()).MaxTrials(killableTrials).Parallelism(2).Seed(11).
		StudyFile(filepath.Join(dir, "study.jsonl"))
}

// loggingTrial appends "<who> <number>" to dir/runs.log as each trial
// starts (one O_APPEND write, so lines never mix), then takes pause.
func loggingTrial(dir, who string, pause time.Duration) tune.Func {
	return func(ctx context.Context, t *tune.Trial) (float64, error) {
		f, err := os.OpenFile(filepath.Join(dir, "runs.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return 0, err
		}
		_, err = fmt.Fprintf(f, "%s %d\n", who, t.Number)
		f.Close()
		if err != nil {
			return 0, err
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		return math.Pow(t.Float("x")-0.5, 2) + float64(t.Int("n")), nil
	}
}

// TestHelperStudyProcess is not a test on its own: it is the child process
// of TestStudyFileSurvivesSIGKILL, and returns at once without its
// environment variable.
func TestHelperStudyProcess(t *testing.T) {
	dir := os.Getenv(studyChildEnv)
	if dir == "" {
		return
	}
	_, err := killableStudy(dir).Run(t.Context(), loggingTrial(dir, "child", 100*time.Millisecond))
	require.NoError(t, err)
}

// recordedTrials reads the trial numbers a study file records.
func recordedTrials(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []int
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if i == 0 || line == "" {
			continue
		}
		var rec struct{ Number int }
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "line %d", i+1)
		out = append(out, rec.Number)
	}
	return out
}

func runsLog(t *testing.T, dir string) map[string][]int {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "runs.log"))
	require.NoError(t, err)
	defer f.Close()
	out := map[string][]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var who string
		var n int
		_, err := fmt.Sscanf(sc.Text(), "%s %d", &who, &n)
		require.NoError(t, err, sc.Text())
		out[who] = append(out[who], n)
	}
	return out
}

// TestStudyFileSurvivesSIGKILL kills a study's process with SIGKILL in
// the middle, resumes the study from its file, and checks that no trial
// the file records ran again, that the others ran exactly once more, and
// that every trial has the values an uninterrupted study gives.
func TestStudyFileSurvivesSIGKILL(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "study.jsonl")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperStudyProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), studyChildEnv+"="+dir)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if data, err := os.ReadFile(path); err == nil && strings.Count(string(data), "\n") >= 1+6 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the child recorded no 6 trials in time: %s", out.String())
		time.Sleep(2 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	err := cmd.Wait()
	require.Error(t, err, "the child must die of the signal: %s", out.String())
	assert.Contains(t, err.Error(), "killed")

	finished := recordedTrials(t, path)
	require.Less(t, len(finished), killableTrials, "the child finished before it was killed; the test proves nothing")
	started := runsLog(t, dir)["child"]
	assert.Subset(t, started, finished, "a recorded trial was started by the child")

	var progress []tune.LocalProgress
	res, err := killableStudy(dir).OnProgress(func(p tune.LocalProgress) { progress = append(progress, p) }).
		Run(t.Context(), loggingTrial(dir, "resume", 0))
	require.NoError(t, err)
	require.Len(t, res.Trials, killableTrials)

	resumed := runsLog(t, dir)["resume"]
	for _, n := range finished {
		assert.NotContains(t, resumed, n, "trial %d was recorded before the kill and ran again", n)
	}
	for n := range killableTrials {
		want := 1
		if contains(finished, n) {
			want = 0
		}
		assert.Equal(t, want, count(resumed, n), "runs of trial %d after the resume", n)
	}
	assert.Len(t, recordedTrials(t, path), killableTrials, "every trial recorded once")

	// The resumed trials have the values an uninterrupted study gives them.
	fresh, err := killableStudy(t.TempDir()).Run(t.Context(), loggingTrial(t.TempDir(), "fresh", 0))
	require.NoError(t, err)
	for i := range fresh.Trials {
		assert.Equal(t, fresh.Trials[i].Values, res.Trials[i].Values, "trial %d", i)
		assert.Equal(t, fresh.Trials[i].Value, res.Trials[i].Value, "trial %d", i)
	}
	assert.Equal(t, fresh.Best.Values, res.Best.Values)

	// Progress: first the resumed trials, then one report per trial run.
	require.NotEmpty(t, progress)
	assert.Equal(t, len(finished), progress[0].Resumed)
	assert.Equal(t, len(finished), progress[0].Finished)
	assert.Nil(t, progress[0].Last)
	last := progress[len(progress)-1]
	assert.Equal(t, killableTrials, last.Finished)
	assert.Equal(t, killableTrials, last.Succeeded)
	assert.Equal(t, res.Best.Values, last.Best.Values)
	assert.Len(t, progress, 1+killableTrials-len(finished))
}

func contains(s []int, v int) bool { return count(s, v) > 0 }

func count(s []int, v int) int {
	n := 0
	for _, e := range s {
		if e == v {
			n++
		}
	}
	return n
}

// TestStudyFileTornRecord appends half a record, as a crash during the
// write leaves it: the study ignores it, cuts it off, runs that trial, and
// the file parses again.
func TestStudyFileTornRecord(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "study.jsonl")
	study := func(trials int) *tune.Local {
		return tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1), tune.Int("n", 0, 6)).MaxTrials(trials).Seed(3).StudyFile(path)
	}
	_, err := study(5).Run(t.Context(), loggingTrial(dir, "first", 0))
	require.NoError(t, err)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"number":5,"state":"Succ`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	res, err := study(8).Run(t.Context(), loggingTrial(dir, "second", 0))
	require.NoError(t, err)
	assert.Len(t, res.Trials, 8)
	assert.Equal(t, []int{5, 6, 7}, runsLog(t, dir)["second"])
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, recordedTrials(t, path))
}

func TestStudyFileRefusesAnotherStudy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "study.jsonl")
	base := func() *tune.Local {
		return tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1), tune.Int("n", 0, 6)).MaxTrials(3).Seed(3).StudyFile(path)
	}
	_, err := base().Run(t.Context(), loggingTrial(dir, "first", 0))
	require.NoError(t, err)

	_, err = base().Seed(4).Run(t.Context(), loggingTrial(dir, "x", 0))
	assert.ErrorContains(t, err, "holds another study: its seed differs")
	_, err = base().Parallelism(2).Run(t.Context(), loggingTrial(dir, "x", 0))
	assert.ErrorContains(t, err, "its parallelism differs")
	_, err = base().Algorithm(tune.TPE()).Run(t.Context(), loggingTrial(dir, "x", 0))
	assert.ErrorContains(t, err, "its algorithm differs")
	_, err = tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 2), tune.Int("n", 0, 6)).MaxTrials(3).Seed(3).StudyFile(path).
		Run(t.Context(), loggingTrial(dir, "x", 0))
	assert.ErrorContains(t, err, "its parameters[0] differs")

	// A damaged line before the end is an error, not a silent half-read.
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	lines[2] = "{not json}\n"
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644))
	_, err = base().Run(t.Context(), loggingTrial(dir, "x", 0))
	assert.ErrorContains(t, err, "line 3: not a trial record")
	_, ok := runsLog(t, dir)["x"]
	assert.False(t, ok, "no trial ran for a refused study file")
}

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
				assert.Contains(t, plan.Local, "then bayesianoptimization until 3 of its proposals in a row do not improve, then a portfolio of bayesianoptimization, tpe (univariate), cmaes")
				// The quadratic model only on a space without Choices.
				assert.Equal(t, !slices.ContainsFunc(c.params, func(p tune.Param) bool { return p.Kind() == tune.ChoiceKind }),
					strings.Contains(plan.Local, "quadratic model"), plan.Local)
			} else {
				// On a space of mostly Choices, multivariate TPE alone.
				assert.Contains(t, plan.Local, "then "+c.localModel+"; ", plan.Local)
			}
			assert.Contains(t, plan.Reason, c.reason)
			assert.Contains(t, plan.Reason, c.katibWords)
			// Every space here has an Int or a Choice: a grid to step along,
			// with the GP's expectation where it runs.
			moves := "moves to a nearest configuration not yet run"
			if c.localModel == "bayesianoptimization" {
				moves = "moves to the configuration not yet run, of its nearest and those along one parameter, that the GP expects best"
			}
			assert.True(t, strings.HasSuffix(plan.Local, moves), plan.Local)
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
	// With more than 400 trials the GP hands over to multivariate TPE at
	// trial 400, and repeats move to a nearest configuration from there.
	long := tune.NewLocal(tune.Minimize("l"), numeric...).MaxTrials(500).Plan().Local
	assert.True(t, strings.HasSuffix(long, "that the GP expects best (from trial 400 a nearest one)"), long)
	// A space of Floats without Step has no grid, so no repeats to move.
	assert.NotContains(t, tune.NewLocal(tune.Minimize("l"), tune.Float("a", 0, 1), tune.Float("b", 0, 1)).Plan().Local, "repeats")
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
// points), then the GP, then its portfolio (CMA-ES among its samplers
// and, on the rotated ellipsoid, the quadratic model); each trial says
// which sampler proposed it, and a resumed study proposes what an
// uninterrupted one does.
func TestAutoAdapts(t *testing.T) {
	for _, f := range suiteSubset(t, "rastrigin6", "ellipsoid8") {
		t.Run(f.name, func(t *testing.T) {
			study := func() *tune.Local {
				return tune.NewLocal(tune.Minimize("y"), f.params...).MaxTrials(90).Parallelism(2).Seed(3)
			}
			res, err := study().Run(t.Context(), objectiveOf(f))
			require.NoError(t, err)
			var samplers []string
			for _, r := range res.Trials {
				samplers = append(samplers, r.Sampler)
			}
			design := max(len(f.params)+2, 10)
			assert.Equal(t, slices.Repeat([]string{"sobol"}, design), samplers[:design], "a Sobol design of dims+2 trials, at least 10")
			assert.Equal(t, "bayesianoptimization", samplers[design])
			assert.Contains(t, samplers, "cmaes", "CMA-ES is one of the portfolio's samplers: %v", samplers)
			if f.name == "ellipsoid8" {
				assert.Contains(t, samplers, "quadratic", "the quadratic model fits the ellipsoid: %v", samplers)
			}
			assert.Equal(t, 0.0, res.Trials[0].Float("x0"), "the first trial is the centre of the space")
			assert.True(t, strings.HasPrefix(study().Plan().Local, fmt.Sprintf("a design of %d trials (the centre of the space, then sobol), then bayesianoptimization until 3 of its proposals", design)))

			// Stop after 60 trials, then resume from the study file.
			path := filepath.Join(t.TempDir(), "study.jsonl")
			ctx, cancel := context.WithCancel(t.Context())
			_, err = study().StudyFile(path).OnProgress(func(p tune.LocalProgress) {
				if p.Finished >= 60 {
					cancel()
				}
			}).Run(ctx, objectiveOf(f))
			require.ErrorIs(t, err, context.Canceled)
			resumed, err := study().StudyFile(path).Run(t.Context(), objectiveOf(f))
			require.NoError(t, err)
			for i := range res.Trials {
				assert.Equal(t, res.Trials[i].Values, resumed.Trials[i].Values, "trial %d", i)
				assert.Equal(t, res.Trials[i].Sampler, resumed.Trials[i].Sampler, "trial %d", i)
			}
			assert.False(t, math.IsNaN(resumed.Best.Value))
		})
	}
}
