package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/serve"
)

// result is one run of the plugin.
type result struct {
	code           int
	stdout, stderr string
}

// runWith runs the plugin in-process with connect standing in for the
// kubeconfig; nil for commands that need no cluster.
func runWith(t *testing.T, c connector, args ...string) result {
	t.Helper()
	if c == nil {
		c = func(*kubeFlags) (*cube.Client, string, error) {
			t.Errorf("%v connected to a cluster", args)
			return nil, "", context.Canceled
		}
	}
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), args, &stdout, &stderr, c)
	return result{code, stdout.String(), stderr.String()}
}

const qwen = "Qwen/Qwen2.5-7B-Instruct"

func h100(t *testing.T) hardware.Profile {
	t.Helper()
	p, ok := hardware.Lookup("H100-SXM-80GB")
	require.True(t, ok)
	return p
}

// renderOf is what cube.Render writes for w.
func renderOf(t *testing.T, w cube.Workload) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, cube.Render(&b, w))
	return b.String()
}

// render serve prints exactly what cube.Render prints for the builder a
// user would write: VLLM On the profile, sized with Auto.
func TestRenderServeIsTheLibrarysYAML(t *testing.T) {
	r := runWith(t, nil, "render", "serve", qwen, "--on", "H100", "--name", "qwen-chat", "-n", "team-a")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stderr)
	want := renderOf(t, serve.VLLM("qwen-chat", qwen).On(h100(t)).Auto().Namespace("team-a"))
	assert.Equal(t, want, r.stdout)
	assert.Contains(t, r.stdout, "namespace: team-a")

	// Without --name, the name comes from the model id; SGLang with a
	// shorter context is SGLang's builder with that plan option.
	r = runWith(t, nil, "render", "serve", qwen, "--on", "h100-sxm-80gb", "--engine", "sglang", "--context-length", "8192", "--replicas", "2")
	require.Equal(t, 0, r.code, r.stderr)
	want = renderOf(t, serve.SGLang("qwen2-5-7b-instruct", qwen).On(h100(t)).Auto(serve.ContextLength(8192)).Replicas(2))
	assert.Equal(t, want, r.stdout)
}

// render finetune prints the fine-tune laid out by llm.Plan, as a user's
// plan.Apply would lay it out.
func TestRenderFineTuneIsThePlannedFineTune(t *testing.T) {
	r := runWith(t, nil, "render", "finetune", qwen, "--on", "H100", "--dataset", "support=pvc://datasets/support.json",
		"--output", "pvc://models/support-bot", "--name", "support-bot", "--lora-rank", "16")
	require.Equal(t, 0, r.code, r.stderr)
	ft := llm.SFT("support-bot", qwen).
		AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).
		Output("pvc://models/support-bot").LoRA(llm.Adapter{Rank: 16})
	plan, err := llm.Plan(ft, h100(t))
	require.NoError(t, err)
	assert.Equal(t, renderOf(t, plan.Apply(ft, h100(t))), r.stdout)
	assert.Contains(t, r.stdout, "kind: PyTorchJob")

	// A DPO's datasets are preference pairs, named after their files.
	r = runWith(t, nil, "render", "finetune", qwen, "--on", "H100", "--method", "dpo", "--dataset", "pvc://datasets/pairs.json",
		"--format", "sharegpt", "--output", "pvc://models/dpo")
	require.Equal(t, 0, r.code, r.stderr)
	dpo := llm.DPO("qwen2-5-7b-instruct-dpo", qwen).
		AddDataset(datasets.PreferenceData("pairs", "pvc://datasets/pairs.json", datasets.ShareGPT)).
		Output("pvc://models/dpo").LoRA(llm.Adapter{Rank: 8})
	plan, err = llm.Plan(dpo, h100(t))
	require.NoError(t, err)
	assert.Equal(t, renderOf(t, plan.Apply(dpo, h100(t))), r.stdout)
}

