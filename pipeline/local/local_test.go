package local_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/flows"
	"github.com/cubestudio/cube/pipeline/local"
	"github.com/cubestudio/cube/retry"
	"github.com/cubestudio/cube/serve"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/pipeline"
)

// runLocal runs p silently in a fresh directory unless opts give one.
func runLocal(t *testing.T, p *pipeline.Pipeline, opts ...local.RunOption) (*local.Result, error) {
	t.Helper()
	opts = append([]local.RunOption{local.RunDir(t.TempDir()), local.Progress(nil)}, opts...)
	return local.Run(t.Context(), p, opts...)
}

func stepResult(t *testing.T, res *local.Result, name string) local.StepResult {
	t.Helper()
	require.NotNil(t, res)
	s, ok := res.Step(name)
	require.True(t, ok, "no step %q", name)
	return s
}

func statuses(res *local.Result) map[string]cube.Phase {
	out := map[string]cube.Phase{}
	for _, s := range res.Steps {
		out[s.Name] = s.Phase
	}
	return out
}

// clock hands out increasing ticks, to order events without trusting time.
type clock struct {
	mu    sync.Mutex
	tick  int
	start map[string]int
	end   map[string]int
}

func newClock() *clock { return &clock{start: map[string]int{}, end: map[string]int{}} }

func (c *clock) mark(m map[string]int, name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick++
	m[name] = c.tick
}

// step returns a function step that records when it starts and ends.
func (c *clock) step(name string) *pipeline.FuncStep {
	return pipeline.Func(name, func(ctx context.Context, _ *pipeline.Task) error {
		c.mark(c.start, name)
		time.Sleep(5 * time.Millisecond)
		c.mark(c.end, name)
		return nil
	})
}

func TestRunDependencyOrder(t *testing.T) {
	c := newClock()
	a, f := c.step("a"), c.step("f")
	b := c.step("b").After(a)
	cc := c.step("c").After(a)
	d := c.step("d").After(b, cc)
	e := c.step("e").After(d)
	// Listed out of order on purpose: order comes from the edges.
	p := pipeline.New("order").Step(e, d, cc, b, a, f)
	res, err := runLocal(t, p, local.Parallelism(4))
	require.NoError(t, err)
	assert.Equal(t, cube.Succeeded, res.Phase)
	edges := [][2]string{{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}, {"d", "e"}}
	for _, edge := range edges {
		assert.Less(t, c.end[edge[0]], c.start[edge[1]], "%s must finish before %s starts", edge[0], edge[1])
	}
	assert.Len(t, c.start, 6)
	for _, s := range res.Steps {
		assert.Equal(t, cube.Succeeded, s.Phase, s.Name)
		assert.Equal(t, 1, s.Attempts, s.Name)
	}
	// Results keep pipeline order.
	assert.Equal(t, []string{"e", "d", "c", "b", "a", "f"}, names(res))
}

func names(res *local.Result) []string {
	var out []string
	for _, s := range res.Steps {
		out = append(out, s.Name)
	}
	return out
}

// gauge counts steps running at once and remembers the most.
type gauge struct{ now, max atomic.Int64 }

func (g *gauge) enter() {
	n := g.now.Add(1)
	for {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			return
		}
	}
}

func (g *gauge) leave() { g.now.Add(-1) }

func (g *gauge) body(ctx context.Context, _ *pipeline.Task) error {
	g.enter()
	defer g.leave()
	time.Sleep(15 * time.Millisecond)
	return nil
}

func TestRunConcurrencyBound(t *testing.T) {
	for _, tc := range []struct {
		name        string
		concurrency int
		parallelism int
		want        int64
	}{
		{"concurrency", 3, 0, 3},
		{"pipeline parallelism caps concurrency", 6, 2, 2},
		{"one at a time", 1, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := &gauge{}
			p := pipeline.New("wide")
			if tc.parallelism > 0 {
				p.Parallelism(tc.parallelism)
			}
			for i := range 20 {
				p.Step(pipeline.Func(fmt.Sprintf("s%d", i), g.body))
			}
			res, err := runLocal(t, p, local.Parallelism(tc.concurrency))
			require.NoError(t, err)
			assert.Equal(t, cube.Succeeded, res.Phase)
			assert.Equal(t, tc.want, g.max.Load(), "the bound is reached and never exceeded")
		})
	}
}

