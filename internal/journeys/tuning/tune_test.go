package tuning

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	katibv1beta1 "github.com/kubeflow/katib/pkg/apis/controller/experiments/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/journeys"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/train"
	"github.com/cubestudio/cube/tune"
)

// objective is the trial's program: it reads x and y from the environment
// (tune.Env puts the trial's assignments there), prints the objective in
// Katib's default StdOut format ("name=value") and writes the same line to
// the container's termination message, where the test reads what each
// trial printed (Katib's StdOut collector redirects the program's output
// into its metrics file, so the container log stays empty). It first
// sleeps as a training would take time: Katib's metrics collector starts
// after the trial's container and looks for its process once (v0.19.0,
// pkg/metricscollector/v1beta1/common/pns.go, GetMainProcesses); a program
// that has already exited fails the collector, and with it the trial.
const objective = `
import os, time
time.sleep(5)
x, y = float(os.environ["X"]), int(os.environ["Y"])
score = 1 - (x - 0.7) ** 2 - 0.01 * (y - 3) ** 2
line = f"score={score:.6f}"
print(line, flush=True)
open("/dev/termination-log", "w").write(f"x={x} y={y} {line}")
`

// A random search over a batch Job trial runs on Katib for real: the
// goptuna suggestion service proposes x and y, the metrics collector
// sidecar Katib injects reads the printed score and reports it to the
// db-manager, and Katib's optimal trial is the best of what the trials
// printed.
func TestKatibRandomSearch(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	// Katib's pod webhook injects the metrics collector only in namespaces
	// with this label (manifests/v1beta1/components/webhook/webhooks.yaml);
	// tune renders no Namespace.
	enableInjection(t, c, ns)

	job := programJob("quad", c.Images.Python, objective)
	const trials = 4
	exp := tune.New("quad").
		Objective(tune.Maximize("score")).
		Algorithm(tune.Random().Seed(7)).
		Param(tune.Float("x", 0, 1), tune.Int("y", 1, 5)).
		Trial(job, tune.Env("x", "X"), tune.Env("y", "Y")).
		Parallelism(2).MaxTrials(trials).MaxFailedTrials(1).
		RetainTrials()
	// The Experiment as Katib left it.
	p := runExperiment(t, c, cl, ns, exp, trials)

	// What each trial's program printed, from its pod's termination message.
	printed := trialOutputs(t.Context(), t, c.Clientset.CoreV1().Pods(ns))
	require.Len(t, printed, trials, "one trial pod per trial")
	t.Logf("trials printed %q; Katib's optimum %+v", printed, *p.Optimal)
	best := math.Inf(-1)
	for _, line := range printed {
		best = math.Max(best, scoreOf(t, line))
	}
	assert.InDelta(t, best, p.Optimal.Metrics["score"], 1e-6, "optimal %+v, trials printed %v", p.Optimal, printed)
	// And the optimum's assignments give that score.
	x, err := p.Optimal.Float("x")
	require.NoError(t, err)
	y, err := p.Optimal.Int("y")
	require.NoError(t, err)
	assert.InDelta(t, 1-(x-0.7)*(x-0.7)-0.01*float64((y-3)*(y-3)), best, 1e-5)
}

