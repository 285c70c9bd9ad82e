package queueing

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/journeys"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/kinds"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
)

// kueueTenant makes a fresh namespace a Kueue tenant with gpus T4s of
// quota (in cohort, when not empty), waits until Kueue has activated its
// ClusterQueue and LocalQueue, and returns a client for it.
func kueueTenant(t *testing.T, gpus int, cohort string) (*testenv.Cluster, *cube.Client, string) {
	t.Helper()
	c := testenv.GetCluster(t)
	ns := c.Namespace(t)
	cl, err := cube.New(c.Config, cube.Namespace(ns), cube.Kinds(kinds.All()...))
	require.NoError(t, err)
	// The ClusterQueue is cluster-scoped: deleting the namespace leaves
	// it. The flavors are shared by every Kueue tenant and stay.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cq := &unstructured.Unstructured{}
		cq.SetAPIVersion("kueue.x-k8s.io/v1beta2")
		cq.SetKind("ClusterQueue")
		cq.SetName(ns)
		if err := c.Client.Delete(ctx, cq); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete clusterqueue %s: %v", ns, err)
		}
	})
	// The platform's flavors, one release recorded in Kueue's namespace
	// that every test applies again alike; never deleted, as a platform
	// keeps them.
	platform, err := cube.New(c.Config, cube.Namespace("kueue-system"), cube.Kinds(kinds.All()...))
	require.NoError(t, err)
	journeys.Apply(t, platform, tenant.Flavors("kueue-flavors", hardware.T4))
	team := tenant.New(ns).CPU("8").Memory("8Gi").Accelerators(hardware.T4, gpus).Queueing(tenant.Kueue).Cohort(cohort)
	rel := journeys.Apply(t, cl, team)
	_, err = rel.Wait(t.Context(), cube.Ready, cube.Timeout(2*time.Minute), journeys.Progress(t))
	require.NoError(t, err, "Kueue activates the tenant's queues")
	return c, cl, ns
}

// gpuJob is a PyTorchJob of 1+workers pods with gpus T4s each that
// sleeps for seconds, in the tenant's LocalQueue.
func gpuJob(c *testenv.Cluster, name, ns string, workers, gpus int, seconds string) *train.PyTorchJob {
	return train.PyTorch(name).Namespace(ns).LocalQueue(ns).
		Image(c.Images.Busybox).Command("sleep", seconds).
		Workers(workers).On(hardware.T4).Accelerators(gpus).
		CPU("100m").Memory("64Mi")
}

// waitQueued waits until rel's status explains that Kueue holds it for
// reason, saying each of says (Kueue updates a ClusterQueue's usage a
// moment after it admits a workload), and returns that status.
func waitQueued(t *testing.T, rel *cube.Release, reason string, says ...string) cube.Status {
	t.Helper()
	var got cube.Status
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for {
		st, err := rel.Status(ctx)
		require.NoError(t, err)
		if len(st.Queue) > 0 && st.Queue[0].Reason == reason && containsAll(st.Queue[0].String(), says) {
			return st
		}
		got = st
		select {
		case <-ctx.Done():
			t.Fatalf("%s never reads %s saying %q: last status %s", rel.Name, reason, says, got)
		case <-time.After(time.Second):
		}
	}
}

// podsOf counts the pods of rel.
func podsOf(t *testing.T, c *testenv.Cluster, rel *cube.Release) int {
	t.Helper()
	pods, err := c.Clientset.CoreV1().Pods(rel.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: cube.LabelRelease + "=" + rel.Name})
	require.NoError(t, err)
	return len(pods.Items)
}

// A job of three pods with two GPUs each does not fit a tenant of four:
// Kueue keeps it suspended, no pod of it is created, and its status says
// it waits for quota in the tenant's ClusterQueue. tenant.Plan said so
// before: more than the ClusterQueue can ever have.
func TestKueueGangNotPartlyStarted(t *testing.T) {
	c, cl, ns := kueueTenant(t, 4, "")
	gang := gpuJob(c, "gang", ns, 2, 2, "30")
	plans, err := tenant.Plan(t.Context(), c.Client, ns, gang)
	require.NoError(t, err)
	require.Len(t, plans, 1)
	assert.Equal(t, tenant.Inadmissible, plans[0].Verdict, "%s", plans[0])
	assert.Equal(t, "6", plans[0].Short[0].Needed.String())
	assert.Equal(t, "4", plans[0].Short[0].Most.String())
	rel := journeys.Apply(t, cl, gang)
	// Kueue's message names what is short once it has tried the job; the
	// status before it lists every resource the job requests.
	st := waitQueued(t, rel, cube.QueueQueued, "couldn't assign flavors")
	t.Logf("status: %s", st)
	assert.True(t, strings.HasPrefix(st.Queue[0].String(), "Queued: waiting for quota in ClusterQueue "+ns+" (nvidia.com/gpu: 0 of 4 in use"), "%s", st.Queue[0])
	assert.Equal(t, "PyTorchJob", st.Queue[0].Object.Kind)
	assert.Contains(t, st.String(), "Queued: waiting for quota in ClusterQueue "+ns)
	// Held for a while, and still no pod.
	time.Sleep(10 * time.Second)
	assert.Zero(t, podsOf(t, c, rel), "no pod of a job that does not fit")
}