func TestRunFanOutBound(t *testing.T) {
	g := &gauge{}
	items := make([]string, 12)
	for i := range items {
		items[i] = strconv.Itoa(i)
	}
	fan := pipeline.Func("fan", func(ctx context.Context, tk *pipeline.Task) error {
		if err := g.body(ctx, tk); err != nil {
			return err
		}
		item, idx := tk.Item()
		return tk.SetOutput("square", strconv.Itoa(idx*idx)+"/"+item)
	}).ForEach(items...).Parallelism(2).Outputs("square")
	res, err := runLocal(t, pipeline.New("fanout").Step(fan), local.Parallelism(8))
	require.NoError(t, err)
	assert.Equal(t, int64(2), g.max.Load())
	s := stepResult(t, res, "fan")
	assert.Equal(t, cube.Succeeded, s.Phase)
	require.Len(t, s.Items, 12)
	assert.Equal(t, "9", s.Items[9].Item)
	assert.Equal(t, map[string]string{"square": "81/9"}, s.Items[9].Outputs)
	assert.Equal(t, `["0/0","1/1","4/2","9/3","16/4","25/5","36/6","49/7","64/8","81/9","100/10","121/11"]`, s.Outputs["square"])
	assert.Equal(t, 12, s.Attempts)
}

func TestRunFanOverOutput(t *testing.T) {
	split := pipeline.Func("split", func(ctx context.Context, tk *pipeline.Task) error {
		return tk.SetOutput("shards", `[{"name":"a","rows":3},{"name":"b","rows":5}]`)
	}).Outputs("shards")
	count := pipeline.Container("count").
		Command("sh", "-c", "echo "+pipeline.ItemField("name")+"="+pipeline.ItemField("rows")+" > "+pipeline.OutputFile("line")).
		ForEachIn(split.Output("shards")).Outputs("line")
	var got string
	merge := pipeline.Func("merge", func(ctx context.Context, tk *pipeline.Task) error {
		got = tk.Input("lines")
		return nil
	}).Input("lines", count.Output("line"))
	none := pipeline.Func("none", func(ctx context.Context, tk *pipeline.Task) error {
		return errors.New("must not run: the list is empty")
	}).ForEachIn(pipeline.ParamRef("empty")).Outputs("x")
	res, err := runLocal(t, pipeline.New("fan").Param("empty", "[]").Step(split, count, merge, none))
	require.NoError(t, err)
	assert.Equal(t, `["a=3","b=5"]`, got, "a fan-out's outputs reach later steps as a JSON list, item order kept")
	n := stepResult(t, res, "none")
	assert.Equal(t, cube.Succeeded, n.Phase)
	assert.Equal(t, map[string]string{"x": "[]"}, n.Outputs)

	bad := pipeline.Func("bad", func(ctx context.Context, tk *pipeline.Task) error { return nil }).ForEachIn(pipeline.ParamRef("list"))
	res, err = runLocal(t, pipeline.New("fan").Param("list", "not json").Step(bad))
	require.Error(t, err)
	s := stepResult(t, res, "bad")
	assert.Equal(t, cube.Failed, s.Phase)
	assert.Contains(t, s.Reason, `ForEachIn: "not json" is not a JSON list`)
}

func TestRunRetries(t *testing.T) {
	var attempts []time.Time
	var events []local.Event
	flaky := pipeline.Func("flaky", func(ctx context.Context, tk *pipeline.Task) error {
		attempts = append(attempts, time.Now())
		if tk.Attempt() < 3 {
			return fmt.Errorf("attempt %d failed", tk.Attempt())
		}
		return nil
	}).Retry(retry.Policy{Limit: 4, Backoff: 40 * time.Millisecond, Factor: 2})
	res, err := runLocal(t, pipeline.New("retry").Step(flaky), local.OnEvent(func(ev local.Event) { events = append(events, ev) }))
	require.NoError(t, err)
	s := stepResult(t, res, "flaky")
	assert.Equal(t, cube.Succeeded, s.Phase)
	assert.Equal(t, 3, s.Attempts)
	require.Len(t, attempts, 3)
	assert.GreaterOrEqual(t, attempts[1].Sub(attempts[0]), 40*time.Millisecond, "first backoff")
	assert.GreaterOrEqual(t, attempts[2].Sub(attempts[1]), 80*time.Millisecond, "backoff times the factor")

	var kinds []string
	for _, ev := range events {
		kinds = append(kinds, fmt.Sprintf("%s#%d", ev.Type, ev.Attempt))
	}
	assert.Equal(t, []string{"started#1", "retried#1", "started#2", "retried#2", "started#3", "succeeded#3"}, kinds)
	assert.Equal(t, 40*time.Millisecond, events[1].Duration)
	assert.Equal(t, 80*time.Millisecond, events[3].Duration)
	assert.EqualError(t, events[1].Err, "attempt 1 failed")
}

