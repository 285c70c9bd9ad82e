package tenant

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	kueue "github.com/cubestudio/cube/internal/kueue/v1beta2"
	"github.com/cubestudio/cube/train"
)

// gpuQueue is a tenant's ClusterQueue as the tenant builder renders it
// (8 CPUs, 8Gi, gpus T4s), in cohort, Active, with gpusUsed T4s reserved.
func gpuQueue(t *testing.T, name, cohort string, gpus, gpusUsed int, edit func(*Spec)) *kueue.ClusterQueue {
	t.Helper()
	spec := New(name).CPU("8").Memory("8Gi").Accelerators(hardware.T4, gpus).Queueing(Kueue).Cohort(cohort)
	if edit != nil {
		edit(spec)
	}
	objs, err := spec.Objects()
	require.NoError(t, err)
	for _, o := range objs {
		if cq, ok := o.(*kueue.ClusterQueue); ok {
			cq.Status.Conditions = []metav1.Condition{{Type: kueue.ClusterQueueActive, Status: metav1.ConditionTrue, Reason: "Ready"}}
			cq.Status.FlavorsReservation = []kueue.FlavorUsage{{Name: kueue.ResourceFlavorReference(FlavorName(hardware.T4)), Resources: []kueue.ResourceUsage{
				{Name: "nvidia.com/gpu", Total: *resource.NewQuantity(int64(gpusUsed), resource.DecimalSI)},
			}}}
			return cq
		}
	}
	t.Fatal("the tenant renders no ClusterQueue")
	return nil
}

// state is the cluster of the tests: the platform's flavors (T4, A100),
// a LocalQueue per ClusterQueue named after it in the namespace of the
// same name, and the tenants' LimitRange defaults.
func state(t *testing.T, cqs ...*kueue.ClusterQueue) *kueueState {
	t.Helper()
	st := &kueueState{
		namespaces:    map[string]map[string]string{},
		localQueues:   map[string]map[string]*kueue.LocalQueue{},
		clusterQueues: map[string]*kueue.ClusterQueue{},
		flavors:       map[string]*kueue.ResourceFlavor{},
		limitRanges:   map[string][]corev1.LimitRange{},
	}
	objs, err := Flavors("flavors", hardware.T4, hardware.A100_80G).Objects()
	require.NoError(t, err)
	for _, o := range objs {
		f := o.(*kueue.ResourceFlavor)
		st.flavors[f.Name] = f
	}
	for _, cq := range cqs {
		st.clusterQueues[cq.Name] = cq
		st.namespaces[cq.Name] = map[string]string{corev1.LabelMetadataName: cq.Name}
		st.localQueues[cq.Name] = map[string]*kueue.LocalQueue{cq.Name: {
			ObjectMeta: metav1.ObjectMeta{Name: cq.Name, Namespace: cq.Name},
			Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(cq.Name)},
		}}
		st.limitRanges[cq.Name] = []corev1.LimitRange{{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:           corev1.LimitTypeContainer,
			DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(DefaultCPURequest), corev1.ResourceMemory: resource.MustParse(DefaultMemoryRequest)},
		}}}}}
	}
	return st
}

// job is a PyTorchJob of 1+workers pods with gpus T4s each in the
// LocalQueue of namespace ns.
func job(ns string, workers, gpus int) cube.Workload {
	return train.PyTorch("sft").Namespace(ns).LocalQueue(ns).Image("busybox").Command("sleep", "1").
		Workers(workers).On(hardware.T4).Accelerators(gpus).CPU("500m").Memory("1Gi")
}

func workloadsOf(t *testing.T, ns string, ws ...cube.Workload) []kueueWorkload {
	t.Helper()
	var out []kueueWorkload
	for _, w := range ws {
		objs, err := w.Objects()
		require.NoError(t, err)
		for _, o := range objs {
			found, err := kueueWorkloads(o, ns)
			require.NoError(t, err)
			out = append(out, found...)
		}
	}
	return out
}

func qty(s string) resource.Quantity { return resource.MustParse(s) }

