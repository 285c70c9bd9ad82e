//go:build linux

package local_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/local"
)

// killedRunEnv, when set, makes TestLocalRunResumesAfterSIGKILL the child
// it starts: a run in the directory it names, killed by the parent.
const killedRunEnv = "CUBE_PIPELINE_KILLED_RUN"

// killPipeline is the pipeline the child runs and the parent resumes:
// prepare and train (function steps) finish; slow (a subprocess) writes a
// partial output and its pid, then sleeps until the parent kills the run,
// unless the file release exists; report runs last. Every step appends its
// name and input to the ledger with the pid of the run, so the parent sees
// what ran in which run.
func killPipeline(dir string) *pipeline.Pipeline {
	ledger := filepath.Join(dir, "ledger")
	note := func(line string) error {
		f, err := os.OpenFile(ledger, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = fmt.Fprintf(f, "%d %s\n", os.Getpid(), line)
		return err
	}
	prepare := pipeline.Func("prepare", func(ctx context.Context, tk *pipeline.Task) error {
		if err := note("prepare"); err != nil {
			return err
		}
		return tk.SetOutput("data", "rows")
	}).Outputs("data")
	train := pipeline.Func("train", func(ctx context.Context, tk *pipeline.Task) error {
		if err := note("train " + tk.Input("lr")); err != nil {
			return err
		}
		return tk.SetOutput("model", "model-lr-"+tk.Input("lr")+"-"+tk.Input("data"))
	}).Input("lr", pipeline.ParamRef("lr")).Input("data", prepare.Output("data")).Outputs("model")
	// $PPID is the run's process, which starts the step.
	script := fmt.Sprintf(`echo "$PPID slow $1" >> %[1]s/ledger
echo partial > %[2]s
if [ ! -e %[1]s/release ]; then
	echo $$ > %[1]s/slow.pid
	exec sleep 300
fi
echo "evaluated $1" > %[2]s`, dir, pipeline.OutputFile("score"))
	slow := pipeline.Container("slow").Command("sh", "-c", script, "slow", train.Output("model")).Outputs("score")
	report := pipeline.Func("report", func(ctx context.Context, tk *pipeline.Task) error {
		if err := note("report " + tk.Input("score")); err != nil {
			return err
		}
		return tk.SetOutput("summary", tk.Input("score"))
	}).Input("score", slow.Output("score")).Outputs("summary")
	return pipeline.New("killed").Param("lr", "0.1").Step(prepare, train, slow, report)
}

// TestLocalRunResumesAfterSIGKILL starts a local run in a child process
// (this test binary again), kills it with SIGKILL while its third step
// runs, and resumes the run in the same directory: the steps that
// finished are served from the cache and not run again, the killed
// step's process died with the run and its partial output is not taken,
// and a changed input after a kill makes the steps that depend on it run
// again rather than serving their stale cache entries.
func TestLocalRunResumesAfterSIGKILL(t *testing.T) {
	if dir := os.Getenv(killedRunEnv); dir != "" {
		// The child: run until killed.
		_, err := local.Run(context.Background(), killPipeline(dir), local.RunDir(filepath.Join(dir, "run")), local.Progress(nil),
			local.SetParam("lr", os.Getenv(killedRunEnv+"_LR")))
		t.Fatalf("the run was to be killed, but ended: %v", err)
	}
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")

	// First kill: resume with the same inputs.
	killRun(t, dir, "0.1")
	assert.Equal(t, []string{"prepare", "train 0.1", "slow model-lr-0.1-rows"}, ledger(t, dir, true))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "release"), nil, 0o644))
	res, err := local.Run(t.Context(), killPipeline(dir), local.RunDir(runDir), local.Progress(nil), local.SetParam("lr", "0.1"))
	require.NoError(t, err)
	assert.Equal(t, map[string]cube.Phase{
		"prepare": local.Cached, "train": local.Cached, "slow": cube.Succeeded, "report": cube.Succeeded,
	}, statuses(res), "the finished steps are not run again")
	assert.Equal(t, "evaluated model-lr-0.1-rows", stepResult(t, res, "report").Outputs["summary"], "not the killed attempt's partial output")
	assert.Equal(t, []string{"slow model-lr-0.1-rows", "report evaluated model-lr-0.1-rows"}, ledger(t, dir, false),
		"only the killed step and the one after it ran in the resumed run")

	// Second kill, in a run with another learning rate; the resumed run
	// changes it again: train must run with it, not come from the cache
	// the killed run filled.
	require.NoError(t, os.Remove(filepath.Join(dir, "release")))
	require.NoError(t, os.Remove(filepath.Join(dir, "ledger")))
	killRun(t, dir, "0.3")
	assert.Equal(t, []string{"train 0.3", "slow model-lr-0.3-rows"}, ledger(t, dir, true), "prepare came from the cache")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "release"), nil, 0o644))
	res, err = local.Run(t.Context(), killPipeline(dir), local.RunDir(runDir), local.Progress(nil), local.SetParam("lr", "0.4"))
	require.NoError(t, err)
	assert.Equal(t, map[string]cube.Phase{
		"prepare": local.Cached, "train": cube.Succeeded, "slow": cube.Succeeded, "report": cube.Succeeded,
	}, statuses(res))
	assert.Equal(t, "evaluated model-lr-0.4-rows", stepResult(t, res, "report").Outputs["summary"])
	assert.Equal(t, []string{"train 0.4", "slow model-lr-0.4-rows", "report evaluated model-lr-0.4-rows"}, ledger(t, dir, false))

	// And the same run again: everything from the cache, with 0.4's values.
	res, err = local.Run(t.Context(), killPipeline(dir), local.RunDir(runDir), local.Progress(nil), local.SetParam("lr", "0.4"))
	require.NoError(t, err)
	for _, s := range res.Steps {
		assert.Equal(t, local.Cached, s.Phase, s.Name)
	}
	assert.Equal(t, "evaluated model-lr-0.4-rows", stepResult(t, res, "report").Outputs["summary"])
}

// killRun starts the child on dir with learning rate lr, waits until its
// slow step runs, kills the child with SIGKILL, and checks that the slow
// step's process does not outlive it.
func killRun(t *testing.T, dir, lr string) {
	t.Helper()
	pidFile := filepath.Join(dir, "slow.pid")
	_ = os.Remove(pidFile)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLocalRunResumesAfterSIGKILL$", "-test.count=1")
	cmd.Env = append(os.Environ(), killedRunEnv+"="+dir, killedRunEnv+"_LR="+lr)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, 2*time.Minute, 10*time.Millisecond, "the child's slow step did not start: %s", &out)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	err := <-exited
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v", err)
	require.Equal(t, "signal: killed", exit.Error())
	// Gone, or a zombie no one has reaped yet (PID 1 of a container may
	// not reap).
	gone := func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		_, after, _ := strings.Cut(string(stat), ") ")
		return strings.HasPrefix(after, "Z")
	}
	if !assert.Eventually(t, gone, 5*time.Second, 10*time.Millisecond, "the killed run's step (pid %d) outlived it", pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// ledger returns the steps that ran, without pids: in the killed child
// (child true) or in this process.
func ledger(t *testing.T, dir string, child bool) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "ledger"))
	require.NoError(t, err)
	var out []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		pid, rest, _ := strings.Cut(line, " ")
		if (pid != strconv.Itoa(os.Getpid())) == child {
			out = append(out, rest)
		}
	}
	return out
}