func TestRunRetriesExhausted(t *testing.T) {
	calls := 0
	broken := pipeline.Func("broken", func(context.Context, *pipeline.Task) error { calls++; return errors.New("boom") }).
		Retry(retry.Policy{Limit: 2, Backoff: time.Millisecond, MaxBackoff: time.Millisecond})
	res, err := runLocal(t, pipeline.New("retry").Step(broken))
	require.Error(t, err)
	assert.Equal(t, 3, calls, "limit 2 means three attempts in all")
	s := stepResult(t, res, "broken")
	assert.Equal(t, cube.Failed, s.Phase)
	assert.Equal(t, 3, s.Attempts)
	var se *local.StepError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "broken", se.Step)
	assert.Equal(t, -1, se.Item)
	assert.EqualError(t, se.Err, "boom")
	assert.Contains(t, err.Error(), "run retry: step broken: boom (log: ")
}

func TestRunRetryPolicies(t *testing.T) {
	missing := func(name string, policy pipeline.RetryCondition) *pipeline.ContainerStep {
		return pipeline.Container(name).Command("/nonexistent/cube-test-binary").Retry(retry.Policy{Limit: 2}).RetryOn(policy)
	}
	failing := func(name string, policy pipeline.RetryCondition) *pipeline.ContainerStep {
		return pipeline.Container(name).Command("false").Retry(retry.Policy{Limit: 2}).RetryOn(policy)
	}
	p := pipeline.New("policies").Step(
		missing("error-on-failure", pipeline.OnFailure),
		missing("error-on-error", pipeline.OnError),
		missing("error-always", pipeline.Always),
		failing("failure-on-failure", ""),
		failing("failure-on-error", pipeline.OnTransientError),
		failing("failure-always", pipeline.Always),
	)
	res, err := runLocal(t, p, local.Parallelism(6))
	require.Error(t, err)
	want := map[string]int{
		"error-on-failure": 1, "error-on-error": 3, "error-always": 3,
		"failure-on-failure": 3, "failure-on-error": 1, "failure-always": 3,
	}
	for name, n := range want {
		s := stepResult(t, res, name)
		assert.Equal(t, cube.Failed, s.Phase, name)
		assert.Equal(t, n, s.Attempts, name)
	}
	assert.Contains(t, stepResult(t, res, "error-on-error").Err.Error(), "no such file or directory")
	assert.Contains(t, stepResult(t, res, "failure-always").Err.Error(), "exit status 1")
}

func TestRunRetryMaxDuration(t *testing.T) {
	calls := 0
	s := pipeline.Func("s", func(context.Context, *pipeline.Task) error { calls++; return errors.New("no") }).
		Retry(retry.Policy{Limit: 10, Backoff: 30 * time.Millisecond, MaxDuration: 50 * time.Millisecond})
	_, err := runLocal(t, pipeline.New("p").Step(s))
	require.Error(t, err)
	assert.Equal(t, 2, calls, "the second retry would start after MaxDuration")
}

func TestRunTimeout(t *testing.T) {
	slow := pipeline.Container("slow").Command("sleep", "30").ActiveDeadline(200 * time.Millisecond).
		Retry(retry.Policy{Limit: 1})
	stubborn := pipeline.Func("func", func(ctx context.Context, _ *pipeline.Task) error {
		<-ctx.Done()
		return ctx.Err()
	}).ActiveDeadline(100 * time.Millisecond)
	began := time.Now()
	res, err := runLocal(t, pipeline.New("timeouts").Step(slow, stubborn), local.Parallelism(2))
	took := time.Since(began)
	require.Error(t, err)
	assert.Less(t, took, 5*time.Second, "a timed-out process is killed, not waited for")
	assert.GreaterOrEqual(t, took, 400*time.Millisecond, "two attempts of 200ms")
	s := stepResult(t, res, "slow")
	assert.Equal(t, cube.Failed, s.Phase)
	assert.Equal(t, 2, s.Attempts, "a timeout is a failure, retried")
	assert.ErrorContains(t, s.Err, "timed out after 200ms")
	f := stepResult(t, res, "func")
	assert.ErrorContains(t, f.Err, "timed out after 100ms")
	assert.False(t, errors.Is(err, context.Canceled))
}

// procState returns the state letter of pid from /proc, or "" when gone.
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// alive reports whether pid is a live process: signal 0 reaches it and it is
// not a zombie waiting to be reaped by init.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	st := procState(pid)
	return st != "" && st != "Z" && st != "X"
}

