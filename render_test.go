package cube_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yamlv2 "go.yaml.in/yaml/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/internal/testsupport/cputime"
	"github.com/cubestudio/cube/internal/testsupport/golden"
)

func TestRenderGolden(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, cube.Render(&buf, webApp("shop", "team-a", 2)))
	golden.Assert(t, "render.golden", buf.Bytes())

	out := buf.String()
	assert.NotContains(t, out, "creationTimestamp")
	assert.NotContains(t, out, "status:")
	// Every document decodes and names its kind, as kubectl needs.
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(out), 4096)
	var kinds []string
	for {
		var obj map[string]any
		err := dec.Decode(&obj)
		if err != nil {
			break
		}
		assert.NotEmpty(t, obj["apiVersion"])
		kinds = append(kinds, obj["kind"].(string))
	}
	assert.Equal(t, []string{"ConfigMap", "Service", "Deployment"}, kinds)

	var again bytes.Buffer
	require.NoError(t, cube.Render(&again, webApp("shop", "team-a", 2)))
	assert.Equal(t, buf.String(), again.String(), "deterministic")
}

func TestRenderErrors(t *testing.T) {
	failing := cube.WorkloadFunc(func() ([]client.Object, error) { return nil, errors.New("spec.image: Required value") })
	noKind := cube.Objects(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x"}})
	err := cube.Render(&bytes.Buffer{}, failing, nil, noKind)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.image: Required value")
	assert.Contains(t, err.Error(), "render workload 1: workload is nil")
	assert.Contains(t, err.Error(), `object "x" of type *v1.ConfigMap has no apiVersion/kind set`)
}

func TestObjectsCopies(t *testing.T) {
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}}
	w := cube.Objects(cm)
	cm.Data["k"] = "changed"
	first, err := w.Objects()
	require.NoError(t, err)
	first[0].(*corev1.ConfigMap).Data["k"] = "mutated"
	second, err := w.Objects()
	require.NoError(t, err)
	assert.Equal(t, "v", second[0].(*corev1.ConfigMap).Data["k"])
}

func TestSummarize(t *testing.T) {
	ready := cube.ObjectStatus{Phase: cube.Ready}
	done := cube.ObjectStatus{Phase: cube.Succeeded}
	run := cube.ObjectStatus{Phase: cube.InProgress, Reason: "Running"}
	fail := cube.ObjectStatus{Phase: cube.Failed, Reason: "BackoffLimitExceeded"}
	assert.Equal(t, cube.Ready, cube.Summarize([]cube.ObjectStatus{ready, ready}).Phase)
	assert.Equal(t, cube.Succeeded, cube.Summarize([]cube.ObjectStatus{ready, done}).Phase)
	assert.Equal(t, cube.InProgress, cube.Summarize([]cube.ObjectStatus{done, run}).Phase)
	assert.Equal(t, cube.Failed, cube.Summarize([]cube.ObjectStatus{run, fail, done}).Phase)
	gone := cube.ObjectStatus{Phase: cube.Missing, Reason: "NotFound"}
	unknown := cube.ObjectStatus{Phase: cube.Unknown, Reason: "NoReader"}
	assert.Equal(t, cube.Missing, cube.Summarize(nil).Phase, "a release with no objects has nothing to be ready")
	assert.Equal(t, cube.Missing, cube.Summarize([]cube.ObjectStatus{gone, gone}).Phase)
	assert.Equal(t, cube.InProgress, cube.Summarize([]cube.ObjectStatus{ready, gone}).Phase, "one object gone")
	assert.Equal(t, cube.Failed, cube.Summarize([]cube.ObjectStatus{gone, fail}).Phase)
	assert.Equal(t, cube.Unknown, cube.Summarize([]cube.ObjectStatus{ready, unknown, done}).Phase, "never Ready or Succeeded past an unknown")
	assert.Equal(t, cube.InProgress, cube.Summarize([]cube.ObjectStatus{unknown, run}).Phase)
	noPhase := cube.Summarize([]cube.ObjectStatus{ready, {Reason: "Odd"}})
	assert.Equal(t, cube.Unknown, noPhase.Phase, "a reader that gives no phase is not trusted: %s", noPhase)
}

