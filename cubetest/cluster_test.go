package cubetest_test

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
)

// webApp is the kind of workload a user's automation applies.
func webApp(name string, replicas int32) cube.Workload {
	id := cube.Identity{Kind: "web", Release: name}
	return cube.WorkloadFunc(func() ([]client.Object, error) {
		return []client.Object{
			&corev1.ConfigMap{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: id.ObjectMeta(name+"-config", "", nil, nil),
				Data:       map[string]string{"mode": "prod"},
			},
			&appsv1.Deployment{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: id.ObjectMeta(name, "", nil, nil),
				Spec: appsv1.DeploymentSpec{
					Replicas: &replicas,
					Selector: &metav1.LabelSelector{MatchLabels: id.Selector("")},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: id.Labels()},
						Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
					},
				},
			},
		}, nil
	})
}

// deployAndWait is the user's own automation under test: apply, wait, react.
func deployAndWait(ctx context.Context, c *cube.Client, w cube.Workload) (string, error) {
	rel, err := c.Apply(ctx, w)
	if err != nil {
		return "", err
	}
	st, err := rel.Wait(ctx, cube.Ready, cube.Timeout(5*time.Second))
	if errors.Is(err, cube.ErrFailed) {
		return "rolled back: " + st.Reason, rel.Delete(ctx)
	}
	if err != nil {
		return "", err
	}
	return "serving", nil
}

func TestUserAutomationReady(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	done := make(chan struct{})
	var outcome string
	var err error
	go func() {
		defer close(done)
		outcome, err = deployAndWait(ctx, cluster.Client, webApp("shop", 3))
	}()
	rel := waitForRelease(t, cluster, "team-a", "shop")
	require.NoError(t, cluster.MarkReady(ctx, rel))
	<-done
	require.NoError(t, err)
	assert.Equal(t, "serving", outcome)

	var d appsv1.Deployment
	require.NoError(t, cluster.Fake.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "shop"}, &d))
	assert.Equal(t, int32(3), d.Status.AvailableReplicas)
	assert.Equal(t, "cube", d.Labels[cube.LabelManagedBy])
}

func TestUserAutomationFailure(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil)
	done := make(chan struct{})
	var outcome string
	var err error
	go func() {
		defer close(done)
		outcome, err = deployAndWait(ctx, cluster.Client, webApp("shop", 1))
	}()
	rel := waitForRelease(t, cluster, "default", "shop")
	require.NoError(t, cluster.MarkFailed(ctx, rel, "ProgressDeadlineExceeded", "image pull failed"))
	<-done
	require.NoError(t, err)
	assert.Contains(t, outcome, "rolled back: Deployment.apps default/shop Failed (ProgressDeadlineExceeded")
	rels, err := cluster.Client.Releases(ctx, "")
	require.NoError(t, err)
	assert.Empty(t, rels, "the automation deleted the failed release")
}

func TestJobSucceedsAndTimesOut(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil)
	id := cube.Identity{Kind: "batch", Release: "etl"}
	job := cube.Objects(&batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: id.ObjectMeta("etl", "", nil, nil),
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: id.Labels()},
			Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "etl", Image: "busybox"}}},
		}},
	})
	rel, err := cluster.Client.Apply(ctx, job)
	require.NoError(t, err)

	st, err := rel.Wait(ctx, cube.Succeeded, cube.Timeout(time.Second))
	require.ErrorIs(t, err, cube.ErrTimeout)
	var we *cube.WaitError
	require.ErrorAs(t, err, &we)
	assert.Equal(t, cube.InProgress, we.Last.Phase)
	assert.Equal(t, cube.InProgress, st.Phase)

	require.NoError(t, cluster.MarkSucceeded(ctx, rel))
	var seen []cube.Phase
	st, err = rel.Wait(ctx, cube.Succeeded, cube.OnProgress(func(s cube.Status) { seen = append(seen, s.Phase) }))
	require.NoError(t, err)
	assert.Equal(t, cube.Succeeded, st.Phase)
	assert.Equal(t, []cube.Phase{cube.Succeeded}, seen)
}