// groupMembers lists the processes whose process group is pgid.
func groupMembers(t *testing.T, pgid int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

func TestRunCancelKillsProcessTree(t *testing.T) {
	dir := t.TempDir()
	// The shell starts a background sleep and a foreground one; both, and the
	// shell, must die when the run is cancelled.
	tree := pipeline.Container("tree").Command("sh", "-c", `sleep 300 & echo $! > "$CUBE_WORKSPACE/bg"; echo $$ > "$CUBE_WORKSPACE/sh"; sleep 300`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	type outcome struct {
		res *local.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := local.Run(ctx, pipeline.New("cancel").Step(tree), local.RunDir(dir), local.Progress(nil))
		done <- outcome{res, err}
	}()
	readPID := func(name string) int {
		var pid int
		require.Eventually(t, func() bool {
			b, err := os.ReadFile(filepath.Join(dir, "workspace", name))
			if err != nil {
				return false
			}
			pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
			return err == nil
		}, 10*time.Second, 10*time.Millisecond)
		return pid
	}
	shPID, bgPID := readPID("sh"), readPID("bg")
	var members []int
	require.Eventually(t, func() bool {
		members = groupMembers(t, shPID)
		return len(members) >= 3 // the shell and both sleeps
	}, 5*time.Second, 10*time.Millisecond, "the step runs in its own process group")
	assert.Contains(t, members, bgPID)
	for _, pid := range members {
		require.True(t, alive(pid), "pid %d runs before cancelling", pid)
	}

	cancel()
	var out outcome
	select {
	case out = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	require.ErrorIs(t, out.err, context.Canceled)
	assert.Equal(t, cube.Failed, out.res.Phase)
	assert.Equal(t, cube.Failed, stepResult(t, out.res, "tree").Phase)
	require.Eventually(t, func() bool {
		for _, pid := range members {
			if alive(pid) {
				return false
			}
		}
		return true
	}, 5*time.Second, 10*time.Millisecond, "every process of the step's tree is gone")
	for _, pid := range members {
		assert.False(t, alive(pid), "pid %d", pid)
	}
}

func TestRunCancelOmitsPending(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	first := pipeline.Func("first", func(ctx context.Context, _ *pipeline.Task) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	second := pipeline.Func("second", func(context.Context, *pipeline.Task) error { return nil }).After(first)
	exit := pipeline.Func("exit", func(context.Context, *pipeline.Task) error { return nil })
	go func() { <-started; cancel() }()
	res, err := local.Run(ctx, pipeline.New("p").Step(first, second).OnExit(exit), local.RunDir(t.TempDir()), local.Progress(nil))
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, map[string]cube.Phase{"first": cube.Failed, "second": local.Omitted, "exit": local.Omitted}, statuses(res))
}

func TestRunOutputsFlow(t *testing.T) {
	dir := t.TempDir()
	hello := pipeline.Container("hello").
		Command("sh", "-c", `echo hello > "$CUBE_OUTPUTS/greeting"; printf '%s' "$TARGET" > `+pipeline.OutputFile("target")).
		Env("TARGET", pipeline.ParamRef("who")).
		Outputs("greeting", "target")
	var seen string
	shout := pipeline.Func("shout", func(ctx context.Context, tk *pipeline.Task) error {
		seen = tk.Input("text") + " " + tk.Param("who")
		tk.Logf("shouting %s", seen)
		return tk.SetOutput("loud", strings.ToUpper(tk.Input("text")))
	}).Input("text", hello.Output("greeting")+", "+hello.Output("target")).Outputs("loud")
	echo := pipeline.Container("echo").
		Command("sh", "-c", "echo "+shout.Output("loud")+"! >&2; echo done > "+pipeline.OutputFile("out")).
		Outputs("out")
	res, err := local.Run(t.Context(), pipeline.New("flow").Param("who", "nobody").Step(hello, shout, echo), local.RunDir(dir), local.Progress(nil), local.SetParam("who", "world"))
	require.NoError(t, err)
	assert.Equal(t, "hello, world world", seen)
	assert.Equal(t, map[string]string{"greeting": "hello", "target": "world"}, stepResult(t, res, "hello").Outputs, "one trailing newline is trimmed, as in Argo")
	assert.Equal(t, map[string]string{"loud": "HELLO, WORLD"}, stepResult(t, res, "shout").Outputs)

	// Values travel through files in the run directory.
	read := func(parts ...string) string {
		b, err := os.ReadFile(filepath.Join(append([]string{dir}, parts...)...))
		require.NoError(t, err)
		return string(b)
	}
	assert.Equal(t, "world", read("params", "who"))
	assert.Equal(t, "hello\n", read("steps", "hello", "outputs", "greeting"))
	assert.Equal(t, "HELLO, WORLD", read("steps", "echo", "inputs", "shout_loud"))
	assert.Equal(t, "hello", read("steps", "shout", "inputs", "hello_greeting"))
	assert.Equal(t, "HELLO, WORLD!\n", read("steps", "echo", "log"), "stderr goes to the step's log")
	assert.Equal(t, "shouting hello, world world\n", read("steps", "shout", "log"))
	assert.Equal(t, filepath.Join(dir, "steps", "echo", "log"), stepResult(t, res, "echo").Log)
	assert.Equal(t, dir, res.Dir)
}

func TestRunMissingOutput(t *testing.T) {
	lazy := pipeline.Container("lazy").Command("true").Outputs("result")
	undeclared := pipeline.Func("undeclared", func(ctx context.Context, tk *pipeline.Task) error {
		return tk.SetOutput("other", "x")
	})
	panics := pipeline.Func("panics", func(context.Context, *pipeline.Task) error { panic("boom") })
	res, err := runLocal(t, pipeline.New("p").Step(lazy, undeclared, panics), local.Parallelism(3))
	require.Error(t, err)
	assert.ErrorContains(t, stepResult(t, res, "lazy").Err, "output result was not written to ")
	assert.ErrorContains(t, stepResult(t, res, "undeclared").Err, "set output other of step undeclared: not declared with Outputs")
	assert.ErrorContains(t, stepResult(t, res, "panics").Err, "panic: boom")
}

func TestRunCacheSkipsSucceeded(t *testing.T) {
	dir := t.TempDir()
	counts := map[string]int{}
	var mu sync.Mutex
	count := func(name string) {
		mu.Lock()
		defer mu.Unlock()
		counts[name]++
	}
	build := func() *pipeline.Pipeline {
		a := pipeline.Func("a", func(ctx context.Context, tk *pipeline.Task) error {
			count("a")
			return tk.SetOutput("v", "fixed")
		}).Outputs("v")
		b := pipeline.Func("b", func(ctx context.Context, tk *pipeline.Task) error {
			count("b")
			return tk.SetOutput("v", strings.TrimSuffix(tk.Input("lr"), "0"))
		}).Input("lr", pipeline.ParamRef("lr")).Input("a", a.Output("v")).Outputs("v")
		c := pipeline.Container("c").Command("sh", "-c", "echo "+b.Output("v")+" > "+pipeline.OutputFile("v")).Outputs("v")
		return pipeline.New("cache").Param("lr", "0.1").Step(a, b, c)
	}
	var skipped []string
	onEvent := local.OnEvent(func(ev local.Event) {
		if ev.Type == local.EventSkipped {
			skipped = append(skipped, ev.Step+":"+ev.Reason)
		}
	})
	run := func(opts ...local.RunOption) *local.Result {
		skipped = nil
		res, err := local.Run(t.Context(), build(), append([]local.RunOption{local.RunDir(dir), local.Progress(nil), onEvent}, opts...)...)
		require.NoError(t, err)
		return res
	}

	res := run()
	assert.Equal(t, map[string]int{"a": 1, "b": 1}, counts)
	assert.Equal(t, map[string]cube.Phase{"a": cube.Succeeded, "b": cube.Succeeded, "c": cube.Succeeded}, statuses(res))

	res = run()
	assert.Equal(t, map[string]int{"a": 1, "b": 1}, counts, "nothing runs again")
	assert.Equal(t, map[string]cube.Phase{"a": local.Cached, "b": local.Cached, "c": local.Cached}, statuses(res))
	assert.Equal(t, []string{"a:cached", "b:cached", "c:cached"}, skipped)
	assert.Equal(t, map[string]string{"v": "0.1"}, stepResult(t, res, "c").Outputs, "outputs come back from the cache")

	// 0.10 changes b's input; b's output stays 0.1, but c may read what b
	// left in the workspace, so c runs again too.
	res = run(local.SetParam("lr", "0.10"))
	assert.Equal(t, map[string]int{"a": 1, "b": 2}, counts)
	assert.Equal(t, map[string]cube.Phase{"a": local.Cached, "b": cube.Succeeded, "c": cube.Succeeded}, statuses(res))

	res = run(local.SetParam("lr", "0.2"))
	assert.Equal(t, map[string]int{"a": 1, "b": 3}, counts)
	assert.Equal(t, map[string]cube.Phase{"a": local.Cached, "b": cube.Succeeded, "c": cube.Succeeded}, statuses(res))
	assert.Equal(t, "0.2", stepResult(t, res, "c").Outputs["v"])

	res = run(local.NoCache)
	assert.Equal(t, map[string]int{"a": 2, "b": 4}, counts)
	assert.Equal(t, cube.Succeeded, stepResult(t, res, "a").Phase)
}

// A step that depends on another only through After, reading the files it
// wrote to the workspace, runs again when that step ran again: its cache key
// covers its upstream steps' keys.
func TestRunCacheFollowsAfter(t *testing.T) {
	dir := t.TempDir()
	build := func() *pipeline.Pipeline {
		write := pipeline.Container("write").Command("sh", "-c", "echo "+pipeline.ParamRef("lr")+" > "+pipeline.WorkspaceDir+"/lr")
		read := pipeline.Container("read").Command("sh", "-c", "cat "+pipeline.WorkspaceDir+"/lr > "+pipeline.OutputFile("lr")).
			Outputs("lr").After(write)
		report := pipeline.Container("report").Command("sh", "-c", "cat "+pipeline.WorkspaceDir+"/lr > "+pipeline.OutputFile("lr")).
			Outputs("lr").After(read)
		return pipeline.New("after-cache").Param("lr", "0.1").Workspace(pipeline.Workspace{Size: "1Gi"}).Step(write, read, report)
	}
	run := func(opts ...local.RunOption) *local.Result {
		res, err := local.Run(t.Context(), build(), append([]local.RunOption{local.RunDir(dir), local.Progress(nil)}, opts...)...)
		require.NoError(t, err)
		return res
	}
	res := run()
	assert.Equal(t, "0.1", stepResult(t, res, "read").Outputs["lr"])

	res = run()
	assert.Equal(t, map[string]cube.Phase{"write": local.Cached, "read": local.Cached, "report": local.Cached}, statuses(res),
		"an unchanged run stays cached through After")

	res = run(local.SetParam("lr", "0.2"))
	assert.Equal(t, map[string]cube.Phase{"write": cube.Succeeded, "read": cube.Succeeded, "report": cube.Succeeded}, statuses(res))
	assert.Equal(t, "0.2", stepResult(t, res, "read").Outputs["lr"], "not the cached 0.1")
	assert.Equal(t, "0.2", stepResult(t, res, "report").Outputs["lr"], "two steps down")
}

func TestRunResumesAfterFailure(t *testing.T) {
	dir := t.TempDir()
	var failB atomic.Bool
	failB.Store(true)
	calls := map[string]int{}
	var mu sync.Mutex
	step := func(name string) *pipeline.FuncStep {
		return pipeline.Func(name, func(ctx context.Context, tk *pipeline.Task) error {
			mu.Lock()
			calls[name]++
			mu.Unlock()
			if name == "b" && failB.Load() {
				return errors.New("disk full")
			}
			return nil
		})
	}
	build := func() *pipeline.Pipeline {
		a := step("a")
		b := step("b").After(a)
		c := step("c").After(b)
		return pipeline.New("resume").Step(a, b, c)
	}
	res, err := local.Run(t.Context(), build(), local.RunDir(dir), local.Progress(nil))
	require.Error(t, err)
	assert.Equal(t, map[string]cube.Phase{"a": cube.Succeeded, "b": cube.Failed, "c": local.Omitted}, statuses(res))
	assert.Equal(t, "step b failed", stepResult(t, res, "c").Reason)

	failB.Store(false)
	res, err = local.Run(t.Context(), build(), local.RunDir(dir), local.Progress(nil))
	require.NoError(t, err)
	assert.Equal(t, map[string]cube.Phase{"a": local.Cached, "b": cube.Succeeded, "c": cube.Succeeded}, statuses(res))
	assert.Equal(t, map[string]int{"a": 1, "b": 2, "c": 1}, calls)
}

func TestRunWhen(t *testing.T) {
	score := pipeline.Func("score", func(ctx context.Context, tk *pipeline.Task) error { return tk.SetOutput("v", "0.82") }).Outputs("v")
	deploy := pipeline.Func("deploy", func(ctx context.Context, tk *pipeline.Task) error { return tk.SetOutput("url", "http://x") }).
		When(pipeline.ParamRef("deploy") + " == yes && " + score.Output("v") + " > 0.8").Outputs("url")
	good := pipeline.Func("good", func(context.Context, *pipeline.Task) error { return nil }).
		When(score.Output("v") + " >= 0.5")
	after := pipeline.Func("after", func(context.Context, *pipeline.Task) error { return nil }).After(deploy)
	announce := pipeline.Func("announce", func(context.Context, *pipeline.Task) error { return nil }).Input("url", deploy.Output("url"))
	build := func() *pipeline.Pipeline {
		return pipeline.New("when").Param("deploy", "no").Step(score, deploy, good, after, announce)
	}

	res, err := runLocal(t, build())
	require.Error(t, err)
	assert.Equal(t, map[string]cube.Phase{
		"score": cube.Succeeded, "deploy": local.Skipped, "good": cube.Succeeded,
		"after":    cube.Succeeded, // a skipped step counts as done, as in Argo
		"announce": cube.Failed,    // but its outputs do not exist
	}, statuses(res))
	assert.Equal(t, "when no == yes && 0.82 > 0.8 is false", stepResult(t, res, "deploy").Reason)
	assert.ErrorContains(t, stepResult(t, res, "announce").Err, "step deploy was skipped, so its output url does not exist")

	res, err = runLocal(t, build(), local.SetParam("deploy", "yes"))
	require.NoError(t, err)
	assert.Equal(t, cube.Succeeded, stepResult(t, res, "deploy").Phase)

	bad := pipeline.Func("bad", func(context.Context, *pipeline.Task) error { return nil }).When(pipeline.ParamRef("x") + " == 1")
	res, err = runLocal(t, pipeline.New("when").Param("x", "a-b").Step(bad))
	require.Error(t, err)
	assert.Contains(t, stepResult(t, res, "bad").Reason, "hint: quote the value")
}

func TestRunFailFast(t *testing.T) {
	fail := pipeline.Func("fail", func(context.Context, *pipeline.Task) error { return errors.New("no") })
	later := pipeline.Func("later", func(context.Context, *pipeline.Task) error { return nil })
	res, err := runLocal(t, pipeline.New("ff").Step(fail, later), local.Parallelism(1))
	require.Error(t, err)
	assert.Equal(t, map[string]cube.Phase{"fail": cube.Failed, "later": local.Omitted}, statuses(res))
	assert.Equal(t, "step fail failed", stepResult(t, res, "later").Reason)

	// Steps already running finish.
	started := make(chan struct{})
	slow := pipeline.Func("slow", func(ctx context.Context, _ *pipeline.Task) error {
		close(started)
		time.Sleep(50 * time.Millisecond)
		return nil
	})
	failAfter := pipeline.Func("fail", func(context.Context, *pipeline.Task) error { <-started; return errors.New("no") })
	res, err = runLocal(t, pipeline.New("ff").Step(slow, failAfter), local.Parallelism(2))
	require.Error(t, err)
	assert.Equal(t, map[string]cube.Phase{"slow": cube.Succeeded, "fail": cube.Failed}, statuses(res))
}

func TestRunExitHandler(t *testing.T) {
	for _, tc := range []struct {
		fail bool
		want string
	}{{false, "Succeeded"}, {true, "Failed"}} {
		var got string
		var order []string
		var mu sync.Mutex
		note := func(s string) { mu.Lock(); order = append(order, s); mu.Unlock() }
		work := pipeline.Func("work", func(context.Context, *pipeline.Task) error {
			note("work")
			if tc.fail {
				return errors.New("no")
			}
			return nil
		})
		exit := pipeline.Func("exit", func(ctx context.Context, tk *pipeline.Task) error {
			note("exit")
			got = tk.Input("status") + " " + tk.Input("name")
			return nil
		}).Input("status", pipeline.PipelineStatus).Input("name", pipeline.PipelineName)
		res, err := runLocal(t, pipeline.New("notify").Step(work).OnExit(exit))
		assert.Equal(t, tc.fail, err != nil)
		assert.Equal(t, tc.want+" notify", got)
		assert.Equal(t, []string{"work", "exit"}, order)
		assert.Equal(t, cube.Succeeded, stepResult(t, res, "exit").Phase)
	}
	failingExit := pipeline.Func("exit", func(context.Context, *pipeline.Task) error { return errors.New("pager down") })
	res, err := runLocal(t, pipeline.New("notify").Step(pipeline.Func("w", func(context.Context, *pipeline.Task) error { return nil })).OnExit(failingExit))
	require.ErrorContains(t, err, "pager down")
	assert.Equal(t, cube.Failed, res.Phase, "a failing exit handler fails the run")
}

func TestRunWorkloadSteps(t *testing.T) {
	train := pipeline.Workload("train", flows.BatchJob("trainer", "sh", "-c", `echo "lr=`+pipeline.ParamRef("lr")+`" > "$CUBE_WORKSPACE/model"`))
	var model string
	check := pipeline.Func("check", func(ctx context.Context, tk *pipeline.Task) error {
		b, err := os.ReadFile(filepath.Join(tk.Workspace(), "model"))
		model = string(b)
		return err
	}).After(train)
	var replaced bool
	distributed := pipeline.Workload("distributed", flows.PyTorchJob("sft"))
	ws := pipeline.Workspace{Size: "1Gi"}
	res, err := runLocal(t, pipeline.New("wl").Param("lr", "0.5").Workspace(ws).Step(train, check, distributed),
		local.Replace("distributed", func(ctx context.Context, tk *pipeline.Task) error {
			replaced = tk.Step() == "distributed"
			return nil
		}))
	require.NoError(t, err)
	assert.Equal(t, "lr=0.5\n", model, "the job's container command ran once, locally, with its placeholders resolved")
	assert.True(t, replaced)

	// Without Replace the PyTorchJob's master command runs: where torchrun
	// is not installed the step cannot start; where it is, it runs with the
	// master's arguments (and fails: this host has no GPUs to give it).
	res, err = runLocal(t, pipeline.New("wl").Param("lr", "1").Workspace(ws).Step(pipeline.Workload("distributed", flows.PyTorchJob("sft"))))
	require.Error(t, err)
	if _, lookErr := exec.LookPath("torchrun"); lookErr != nil {
		assert.ErrorContains(t, stepResult(t, res, "distributed").Err, `"torchrun"`)
	} else {
		log, readErr := os.ReadFile(stepResult(t, res, "distributed").Log)
		require.NoError(t, readErr)
		assert.Contains(t, string(log), "torchrun", "torchrun ran and wrote its log")
	}
}

func TestRunPrinter(t *testing.T) {
	var buf bytes.Buffer
	ok := pipeline.Func("ok", func(context.Context, *pipeline.Task) error { return nil })
	flaky := pipeline.Func("flaky", func(ctx context.Context, tk *pipeline.Task) error {
		if tk.Attempt() == 1 {
			return errors.New("blip")
		}
		return nil
	}).Retry(retry.Policy{Limit: 1, Backoff: time.Millisecond}).After(ok)
	skip := pipeline.Func("skip", func(context.Context, *pipeline.Task) error { return nil }).When("1 == 2").After(flaky)
	fail := pipeline.Func("fail", func(context.Context, *pipeline.Task) error { return errors.New("bad") }).After(skip)
	_, err := local.Run(t.Context(), pipeline.New("print").Step(ok, flaky, skip, fail), local.RunDir(t.TempDir()), local.Progress(&buf))
	require.Error(t, err)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	require.Len(t, lines, 9, buf.String())
	assert.Equal(t, "▶ ok", lines[0])
	assert.Regexp(t, `^✓ ok \([0-9.]+[µm]?s\)$`, lines[1])
	assert.Equal(t, "▶ flaky", lines[2])
	assert.Equal(t, "↻ flaky: attempt 1 failed, retrying in 1ms: blip", lines[3])
	assert.Equal(t, "▶ flaky (attempt 2)", lines[4])
	assert.Regexp(t, `^✓ flaky \([0-9.]+[µm]?s\)$`, lines[5])
	assert.Equal(t, "⊘ skip: when 1 == 2 is false", lines[6])
	assert.Equal(t, "▶ fail", lines[7])
	assert.Regexp(t, `^✗ fail: bad \(log: .*/steps/fail/log\)$`, lines[8])
	// The default printer writes to stderr; Progress(nil) silences it.
}

func TestRunRayJobEntrypoint(t *testing.T) {
	ray := cube.Objects(&rayv1.RayJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "ray.io/v1", Kind: "RayJob"},
		ObjectMeta: metav1.ObjectMeta{Name: "tune"},
		Spec:       rayv1.RayJobSpec{Entrypoint: `echo "ray $RAY_LR" > "$CUBE_WORKSPACE/ray"`},
	})
	step := pipeline.Workload("tune", ray)
	dir := t.TempDir()
	_, err := local.Run(t.Context(), pipeline.New("ray").Step(step), local.RunDir(dir), local.Progress(nil))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "workspace", "ray"))
	require.NoError(t, err)
	assert.Equal(t, "ray \n", string(b), "a RayJob runs its entrypoint through sh -c")
}