// BenchmarkRender1000Objects renders a release of 1,000 Deployments with
// cube.Render and, in the same run, the way Render did before it wrote
// YAML itself and what a program without cube would do: each object to
// unstructured, then yaml.v2 (yaml.v2), and sigs.k8s.io/yaml on the typed
// objects (sigs.k8s.io-yaml). objects/cpu-s counts CPU time, all threads,
// so that it reads as objects per second on one core even when the
// machine is shared; the cube/... metrics are the ratios of CPU time.
func BenchmarkRender1000Objects(b *testing.B) {
	const n = 1000
	w := cube.Objects(deployments("bench", "team-a", n)...)
	cpu := map[string]time.Duration{}
	for _, run := range []struct {
		name   string
		render func() error
	}{
		{"cube", func() error { return cube.Render(io.Discard, w) }},
		{"baseline", func() error { // yaml.v2 on the unstructured content, whose output Render matches byte for byte
			objs, err := w.Objects()
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			for _, o := range objs {
				u, err := cube.ToUnstructured(o)
				if err != nil {
					return err
				}
				out, err := yamlv2.Marshal(u.Object)
				if err != nil {
					return err
				}
				buf.WriteString("---\n")
				buf.Write(out)
			}
			return nil
		}},
		{"sigs.k8s.io-yaml", func() error {
			objs, err := w.Objects()
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			for _, o := range objs {
				out, err := sigsyaml.Marshal(o)
				if err != nil {
					return err
				}
				buf.WriteString("---\n")
				buf.Write(out)
			}
			return nil
		}},
	} {
		b.Run(run.name, func(b *testing.B) {
			b.ReportAllocs()
			meter := cputime.Start()
			for b.Loop() {
				if err := run.render(); err != nil {
					b.Fatal(err)
				}
			}
			if used, ok := meter.Elapsed(); ok {
				cpu[run.name] = used / time.Duration(b.N)
				b.ReportMetric(float64(n*b.N)/used.Seconds(), "objects/cpu-s")
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "objects/s")
			if ours := cpu["cube"]; ours > 0 && run.name != "cube" {
				b.ReportMetric(float64(ours)/float64(cpu[run.name]), "cube/"+run.name)
			}
		})
	}
}

// A Deployment whose ReplicaSet cannot create pods carries ReplicaFailure
// (reason FailedCreate) until it can: in progress, saying why.
func TestDeploymentReplicaFailureIsReported(t *testing.T) {
	replicas := int32(2)
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "t", Generation: 1},
		Spec:       appsv1.DeploymentSpec{Replicas: &replicas},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Conditions: []appsv1.DeploymentCondition{{
			Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
			Message: `pods "web-5d9c7b8f4-x" is forbidden: exceeded quota: q, requested: requests.cpu=2, used: requests.cpu=0, limited: requests.cpu=1`,
		}}},
	}
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(d)
	require.NoError(t, err)
	st := cube.ReadStatus(&unstructured.Unstructured{Object: obj})
	assert.Equal(t, cube.InProgress, st.Phase)
	assert.Equal(t, "FailedCreate", st.Reason)
	assert.Contains(t, st.Message, "exceeded quota: q")
}

// Logs run on client-go's fake clientset (no kubelet runs in the test API
// server): a reactor answers each log request the way the kubelet would,
// from the pod, the container and whether the previous instance is asked for.

