package queueing

import (
	"context"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/journeys"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
)

// scheduledPods counts the pods of rel bound to a node, and those held
// before scheduling (Kueue's pod integration creates a pod it has not
// admitted with its kueue.x-k8s.io/admission scheduling gate).
func scheduledPods(t *testing.T, c *testenv.Cluster, rel *cube.Release, selector string) (scheduled, gated int) {
	t.Helper()
	if selector == "" {
		selector = cube.LabelRelease + "=" + rel.Name
	}
	pods, err := c.Clientset.CoreV1().Pods(rel.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	for _, p := range pods.Items {
		switch {
		case p.Spec.NodeName != "":
			scheduled++
		case len(p.Spec.SchedulingGates) > 0:
			gated++
		}
	}
	return scheduled, gated
}

// planOf is the plan of w in the tenant ns, one Admission per Kueue
// Workload.
func planOf(t *testing.T, c *testenv.Cluster, ns string, w cube.Workload) []tenant.Admission {
	t.Helper()
	plans, err := tenant.Plan(t.Context(), c.Client, ns, w)
	require.NoError(t, err)
	for _, p := range plans {
		t.Logf("plan: %s", p)
	}
	return plans
}

// A RayJob in a Kueue tenant: the one that fits is admitted whole and
// KubeRay makes its RayCluster, head and GPU workers on the node; a second
// one waits suspended, with no RayCluster, and its status says it waits
// for quota. (Ray is not installed in any image here: the journey follows
// admission, not Ray.)
func TestKueueAdmitsARayJob(t *testing.T) {
	c, cl, ns := kueueTenant(t, 4, "")
	rayJob := func(name string, workers int) *train.RayJob {
		return train.Ray(name).LocalQueue(ns).Image(c.Images.Python).
			Entrypoint("python3 -c 'print(1)'").
			WorkerGroup("gpu", workers).On(hardware.T4).Accelerators(2).
			CPU("100m").Memory("128Mi").HeadResources("100m", "128Mi")
	}
	first := rayJob("first", 2)
	require.Equal(t, tenant.Admissible, planOf(t, c, ns, first)[0].Verdict)
	rel := journeys.Apply(t, cl, first)
	ok := assert.Eventually(t, func() bool {
		var clusters rayv1.RayClusterList
		require.NoError(t, c.Client.List(t.Context(), &clusters, client.InNamespace(ns), client.MatchingLabels{"ray.io/originated-from-cr-name": "first"}))
		if len(clusters.Items) == 0 {
			return false
		}
		scheduled, _ := scheduledPods(t, c, rel, "ray.io/cluster="+clusters.Items[0].Name)
		return scheduled == 3
	}, 2*time.Minute, time.Second, "the head and both GPU workers of the admitted RayJob run")
	if !ok {
		st, err := rel.Status(t.Context())
		t.Fatalf("status: %s %v", st, err)
	}

	second := rayJob("second", 1)
	require.Eventually(t, func() bool { return planOf(t, c, ns, second)[0].Verdict == tenant.Waits }, time.Minute, time.Second)
	rel2 := journeys.Apply(t, cl, second)
	st := waitQueued(t, rel2, cube.QueueQueued, "nvidia.com/gpu: 4 of 4 in use")
	assert.Equal(t, "RayJob", st.Queue[0].Object.Kind)
	var clusters rayv1.RayClusterList
	require.NoError(t, c.Client.List(t.Context(), &clusters, client.InNamespace(ns), client.MatchingLabels{"ray.io/originated-from-cr-name": "second"}))
	assert.Empty(t, clusters.Items, "no RayCluster for the RayJob Kueue holds")
}

// A serving group on LeaderWorkerSet in a Kueue tenant of two T4s: of two
// groups of two pods, one T4 each, Kueue admits one whole and holds the
// other, whose pods wait gated; the release's status explains the wait
// under the LeaderWorkerSet.
func TestKueueAdmitsALeaderWorkerSetGroup(t *testing.T) {
	c, cl, ns := kueueTenant(t, 2, "")
	svc := serve.VLLM("big", "standin/echo-70b").LocalQueue(ns).
		Image(c.Images.Standin).CPU("100m").Memory("128Mi").
		On(hardware.T4).Accelerators(1).Nodes(2).Replicas(2)
	plans := planOf(t, c, ns, svc)
	require.Len(t, plans, 2, "one Kueue Workload per group")
	assert.Equal(t, []tenant.Verdict{tenant.Admissible, tenant.Waits}, []tenant.Verdict{plans[0].Verdict, plans[1].Verdict})

	rel := journeys.Apply(t, cl, svc)
	st := waitQueued(t, rel, cube.QueueQueued, "nvidia.com/gpu: 2 of 2 in use")
	t.Logf("status: %s", st)
	assert.Equal(t, "LeaderWorkerSet", st.Queue[0].Object.Kind)
	require.Eventually(t, func() bool {
		scheduled, _ := scheduledPods(t, c, rel, "")
		return scheduled == 2
	}, 2*time.Minute, time.Second, "the admitted group's leader and worker run")
	time.Sleep(5 * time.Second)
	scheduled, _ := scheduledPods(t, c, rel, "")
	assert.Equal(t, 2, scheduled, "the second group is not partly started")
}

// A Deployment in a Kueue tenant of one T4: Kueue admits its pods one by
// one (its pod integration), so of two replicas of one T4 each one runs
// and the other waits at its scheduling gate, which the release's status
// explains under the Deployment.
func TestKueueAdmitsADeploymentPodByPod(t *testing.T) {
	c, cl, ns := kueueTenant(t, 1, "")
	svc := serve.VLLM("chat", "standin/echo-7b").LocalQueue(ns).
		Image(c.Images.Standin).CPU("100m").Memory("128Mi").
		On(hardware.T4).Accelerators(1).Replicas(2)
	plans := planOf(t, c, ns, svc)
	assert.Equal(t, []tenant.Verdict{tenant.Admissible, tenant.Waits}, []tenant.Verdict{plans[0].Verdict, plans[1].Verdict})

	rel := journeys.Apply(t, cl, svc)
	st := waitQueued(t, rel, cube.QueueQueued)
	t.Logf("status: %s", st)
	assert.Equal(t, "Deployment", st.Queue[0].Object.Kind)
	assert.Equal(t, "chat", st.Queue[0].Object.Name)
	require.Eventually(t, func() bool {
		scheduled, gated := scheduledPods(t, c, rel, "")
		return scheduled == 1 && gated == 1
	}, 2*time.Minute, time.Second, "one pod runs, the other waits at Kueue's gate")
}

// A notebook in a Kueue tenant of one T4: the first is admitted (its
// StatefulSet's pod group) and becomes Ready; a second waits, gated, and
// its status says so under the StatefulSet.
func TestKueueAdmitsANotebook(t *testing.T) {
	c, cl, ns := kueueTenant(t, 1, "")
	_, err := c.Clientset.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "lab-token"},
		StringData: map[string]string{"token": "journey-token-0123456789"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	lab := func(name string) *notebook.Notebook {
		return notebook.Jupyter(name, "alice").Namespace(ns).LocalQueue(ns).
			Image(c.Images.Python).
			AllowNamespace(map[string]string{"kubernetes.io/metadata.name": ns}).
			Launch(notebook.LaunchJupyterServer).
			Credential(pod.SecretKeyRef{Name: "lab-token", Key: "token"}).
			On(hardware.T4).Accelerators(1).
			Request(corev1.ResourceCPU, "250m").Memory("512Mi")
	}
	first := lab("lab")
	require.Equal(t, tenant.Admissible, planOf(t, c, ns, first)[0].Verdict)
	rel := journeys.Apply(t, cl, first)
	_, err = rel.Wait(t.Context(), cube.Ready, cube.Timeout(journeys.WaitFor), journeys.Progress(t))
	require.NoError(t, err, journeys.LogsOf(t, rel))

	second := lab("lab2")
	require.Eventually(t, func() bool { return planOf(t, c, ns, second)[0].Verdict == tenant.Waits }, time.Minute, time.Second)
	rel2 := journeys.Apply(t, cl, second)
	st := waitQueued(t, rel2, cube.QueueQueued, "nvidia.com/gpu: 1 of 1 in use")
	assert.Equal(t, "StatefulSet", st.Queue[0].Object.Kind)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	<-ctx.Done()
	scheduled, _ := scheduledPods(t, c, rel2, "")
	assert.Zero(t, scheduled, "the second notebook's pod is held")
}
