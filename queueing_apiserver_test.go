package cube_test

// Kueue's Workloads explain a waiting job, against the real kube-apiserver
// with Kueue v0.17.0's CRDs and hand-made status (no Kueue runs there).

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/kinds"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
)

// kueueObject is an object of Kueue's v1beta2 API.
func kueueObject(kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kueue.x-k8s.io/v1beta2")
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// A Kueue tenant's objects are stored by the real CRDs as cube rendered
// them (the mirrored field names are Kueue's: a wrong one would be pruned
// or refused by strict field validation), and a job of the tenant that
// Kueue holds reads, through Status and Wait, why it waits, then that it
// was preempted.
func TestKueueWorkloadExplainsTheWait(t *testing.T) {
	_, env, ns := newClient(t)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Kinds(kinds.All()...))
	team := tenant.New(ns).CPU("8").Memory("16Gi").Accelerators(hardware.T4, 4).
		Queueing(tenant.Kueue).Cohort("research").BorrowingLimit("nvidia.com/gpu", "2")
	// The platform's flavors, applied once for every tenant, in a
	// release of their own.
	_, err := c.Apply(t.Context(), tenant.Flavors("kueue-flavors", hardware.T4))
	require.NoError(t, err)
	_, err = c.Apply(t.Context(), team)
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), kueueObject("ClusterQueue", "", ns)) })

	cq := kueueObject("ClusterQueue", "", ns)
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKeyFromObject(cq), cq))
	groups, _, _ := unstructured.NestedSlice(cq.Object, "spec", "resourceGroups")
	require.Len(t, groups, 2, "cpu and memory, then the GPUs")
	gpu := groups[1].(map[string]any)["flavors"].([]any)[0].(map[string]any)
	assert.Equal(t, "cube-t4", gpu["name"])
	quota := gpu["resources"].([]any)[0].(map[string]any)
	assert.Equal(t, map[string]any{"name": "nvidia.com/gpu", "nominalQuota": "4", "borrowingLimit": "2"}, quota)
	cohort, _, _ := unstructured.NestedString(cq.Object, "spec", "cohortName")
	assert.Equal(t, "research", cohort)
	flavor := kueueObject("ResourceFlavor", "", "cube-t4")
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKeyFromObject(flavor), flavor))
	labels, _, _ := unstructured.NestedStringMap(flavor.Object, "spec", "nodeLabels")
	assert.Equal(t, hardware.T4.NodeLabels(), labels)

	// Kueue's usage of the queue: all four GPUs reserved, none borrowed.
	require.NoError(t, unstructured.SetNestedSlice(cq.Object, []any{
		map[string]any{"name": "cube-default", "resources": []any{map[string]any{"name": "cpu", "total": "2"}, map[string]any{"name": "memory", "total": "1Gi"}}},
		map[string]any{"name": "cube-t4", "resources": []any{map[string]any{"name": "nvidia.com/gpu", "total": "4", "borrowed": "0"}}},
	}, "status", "flavorsReservation"))
	require.NoError(t, env.Client.Status().Update(t.Context(), cq))

	rel, err := c.Apply(t.Context(), train.PyTorch("sft").Namespace(ns).LocalQueue(ns).Image("busybox:1.36").Command("true").
		Workers(1).On(hardware.T4).Accelerators(2))
	require.NoError(t, err)
	job := &unstructured.Unstructured{}
	job.SetGroupVersionKind(rel.Objects[0].GroupVersionKind)
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "sft"}, job))
	assert.Equal(t, ns, job.GetLabels()["kueue.x-k8s.io/queue-name"], "the job carries its LocalQueue")

	// The Workload Kueue would make for it, owned by the job.
	w := kueueObject("Workload", ns, "pytorchjob-sft-a1b2c")
	w.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: job.GetAPIVersion(), Kind: job.GetKind(), Name: job.GetName(), UID: job.GetUID(), Controller: ptrTo(true)}})
	w.Object["spec"] = map[string]any{"queueName": ns, "podSets": []any{map[string]any{
		"name": "worker", "count": int64(2),
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
			"name": "pytorch", "image": "busybox:1.36",
			"resources": map[string]any{"requests": map[string]any{"nvidia.com/gpu": "2", "cpu": "100m"}},
		}}}},
	}}}
	require.NoError(t, env.Client.Create(t.Context(), w))
	now := metav1.Now().Rfc3339Copy().UTC().Format("2006-01-02T15:04:05Z")
	setConditions := func(conds ...map[string]any) {
		t.Helper()
		list := make([]any, 0, len(conds))
		for _, c := range conds {
			c["lastTransitionTime"] = now
			list = append(list, c)
		}
		require.NoError(t, unstructured.SetNestedSlice(w.Object, list, "status", "conditions"))
		require.NoError(t, env.Client.Status().Update(t.Context(), w))
	}
	setConditions(map[string]any{"type": "QuotaReserved", "status": "False", "reason": "Pending",
		"message": "couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor cube-t4, 4 more needed"})

	st, err := rel.Status(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Queue, 1, "%s", st)
	assert.Equal(t, rel.Objects[0], st.Queue[0].Object)
	assert.Equal(t, "Queued: waiting for quota in ClusterQueue "+ns+
		" (nvidia.com/gpu: 4 of 4 in use, borrowing 0 of 2)"+
		": couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor cube-t4, 4 more needed", st.Queue[0].String())
	assert.Contains(t, st.String(), "; Queued: waiting for quota in ClusterQueue "+ns)

	// Wait reports the same while it waits.
	var seen cube.Status
	_, err = rel.Wait(t.Context(), cube.Succeeded, cube.Timeout(3e9), cube.OnProgress(func(s cube.Status) { seen = s }))
	require.ErrorIs(t, err, cube.ErrTimeout)
	require.Len(t, seen.Queue, 1, "%s", seen)
	assert.Equal(t, st.Queue[0], seen.Queue[0])

	preempted := "Preempted to accommodate a workload (UID: 9f1, JobUID: 7c2) due to reclamation within the cohort; preemptor path: /research/team-b; preemptee path: /research/" + ns
	setConditions(
		map[string]any{"type": "Evicted", "status": "True", "reason": "Preempted", "message": preempted},
		map[string]any{"type": "Preempted", "status": "True", "reason": "InCohortReclamation", "message": preempted},
	)
	st, err = rel.Status(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Queue, 1, "%s", st)
	assert.Equal(t, "Preempted by a workload of ClusterQueue team-b (reclamation within the cohort)", st.Queue[0].String())
}

