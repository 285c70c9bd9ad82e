package cube_test

// Logs run on client-go's fake clientset (no kubelet runs in the test API
// server): a reactor answers each log request the way the kubelet would,
// from the pod, the container and whether the previous instance is asked for.

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
)

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