// Locally a workload step's OutputFrom path reads the job as rendered: its
// name, no status.
func TestWorkloadStepOutputsLocally(t *testing.T) {
	train := pipeline.Workload("train", flows.BatchJob("trainer", "true")).
		OutputFrom("job", "{.metadata.name}").OutputFrom("finished", "{.status.completionTime}")
	report := pipeline.Container("report").Image("busybox").Command("echo", train.Output("job"), train.Output("finished"))
	res, err := runLocal(t, pipeline.New("p").Step(train, report))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"job": "trainer", "finished": ""}, stepResult(t, res, "train").Outputs)
}

func TestValidateLocal(t *testing.T) {
	noCmd := pipeline.Container("nocmd").Image("i")
	job := pipeline.Workload("job", cube.Objects(&corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "bare"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}))
	_, err := local.Run(t.Context(), pipeline.New("p").Step(noCmd, job), local.Replace("ghost", nil), local.SetParam("nope", "1"), local.Parallelism(0), local.Progress(nil))
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeInvalid, "parallelism", "at least 1"),
		flows.Want(field.ErrorTypeNotFound, "replace", "ghost"),
		flows.Want(field.ErrorTypeNotFound, "params", "nope"),
		flows.Want(field.ErrorTypeRequired, "steps[0].command", "needs a command to run locally"),
		flows.Want(field.ErrorTypeRequired, "steps[1].workload", `register a function with local.Replace("job", fn)`),
	)
}

// A serving step runs only on a cluster: a local run refuses it, naming
// the step, unless Replace gives a function for it.
func TestServeStepLocally(t *testing.T) {
	chat := serve.VLLM("chat", "standin/chat").Image("x").On(hardware.T4).Accelerators(1)
	prepare := pipeline.Func("prepare", func(context.Context, *pipeline.Task) error { return nil })
	p := pipeline.New("p").Step(prepare, pipeline.Serve("serve", chat).After(prepare))
	_, err := runLocal(t, p)
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeInvalid, "steps[1]", "runs only there (pipeline/argo)"))

	served := false
	res, err := runLocal(t, p, local.Replace("serve", func(context.Context, *pipeline.Task) error { served = true; return nil }))
	require.NoError(t, err)
	assert.True(t, served)
	assert.Equal(t, cube.Succeeded, stepResult(t, res, "serve").Phase)
}