func TestPlan(t *testing.T) {
	t4 := FlavorName(hardware.T4)
	for _, c := range []struct {
		name    string
		cqs     []*kueue.ClusterQueue
		ns      string
		ws      []cube.Workload
		verdict []Verdict
		check   func(t *testing.T, got []Admission)
	}{
		{
			name: "fits its own quota", cqs: []*kueue.ClusterQueue{gpuQueue(t, "team-a", "", 4, 0, nil)}, ns: "team-a",
			ws: []cube.Workload{job("team-a", 1, 2)}, verdict: []Verdict{Admissible},
			check: func(t *testing.T, got []Admission) {
				a := got[0]
				assert.Equal(t, "team-a", a.ClusterQueue)
				require.Len(t, a.PodSets, 2)
				assert.Equal(t, PodSetFlavors{Name: "master", Count: 1, Flavors: map[corev1.ResourceName]string{
					"cpu": DefaultFlavor, "memory": DefaultFlavor, "nvidia.com/gpu": t4,
				}}, a.PodSets[0])
				assert.Equal(t, "worker", a.PodSets[1].Name)
				assert.Empty(t, a.Borrowed)
				assert.Empty(t, a.Short)
				assert.Equal(t, "admitted now to ClusterQueue team-a: master ×1 on cube-default (cpu, memory), cube-t4 (nvidia.com/gpu); worker ×1 on cube-default (cpu, memory), cube-t4 (nvidia.com/gpu)", a.Message)
			},
		},
		{
			name: "waits while its quota is in use", cqs: []*kueue.ClusterQueue{gpuQueue(t, "team-a", "", 4, 4, nil)}, ns: "team-a",
			ws: []cube.Workload{job("team-a", 0, 2)}, verdict: []Verdict{Waits},
			check: func(t *testing.T, got []Admission) {
				a := got[0]
				require.Len(t, a.Short, 1)
				assert.Equal(t, fmt.Sprint(Shortage{Flavor: t4, Resource: "nvidia.com/gpu", Needed: qty("2"), Free: qty("0"), Most: qty("4")}), fmt.Sprint(a.Short[0]))
				assert.True(t, a.MayPreempt, "its own nominal quota holds it: Kueue looks at lower priorities")
				assert.Equal(t, "waits in ClusterQueue team-a for nvidia.com/gpu on flavor cube-t4 (needs 2, 0 free now, at most 4); Kueue looks for workloads to preempt for it", a.Message)
			},
		},
		{
			name: "more than the queue can ever have", cqs: []*kueue.ClusterQueue{gpuQueue(t, "team-a", "", 4, 0, nil)}, ns: "team-a",
			ws: []cube.Workload{job("team-a", 2, 2)}, verdict: []Verdict{Inadmissible},
			check: func(t *testing.T, got []Admission) {
				assert.Equal(t, "pod set worker: nvidia.com/gpu on flavor cube-t4: needs 6, the ClusterQueue can have at most 4", got[0].Message)
				assert.False(t, got[0].MayPreempt)
			},
		},
		{
			name: "borrows the cohort's idle GPUs",
			cqs:  []*kueue.ClusterQueue{gpuQueue(t, "team-a", "lab", 2, 0, nil), gpuQueue(t, "team-b", "lab", 2, 0, nil)},
			ns:   "team-a", ws: []cube.Workload{job("team-a", 1, 2)}, verdict: []Verdict{Admissible},
			check: func(t *testing.T, got []Admission) {
				assert.Equal(t, "lab", got[0].Cohort)
				assert.Equal(t, fmt.Sprint([]Amount{{Flavor: t4, Resource: "nvidia.com/gpu", Quantity: qty("2")}}), fmt.Sprint(got[0].Borrowed))
				assert.Contains(t, got[0].Message, ", borrowing nvidia.com/gpu 2 on cube-t4 from cohort lab")
			},
		},
		{
			name: "a borrowing limit caps it",
			cqs: []*kueue.ClusterQueue{gpuQueue(t, "team-a", "lab", 2, 0, func(s *Spec) { s.BorrowingLimit("nvidia.com/gpu", "1") }),
				gpuQueue(t, "team-b", "lab", 2, 0, nil)},
			ns: "team-a", ws: []cube.Workload{job("team-a", 1, 2)}, verdict: []Verdict{Inadmissible},
			check: func(t *testing.T, got []Admission) {
				assert.Equal(t, "3", got[0].Short[0].Most.String())
			},
		},
		{
			name: "a lending limit caps what the other lends",
			cqs: []*kueue.ClusterQueue{gpuQueue(t, "team-a", "lab", 2, 0, nil),
				gpuQueue(t, "team-b", "lab", 2, 0, func(s *Spec) { s.LendingLimit("nvidia.com/gpu", "1") })},
			ns: "team-a", ws: []cube.Workload{job("team-a", 0, 3), job("team-a", 0, 4)}, verdict: []Verdict{Admissible, Inadmissible},
			check: func(t *testing.T, got []Admission) {
				assert.Equal(t, fmt.Sprint([]Amount{{Flavor: t4, Resource: "nvidia.com/gpu", Quantity: qty("1")}}), fmt.Sprint(got[0].Borrowed))
				assert.Equal(t, "3", got[1].Short[0].Most.String())
			},
		},
		{
			name: "the owner's quota lent to a borrower is reclaimed by preemption",
			cqs:  []*kueue.ClusterQueue{gpuQueue(t, "owner", "lab", 2, 0, nil), gpuQueue(t, "borrower", "lab", 2, 3, nil)},
			ns:   "owner", ws: []cube.Workload{job("owner", 0, 2)}, verdict: []Verdict{Waits},
			check: func(t *testing.T, got []Admission) {
				assert.Equal(t, fmt.Sprint(Shortage{Flavor: t4, Resource: "nvidia.com/gpu", Needed: qty("2"), Free: qty("1"), Most: qty("4")}), fmt.Sprint(got[0].Short[0]))
				assert.True(t, got[0].MayPreempt)
			},
		},
		{
			name: "one after the other: the second waits for the first",
			cqs:  []*kueue.ClusterQueue{gpuQueue(t, "team-a", "", 4, 0, nil)}, ns: "team-a",
			ws: []cube.Workload{job("team-a", 1, 2), job("team-a", 1, 2)}, verdict: []Verdict{Admissible, Waits},
		},
		{
			name: "each pod of a Deployment is admitted on its own",
			cqs:  []*kueue.ClusterQueue{gpuQueue(t, "team-a", "", 2, 0, nil)}, ns: "team-a",
			ws:      []cube.Workload{cube.Objects(deployment("team-a", 3, "nvidia.com/gpu", "1"))},
			verdict: []Verdict{Admissible, Admissible, Waits},
			check: func(t *testing.T, got []Admission) {
				assert.Equal(t, []int{1, 2, 3}, []int{got[0].Part, got[1].Part, got[2].Part})
				assert.Equal(t, 3, got[2].Parts)
				assert.Equal(t, "Deployment.apps team-a/chat (part 3 of 3): Waits: waits in ClusterQueue team-a for nvidia.com/gpu on flavor cube-t4 (needs 1, 0 free now, at most 2); Kueue looks for workloads to preempt for it", got[2].String())
			},
		},
		{
			name: "a LeaderWorkerSet group is one workload of leader and workers",
			cqs:  []*kueue.ClusterQueue{gpuQueue(t, "team-a", "", 4, 0, nil)}, ns: "team-a",
			ws: []cube.Workload{cube.Objects(lws("team-a", 2, 3))}, verdict: []Verdict{Admissible, Waits},
			check: func(t *testing.T, got []Admission) {
				assert.Equal(t, []PodSetFlavors{
					{Name: "leader", Count: 1, Flavors: map[corev1.ResourceName]string{"cpu": DefaultFlavor, "memory": DefaultFlavor, "nvidia.com/gpu": t4}},
					{Name: "worker", Count: 2, Flavors: map[corev1.ResourceName]string{"cpu": DefaultFlavor, "memory": DefaultFlavor, "nvidia.com/gpu": t4}},
				}, got[0].PodSets)
				// The second group's leader and workers need 3 of the 1
				// left; its own pod sets count together on the flavor.
				assert.Equal(t, fmt.Sprint(Shortage{Flavor: t4, Resource: "nvidia.com/gpu", Needed: qty("3"), Free: qty("1"), Most: qty("4")}), fmt.Sprint(got[1].Short[len(got[1].Short)-1]))
			},
		},
		{
			name: "a resource the queue does not cover",
			cqs:  []*kueue.ClusterQueue{gpuQueue(t, "team-a", "", 4, 0, nil)}, ns: "team-a",
			ws: []cube.Workload{cube.Objects(deployment("team-a", 1, "example.com/fpga", "1"))}, verdict: []Verdict{Inadmissible},
			check: func(t *testing.T, got []Admission) {
				assert.Equal(t, "pod set main: resource example.com/fpga is not in ClusterQueue team-a", got[0].Message)
			},
		},
		{
			name: "a node selection no flavor of the queue meets",
			cqs:  []*kueue.ClusterQueue{gpuQueue(t, "team-a", "", 4, 0, nil)}, ns: "team-a",
			ws: []cube.Workload{train.PyTorch("big").Namespace("team-a").LocalQueue("team-a").Image("busybox").
				On(hardware.A100_80G).Accelerators(1)}, verdict: []Verdict{Inadmissible},
			check: func(t *testing.T, got []Admission) {
				assert.Equal(t, "pod set master: flavor cube-t4 doesn't match node affinity; pod set worker: flavor cube-t4 doesn't match node affinity", got[0].Message)
			},
		},
		{
			name: "no LocalQueue label", cqs: []*kueue.ClusterQueue{gpuQueue(t, "team-a", "", 4, 0, nil)}, ns: "team-a",
			ws: []cube.Workload{train.PyTorch("free").Namespace("team-a").Image("busybox")}, verdict: []Verdict{NotQueued},
		},
		{
			name: "no such LocalQueue", cqs: []*kueue.ClusterQueue{gpuQueue(t, "team-a", "", 4, 0, nil)}, ns: "team-a",
			ws: []cube.Workload{train.PyTorch("lost").Namespace("team-a").LocalQueue("nope").Image("busybox")}, verdict: []Verdict{Inadmissible},
			check: func(t *testing.T, got []Admission) {
				assert.Equal(t, "LocalQueue nope does not exist in namespace team-a", got[0].Message)
			},
		},
		{
			name: "a ClusterQueue Kueue has not activated",
			cqs: []*kueue.ClusterQueue{func() *kueue.ClusterQueue {
				cq := gpuQueue(t, "team-a", "", 4, 0, nil)
				cq.Status.Conditions = []metav1.Condition{{Type: kueue.ClusterQueueActive, Status: metav1.ConditionFalse, Reason: "FlavorNotFound", Message: "Can't admit new workloads: references missing ResourceFlavor(s): cube-t4."}}
				return cq
			}()}, ns: "team-a", ws: []cube.Workload{job("team-a", 0, 1)}, verdict: []Verdict{Inadmissible},
			check: func(t *testing.T, got []Admission) {
				assert.Equal(t, "ClusterQueue team-a is not active (FlavorNotFound: Can't admit new workloads: references missing ResourceFlavor(s): cube-t4.)", got[0].Message)
			},
		},
		{
			name: "a TrainJob", cqs: []*kueue.ClusterQueue{gpuQueue(t, "team-a", "", 4, 0, nil)}, ns: "team-a",
			ws: []cube.Workload{cube.Objects(trainJob("team-a"))}, verdict: []Verdict{Unplanned},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := state(t, c.cqs...)
			got := plan(st, workloadsOf(t, c.ns, c.ws...))
			var verdicts []Verdict
			for _, a := range got {
				verdicts = append(verdicts, a.Verdict)
			}
			require.Equal(t, c.verdict, verdicts, "%v", got)
			if c.check != nil {
				c.check(t, got)
			}
		})
	}
}