func ptrTo[T any](v T) *T { return &v }

// pendingWorkload creates a Workload of Kueue owned by owners that waits
// for quota, as Kueue writes it.
func pendingWorkload(t *testing.T, env *testenv.Env, ns, name string, owners ...metav1.OwnerReference) {
	t.Helper()
	w := kueueObject("Workload", ns, name)
	w.SetOwnerReferences(owners)
	w.Object["spec"] = map[string]any{"queueName": ns, "podSets": []any{map[string]any{
		"name": "main", "count": int64(1),
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
			"name": "main", "image": "busybox:1.36",
			"resources": map[string]any{"requests": map[string]any{"nvidia.com/gpu": "1"}},
		}}}},
	}}}
	require.NoError(t, env.Client.Create(t.Context(), w))
	require.NoError(t, unstructured.SetNestedSlice(w.Object, []any{map[string]any{
		"type": "QuotaReserved", "status": "False", "reason": "Pending", "lastTransitionTime": "2026-01-01T00:00:00Z",
		"message": "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor cube-t4, 1 more needed",
	}}, "status", "conditions"))
	require.NoError(t, env.Client.Status().Update(t.Context(), w))
}

// Kueue queues a Deployment pod by pod (its pod integration: each pod owns
// its Workload) and a LeaderWorkerSet group by group (the LeaderWorkerSet
// owns them): the release's status explains both under the object it
// applied.
func TestKueueWorkloadsOfPodsAndGroupsExplainTheWait(t *testing.T) {
	_, env, ns := newClient(t)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Kinds(kinds.All()...))
	replicas := int32(1)
	id := cube.Identity{Kind: "serving", Release: "chat"}
	podTemplate := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "chat"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}},
	}
	deploy := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: id.ObjectMeta("chat", "", map[string]string{"kueue.x-k8s.io/queue-name": ns}, nil),
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "chat"}},
			Template: podTemplate},
	}
	group := &lwsv1.LeaderWorkerSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet"},
		ObjectMeta: id.ObjectMeta("big", "", map[string]string{"kueue.x-k8s.io/queue-name": ns}, nil),
		Spec: lwsv1.LeaderWorkerSetSpec{Replicas: &replicas, LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{WorkerTemplate: podTemplate},
			RolloutStrategy: lwsv1.RolloutStrategy{Type: lwsv1.RollingUpdateStrategyType}, StartupPolicy: lwsv1.LeaderCreatedStartupPolicy},
	}
	rel, err := c.Apply(t.Context(), cube.Objects(deploy, group))
	require.NoError(t, err)

	// What the Deployment and ReplicaSet controllers would make (none runs
	// on the test API server): a ReplicaSet and its pod, of the release.
	var stored appsv1.Deployment
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "chat"}, &stored))
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "chat-5d8f7", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "Deployment", Name: "chat", UID: stored.UID, Controller: ptrTo(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: stored.Spec.Selector, Template: podTemplate},
	}
	require.NoError(t, env.Client.Create(t.Context(), rs))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "chat-5d8f7-x2k4p", Namespace: ns, Labels: map[string]string{cube.LabelRelease: rel.Name, "app": "chat"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: ptrTo(true)}}},
		Spec: podTemplate.Spec,
	}
	require.NoError(t, env.Client.Create(t.Context(), pod))
	pendingWorkload(t, env, ns, "pod-chat-5d8f7-x2k4p-1a2b3", metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID})

	var storedGroup lwsv1.LeaderWorkerSet
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "big"}, &storedGroup))
	pendingWorkload(t, env, ns, "leaderworkerset-big-0-4c5d6", metav1.OwnerReference{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet", Name: "big", UID: storedGroup.UID})

	st, err := rel.Status(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Queue, 2, "%s", st)
	assert.Equal(t, "LeaderWorkerSet", st.Queue[0].Object.Kind)
	assert.Equal(t, "leaderworkerset-big-0-4c5d6", st.Queue[0].Workload)
	assert.Equal(t, "Deployment", st.Queue[1].Object.Kind)
	assert.Equal(t, "chat", st.Queue[1].Object.Name)
	assert.Equal(t, "pod-chat-5d8f7-x2k4p-1a2b3", st.Queue[1].Workload)
	assert.Equal(t, "Queued: waiting for quota: couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor cube-t4, 1 more needed", st.Queue[1].String(),
		"no LocalQueue of that name exists: Kueue's own message alone")
}

// podGroup creates a Volcano PodGroup of minMember pods in queue, owned by
// owner, with the status Volcano's scheduler would write (its CRD has no
// status subresource).
func podGroup(t *testing.T, env *testenv.Env, ns, name, queue string, owner metav1.OwnerReference, phase string, conds ...any) {
	t.Helper()
	pg := &unstructured.Unstructured{}
	pg.SetAPIVersion("scheduling.volcano.sh/v1beta1")
	pg.SetKind("PodGroup")
	pg.SetNamespace(ns)
	pg.SetName(name)
	pg.SetOwnerReferences([]metav1.OwnerReference{owner})
	pg.Object["spec"] = map[string]any{"minMember": int64(3), "queue": queue}
	pg.Object["status"] = map[string]any{"phase": phase, "conditions": conds}
	require.NoError(t, env.Client.Create(t.Context(), pg))
}

// Volcano's gangs explain the wait the same way: the PodGroup the training
// operator makes for a gang job (owned by the job) and the one KubeRay
// makes for a RayJob (owned by its RayCluster, which the RayJob owns).
func TestVolcanoPodGroupsExplainTheWait(t *testing.T) {
	_, env, ns := newClient(t)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Kinds(kinds.All()...))
	rel, err := c.Apply(t.Context(), train.PyTorch("sft").Image("busybox:1.36").Command("true").Workers(2).Queue("team-a").Gang())
	require.NoError(t, err)
	job := &unstructured.Unstructured{}
	job.SetGroupVersionKind(rel.Objects[0].GroupVersionKind)
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "sft"}, job))
	podGroup(t, env, ns, "sft", "team-a",
		metav1.OwnerReference{APIVersion: job.GetAPIVersion(), Kind: job.GetKind(), Name: "sft", UID: job.GetUID(), Controller: ptrTo(true)},
		"Pending", map[string]any{"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "transitionID": "t1",
			"lastTransitionTime": "2026-01-01T00:00:00Z", "message": "3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable"})

	st, err := rel.Status(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Queue, 1, "%s", st)
	assert.Equal(t, rel.Objects[0], st.Queue[0].Object)
	assert.Equal(t, "Queued: waiting in Volcano queue team-a (gang of 3): 3/3 tasks in gang unschedulable: pod group is not ready, 3 Pending, 3 minAvailable", st.Queue[0].String())

	ray, err := c.Apply(t.Context(), train.Ray("ray").Image("rayproject/ray:2.9.0").Entrypoint("python -c 'print(1)'").WorkerGroup("cpu", 2).Gang())
	require.NoError(t, err)
	rayJob := &unstructured.Unstructured{}
	rayJob.SetGroupVersionKind(ray.Objects[0].GroupVersionKind)
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "ray"}, rayJob))
	// What KubeRay would make (it does not run on the test API server):
	// the RayCluster, owned by the RayJob, and its PodGroup.
	cluster := &unstructured.Unstructured{}
	cluster.SetAPIVersion("ray.io/v1")
	cluster.SetKind("RayCluster")
	cluster.SetNamespace(ns)
	cluster.SetName("ray-x7k2p")
	cluster.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "ray.io/v1", Kind: "RayJob", Name: "ray", UID: rayJob.GetUID(), Controller: ptrTo(true)}})
	cluster.Object["spec"] = map[string]any{"headGroupSpec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "head", "image": "rayproject/ray:2.9.0"}}}}}}
	require.NoError(t, env.Client.Create(t.Context(), cluster))
	podGroup(t, env, ns, "ray-ray-x7k2p-pg", "default",
		metav1.OwnerReference{APIVersion: "ray.io/v1", Kind: "RayCluster", Name: cluster.GetName(), UID: cluster.GetUID(), Controller: ptrTo(true)},
		"Unknown", map[string]any{"type": "Unschedulable", "status": "True", "reason": "NotEnoughTasks", "transitionID": "t2",
			"lastTransitionTime": "2026-01-01T00:00:00Z", "message": "1/3 tasks in gang unschedulable: pod group is not ready, 1 Pending, 3 minAvailable"})
	st, err = ray.Status(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Queue, 1, "%s", st)
	assert.Equal(t, "RayJob", st.Queue[0].Object.Kind)
	assert.Equal(t, "Unschedulable: 0 of the gang of 3 run, the rest cannot be placed: 1/3 tasks in gang unschedulable: pod group is not ready, 1 Pending, 3 minAvailable", st.Queue[0].String())
}