// A TPE search over batch Job trials, long enough to search: Katib's
// optimum lands in the region of the known function's maximum (x = 0.7),
// and it is the best of what the trials printed. With 16 trials the region
// |x-0.7| <= 0.1 is a fifth of the range; the test logs every trial's x so
// that a miss shows where the search went.
func TestKatibFindsOptimumRegion(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	enableInjection(t, c, ns)
	program := `
import os, time
time.sleep(5)
x = float(os.environ["X"])
score = 1 - (x - 0.7) ** 2
print(f"score={score:.6f}", flush=True)
open("/dev/termination-log", "w").write(f"x={x} score={score:.6f}")
`
	job := programJob("peak", c.Images.Python, program)
	const trials = 16
	exp := tune.New("peak").
		Objective(tune.Maximize("score")).
		Algorithm(tune.TPE().Seed(3)).
		Param(tune.Float("x", 0, 1)).
		Trial(job, tune.Env("x", "X")).
		Parallelism(4).MaxTrials(trials).MaxFailedTrials(1).
		RetainTrials()
	p := runExperiment(t, c, cl, ns, exp, trials)

	printed := trialOutputs(t.Context(), t, c.Clientset.CoreV1().Pods(ns))
	require.Len(t, printed, trials, "one trial pod per trial")
	t.Logf("trials printed %q", printed)
	best := math.Inf(-1)
	for _, line := range printed {
		best = math.Max(best, scoreOf(t, line))
	}
	assert.InDelta(t, best, p.Optimal.Metrics["score"], 1e-6, "optimal %+v", p.Optimal)
	x, err := p.Optimal.Float("x")
	require.NoError(t, err)
	assert.InDelta(t, 0.7, x, 0.1, "Katib's optimum x=%v is outside the maximum's region", x)
	assert.GreaterOrEqual(t, p.Optimal.Metrics["score"], 0.99)
}

// A TPE search (goptuna) whose trials are cube PyTorchJobs, two pods each:
// Katib creates the PyTorchJobs, the training-operator runs them, the
// collector injected into the master pod reports the score the master
// printed after a gloo all-reduce with the worker, and Katib completes the
// Experiment with the best of them.
func TestKatibTPEOverPyTorchJobs(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	enableInjection(t, c, ns)
	// Rank 0 and rank 1 all-reduce 1+1; the master prints the score of x
	// and y only once the reduction came back right.
	program := `
import os, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([1.0]); dist.all_reduce(t)
assert t.item() == dist.get_world_size() == 2, t
time.sleep(5)
if dist.get_rank() == 0:
    x, y = float(os.environ["X"]), int(os.environ["Y"])
    score = 1 - (x - 0.7) ** 2 - 0.01 * (y - 3) ** 2
    print(f"score={score:.6f}", flush=True)
    open("/dev/termination-log", "w").write(f"x={x} y={y} score={score:.6f}")
dist.destroy_process_group()
`
	job := train.PyTorch("fit").Image(c.Images.Python).
		Command("sh", "-c", `python3 -c "$PROGRAM"`).Env("PROGRAM", program).
		Workers(1).CPU("250m").Memory("512Mi")
	const trials = 4
	exp := tune.New("fit").
		Objective(tune.Maximize("score")).
		Algorithm(tune.TPE()).
		Param(tune.Float("x", 0, 1), tune.Int("y", 1, 5)).
		Trial(job, tune.Env("x", "X"), tune.Env("y", "Y")).
		Parallelism(2).MaxTrials(trials).MaxFailedTrials(1).
		RetainTrials()
	p := runExperiment(t, c, cl, ns, exp, trials)

	list, err := c.Clientset.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "training.kubeflow.org/job-role=master"})
	require.NoError(t, err)
	var printed []string
	for _, pod := range list.Items {
		for _, s := range pod.Status.ContainerStatuses {
			if s.Name == "pytorch" && s.State.Terminated != nil {
				printed = append(printed, s.State.Terminated.Message)
			}
		}
	}
	require.Len(t, printed, trials, "one master pod per trial")
	best := math.Inf(-1)
	for _, line := range printed {
		best = math.Max(best, scoreOf(t, line))
	}
	assert.InDelta(t, best, p.Optimal.Metrics["score"], 1e-6, "optimal %+v, trials printed %v", p.Optimal, printed)
}

// programJob is a batch Job trial running a Python program from $PROGRAM.
// sh -c: Katib's StdOut collector appends its redirection to the command
// and runs it through sh -c.
func programJob(name, image, program string) cube.Workload {
	return cube.Objects(&batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			BackoffLimit: new(int32),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name:            "train",
					Image:           image,
					Command:         []string{"sh", "-c", `python3 -c "$PROGRAM"`},
					Env:             []corev1.EnvVar{{Name: "PROGRAM", Value: program}},
					ImagePullPolicy: corev1.PullIfNotPresent,
				}},
			}},
		},
	})
}

