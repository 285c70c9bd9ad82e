package ops_test

// Idle detection on the one-node test cluster: a served model and a
// notebook run for real on the T4s the test node advertises (no device
// behind them, so a small exporter of this test serves the DCGM metrics
// dcgm-exporter would serve for those pods), a real Prometheus scrapes it,
// and acting on the findings scales the idle service down and stops the
// idle notebook, whose pods then really go away, while the busy service
// keeps running.

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/ops"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/serve"
)

func TestIdleReleasesStopOnTheCluster(t *testing.T) {
	c, ns, cc := clusterWithToken(t, "lab-token")
	ctx := t.Context()
	for _, w := range []cube.Workload{
		serve.VLLM("idle", "standin/idle").Namespace(ns).Image(c.Images.Standin).On(hardware.T4).Accelerators(1).CPU("100m").Memory("128Mi"),
		serve.VLLM("busy", "standin/busy").Namespace(ns).Image(c.Images.Standin).On(hardware.T4).Accelerators(1).CPU("100m").Memory("128Mi"),
		notebook.Jupyter("lab", "alice").Namespace(ns).Image(c.Images.Python).Launch(notebook.LaunchJupyterServer).
			Credential(pod.SecretKeyRef{Name: "lab-token", Key: "token"}).AllowNamespace(map[string]string{"kubernetes.io/metadata.name": ns}).
			On(hardware.T4).Accelerators(1).CPU("250m").Memory("1Gi"),
	} {
		rel, err := cc.Apply(ctx, w)
		require.NoError(t, err)
		_, err = rel.Wait(ctx, cube.Ready, cube.Timeout(5*time.Minute), cube.FailOnStuckPods)
		require.NoError(t, err, rel.Name)
	}
	podOf := func(release string) string {
		pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: cube.LabelRelease + "=" + release})
		require.NoError(t, err)
		require.Len(t, pods.Items, 1, release)
		return pods.Items[0].Name
	}
	target := startExporter(t, dcgm(0, ns, podOf("idle"), 2, 900), dcgm(1, ns, podOf("busy"), 85, 12000), dcgm(2, ns, podOf("lab"), 0, 300))
	m, err := ops.NewMetrics(startPrometheus(t, target))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		s, err := m.Utilisation(ctx, time.Now().Add(-time.Minute), time.Now(), time.Second)
		return err == nil && len(s) == 3
	}, 60*time.Second, 200*time.Millisecond, "no samples scraped")
	start := time.Now()
	time.Sleep(6 * time.Second)
	now := time.Now()
	series, err := m.Utilisation(ctx, start, now, time.Second)
	require.NoError(t, err)

	var list corev1.PodList
	require.NoError(t, c.Client.List(ctx, &list))
	serving, nb := ops.ServingIdle(), ops.NotebookIdle()
	serving.For, nb.For = 4*time.Second, 4*time.Second
	findings, err := ops.Idle(series, list.Items, now, serving, nb)
	require.NoError(t, err)
	found := map[string]ops.Action{}
	for _, f := range findings {
		found[f.Release] = f.Action
	}
	assert.Equal(t, map[string]ops.Action{"idle": ops.ScaleDown, "lab": ops.Stop}, found, "findings: %v", findings)

	done, err := ops.Act(ctx, c.Client, findings, ops.Execute())
	require.NoError(t, err)
	for _, d := range done {
		assert.True(t, d.Done, "%v", d)
	}
	gone := func(release string) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: cube.LabelRelease + "=" + release})
			return err == nil && len(pods.Items) == 0, nil
		}
	}
	for _, r := range []string{"idle", "lab"} {
		require.NoError(t, wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, gone(r)), "the pods of %s are gone", r)
	}
	assert.NotEmpty(t, podOf("busy"), "the busy service keeps running")
}

// Lease expiry on the one-node test cluster (internal/testsupport/testenv.GetCluster):
// a Jupyter notebook leased with a T4 (the test node advertises T4s it does
// not have) really runs, the enforcer polled on the real clock leaves it
// running until the lease expires, and then its pod really goes away while
// its home claim stays.

func TestLeaseExpiryStopsTheWorkloadOnTheCluster(t *testing.T) {
	c, ns, cc := clusterWithToken(t, "ws-token")
	ctx := t.Context()
	rel, err := cc.Apply(ctx, notebook.Jupyter("ws", "bob").Namespace(ns).
		Image(c.Images.Python).Launch(notebook.LaunchJupyterServer).Credential(pod.SecretKeyRef{Name: "ws-token", Key: "token"}).
		AllowNamespace(map[string]string{"kubernetes.io/metadata.name": ns}).
		On(hardware.T4).Accelerators(1).CPU("250m").Memory("1Gi"))
	require.NoError(t, err)
	_, err = rel.Wait(ctx, cube.Ready, cube.Timeout(5*time.Minute), cube.FailOnStuckPods)
	require.NoError(t, err)

	const length = 30 * time.Second
	// A Lease keeps its times to the microsecond (MicroTime).
	start := time.Now().Truncate(time.Microsecond)
	_, err = cc.Apply(ctx, ops.Lease("bob-t4", ns).Holder("bob").Workload(notebook.Kind, "ws").
		Accelerators(hardware.T4, 1).Period(start, length))
	require.NoError(t, err)

	enf := ops.Enforcer{Client: c.Client, Now: time.Now}
	var expired []ops.Expired
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 2*time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		got, err := enf.Enforce(ctx, ns)
		if err != nil {
			return false, err
		}
		if len(got) > 0 {
			expired = got
			return true, nil
		}
		pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: cube.LabelRelease + "=ws"})
		if err != nil {
			return false, err
		}
		assert.Len(t, pods.Items, 1, "the notebook runs while its lease lasts")
		return false, nil
	}))
	require.Len(t, expired, 1)
	assert.Equal(t, "bob-t4", expired[0].Lease)
	assert.False(t, expired[0].ExpiredAt.Before(start.Add(length)), "stopped at %s, before the lease's end %s", expired[0].ExpiredAt, start.Add(length))

	require.NoError(t, wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: cube.LabelRelease + "=ws"})
		return err == nil && len(pods.Items) == 0, nil
	}), "the notebook's pod is gone after the lease expired")
	_, err = c.Clientset.CoreV1().PersistentVolumeClaims(ns).Get(ctx, notebook.HomeClaimName("ws"), metav1.GetOptions{})
	assert.NoError(t, err, "the home claim stays")
}

// clusterWithToken returns the test cluster, a namespace of this test and
// a cube client for it, with a Secret name holding a notebook token under
// the key token.
func clusterWithToken(t *testing.T, name string) (*testenv.Cluster, string, *cube.Client) {
	t.Helper()
	c := testenv.GetCluster(t)
	ns := c.Namespace(t)
	_, err := c.Clientset.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"token": name + "-value"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	cc, err := cube.New(c.Config, cube.Namespace(ns))
	require.NoError(t, err)
	return c, ns, cc
}
