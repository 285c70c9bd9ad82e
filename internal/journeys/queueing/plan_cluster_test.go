package queueing

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/journeys"
	kueue "github.com/cubestudio/cube/internal/kueue/v1beta2"
	"github.com/cubestudio/cube/tenant"
)

// admissionOf waits until Kueue has admitted the Workload of the release's
// job and returns where.
func admissionOf(t *testing.T, c client.Reader, rel *cube.Release) *kueue.Admission {
	t.Helper()
	var got *kueue.Admission
	require.Eventually(t, func() bool {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(kueue.GroupVersion.WithKind("WorkloadList"))
		require.NoError(t, c.List(t.Context(), list, client.InNamespace(rel.Namespace)))
		for i := range list.Items {
			var w kueue.Workload
			require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &w))
			for _, o := range w.OwnerReferences {
				if o.Name == rel.Objects[0].Name && o.Kind == rel.Objects[0].Kind && w.Status.Admission != nil {
					got = w.Status.Admission
					return true
				}
			}
		}
		return false
	}, 2*time.Minute, time.Second, "Kueue admits %s", rel.Name)
	return got
}

// The plan made before submitting is what Kueue then does: a job the plan
// admits is admitted on the flavors it named, and one it says waits for
// the GPUs in use waits, with no pod started, until they are free.
func TestKueuePlanMatchesAdmission(t *testing.T) {
	c, cl, ns := kueueTenant(t, 4, "")
	first := gpuJob(c, "first", ns, 1, 2, "20")
	plans, err := tenant.Plan(t.Context(), c.Client, ns, first)
	require.NoError(t, err)
	require.Len(t, plans, 1)
	require.Equal(t, tenant.Admissible, plans[0].Verdict, "%s", plans[0])
	t.Logf("plan: %s", plans[0])

	rel := journeys.Apply(t, cl, first)
	admitted := admissionOf(t, c.Client, rel)
	assert.Equal(t, ns, string(admitted.ClusterQueue))
	require.Len(t, admitted.PodSetAssignments, len(plans[0].PodSets))
	for i, ps := range plans[0].PodSets {
		got := map[string]string{}
		for r, f := range admitted.PodSetAssignments[i].Flavors {
			got[string(r)] = string(f)
		}
		want := map[string]string{}
		for r, f := range ps.Flavors {
			want[string(r)] = f
		}
		assert.Equal(t, ps.Name, admitted.PodSetAssignments[i].Name)
		assert.Equal(t, want, got, "pod set %s is admitted on the flavors the plan named", ps.Name)
	}

	// Once Kueue reports the first job's GPUs reserved, a second one that
	// needs two more waits, and the plan says so before it is submitted.
	second := gpuJob(c, "second", ns, 0, 2, "1")
	require.Eventually(t, func() bool {
		plans, err = tenant.Plan(t.Context(), c.Client, ns, second)
		require.NoError(t, err)
		return plans[0].Verdict == tenant.Waits
	}, time.Minute, time.Second, "the plan sees the first job's GPUs in use: %v", plans)
	t.Logf("plan: %s", plans[0])
	assert.Equal(t, "4", plans[0].Short[0].Most.String())
	assert.Equal(t, "0", plans[0].Short[0].Free.String())
	rel2 := journeys.Apply(t, cl, second)
	waitQueued(t, rel2, cube.QueueQueued)
	assert.Zero(t, podsOf(t, c, rel2), "no pod of the job the plan said waits")
	_, err = rel2.Wait(t.Context(), cube.Succeeded, cube.Timeout(journeys.WaitFor), journeys.Progress(t))
	require.NoError(t, err, "it runs once the first has finished")
}