// enableInjection labels ns so that Katib's pod webhook injects the
// metrics collector (manifests/v1beta1/components/webhook/webhooks.yaml);
// tune renders no Namespace.
func enableInjection(t *testing.T, c *testenv.Cluster, ns string) {
	t.Helper()
	patch := []byte(`{"metadata":{"labels":{"katib.kubeflow.org/metrics-collector-injection":"enabled"}}}`)
	_, err := c.Clientset.CoreV1().Namespaces().Patch(t.Context(), ns, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)
}

// runExperiment applies exp, waits for it to succeed (logging every trial
// and container when it does not), and returns its progress as Katib left
// it: trials trials succeeded, with an optimal one.
func runExperiment(t *testing.T, c *testenv.Cluster, cl *cube.Client, ns string, exp *tune.Experiment, trials int) tune.Progress {
	t.Helper()
	rel := journeys.Apply(t, cl, exp)
	st, err := rel.Wait(t.Context(), cube.Succeeded, cube.Timeout(journeys.WaitFor), journeys.Progress(t))
	if err != nil {
		diagnose(t, c.Clientset, c.Client, ns)
	}
	require.NoError(t, err, "katib logs in %s", c.LogDir)
	assert.Equal(t, cube.Succeeded, st.Phase)

	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(katibv1beta1.SchemeGroupVersion.WithKind("Experiment"))
	require.NoError(t, c.Client.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: podspec.Of(&exp.Handle).Name()}, u))
	var stored katibv1beta1.Experiment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &stored))
	p := tune.ProgressOf(&stored)
	assert.EqualValues(t, trials, p.Succeeded, "trials: %+v", p)
	require.NotNil(t, p.Optimal, "no optimal trial: %s", dump(stored.Status))
	return p
}

type podLister interface {
	List(context.Context, metav1.ListOptions) (*corev1.PodList, error)
}

// trialOutputs returns the termination message of the train container of
// every trial Job's pod.
func trialOutputs(ctx context.Context, t *testing.T, pods podLister) []string {
	t.Helper()
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name"})
	require.NoError(t, err)
	var out []string
	for _, pod := range list.Items {
		for _, s := range pod.Status.ContainerStatuses {
			if s.Name == "train" && s.State.Terminated != nil {
				out = append(out, s.State.Terminated.Message)
			}
		}
	}
	return out
}

func scoreOf(t *testing.T, line string) float64 {
	t.Helper()
	_, s, ok := strings.Cut(line, "score=")
	require.True(t, ok, "no score in %q", line)
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	require.NoError(t, err)
	return v
}

// diagnose logs each Trial's status and every container's log.
func diagnose(t *testing.T, cs kubernetes.Interface, cl client.Client, ns string) {
	ctx := context.WithoutCancel(t.Context())
	trials := &unstructured.UnstructuredList{}
	trials.SetGroupVersionKind(schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1beta1", Kind: "TrialList"})
	if err := cl.List(ctx, trials, client.InNamespace(ns)); err == nil {
		for _, tr := range trials.Items {
			t.Logf("trial %s: %s", tr.GetName(), dump(tr.Object["status"]))
		}
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, pod := range pods.Items {
		// A pod the kubelet refused, or one whose containers never
		// started, has no logs: its status says why.
		t.Logf("pod %s on %q: phase %s, reason %q, message %q, conditions %s, containers %s",
			pod.Name, pod.Spec.NodeName, pod.Status.Phase, pod.Status.Reason, pod.Status.Message,
			dump(pod.Status.Conditions), dump(pod.Status.ContainerStatuses))
		for _, ctr := range pod.Spec.Containers {
			data, err := cs.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: ctr.Name}).DoRaw(ctx)
			if err != nil {
				t.Logf("pod %s container %s: no log: %v", pod.Name, ctr.Name, err)
				continue
			}
			t.Logf("pod %s container %s (command %q args %q):\n%s", pod.Name, ctr.Name, ctr.Command, ctr.Args, data)
		}
	}
	events, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("events: %v", err)
		return
	}
	for _, e := range events.Items {
		t.Logf("event %s %s/%s: %s %s (%s, %d times)", e.LastTimestamp.Format("15:04:05"), e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Type, e.Reason, e.Message, e.Count)
	}
}

func dump(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}