// A second job that fits only once the first is done waits in the queue
// and then runs to success.
func TestKueueSecondJobQueuesThenRuns(t *testing.T) {
	c, cl, ns := kueueTenant(t, 4, "")
	first := journeys.Apply(t, cl, gpuJob(c, "first", ns, 1, 2, "20"))
	second := journeys.Apply(t, cl, gpuJob(c, "second", ns, 1, 2, "1"))
	st := waitQueued(t, second, cube.QueueQueued, "nvidia.com/gpu: 4 of 4 in use")
	t.Logf("second: %s", st)
	_, err := first.Wait(t.Context(), cube.Succeeded, cube.Timeout(journeys.WaitFor), journeys.Progress(t))
	require.NoError(t, err)
	_, err = second.Wait(t.Context(), cube.Succeeded, cube.Timeout(journeys.WaitFor), journeys.Progress(t))
	require.NoError(t, err, "the second job runs once the first has freed its GPUs")
}

// Two tenants of two GPUs each in one cohort: the first borrows the
// second's idle GPUs for a job of four, and is preempted when the second
// submits a job of its own.
func TestKueueBorrowThenReclaim(t *testing.T) {
	cohort := "cohort-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	c, borrowerCl, borrower := kueueTenant(t, 2, cohort)
	_, ownerCl, owner := kueueTenant(t, 2, cohort)

	big := journeys.Apply(t, borrowerCl, gpuJob(c, "big", borrower, 1, 2, "600"))
	_, err := big.Wait(t.Context(), cube.InProgress, cube.Timeout(journeys.WaitFor))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return podsOf(t, c, big) == 2 }, 2*time.Minute, time.Second, "the borrower runs on four GPUs, two of them borrowed")

	mine := journeys.Apply(t, ownerCl, gpuJob(c, "mine", owner, 0, 2, "5"))
	st := waitQueued(t, big, cube.QueuePreempted)
	t.Logf("borrower: %s", st)
	assert.Equal(t, "Preempted by a workload of ClusterQueue "+owner+" (reclamation within the cohort)", st.Queue[0].String())
	_, err = mine.Wait(t.Context(), cube.Succeeded, cube.Timeout(journeys.WaitFor), journeys.Progress(t))
	require.NoError(t, err, "the owner's job runs on the GPUs it took back")
}

// Within one tenant, a job of the platform's higher WorkloadPriority
// preempts an admitted job of a lower one that holds the quota it needs,
// and runs; the preempted job's status says why, in Kueue's words.
func TestKueuePriorityPreemptsWithinTenant(t *testing.T) {
	c, cl, ns := kueueTenant(t, 2, "")
	// The platform's priorities, like its flavors: one release in Kueue's
	// namespace that every test applies alike, never deleted.
	platform, err := cube.New(c.Config, cube.Namespace("kueue-system"), cube.Kinds(kinds.All()...))
	require.NoError(t, err)
	prios := journeys.Apply(t, platform, tenant.Priorities("kueue-priorities",
		tenant.Priority{Name: "cube-batch", Value: 100}, tenant.Priority{Name: "cube-urgent", Value: 1000}))
	_, err = prios.Wait(t.Context(), cube.Ready, cube.Timeout(time.Minute))
	require.NoError(t, err)

	low := journeys.Apply(t, cl, gpuJob(c, "low", ns, 0, 2, "600").WorkloadPriority("cube-batch"))
	require.Eventually(t, func() bool { return podsOf(t, c, low) == 1 }, 2*time.Minute, time.Second, "the batch job runs on the tenant's two GPUs")

	urgent := journeys.Apply(t, cl, gpuJob(c, "urgent", ns, 0, 2, "5").WorkloadPriority("cube-urgent"))
	st := waitQueued(t, low, cube.QueuePreempted)
	t.Logf("batch: %s", st)
	assert.Equal(t, "Preempted by a workload of ClusterQueue "+ns+" (prioritization in the ClusterQueue)", st.Queue[0].String())
	journeys.Succeeds(t, urgent)
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
