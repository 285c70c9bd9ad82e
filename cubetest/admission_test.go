package cubetest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/tenant"
)

// fineTune is a LoRA fine-tune on nodes × 8 H100s: a PyTorchJob with a
// Master and nodes-1 Workers.
func fineTune(name, ns string, nodes int) *llm.FineTune {
	ft := llm.SFT(name, "Qwen/Qwen2.5-7B-Instruct").
		AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).
		LoRA(llm.Adapter{Rank: 16, Alpha: 32}).Output("pvc://models/" + name)
	ft.Job().Namespace(ns).On(hardware.H100).Accelerators(8).Nodes(nodes)
	return ft
}

// gpuPod is a pod asking n GPUs.
func gpuPod(name, ns, gpus string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "pytorch/pytorch:2.4.0",
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpus)},
				Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse(gpus)},
			}}}},
	}
}

// The cluster has the namespaces a new cluster has and the client's; an
// object in any other is refused as the API server's NamespaceLifecycle
// admission refuses it, through Apply and on the fake client alike.
func TestNamespacesMustExist(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease", "team-a"} {
		require.NoError(t, cluster.Fake.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}), ns)
	}
	_, err := cluster.Client.Apply(ctx, serve.VLLM("chat", "Qwen/Qwen2.5-7B-Instruct").Namespace("nope").On(hardware.H100).Accelerators(1))
	require.Error(t, err)
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.Contains(t, err.Error(), `namespaces "nope" not found`)
	rels, err := cluster.Client.Releases(ctx, "nope")
	require.NoError(t, err)
	assert.Empty(t, rels, "nothing was recorded")

	err = cluster.Fake.Create(ctx, gpuPod("p", "nope", "1"))
	assert.True(t, apierrors.IsNotFound(err), "%v", err)
	assert.EqualError(t, err, `namespaces "nope" not found`)
	assert.ErrorContains(t, cluster.AddPod(ctx, &cube.Release{Namespace: "nope", Name: "x"}, "p", "", ""), `namespaces "nope" not found`)

	// A tenant makes its namespace first: then its objects go in.
	_, err = cluster.Client.Apply(ctx, tenant.New("team-b").Accelerators(hardware.H100, 1))
	require.NoError(t, err)
	_, err = cluster.Client.Apply(ctx, serve.VLLM("chat", "Qwen/Qwen2.5-7B-Instruct").Namespace("team-b").On(hardware.H100).Accelerators(1))
	require.NoError(t, err)
}

// A pod created directly over the namespace's quota is refused with the
// quota admission's Forbidden error, which cube reads as
// QuotaExceededError; one that fits is admitted and counted.
func TestQuotaRefusesPodsCreatedDirectly(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	_, err := cluster.Client.Apply(ctx, tenant.New("team-a").Accelerators(hardware.H100, 8))
	require.NoError(t, err)

	require.NoError(t, cluster.Fake.Create(ctx, gpuPod("six", "team-a", "6")))
	err = cluster.Fake.Create(ctx, gpuPod("three", "team-a", "3"))
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.EqualError(t, err, cubetest.QuotaExceededMessage("three", "team-a", "requests.nvidia.com/gpu", "3", "6", "8"))
	qe, ok := cube.AsQuotaExceeded(err)
	require.True(t, ok)
	assert.Equal(t, "requests.nvidia.com/gpu=3", qe.Requested)

	// The LimitRange's default requests reached the admitted pod.
	var six corev1.Pod
	require.NoError(t, cluster.Fake.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "six"}, &six))
	assert.Equal(t, "100m", six.Spec.Containers[0].Resources.Requests.Cpu().String())

	// Two fit beside the six: quota counts what exists.
	require.NoError(t, cluster.Fake.Create(ctx, gpuPod("two", "team-a", "2")))
	// A pod that has ended counts nothing.
	six.Status.Phase = corev1.PodSucceeded
	require.NoError(t, cluster.Fake.Status().Update(ctx, &six))
	require.NoError(t, cluster.Fake.Create(ctx, gpuPod("three", "team-a", "3")))
	// A deleted pod neither.
	require.NoError(t, cluster.Fake.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "two", Namespace: "team-a"}}))
	require.NoError(t, cluster.Fake.Create(ctx, gpuPod("five", "team-a", "5")))
}

