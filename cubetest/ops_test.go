package cubetest_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/ops"
	"github.com/cubestudio/cube/pod"
)

// A Lease has no controller to fail it: what reacts to it is ops.Enforcer,
// which stops the leased notebook once the lease expires. A user's test
// of that automation (apply the notebook and its lease, wait, enforce)
// runs in memory, in well under a second.
func TestLeaseEnforcerStopsTheLeasedNotebook(t *testing.T) {
	const ns = "team-a"
	ctx := t.Context()
	start := time.Now()
	cluster := cubetest.NewCluster(nil, cube.Namespace(ns))
	lab, err := cluster.Client.Apply(ctx, notebook.Jupyter("alice-lab", "alice").Namespace(ns).On(hardware.H100).Accelerators(1).
		Credential(pod.SecretKeyRef{Name: "alice-lab-token", Key: "token"}).AllowNamespace(map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"}))
	require.NoError(t, err)
	begin := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	lease, err := cluster.Client.Apply(ctx, ops.Lease("alice-h100", ns).Holder("alice").Workload(notebook.Kind, "alice-lab").
		Accelerators(hardware.H100, 1).Period(begin, 8*time.Hour))
	require.NoError(t, err)

	require.NoError(t, cluster.MarkReady(ctx, lab))
	st, err := lab.Wait(ctx, cube.Ready, cube.Timeout(5*time.Second))
	require.NoError(t, err)
	assert.Equal(t, cube.Ready, st.Phase)
	st, err = lease.Wait(ctx, cube.Ready, cube.Timeout(5*time.Second))
	require.NoError(t, err)
	assert.Equal(t, cube.Ready, st.Phase, "a Lease is ready once it exists")

	replicas := func() int32 {
		var sts appsv1.StatefulSet
		require.NoError(t, cluster.Fake.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alice-lab"}, &sts))
		if sts.Spec.Replicas == nil {
			return 1 // the API server's default, which the fake client does not write
		}
		return *sts.Spec.Replicas
	}
	// Before the end of the period: nothing happens.
	expired, err := ops.Enforcer{Client: cluster.Fake, Now: func() time.Time { return begin.Add(7 * time.Hour) }}.Enforce(ctx, ns)
	require.NoError(t, err)
	assert.Empty(t, expired)
	assert.Equal(t, int32(1), replicas())

	// After it: the notebook is stopped and the lease marked enforced.
	at := begin.Add(8*time.Hour + time.Minute)
	enforcer := ops.Enforcer{Client: cluster.Fake, Now: func() time.Time { return at }}
	expired, err = enforcer.Enforce(ctx, ns)
	require.NoError(t, err)
	require.Len(t, expired, 1)
	assert.True(t, expired[0].ExpiredAt.Equal(begin.Add(8*time.Hour)), "expired at %s", expired[0].ExpiredAt)
	expired[0].ExpiredAt = time.Time{}
	assert.Equal(t, ops.Expired{Tenant: ns, Lease: "alice-h100", Holder: "alice", Workload: "alice-lab"}, expired[0])
	assert.Equal(t, int32(0), replicas())
	var l coordinationv1.Lease
	require.NoError(t, cluster.Fake.Get(ctx, client.ObjectKey{Namespace: ns, Name: "alice-h100"}, &l))
	assert.Equal(t, at.Format(time.RFC3339), l.Annotations[ops.AnnotationEnforcedAt])

	// Enforced once: the next run leaves it alone.
	expired, err = enforcer.Enforce(ctx, ns)
	require.NoError(t, err)
	assert.Empty(t, expired)
	assert.Less(t, time.Since(start), time.Second, "apply, wait and react take well under a second in memory")
}
