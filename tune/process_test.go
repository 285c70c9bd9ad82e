package tune_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/tune"
)

// epochs prints three epochs of a loss curve in Katib's format, from x
// ($X) and n (its first argument): loss = (x-0.3)² + n + 1/epoch.
const epochs = `for i in 1 2 3; do awk -v x="$X" -v n="$1" -v i="$i" 'BEGIN{printf "epoch=%d loss=%.9f accuracy=0.5\n", i, (x-0.3)^2 + n + 1/i}'; done`

func lossAt(x float64, n, epoch int) float64 {
	v := math.Pow(x-0.3, 2) + float64(n) + 1/float64(epoch)
	return math.Round(v*1e9) / 1e9
}

func checkEpochs(t *testing.T, res *tune.Result, trials int) {
	t.Helper()
	require.Len(t, res.Trials, trials)
	for _, r := range res.Trials {
		require.Equal(t, cube.Succeeded, r.State, "trial %d: %v", r.Number, r.Err)
		x, n := r.Float("x"), r.Int("n")
		assert.Equal(t, []float64{lossAt(x, n, 1), lossAt(x, n, 2), lossAt(x, n, 3)}, r.Reports, "trial %d", r.Number)
		assert.Equal(t, lossAt(x, n, 3), r.Value, "the best (lowest) value printed")
	}
}

func TestLocalRunCommand(t *testing.T) {
	study := tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1), tune.Int("n", 1, 3)).MaxTrials(6).Parallelism(2).Seed(1)
	res, err := study.RunCommand(t.Context(), []string{"sh", "-c", epochs, "sh", tune.Ref("n")}, tune.Env("x", "X"))
	require.NoError(t, err)
	checkEpochs(t, res, 6)

	// The same study with Go-function trials samples the same values.
	fn, err := tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1), tune.Int("n", 1, 3)).MaxTrials(6).Parallelism(2).Seed(1).
		Run(t.Context(), curveTrial)
	require.NoError(t, err)
	for i := range fn.Trials {
		assert.Equal(t, fn.Trials[i].Values, res.Trials[i].Values)
	}
}

func TestLocalRunCommandFailures(t *testing.T) {
	study := func() *tune.Local { return tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1)).MaxTrials(1) }
	// Every trial failed: the result holds them, and Run says so.
	res, err := study().RunCommand(t.Context(), []string{"sh", "-c", `echo loss=1; exit 3`}, tune.Env("x", "X"))
	assert.ErrorContains(t, err, "run local study: all 1 trials failed; the first: trial 0: exit status 3 (log: ")
	require.NotNil(t, res)
	assert.Equal(t, cube.Failed, res.Trials[0].State)
	assert.ErrorContains(t, res.Trials[0].Err, "exit status 3")

	res, err = study().RunCommand(t.Context(), []string{"sh", "-c", `echo accuracy=0.9`}, tune.Env("x", "X"))
	assert.ErrorContains(t, err, "all 1 trials failed")
	require.NotNil(t, res)
	assert.ErrorContains(t, res.Trials[0].Err, "trial 0 printed no value of loss (as loss=<number>)")

	_, err = tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1), tune.Float("y", 0, 1)).
		RunCommand(t.Context(), []string{"", tune.Ref("z")}, tune.Env("x", "1X"), tune.Arg("w", "--w"), tune.Env("x", ""))
	assert.Equal(t, []string{
		"command[0]: Required value: the command needs a program to run",
		`placements[0].env: Invalid value: "1X": must be a C identifier`,
		`placements[1].param: Invalid value: "w": is not a parameter of the study`,
		"placements[2]: Required value: build placements with Arg or Env",
		`command: Invalid value: "${trialParameters.z}": references "z", which is not a parameter`,
		`parameters[0].name: Invalid value: "x": reaches no trial: place it with tune.Arg, tune.Env or tune.Ref`,
		`parameters[1].name: Invalid value: "y": reaches no trial: place it with tune.Arg, tune.Env or tune.Ref`,
	}, errorStrings(t, err))
}

// TestLocalRunCommandStops checks that a trial early stopping stops has its
// process killed: the script marks its end in a file.
func TestLocalRunCommandStops(t *testing.T) {
	dir := t.TempDir()
	script := `for i in 1 2 3 4 5 6 7 8 9; do awk -v x="$X" -v i="$i" 'BEGIN{printf "loss=%.9f\n", (x-0.3)^2 + sin(7*x+i)/(i+1)}'; sleep 0.05; done; touch "$DIR/done-$N"`
	study := tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1), tune.Int("n", 0, 0)).
		EarlyStop(tune.HalvingStop()).MaxTrials(8).Seed(2)
	t.Setenv("DIR", dir)
	// n is always 0: the trial's number comes from its own counter file.
	script = `N=$(ls "$DIR" | grep -c start); touch "$DIR/start-$N"; ` + script
	res, err := study.RunCommand(t.Context(), []string{"sh", "-c", script, "sh", tune.Ref("n")}, tune.Env("x", "X"))
	require.NoError(t, err)
	stopped := 0
	for _, r := range res.Trials {
		_, statErr := os.Stat(filepath.Join(dir, "done-"+itoa(r.Number)))
		if r.State == tune.EarlyStopped {
			stopped++
			assert.Less(t, len(r.Reports), 9)
			assert.ErrorIs(t, statErr, os.ErrNotExist, "trial %d was stopped but its process ran to the end", r.Number)
		} else {
			require.Equal(t, cube.Succeeded, r.State, "trial %d: %v", r.Number, r.Err)
			assert.Len(t, r.Reports, 9)
			assert.NoError(t, statErr, "trial %d", r.Number)
		}
	}
	assert.Positive(t, stopped)
}

func itoa(n int) string { return string(rune('0' + n)) }

func TestLocalRunWorkload(t *testing.T) {
	job := cube.Objects(&batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "train", Labels: cube.Identity{Kind: "job", Release: "train"}.Labels()},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: cube.Identity{Kind: "job", Release: "train"}.Selector("")},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name: "train", Image: "busybox:1.36",
					// Arg appends "--n" and the value: $0 and $1 of the script.
					Command: []string{"sh", "-c", `set -- "$1"; ` + epochs},
				}},
			},
		}},
	})
	dir := t.TempDir()
	res, err := tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1), tune.Int("n", 1, 3)).MaxTrials(4).Parallelism(2).Seed(5).
		StudyFile(filepath.Join(dir, "study.jsonl")).
		RunWorkload(t.Context(), job, tune.Arg("n", "--n"), tune.Env("x", "X"))
	require.NoError(t, err)
	checkEpochs(t, res, 4)
	// The trials' logs stay beside the study file.
	log, err := os.ReadFile(filepath.Join(dir, "study.jsonl.trials", "trial-0", "steps", "trial", "log"))
	require.NoError(t, err)
	assert.Contains(t, string(log), "epoch=3 loss=")

	_, err = tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1)).RunWorkload(t.Context(), job, tune.Env("y", "Y"))
	assert.Equal(t, []string{
		`trial.placements[0].param: Invalid value: "y": is not a parameter of the experiment`,
		`spec.parameters[0].name: Invalid value: "x": reaches no trial: place it with tune.Arg, tune.Env or tune.Ref`,
	}, errorStrings(t, err))
	_, err = tune.NewLocal(tune.Minimize("loss"), tune.Float("x", 0, 1)).RunWorkload(t.Context(), nil)
	assert.Equal(t, []string{"trial: Required value: the trial workload is nil"}, errorStrings(t, err))
}