// Quotas count what the quota evaluators count: cpu and memory requests
// and limits (requiring them of every container), object counts, claims
// and their storage.
func TestQuotaCountsWhatTheEvaluatorsCount(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster([]client.Object{&corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "small", Namespace: "default"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			"limits.memory": resource.MustParse("1Gi"), "count/configmaps": resource.MustParse("1"),
			"persistentvolumeclaims": resource.MustParse("1"), "requests.storage": resource.MustParse("10Gi"),
		}},
	}})
	p := gpuPod("nolimit", "default", "1")
	err := cluster.Fake.Create(ctx, p)
	assert.EqualError(t, err, `pods "nolimit" is forbidden: failed quota: small: must specify limits.memory for: main`)
	p.Spec.Containers[0].Resources.Limits["memory"] = resource.MustParse("2Gi")
	err = cluster.Fake.Create(ctx, p)
	assert.EqualError(t, err, `pods "nolimit" is forbidden: exceeded quota: small, requested: limits.memory=2Gi, used: limits.memory=0, limited: limits.memory=1Gi`)

	cm := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	}
	require.NoError(t, cluster.Fake.Create(ctx, cm("one")))
	assert.EqualError(t, cluster.Fake.Create(ctx, cm("two")),
		`configmaps "two" is forbidden: exceeded quota: small, requested: count/configmaps=1, used: count/configmaps=1, limited: count/configmaps=1`)

	claim := func(name, size string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}}}
	}
	assert.EqualError(t, cluster.Fake.Create(ctx, claim("big", "20Gi")),
		`persistentvolumeclaims "big" is forbidden: exceeded quota: small, requested: requests.storage=20Gi, used: requests.storage=0, limited: requests.storage=10Gi`)
	require.NoError(t, cluster.Fake.Create(ctx, claim("data", "5Gi")))
	assert.EqualError(t, cluster.Fake.Create(ctx, claim("more", "1Gi")),
		`persistentvolumeclaims "more" is forbidden: exceeded quota: small, requested: persistentvolumeclaims=1, used: persistentvolumeclaims=1, limited: persistentvolumeclaims=1`)
}

// A LimitRange's min and max bound the containers of pods created
// directly, with LimitRanger's messages, aggregated.
func TestLimitRangeBoundsPods(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster([]client.Object{&corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "bounds", Namespace: "default"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type:    corev1.LimitTypeContainer,
			Default: corev1.ResourceList{"cpu": resource.MustParse("1")},
			Min:     corev1.ResourceList{"cpu": resource.MustParse("100m")},
			Max:     corev1.ResourceList{"cpu": resource.MustParse("2")},
		}}},
	}})
	p := gpuPod("defaulted", "default", "1")
	require.NoError(t, cluster.Fake.Create(ctx, p))
	assert.Equal(t, "1", p.Spec.Containers[0].Resources.Limits.Cpu().String(), "default limit")
	assert.Equal(t, "1", p.Spec.Containers[0].Resources.Requests.Cpu().String(), "the request follows the limit")

	big := gpuPod("big", "default", "1")
	big.Spec.Containers[0].Resources.Limits["cpu"] = resource.MustParse("4")
	assert.EqualError(t, cluster.Fake.Create(ctx, big), `pods "big" is forbidden: maximum cpu usage per Container is 2, but limit is 4`)
	two := gpuPod("two", "default", "1")
	two.Spec.Containers[0].Resources.Requests["cpu"] = resource.MustParse("50m")
	two.Spec.Containers[0].Resources.Limits["cpu"] = resource.MustParse("50m")
	two.Spec.Containers = append(two.Spec.Containers, corev1.Container{Name: "side", Image: "busybox",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": resource.MustParse("3")}}})
	assert.EqualError(t, cluster.Fake.Create(ctx, two), `pods "two" is forbidden: [minimum cpu usage per Container is 100m, but request is 50m, maximum cpu usage per Container is 2, but limit is 3]`)
}

// A pod created directly in a namespace enforcing a Pod Security level is
// refused with PodSecurity admission's message.
func TestPodSecurityRefusesPodsCreatedDirectly(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster([]client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "locked",
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}}})
	p := gpuPod("privileged", "locked", "1")
	yes := true
	p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
	err := cluster.Fake.Create(ctx, p)
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.EqualError(t, err, `pods "privileged" is forbidden: violates PodSecurity "baseline:latest": privileged (container "main" must not set securityContext.privileged=true)`)
	p.Spec.Containers[0].SecurityContext = nil
	require.NoError(t, cluster.Fake.Create(ctx, p))
}