func TestLogsOfPreviousContainers(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	rel, err := cluster.Client.Apply(ctx, webApp("shop", "", 2))
	require.NoError(t, err)

	// shop-a crashed once (OOM), shop-b never restarted.
	pods := map[string]int32{"shop-a": 1, "shop-b": 0}
	for name, restarts := range pods {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", Labels: map[string]string{cube.LabelRelease: "shop"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "web", RestartCount: restarts}}},
		}
		_, err := cluster.Clientset.CoreV1().Pods("team-a").Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	var asked []string
	var lastOpts *corev1.PodLogOptions
	cluster.Clientset.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ga, ok := a.(k8stesting.GenericAction)
		if !ok || a.GetSubresource() != "log" {
			return false, nil, nil
		}
		opts := ga.GetValue().(*corev1.PodLogOptions)
		asked = append(asked, opts.Container)
		lastOpts = opts
		body := "serving\n"
		if opts.Previous {
			body = "loading weights\nKilled\n"
		}
		return true, &runtime.Unknown{Raw: []byte(body)}, nil
	})

	read := func(opts ...cube.LogOption) []string {
		t.Helper()
		r, err := rel.Logs(ctx, opts...)
		require.NoError(t, err)
		defer r.Close()
		out, err := io.ReadAll(r)
		require.NoError(t, err)
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	assert.ElementsMatch(t, []string{"[shop-a] serving", "[shop-b] serving"}, read())
	assert.Equal(t, []string{"[shop-a] loading weights", "[shop-a] Killed"}, read(cube.Previous),
		"only the restarted pod has previous logs, under its own name")
	assert.Equal(t, []string{"web", "web", "web"}, asked, "the default container is asked for")

	// Follow, tail, since and the container reach the kubelet's request.
	read(cube.Container("web"), cube.Follow, cube.TailLines(5), cube.Since(90*time.Second))
	require.NotNil(t, lastOpts)
	assert.True(t, lastOpts.Follow)
	assert.Equal(t, int64(5), *lastOpts.TailLines)
	assert.Equal(t, int64(90), *lastOpts.SinceSeconds)
	assert.False(t, lastOpts.Previous)

	p, err := cluster.Clientset.CoreV1().Pods("team-a").Get(ctx, "shop-a", metav1.GetOptions{})
	require.NoError(t, err)
	p.Status.ContainerStatuses[0].RestartCount = 0
	_, err = cluster.Clientset.CoreV1().Pods("team-a").UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	_, err = rel.Logs(ctx, cube.Previous)
	require.Error(t, err)
	assert.Equal(t, "logs: no container of release team-a/shop has restarted, so none has previous logs", err.Error())
}

// A pod still waiting for its container's first start (a replacement
// worker initializing after its job ended, as the test cluster's
// lost-worker journey showed) has no logs; the kubelet would refuse its
// request, so Logs leaves it out instead of failing for every pod.
func TestLogsSkipContainersNotStarted(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	rel, err := cluster.Client.Apply(ctx, webApp("job", "", 1))
	require.NoError(t, err)
	statuses := map[string]corev1.ContainerState{
		"job-master": {Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}},
		"job-worker": {Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}},
	}
	for name, state := range statuses {
		jobPod(t, cluster, name, &corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "main", State: state}}})
	}
	asked := 0
	cluster.Clientset.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "log" {
			return false, nil, nil
		}
		asked++
		return true, &runtime.Unknown{Raw: []byte("done\n")}, nil
	})
	r, err := rel.Logs(ctx)
	require.NoError(t, err)
	out, err := io.ReadAll(r)
	require.NoError(t, err)
	r.Close()
	assert.Equal(t, "[job-master] done\n", string(out))
	assert.Equal(t, 1, asked, "the waiting pod is not asked")

	// With only the waiting pod left, Logs says why there is nothing.
	require.NoError(t, cluster.Clientset.CoreV1().Pods("team-a").Delete(ctx, "job-master", metav1.DeleteOptions{}))
	_, err = rel.Logs(ctx)
	require.ErrorContains(t, err, "not started yet or gone (job-worker)")
}

// A pod deleted between Logs' list and its log request (a job's controller
// cleaning up as the job ends) is left out, not a failure of the call.
func TestLogsSkipPodsDeletedMeanwhile(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	rel, err := cluster.Client.Apply(ctx, webApp("job", "", 1))
	require.NoError(t, err)
	for _, name := range []string{"job-a-gone", "job-b-live"} {
		jobPod(t, cluster, name, nil)
	}
	calls := 0
	cluster.Clientset.PrependReactor("get", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "log" {
			return false, nil, nil
		}
		calls++
		if calls == 1 { // pods are read in name order: job-a-gone first
			return true, nil, apierrors.NewNotFound(corev1.Resource("pods"), "job-a-gone")
		}
		return true, &runtime.Unknown{Raw: []byte("done\n")}, nil
	})
	r, err := rel.Logs(ctx)
	require.NoError(t, err)
	out, err := io.ReadAll(r)
	require.NoError(t, err)
	r.Close()
	assert.Equal(t, "[job-b-live] done\n", string(out))
	assert.Equal(t, 2, calls)
}

// jobPod adds a pod of release "job" in team-a, with status if given.
func jobPod(t *testing.T, cluster *cubetest.Cluster, name string, status *corev1.PodStatus) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a", Labels: map[string]string{cube.LabelRelease: "job"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "x"}}},
	}
	if status != nil {
		p.Status = *status
	}
	_, err := cluster.Clientset.CoreV1().Pods("team-a").Create(t.Context(), p, metav1.CreateOptions{})
	require.NoError(t, err)
}
