package cubetest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/tenant"
)

// A user's test says what the controllers do, then applies and waits in
// one goroutine, with no naming convention: a fine-tune and a serve, in
// well under a second together.
func TestReactorsApplyWaitInOneGoroutine(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	began := time.Now()
	require.NoError(t, cluster.React(cubetest.Kind("PyTorchJob"), cubetest.After(2*time.Second, cubetest.Succeed())))
	require.NoError(t, cluster.React(cubetest.Kind("Deployment"), cubetest.Ready()))

	ft, err := cluster.Client.Apply(ctx, fineTune("ft", "team-a", 2))
	require.NoError(t, err)
	st, err := ft.Wait(ctx, cube.Succeeded, cube.Timeout(5*time.Second))
	require.NoError(t, err)
	assert.Equal(t, cube.Succeeded, st.Phase)

	chat, err := cluster.Client.Apply(ctx, serve.VLLM("chat", "Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1).Replicas(2))
	require.NoError(t, err)
	st, err = chat.Wait(ctx, cube.Ready, cube.Timeout(5*time.Second))
	require.NoError(t, err)
	assert.Equal(t, cube.Ready, st.Phase)
	require.NoError(t, cluster.Err())
	took := time.Since(began)
	t.Logf("fine-tune and serve applied, reacted and waited in %s", took)
	assert.Less(t, took, time.Second, "apply → wait → react well under a second")
}

// FailWith reaches Wait with its reason; reactions keep the order of
// their delays on the cluster's clock, which does not wait them out.
func TestReactorsFailInOrder(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	require.NoError(t, cluster.React(cubetest.Kind("Deployment"),
		cubetest.After(10*time.Minute, cubetest.FailWith("ProgressDeadlineExceeded", "pods crash")),
		cubetest.After(time.Second, cubetest.Ready())))
	// Every status written, in order.
	w, err := cluster.Fake.Watch(ctx, &appsv1.DeploymentList{}, client.InNamespace("team-a"))
	require.NoError(t, err)
	defer w.Stop()
	began := time.Now()
	rel, err := cluster.Client.Apply(ctx, webApp("shop", 2))
	require.NoError(t, err)
	_, err = rel.Wait(ctx, cube.Succeeded, cube.Timeout(5*time.Second))
	require.Error(t, err, "a Deployment never completes")

	var seen []string
	for len(seen) < 2 {
		select {
		case ev := <-w.ResultChan():
			d, ok := ev.Object.(*appsv1.Deployment)
			require.True(t, ok, "%T", ev.Object)
			for _, c := range d.Status.Conditions {
				seen = append(seen, string(c.Type)+"="+string(c.Status)+" "+c.Reason)
			}
		case <-time.After(time.Second):
			t.Fatalf("saw only %v", seen)
		}
	}
	assert.Equal(t, []string{"Available=True MinimumReplicasAvailable", "Progressing=False ProgressDeadlineExceeded"}, seen)
	st, err := rel.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, cube.Failed, st.Phase)
	assert.Contains(t, st.Reason, "ProgressDeadlineExceeded: pods crash")
	assert.Less(t, time.Since(began), time.Second, "ten minutes on the cluster's clock")
}

// Reactions play only the objects created after they were registered,
// and Release matches every object of a release by the name the test
// gave it.
func TestReactorsOnlyForLaterObjects(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	before, err := cluster.Client.Apply(ctx, webApp("before", 1))
	require.NoError(t, err)
	require.NoError(t, cluster.React(cubetest.Release("before"), cubetest.Ready()))
	require.NoError(t, cluster.React(cubetest.Release("after"), cubetest.Ready()))
	after, err := cluster.Client.Apply(ctx, webApp("after", 1))
	require.NoError(t, err)
	_, err = after.Wait(ctx, cube.Ready, cube.Timeout(5*time.Second))
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond) // ten times the clock's quiet period
	st, err := before.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase, "created before React: left alone")
	// Applying it again changes nothing: the Deployment is not created anew.
	_, err = cluster.Client.Apply(ctx, webApp("before", 1))
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond)
	st, err = before.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase)
}

// A workload whose pods the quota refuses never becomes Ready or
// Succeeded, whatever the reactions say: its release fails on the
// refusal.
func TestReactorsRespectQuotaRefusals(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	_, err := cluster.Client.Apply(ctx, tenant.New("team-a").Accelerators(hardware.H100, 8))
	require.NoError(t, err)
	require.NoError(t, cluster.React(cubetest.Kind("PyTorchJob"), cubetest.Succeed()))
	rel, err := cluster.Client.Apply(ctx, fineTune("ft", "team-a", 2))
	require.NoError(t, err)
	st, err := rel.Wait(ctx, cube.Succeeded, cube.FailOnStuckPods, cube.Timeout(5*time.Second))
	require.ErrorIs(t, err, cube.ErrFailed)
	require.NotEmpty(t, st.Refusals)
	qe := st.Refusals[0].Quota
	require.NotNil(t, qe, "%s", st)
	assert.Equal(t, "requests.nvidia.com/gpu=8", qe.Limited)
	time.Sleep(50 * time.Millisecond)
	st, err = rel.Status(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, cube.Succeeded, st.Phase, "the reaction did not run the refused job")
	require.NoError(t, cluster.Err())
}

// React refuses what it cannot play, all at once.
func TestReactErrors(t *testing.T) {
	cluster := cubetest.NewCluster(nil)
	err := cluster.React(cubetest.Kind("Widget"), cubetest.After(-time.Second, cubetest.Ready()), cubetest.Reaction{})
	require.Error(t, err)
	assert.ErrorContains(t, err, `no controller writes a status to kind "Widget"`)
	assert.ErrorContains(t, err, "reaction 0: negative delay -1s")
	assert.ErrorContains(t, err, "reaction 1 is zero: use Ready, Succeed or FailWith")
	assert.ErrorContains(t, cluster.React(cubetest.Match{}, cubetest.Ready()), "the match is empty")
	assert.ErrorContains(t, cluster.React(cubetest.Kind("Job.batch")), "no reaction given")
	require.NoError(t, cluster.React(cubetest.Kind("Job.batch.volcano.sh"), cubetest.Ready()))
	var nilCluster *cubetest.Cluster
	assert.EqualError(t, nilCluster.React(cubetest.Kind("Job"), cubetest.Ready()), "cubetest: cluster is nil or zero: make it with cubetest.NewCluster")
	assert.NoError(t, nilCluster.Err())
	assert.False(t, errors.Is(cluster.Err(), cube.ErrFailed))
}