// plan serve prints serve.AutoPlan of the Service render serve prints.
func TestPlanServeIsAutoPlan(t *testing.T) {
	r := runWith(t, nil, "plan", "serve", "Qwen2.5-72B-Instruct", "--on", "L4")
	require.Equal(t, 0, r.code, r.stderr)
	l4, ok := hardware.Lookup("L4")
	require.True(t, ok)
	// A catalogue name stands for its Hugging Face id.
	plan, err := serve.AutoPlan(serve.VLLM("qwen2-5-72b-instruct", "Qwen/Qwen2.5-72B-Instruct").On(l4).Auto())
	require.NoError(t, err)
	assert.Equal(t, plan.String()+"\n", r.stdout)
	assert.Contains(t, r.stdout, "TP=")
}

// plan finetune prints llm.Plan's answer; a pinned layout is llm.Check's,
// printed when it does not fit, with exit code 1 and the shortfall.
func TestPlanFineTune(t *testing.T) {
	r := runWith(t, nil, "plan", "finetune", qwen, "--on", "H100", "--dataset", "pvc://d/support.json", "--tokens", "50000000")
	require.Equal(t, 0, r.code, r.stderr)
	ft := llm.SFT("qwen2-5-7b-instruct-sft", qwen).
		AddDataset(datasets.InstructionData("support", "pvc://d/support.json", datasets.Alpaca)).
		Output(planOutput).LoRA(llm.Adapter{Rank: 8})
	plan, err := llm.Plan(ft, h100(t), llm.Tokens(50_000_000))
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSuffix(plan.String(), "\n")+"\n", r.stdout)

	r = runWith(t, nil, "plan", "finetune", "Qwen/Qwen2.5-72B-Instruct", "--on", "H100", "--full", "--dataset", "pvc://d/s.json",
		"--accelerators", "8", "--zero", "2")
	assert.Equal(t, 1, r.code)
	full := llm.SFT("qwen2-5-72b-instruct-sft", "Qwen/Qwen2.5-72B-Instruct").
		AddDataset(datasets.InstructionData("s", "pvc://d/s.json", datasets.Alpaca)).Output(planOutput).FullTuning()
	check, err := llm.Check(full, h100(t), llm.Layout{Accelerators: 8, ZeROStage: 2})
	require.NoError(t, err)
	require.False(t, check.Fits)
	assert.Equal(t, strings.TrimSuffix(check.String(), "\n")+"\n", r.stdout)
	assert.Equal(t, "error: does not fit: 8 × H100-SXM-80GB need "+gib(check.NeedBytesPerDevice)+" a device, a device has "+gib(check.DeviceBytes)+"\n", r.stderr)

	// render refuses the same pinned layout and prints nothing.
	r = runWith(t, nil, "render", "finetune", "Qwen/Qwen2.5-72B-Instruct", "--on", "H100", "--full", "--dataset", "pvc://d/s.json",
		"--accelerators", "8", "--zero", "2", "--output", "pvc://m/x")
	assert.Equal(t, 1, r.code)
	assert.Empty(t, r.stdout)
	assert.Contains(t, r.stderr, "does not fit")
}