// A 16-GPU fine-tune into an 8-GPU tenant is stored, as on a real
// cluster; its controller's Worker pod is refused: the release reports
// the refusal with the quota's reason, Wait with FailOnStuckPods fails on
// it, and it cannot be marked Succeeded.
func TestQuotaRefusesTheWorkloadsPods(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	_, err := cluster.Client.Apply(ctx, tenant.New("team-a").Accelerators(hardware.H100, 8))
	require.NoError(t, err)

	rel, err := cluster.Client.Apply(ctx, fineTune("ft", "team-a", 2))
	require.NoError(t, err, "the job is stored: the API server checks pods, not jobs")
	st, err := rel.Wait(ctx, cube.Succeeded, cube.FailOnStuckPods, cube.Timeout(5*time.Second))
	require.ErrorIs(t, err, cube.ErrFailed)
	require.Len(t, st.Refusals, 1, "%s", st)
	r := st.Refusals[0]
	assert.Equal(t, "PyTorchJob", r.Object.Kind)
	assert.Equal(t, "QuotaExceeded", r.Reason)
	assert.Equal(t, &cube.QuotaExceededError{Quota: "team-a", Requested: "requests.nvidia.com/gpu=8",
		Used: "requests.nvidia.com/gpu=8", Limited: "requests.nvidia.com/gpu=8"}, r.Quota)
	assert.Contains(t, r.Message, `pods "ft-worker-0" is forbidden`)

	// The Master's pod, admitted, holds the 8 GPUs.
	err = cluster.Fake.Create(ctx, gpuPod("probe", "team-a", "1"))
	assert.True(t, apierrors.IsForbidden(err), "%v", err)

	err = cluster.MarkSucceeded(ctx, rel)
	require.Error(t, err)
	assert.ErrorContains(t, err, "a workload whose pods were refused cannot run")
	assert.ErrorContains(t, err, "exceeded quota: team-a")
	// A controller can still fail it; its pods end and free the GPUs.
	require.NoError(t, cluster.MarkFailed(ctx, rel, "Refused", "no room"))
	small, err := cluster.Client.Apply(ctx, fineTune("small", "team-a", 1))
	require.NoError(t, err)
	st, err = small.Status(ctx)
	require.NoError(t, err)
	assert.Empty(t, st.Refusals)
	err = cluster.Fake.Create(ctx, gpuPod("probe", "team-a", "1"))
	assert.True(t, apierrors.IsForbidden(err), "the small job holds the 8 GPUs: %v", err)
	// Ended, it counts nothing.
	require.NoError(t, cluster.MarkSucceeded(ctx, small))
	require.NoError(t, cluster.Fake.Create(ctx, gpuPod("probe", "team-a", "8")))
}