// A ClusterQueue that does not select the workload's namespace refuses it.
func TestPlanNamespaceSelector(t *testing.T) {
	st := state(t, gpuQueue(t, "team-a", "", 4, 0, nil))
	st.namespaces["team-a"] = map[string]string{corev1.LabelMetadataName: "elsewhere"}
	got := plan(st, workloadsOf(t, "team-a", job("team-a", 0, 1)))
	require.Len(t, got, 1)
	assert.Equal(t, Inadmissible, got[0].Verdict)
	assert.Equal(t, "ClusterQueue team-a does not take workloads of namespace team-a (its namespaceSelector)", got[0].Message)
}

// Kueue counts a container without requests at the LimitRange's default
// request, and limits where requests are missing.
func TestPodRequests(t *testing.T) {
	lr := []corev1.LimitRange{{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: qty("100m")},
		Default: corev1.ResourceList{corev1.ResourceMemory: qty("1Gi")},
	}}}}}
	always := corev1.ContainerRestartPolicyAlways
	spec := corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "sidecar", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: qty("200m")}}},
			{Name: "init", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: qty("2")}}},
		},
		Containers: []corev1.Container{
			{Name: "main", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": qty("1")}}},
			{Name: "helper"},
		},
		Overhead: corev1.ResourceList{corev1.ResourceCPU: qty("10m")},
	}
	got := podRequests(spec, lr)
	// Containers 100m+100m, sidecar 200m beside them: 400m; the init
	// container 2 with the sidecar started before it: 2200m, the larger;
	// and the overhead.
	assert.Equal(t, "2210m", ptr.To(got[corev1.ResourceCPU]).String())
	assert.Equal(t, "3Gi", ptr.To(got[corev1.ResourceMemory]).String(), "three containers limited to 1Gi by default, limits standing for requests")
	assert.Equal(t, "1", ptr.To(got["nvidia.com/gpu"]).String())
}