// Bad input is an error naming the flag or argument, every problem at
// once, exit code 1 and nothing on stdout.
func TestBadInputNamesTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"plan", "serve", qwen}, []string{"--on: required"}},
		{[]string{"plan", "serve", qwen, "--on", "A100"}, []string{`--on "A100": names several profiles (A100-SXM-40GB, A100-SXM-80GB)`}},
		{[]string{"plan", "serve", qwen, "--on", "Z9", "--engine", "llamacpp", "--replicas", "-1"},
			[]string{`--on "Z9": no such hardware profile`, `--engine "llamacpp": one of mindie, sglang, tgi, vllm`, "--replicas -1"}},
		{[]string{"plan", "serve"}, []string{"kubectl cube plan serve: missing MODEL"}},
		{[]string{"render", "serve", "a", "b", "--on", "L4"}, []string{`unexpected argument "b"`}},
		{[]string{"render"}, []string{"missing what to render: serve or finetune"}},
		{[]string{"render", "finetune", qwen, "--on", "H100"}, []string{"--dataset: required", "--output: required"}},
		{[]string{"render", "finetune", qwen, "--on", "H100", "--dataset", "pvc://d/x.json", "--output", "pvc://m/x", "--method", "ppo", "--format", "csv", "--full", "--qlora-bits", "4", "--accelerators", "8"},
			[]string{`--method "ppo"`, `--format "csv"`, "--full with --lora-rank or --qlora-bits", "--accelerators 8 and --zero -1"}},
		{[]string{"plan", "serve", qwen, "--on", "H100", "--bogus"}, []string{"kubectl cube plan serve: unknown flag: --bogus"}},
		{[]string{"wait", "x"}, []string{"--for: required"}},
		{[]string{"wait", "x", "--for", "Done"}, []string{`--for "Done": not a phase; one of Ready, Succeeded, Failed, InProgress, Missing`}},
		{[]string{"wait", "x", "--for", "Ready", "--timeout", "-1s"}, []string{"--timeout -1s: must not be negative"}},
		{[]string{"list", "--state", "Running"}, []string{`--state "Running": not a phase`}},
		{[]string{"list", "extra"}, []string{`kubectl cube list: unexpected argument "extra"`}},
		{[]string{"list", "-o", "yaml"}, []string{`-o/--output "yaml": not a format; one of json`}},
		{[]string{"status", "x", "--output", "wide"}, []string{`-o/--output "wide": not a format`}},
		{[]string{"logs", "x", "--tail", "-3"}, []string{"--tail -3: must not be negative"}},
		{[]string{"status"}, []string{"kubectl cube status: missing NAME"}},
		{[]string{"delete", "a", "b"}, []string{`unexpected argument "b" after NAME (the release name) "a"`}},
		{[]string{"nonsense"}, []string{`unknown command "nonsense"`}},
	} {
		r := runWith(t, nil, tc.args...)
		assert.Equal(t, 1, r.code, "%v", tc.args)
		assert.Empty(t, r.stdout, "%v", tc.args)
		assert.True(t, strings.HasPrefix(r.stderr, "error: "), "%v: %s", tc.args, r.stderr)
		for _, w := range tc.want {
			assert.Contains(t, r.stderr, w, "%v", tc.args)
		}
	}
}

// Every command answers --help with its usage, exit code 0, and never
// connects.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{
		{}, {"--help"}, {"list", "--help"}, {"status", "--help"}, {"logs", "--help"}, {"wait", "--help"}, {"delete", "--help"},
		{"render", "--help"}, {"render", "serve", "--help"}, {"render", "finetune", "--help"},
		{"plan", "--help"}, {"plan", "serve", "--help"}, {"plan", "finetune", "--help"},
	} {
		r := runWith(t, nil, args...)
		assert.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stdout, "Usage:", "%v", args)
		assert.Contains(t, r.stdout, "kubectl cube", "%v", args)
	}
	r := runWith(t, nil, "wait", "--help")
	assert.Contains(t, r.stdout, "--for string")
	assert.Contains(t, r.stdout, "--kubeconfig string")
}