// A workload's pods meet the namespace's LimitRange and Pod Security
// level too: the refusal is the controller's event with the server's
// answer.
func TestWorkloadPodsMeetLimitRangeAndPodSecurity(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster([]client.Object{&corev1.LimitRange{
		ObjectMeta: metav1.ObjectMeta{Name: "bounds", Namespace: "team-a"},
		Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")},
		}}},
	}}, cube.Namespace("team-a"))
	rel, err := cluster.Client.Apply(ctx, fineTune("ft", "team-a", 1))
	require.NoError(t, err)
	st, err := rel.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st.Refusals, 1, "%s", st)
	assert.Equal(t, `Error creating: pods "ft-master-0" is forbidden: maximum nvidia.com/gpu usage per Container is 4, but limit is 8`, st.Refusals[0].Message)
	assert.ErrorContains(t, cluster.MarkReady(ctx, rel), "cannot run")

	// The namespace's level changes after the Deployment was stored:
	// its next pods are refused by PodSecurity.
	locked := cubetest.NewCluster(nil, cube.Namespace("team-b"))
	rel, err = locked.Client.Apply(ctx, webApp("shop", 1))
	require.NoError(t, err)
	ns := &corev1.Namespace{}
	require.NoError(t, locked.Fake.Get(ctx, client.ObjectKey{Name: "team-b"}, ns))
	ns.Labels = map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	require.NoError(t, locked.Fake.Update(ctx, ns))
	_, err = locked.Client.Apply(ctx, webApp("shop", 1))
	var pse *cube.PodSecurityError
	require.True(t, errors.As(err, &pse), "cube refuses before applying: %v", err)
	assert.Equal(t, "restricted:latest", pse.Level)

	// A Deployment created by another client is stored; the ReplicaSet
	// controller's pods are refused by PodSecurity, as it records.
	objs, err := webApp("other", 1).Objects()
	require.NoError(t, err)
	d := objs[1].(*appsv1.Deployment)
	d.Namespace = "team-b"
	require.NoError(t, locked.Fake.Create(ctx, d))
	var events corev1.EventList
	require.NoError(t, locked.Fake.List(ctx, &events, client.InNamespace("team-b")))
	require.Len(t, events.Items, 1)
	ev := events.Items[0]
	assert.Equal(t, "FailedCreate", ev.Reason)
	assert.Equal(t, "ReplicaSet", ev.InvolvedObject.Kind)
	assert.Regexp(t, `^Error creating: pods "other-[a-z0-9]+-[a-z0-9]{5}" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false`, ev.Message)
}

// A multi-node model server is a LeaderWorkerSet: its leader and workers
// count against the quota like any workload's pods. In an 8-H100 tenant
// the leader of 2 × 8 H100 fits, its worker is refused, the StatefulSet
// controller says so on the group's StatefulSet, and the set never
// becomes Ready.
func TestQuotaRefusesALeaderWorkerSetsPods(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	_, err := cluster.Client.Apply(ctx, tenant.New("team-a").Accelerators(hardware.H100, 8))
	require.NoError(t, err)
	require.NoError(t, cluster.React(cubetest.Kind("LeaderWorkerSet"), cubetest.Ready()))

	svc := serve.SGLang("big", "pvc://models/qwen-72b").On(hardware.H100).Accelerators(8).Nodes(2)
	rel, err := cluster.Client.Apply(ctx, svc)
	require.NoError(t, err, "the set is stored: the API server checks pods, not sets")

	var events corev1.EventList
	require.NoError(t, cluster.Fake.List(ctx, &events, client.InNamespace("team-a")))
	var refused []string
	for _, ev := range events.Items {
		if ev.Reason == "FailedCreate" {
			refused = append(refused, ev.InvolvedObject.Kind+"/"+ev.InvolvedObject.Name+": "+ev.Message)
		}
	}
	require.Len(t, refused, 1, "%v", refused)
	assert.Contains(t, refused[0], `StatefulSet/big-0: Create Pod big-0-1 in StatefulSet big-0 failed error: pods "big-0-1" is forbidden: exceeded quota: team-a`)

	err = cluster.MarkReady(ctx, rel)
	assert.ErrorContains(t, err, "a workload whose pods were refused cannot run")
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	st, err := rel.Wait(short, cube.Ready)
	require.Error(t, err, "the reaction does not make a refused set Ready")
	assert.NotEqual(t, cube.Ready, st.Phase)

	// A set that fits, once the first is gone, is Ready.
	err = rel.Delete(ctx)
	require.NoError(t, err)
	small, err := cluster.Client.Apply(ctx, serve.SGLang("small", "pvc://models/qwen-72b").On(hardware.H100).Accelerators(4).Nodes(2))
	require.NoError(t, err)
	_, err = small.Wait(ctx, cube.Ready, cube.Timeout(5*time.Second))
	require.NoError(t, err)
}