// The pod sets of the kinds Kueue queues, as its integrations count them.
func TestKueueWorkloadsPodSets(t *testing.T) {
	counts := func(ws []kueueWorkload) [][]int32 {
		var out [][]int32
		for _, w := range ws {
			var c []int32
			for _, ps := range w.podSets {
				c = append(c, ps.Count)
			}
			out = append(out, c)
		}
		return out
	}
	got, err := kueueWorkloads(lws("team-a", 2, 4), "team-a")
	require.NoError(t, err)
	assert.Equal(t, [][]int32{{1, 3}, {1, 3}}, counts(got))

	rj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ray.io/v1", "kind": "RayJob", "metadata": map[string]any{"name": "r", "labels": map[string]any{kueueQueueLabel: "q"}},
		"spec": map[string]any{"rayClusterSpec": map[string]any{
			"headGroupSpec":    map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "head"}}}}},
			"workerGroupSpecs": []any{map[string]any{"groupName": "GPU", "replicas": int64(2), "numOfHosts": int64(2), "template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "w"}}}}}},
		}},
	}}
	got, err = kueueWorkloads(rj, "team-a")
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, [][]int32{{1, 4, 1}}, counts(got), "head, 2 replicas of 2 hosts, the submitter of K8sJobMode (the CRD's default)")
	assert.Equal(t, []string{"head", "gpu", "submitter"}, []string{got[0].podSets[0].Name, got[0].podSets[1].Name, got[0].podSets[2].Name})
	assert.Equal(t, "team-a", got[0].object.Namespace)
	assert.Equal(t, "q", got[0].localQueue)

	none, err := kueueWorkloads(&corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}}, "team-a")
	require.NoError(t, err)
	assert.Empty(t, none, "Kueue does not queue a Service")
}

func deployment(ns string, replicas int32, r corev1.ResourceName, q string) client.Object {
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "chat", Namespace: ns, Labels: map[string]string{kueueQueueLabel: ns}},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{r: qty(q)}},
		}}}}},
	}
}

// lws is a LeaderWorkerSet of groups of size pods, one T4 each.
func lws(ns string, groups, size int32) client.Object {
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "main", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": qty("1")}},
	}}}}
	return &lwsv1.LeaderWorkerSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "serve", Namespace: ns, Labels: map[string]string{kueueQueueLabel: ns}},
		Spec: lwsv1.LeaderWorkerSetSpec{Replicas: &groups, LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{
			Size: &size, LeaderTemplate: tmpl.DeepCopy(), WorkerTemplate: tmpl,
		}},
	}
}

func trainJob(ns string) client.Object {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("trainer.kubeflow.org/v1alpha1")
	u.SetKind("TrainJob")
	u.SetName("tj")
	u.SetNamespace(ns)
	u.SetLabels(map[string]string{kueueQueueLabel: ns})
	return u
}