func TestLogs(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil)
	rel, err := cluster.Client.Apply(ctx, webApp("shop", 1))
	require.NoError(t, err)
	for _, name := range []string{"shop-b", "shop-a"} {
		_, err := cluster.Clientset.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{cube.LabelRelease: "shop"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	r, err := rel.Logs(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	out, err := io.ReadAll(r)
	require.NoError(t, err)
	// client-go's fake clientset answers every log request with "fake logs".
	assert.ElementsMatch(t, []string{"[shop-a] fake logs", "[shop-b] fake logs"}, splitLines(string(out)))
}

func waitForRelease(t *testing.T, c *cubetest.Cluster, ns, name string) *cube.Release {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	rel, err := c.WaitForRelease(ctx, ns, name)
	require.NoError(t, err)
	return rel
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// A Pod's status is written as the kubelet writes it, containers included,
// so automation that reads container states or start times can be tested.
func TestPodStatusLikeTheKubelet(t *testing.T) {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "a"}, {Name: "sidecar", Image: "b"}}},
	}
	read := func(phase cube.Phase) corev1.PodStatus {
		t.Helper()
		u, err := cube.ToUnstructured(p)
		require.NoError(t, err)
		require.NoError(t, cubetest.SetStatus(u, phase, "OOMKilled", "out of memory"))
		out := &corev1.Pod{}
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out))
		return out.Status
	}

	ready := read(cube.Ready)
	assert.Equal(t, corev1.PodRunning, ready.Phase)
	require.Len(t, ready.ContainerStatuses, 2)
	for i, name := range []string{"main", "sidecar"} {
		cs := ready.ContainerStatuses[i]
		assert.Equal(t, name, cs.Name)
		assert.True(t, cs.Ready)
		require.NotNil(t, cs.State.Running)
		assert.WithinDuration(t, time.Now(), cs.State.Running.StartedAt.Time, time.Minute)
	}

	failed := read(cube.Failed)
	assert.Equal(t, corev1.PodFailed, failed.Phase)
	assert.Equal(t, "OOMKilled", failed.Reason)
	require.NotNil(t, failed.ContainerStatuses[0].State.Terminated)
	assert.Equal(t, int32(1), failed.ContainerStatuses[0].State.Terminated.ExitCode)
	assert.False(t, failed.ContainerStatuses[0].Ready)

	done := read(cube.Succeeded)
	assert.Equal(t, int32(0), done.ContainerStatuses[1].State.Terminated.ExitCode)
	assert.Equal(t, "Completed", done.ContainerStatuses[1].State.Terminated.Reason)

	pending := read(cube.InProgress)
	assert.Equal(t, corev1.PodPending, pending.Phase)
	assert.Equal(t, "ContainerCreating", pending.ContainerStatuses[0].State.Waiting.Reason)
}

func TestWaitForReleaseGivesUpWithTheContext(t *testing.T) {
	cluster := cubetest.NewCluster(nil)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	_, err := cluster.WaitForRelease(ctx, "default", "never")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "wait for release default/never")
}

// A user's automation that gives up on stuck pods, tested without a
// cluster: the test adds the pods a controller would create.
func TestUserAutomationSeesStuckPods(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	done := make(chan error, 1)
	var final cube.Status
	go func() {
		rel, err := cluster.Client.Apply(ctx, webApp("shop", 2))
		if err != nil {
			done <- err
			return
		}
		final, err = rel.Wait(ctx, cube.Ready, cube.Timeout(5*time.Second), cube.FailOnStuckPods)
		done <- err
	}()
	rel := waitForRelease(t, cluster, "team-a", "shop")
	require.NoError(t, cluster.AddPod(ctx, rel, "shop-1", "", ""))
	require.NoError(t, cluster.AddPod(ctx, rel, "shop-2", "Unschedulable", "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."))
	require.NoError(t, cluster.AddPod(ctx, rel, "shop-3", "ImagePullBackOff", `Back-off pulling image "web:v2"`))

	require.ErrorIs(t, <-done, cube.ErrFailed)
	assert.Equal(t, cube.Failed, final.Phase)
	assert.Equal(t, `pod shop-3 container main: ImagePullBackOff: Back-off pulling image "web:v2"`, final.Reason)
	assert.Equal(t, []cube.PodProblem{
		{Pod: "shop-2", Reason: "Unschedulable", Message: "0/2 nodes are available: 2 Insufficient nvidia.com/gpu."},
		{Pod: "shop-3", Container: "main", Reason: "ImagePullBackOff", Message: `Back-off pulling image "web:v2"`, Stuck: true},
	}, final.Pods, "the ready pod has no problem")

	require.Error(t, cluster.AddPod(ctx, nil, "x", "", ""))
	require.Error(t, cluster.AddPod(ctx, rel, "shop-1", "", ""), "a pod of that name exists")
}

// TestHostileInput: a phase no controller writes, a pod name the API
// server would refuse and a nil cluster are errors, not silent no-ops.
func TestHostileInput(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil)
	rel, err := cluster.Client.Apply(ctx, webApp("shop", 1))
	require.NoError(t, err)
	assert.EqualError(t, cluster.Mark(ctx, rel, "Done", "", ""), `cubetest: phase "Done" is not one of [InProgress Ready Succeeded Failed]`)
	assert.EqualError(t, cubetest.MarkObject(ctx, cluster.Fake, rel.Objects[0], "", "", ""), `cubetest: phase "" is not one of [InProgress Ready Succeeded Failed]`)
	assert.EqualError(t, cubetest.SetStatus(nil, cube.Ready, "", ""), "cubetest: object is nil")
	err = cluster.AddPod(ctx, rel, "Bad_Pod", "", "")
	assert.ErrorContains(t, err, `cubetest: add pod "Bad_Pod": not a pod name: a lowercase RFC 1123 subdomain must consist of`)
	assert.ErrorContains(t, cluster.AddPod(ctx, rel, "", "", ""), `cubetest: add pod "": not a pod name`)
	require.NoError(t, cluster.AddPod(ctx, rel, "shop-0", "", ""))

	var nilCluster *cubetest.Cluster
	assert.EqualError(t, nilCluster.MarkReady(ctx, rel), "cubetest: cluster is nil or zero: make it with cubetest.NewCluster")
	assert.EqualError(t, nilCluster.AddPod(ctx, rel, "p", "", ""), "cubetest: cluster is nil or zero: make it with cubetest.NewCluster")
	_, err = (&cubetest.Cluster{}).WaitForRelease(ctx, "default", "shop")
	assert.EqualError(t, err, "cubetest: cluster is nil or zero: make it with cubetest.NewCluster")
}
