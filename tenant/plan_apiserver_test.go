package tenant_test

// Plan reads Kueue's objects as the real CRDs of v0.17.0 store them, with
// the status Kueue would write (no Kueue runs on the test API server).

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
)

// kueueTenant applies a Kueue tenant of gpus T4s in cohort on the test API
// server and writes its ClusterQueue's status as Kueue would: Active, with
// gpusUsed T4s reserved.
func kueueTenant(t *testing.T, env *testenv.Env, cohort string, gpus, gpusUsed int) string {
	t.Helper()
	ns := env.Namespace(t)
	// The platform's flavors: one release every test applies alike.
	platform := cube.NewFromClient(env.Client, cube.Namespace("default"))
	_, err := platform.Apply(t.Context(), tenant.Flavors("kueue-flavors", hardware.T4))
	require.NoError(t, err)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := env.Client.Delete(ctx, kueueObject("ClusterQueue", ns)); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete clusterqueue %s: %v", ns, err)
		}
	})
	_, err = c.Apply(t.Context(), tenant.New(ns).CPU("8").Memory("8Gi").Accelerators(hardware.T4, gpus).Queueing(tenant.Kueue).Cohort(cohort))
	require.NoError(t, err)
	cq := kueueObject("ClusterQueue", ns)
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKeyFromObject(cq), cq))
	require.NoError(t, unstructured.SetNestedSlice(cq.Object, []any{map[string]any{
		"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit new workloads", "lastTransitionTime": "2026-01-01T00:00:00Z",
	}}, "status", "conditions"))
	require.NoError(t, unstructured.SetNestedSlice(cq.Object, []any{
		map[string]any{"name": "cube-t4", "resources": []any{map[string]any{"name": "nvidia.com/gpu", "total": int64(gpusUsed)}}},
	}, "status", "flavorsReservation"))
	require.NoError(t, env.Client.Status().Update(t.Context(), cq))
	return ns
}

func kueueObject(kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kueue.x-k8s.io/v1beta2")
	u.SetKind(kind)
	u.SetName(name)
	return u
}

func gpuJob(name, ns string, workers, gpus int) *train.PyTorchJob {
	return train.PyTorch(name).LocalQueue(ns).Image("busybox:1.36").Command("sleep", "1").
		Workers(workers).On(hardware.T4).Accelerators(gpus).CPU("500m").Memory("256Mi")
}

// Two tenants of two T4s in one cohort, the second using none: a job of
// four T4s in the first borrows the second's two (a fifth T4 then waits);
// a job of two in the second then waits for them, and Kueue would reclaim them by preemption.
func TestPlanReadsTheCohort(t *testing.T) {
	env := testenv.Get(t)
	cohort := "plan-" + env.Namespace(t)
	borrower := kueueTenant(t, env, cohort, 2, 0)
	owner := kueueTenant(t, env, cohort, 2, 0)

	got, err := tenant.Plan(t.Context(), env.Client, borrower, gpuJob("big", borrower, 1, 2), gpuJob("more", borrower, 0, 1))
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, tenant.Admissible, got[0].Verdict, "%s", got[0])
	assert.Equal(t, borrower, got[0].ClusterQueue)
	assert.Equal(t, cohort, got[0].Cohort)
	assert.Equal(t, "[nvidia.com/gpu 2 on cube-t4]", fmtAmounts(got[0].Borrowed))
	assert.Equal(t, "cube-t4", got[0].PodSets[1].Flavors["nvidia.com/gpu"])
	assert.Equal(t, tenant.Waits, got[1].Verdict, "the cohort has no fifth T4 now: %s", got[1])
	assert.Equal(t, "4", got[1].Short[0].Most.String(), "the borrower can have at most its two and the owner's two")

	// Kueue admitted the big job: the borrower's ClusterQueue reserves 4.
	cq := kueueObject("ClusterQueue", borrower)
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKeyFromObject(cq), cq))
	require.NoError(t, unstructured.SetNestedSlice(cq.Object, []any{
		map[string]any{"name": "cube-t4", "resources": []any{map[string]any{"name": "nvidia.com/gpu", "total": "4", "borrowed": "2"}}},
	}, "status", "flavorsReservation"))
	require.NoError(t, env.Client.Status().Update(t.Context(), cq))

	got, err = tenant.Plan(t.Context(), env.Client, owner, gpuJob("mine", owner, 0, 2))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, tenant.Waits, got[0].Verdict)
	assert.True(t, got[0].MayPreempt)
	assert.Equal(t, "PyTorchJob.kubeflow.org "+owner+"/mine: Waits: waits in ClusterQueue "+owner+
		" for nvidia.com/gpu on flavor cube-t4 (needs 2, 0 free now, at most 4); Kueue looks for workloads to preempt for it", got[0].String())
}

// A workload in a LocalQueue that does not exist, one without a queue, and
// a reader that may not read ClusterQueues.
func TestPlanRefusals(t *testing.T) {
	env := testenv.Get(t)
	ns := kueueTenant(t, env, "", 4, 0)
	got, err := tenant.Plan(t.Context(), env.Client, ns,
		train.PyTorch("lost").LocalQueue("nope").Image("busybox:1.36"),
		train.PyTorch("free").Image("busybox:1.36"))
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, tenant.Inadmissible, got[0].Verdict)
	assert.Equal(t, "LocalQueue nope does not exist in namespace "+ns, got[0].Message)
	assert.Equal(t, tenant.NotQueued, got[1].Verdict)

	_, err = tenant.Plan(t.Context(), nil, ns, gpuJob("x", ns, 0, 1))
	require.EqualError(t, err, "plan: no reader")
	_, err = tenant.Plan(t.Context(), env.Client, ns, nil)
	require.EqualError(t, err, "plan: workload 0 is nil")
	_, err = tenant.Plan(t.Context(), env.Client, ns, train.PyTorch("").LocalQueue(ns))
	require.Error(t, err, "the builder's own errors")
}

func fmtAmounts(as []tenant.Amount) string {
	out := "["
	for i, a := range as {
		if i > 0 {
			out += " "
		}
		out += a.String()
	}
	return out + "]"
}