// logs streams Release.Logs: each line of each pod, prefixed with its name,
// for the release's pods only.
func TestLogsStreamsTheReleasesPods(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	rel, err := cluster.Client.Apply(ctx, serve.VLLM("qwen-chat", qwen).On(h100(t)).Auto())
	require.NoError(t, err)
	for _, name := range []string{"qwen-chat-0", "other-0"} {
		release := "qwen-chat"
		if name == "other-0" {
			release = "other"
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", Labels: map[string]string{cube.LabelRelease: release, cube.LabelManagedBy: cube.ManagedBy}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
				Name: "vllm", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(time.Now())}},
			}}},
		}
		_, err := cluster.Clientset.CoreV1().Pods("team-a").Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
		require.NoError(t, cluster.Fake.Create(ctx, pod.DeepCopy()))
	}
	fake := func(k *kubeFlags) (*cube.Client, string, error) {
		ns := k.namespace
		if ns == "" {
			ns = "default"
		}
		return cluster.Client, ns, nil
	}
	r := runWith(t, fake, "logs", rel.Name, "-n", "team-a", "-c", "vllm", "--tail", "10")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "[qwen-chat-0] fake logs\n", r.stdout)

	r = runWith(t, fake, "logs", "qwen-chat")
	assert.Equal(t, 1, r.code)
	assert.Equal(t, "error: release \"qwen-chat\" not found in namespace \"default\" (kubectl cube list -A lists every release)\n", r.stderr)
}

// On a terminal wait redraws one line in place; elsewhere it prints each
// status once, as it changes.
func TestProgressLines(t *testing.T) {
	inProgress := cube.Status{Phase: cube.InProgress, Reason: "Deployment team-a/qwen: 0 of 1 replicas available"}
	ready := cube.Status{Phase: cube.Ready}

	var plain bytes.Buffer
	p := newProgress(&plain, false)
	p.start()
	p.update(inProgress)
	p.update(inProgress)
	p.update(ready)
	p.stop()
	assert.Equal(t, inProgress.String()+"\n"+ready.String()+"\n", plain.String())

	var live bytes.Buffer
	p = newProgress(&live, true)
	p.width = 40
	p.start()
	p.update(inProgress)
	p.update(ready)
	p.stop()
	out := live.String()
	assert.True(t, strings.HasPrefix(out, "\r0s "), "%q", out)
	assert.Contains(t, out, "…\x1b[K", "cut to the terminal's width")
	assert.Contains(t, out, "\r0s Ready\x1b[K\n", "the last line ends the live line")
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\r")[1:] {
		assert.LessOrEqual(t, len([]rune(strings.TrimSuffix(line, "\x1b[K"))), 39, "%q", line)
	}
	assert.False(t, isTerminal(&live))
}

// status lays out why the release's jobs wait in Kueue, a row each, and
// -o json carries the same.
func TestStatusShowsTheQueue(t *testing.T) {
	rel := &cube.Release{Name: "mnist", Namespace: "team-a", Kind: "pytorchjob"}
	job := cube.ObjectRef{GroupVersionKind: kubeflowv1.SchemeGroupVersion.WithKind("PyTorchJob"), Namespace: "team-a", Name: "mnist"}
	wait := cube.QueueWait{Object: job, Workload: "pytorchjob-mnist-1a2b3", Reason: cube.QueueQueued,
		Message: "waiting for quota in ClusterQueue team-a (nvidia.com/gpu: 4 of 4 in use, borrowing 0 of 2)"}
	st := cube.Status{Phase: cube.InProgress, Reason: "queued", Queue: []cube.QueueWait{wait}}
	var b strings.Builder
	require.NoError(t, writeStatus(&b, rel, st, time.Now()))
	assert.Regexp(t, `(?m)^QUEUED +WORKLOAD +REASON +MESSAGE$`, b.String())
	assert.Regexp(t, `(?m)^`+regexpQuote(job.String())+` +pytorchjob-mnist-1a2b3 +Queued +`+regexpQuote(wait.Message)+`$`, b.String())

	v := viewOf(rel, st, nil)
	require.NotNil(t, v.Status)
	assert.Equal(t, []queueWaitView{{Object: job.String(), Workload: wait.Workload, Reason: "Queued", Message: wait.Message}}, v.Status.Queue)
	assert.Nil(t, v.Created, "a release never applied has no creation time")
	v = viewOf(rel, cube.Status{}, errors.New("forbidden"))
	assert.Nil(t, v.Status, "a status that could not be read is not guessed")
	assert.Equal(t, "forbidden", v.Error)
}
