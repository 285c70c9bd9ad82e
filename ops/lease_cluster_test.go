package ops_test

// Lease expiry on the one-node test cluster (internal/testsupport/testenv.GetCluster):
// a Jupyter notebook leased with a T4 (the test node advertises T4s it does
// not have) really runs, the enforcer polled on the real clock leaves it
// running until the lease expires, and then its pod really goes away while
// its home claim stays.

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
)

func TestLeaseExpiryStopsTheWorkloadOnTheCluster(t *testing.T) {
	c := testenv.GetCluster(t)
	ns := c.Namespace(t)
	ctx := t.Context()
	_, err := c.Clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "ws-token"}, StringData: map[string]string{"token": "lease-test-token"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	cc, err := cube.New(c.Config, cube.Namespace(ns))
	require.NoError(t, err)
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
