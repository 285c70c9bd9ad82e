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
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/ops"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
	"github.com/cubestudio/cube/tune"
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

// applyWaitReact is what a user's automation does with any builder: apply,
// wait, and react to the outcome (here: report it, delete a failure).
func applyWaitReact(ctx context.Context, c *cube.Client, w cube.Workload, until cube.Phase) (string, error) {
	rel, err := c.Apply(ctx, w)
	if err != nil {
		return "", err
	}
	st, err := rel.Wait(ctx, until, cube.Timeout(5*time.Second), cube.FailOnStuckPods)
	switch {
	case errors.Is(err, cube.ErrFailed):
		return "failed: " + st.Reason, rel.Delete(ctx)
	case err != nil:
		return "", err
	}
	return string(st.Phase), nil
}

// TestEveryBuilderAppliesWaitsAndReacts applies one workload of every
// builder package to the in-memory cluster, plays its controller to success
// and to failure, and checks that the user's code saw each outcome, in well
// under a second each.
func TestEveryBuilderAppliesWaitsAndReacts(t *testing.T) {
	const ns = "team-a"
	cases := []struct {
		name    string
		release string
		build   func() cube.Workload
		until   cube.Phase
		want    cube.Phase // the phase Wait returns on success
		// failure matches what the automation reports after MarkFailed;
		// empty: the message the controller gave.
		failure string
		// onlySuccess says why only the release's success is played:
		// nothing can fail it, or it is Ready as soon as it exists.
		onlySuccess string
	}{
		{"tenant", ns, func() cube.Workload {
			return tenant.New(ns).CPU("64").Memory("256Gi").Accelerators(hardware.H100, 8).Editors("alice").Viewers("bob")
		}, cube.Ready, cube.Ready, "", "nothing in a tenant has a controller to fail it"},
		{"notebook", "alice-lab", func() cube.Workload {
			return notebook.Jupyter("alice-lab", "alice").Namespace(ns).Credential(pod.SecretKeyRef{Name: "alice-lab-token", Key: "token"}).Storage("10Gi", "").AllowNamespace(map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"})
		}, cube.Ready, cube.Ready, "", ""},
		{"pytorchjob", "mnist", func() cube.Workload {
			return train.PyTorch("mnist").Namespace(ns).Image("pytorch/pytorch:2.4.0").Torchrun("mnist.py").On(hardware.CPU).CPU("2").Memory("4Gi")
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"rayjob", "tune", func() cube.Workload {
			return train.Ray("tune").Namespace(ns).Image("rayproject/ray:2.40.0").Entrypoint("python tune.py").WorkerGroup("workers", 2).On(hardware.CPU).CPU("2").Memory("4Gi")
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"volcanojob", "hostfile", func() cube.Workload {
			return train.Volcano("hostfile").Namespace(ns).Image("busybox:1.36").Command("true").Task("worker", 2)
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"vllm", "qwen", func() cube.Workload {
			return serve.VLLM("qwen", "Qwen/Qwen2.5-7B-Instruct").Namespace(ns).On(hardware.H100).Accelerators(1).Replicas(2)
		}, cube.Ready, cube.Ready, "", ""},
		{"sglang", "qwen-sgl", func() cube.Workload {
			return serve.SGLang("qwen-sgl", "Qwen/Qwen2.5-7B-Instruct").Namespace(ns).On(hardware.H100).Accelerators(1)
		}, cube.Ready, cube.Ready, "", ""},
		{"tgi", "qwen-tgi", func() cube.Workload {
			return serve.TGI("qwen-tgi", "Qwen/Qwen2.5-7B-Instruct").Namespace(ns).On(hardware.H100).Accelerators(1)
		}, cube.Ready, cube.Ready, "", ""},
		{"tei", "bge", func() cube.Workload {
			return serve.TEI("bge", "BAAI/bge-base-en-v1.5").Namespace(ns).On(hardware.L4).Accelerators(1)
		}, cube.Ready, cube.Ready, "", ""},
		{"ollama", "llama", func() cube.Workload {
			return serve.Ollama("llama", "llama3.1:8b").Namespace(ns).On(hardware.L4).Accelerators(1)
		}, cube.Ready, cube.Ready, "", ""},
		{"vllm multi-node", "deepseek", func() cube.Workload {
			return serve.VLLM("deepseek", "deepseek-ai/DeepSeek-V3").Namespace(ns).On(hardware.H100).Accelerators(8).Nodes(2)
		}, cube.Ready, cube.Ready, "", ""},
		{"tfjob", "tf-ps", func() cube.Workload {
			return train.TensorFlow("tf-ps").Namespace(ns).Image("tensorflow/tensorflow:2.17.0").Command("python", "train.py").
				Workers(2).ParameterServers(1).On(hardware.CPU).CPU("2").Memory("4Gi")
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"mpijob", "allreduce", func() cube.Workload {
			return train.MPI("allreduce").Namespace(ns).Image("mpioperator/mpi-pi:openmpi").Command("/home/mpiuser/pi").Workers(2).On(hardware.L4).Accelerators(2)
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"deepspeed", "llama-pretrain", func() cube.Workload {
			return train.DeepSpeed("llama-pretrain").Namespace(ns).Image("registry.example.com/llm/deepspeed:0.15").Torchrun("pretrain.py").
				Workers(1).On(hardware.H100).Accelerators(8).Config(train.DeepSpeedConfig{ZeROStage: 2, Precision: train.BF16, MicroBatchPerGPU: 2})
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"paddlejob", "ctr", func() cube.Workload {
			return train.Paddle("ctr").Namespace(ns).Image("paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6").Launch("train.py").
				ParameterServers(1).Workers(2).On(hardware.T4).Accelerators(1)
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"xgboostjob", "xgb", func() cube.Workload {
			return train.XGBoost("xgb").Namespace(ns).Image("docker.io/kubeflow/xgboost-dist-iris:latest").Command("python", "main.py").Nodes(2).On(hardware.CPU).CPU("2").Memory("4Gi")
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"mxjob", "mx", func() cube.Workload {
			return train.MXNet("mx").Namespace(ns).Image("mxnet/python:1.9.1_gpu_cu112_py3").Command("python", "/mxnet/train.py").Servers(1).Workers(2).On(hardware.T4).Accelerators(1)
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"llm grpo", "math", func() cube.Workload {
			grpo := llm.GRPO("math", "Qwen/Qwen2.5-7B-Instruct").TrainFiles("pvc://datasets/gsm8k/train.parquet").ValFiles("pvc://datasets/gsm8k/test.parquet").
				RewardFunction("pvc://datasets/reward/gsm8k.py", "compute_score").Output("pvc://models/math")
			grpo.Job().Namespace(ns).WorkerGroup("gpu", 1).On(hardware.H100).Accelerators(8)
			return grpo
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"katib experiment", "search", func() cube.Workload {
			trial := train.PyTorch("search").Namespace(ns).Image("pytorch/pytorch:2.4.0").Torchrun("train.py").On(hardware.CPU).CPU("2").Memory("4Gi")
			return tune.New("search").Namespace(ns).Objective(tune.Maximize("accuracy")).Algorithm(tune.Random()).
				Param(tune.Float("lr", 1e-4, 1e-1)).Trial(trial, tune.Arg("lr", "--lr")).MaxTrials(4)
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"llm sft", "support-bot", func() cube.Workload {
			sft := llm.SFT("support-bot", "Qwen/Qwen2.5-7B-Instruct").
				AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).
				LoRA(llm.Adapter{Rank: 16, Alpha: 32}).Output("pvc://models/support-bot")
			sft.Job().Namespace(ns).On(hardware.H100).Accelerators(8)
			return sft
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"pipeline", "flow", func() cube.Workload {
			prepare := pipeline.Container("prepare").Image("python:3.12").Command("python", "prepare.py")
			job := train.PyTorch("flow-train").Namespace(ns).Image("pytorch/pytorch:2.4.0").Torchrun("train.py").On(hardware.CPU).CPU("2").Memory("4Gi")
			return argo.Workflow(pipeline.New("flow").Namespace(ns).Kinds(train.Kinds()...).Step(prepare, pipeline.Workload("train", job).After(prepare)))
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"pipeline schedule", "nightly", func() cube.Workload {
			prepare := pipeline.Container("prepare").Image("python:3.12").Command("python", "prepare.py")
			return argo.CronWorkflow(pipeline.New("nightly").Namespace(ns).Step(prepare), "0 2 * * *")
		}, cube.Ready, cube.Ready, "", "a CronWorkflow is Ready once it exists, so Wait returns before anything fails it (TestCronWorkflowSubmissionError)"},
		// Label Studio's claims come before its Deployments (a release
		// lists its objects by kind rank): MarkFailed loses a claim first,
		// and that is what Wait reports; the automation deletes the
		// release before Mark reaches the Deployment, which Mark then
		// skips (TestMarkSkipsWhatTheReactionDeleted). With Postgres, Mark
		// loses the data claim first, and Wait reports whichever of the
		// two lost claims comes first in apply order once it has seen them.
		{"label studio", "labels", func() cube.Workload {
			return label.Studio("labels").Namespace(ns).Admin(pod.SecretKeyRef{Name: "labels-admin", Key: "email"}, pod.SecretKeyRef{Name: "labels-admin", Key: "password"}).Token(pod.SecretKeyRef{Name: "labels-token", Key: "token"}).Storage("20Gi", "")
		}, cube.Ready, cube.Ready, `^failed: PersistentVolumeClaim team-a/labels-data Failed \(Lost\)$`, ""},
		{"label studio with postgres", "labels-pg", func() cube.Workload {
			return label.Studio("labels-pg").Namespace(ns).Admin(pod.SecretKeyRef{Name: "labels-admin", Key: "email"}, pod.SecretKeyRef{Name: "labels-admin", Key: "password"}).Token(pod.SecretKeyRef{Name: "labels-token", Key: "token"}).
				Postgres(pod.SecretKeyRef{Name: "labels-db", Key: "password"}, "10Gi", "")
		}, cube.Ready, cube.Ready, `^failed: PersistentVolumeClaim team-a/labels-pg-(data|postgres) Failed \(Lost\)$`, ""},
		{"label ml backend", "judge", func() cube.Workload {
			return label.MLBackend("judge", "registry.local/label-backend:1").Namespace(ns).
				Model("http://qwen-chat:8000/v1", "qwen").APIKey(pod.SecretKeyRef{Name: "qwen", Key: "key"}).ModelVersion("qwen@1")
		}, cube.Ready, cube.Ready, "", ""},
		{"serve canary split", "chat-split", func() cube.Workload {
			return serve.Canary("chat-split",
				serve.VLLM("chat-v1", "Qwen/Qwen2.5-7B-Instruct").Namespace(ns).On(hardware.H100).Accelerators(1),
				serve.VLLM("chat-v2", "Qwen/Qwen2.5-14B-Instruct").Namespace(ns).On(hardware.H100).Accelerators(1)).
				Namespace(ns).Weights(90, 10).Gateway("inference", "gateways")
		}, cube.Ready, cube.Ready, "", ""},
		{"market download", "qwen-download", func() cube.Workload {
			return market.Download("qwen-download", "hf://Qwen/Qwen2.5-7B-Instruct@main", "models").Namespace(ns).HFToken(pod.SecretKeyRef{Name: "hf", Key: "token"})
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"market evaluate", "eval-bot", func() cube.Workload {
			v := market.Version{Model: "support-bot", Number: 3, Artifact: market.Artifact{
				URI: "pvc://models/support-bot/v3", Format: "safetensors", DType: models.BF16,
			}}
			return market.Evaluate("eval-bot", v, "mmlu", "gsm8k").Namespace(ns).Endpoint("http://support-bot-api.team-a:8000", "support-bot")
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"ops lease", "alice-h100", func() cube.Workload {
			return ops.Lease("alice-h100", ns).Holder("alice").Workload(notebook.Kind, "alice-lab").Accelerators(hardware.H100, 1).
				Period(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), 8*time.Hour)
		}, cube.Ready, cube.Ready, "", "a Lease has no controller: ops.Enforcer acts on it (TestLeaseEnforcerStopsTheLeasedNotebook)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			outcomes := []cube.Phase{cube.Succeeded, cube.Failed}
			if tc.onlySuccess != "" {
				outcomes = outcomes[:1]
			}
			for _, outcome := range outcomes {
				ctx := t.Context()
				cluster := cubetest.NewCluster(nil, cube.Namespace(ns))
				start := time.Now()
				done := make(chan struct{})
				var got string
				var err error
				go func() {
					defer close(done)
					got, err = applyWaitReact(ctx, cluster.Client, tc.build(), tc.until)
				}()
				// The automation may fail before it records anything: stop
				// looking for the release then.
				found, cancel := context.WithTimeout(ctx, 2*time.Second)
				go func() { <-done; cancel() }()
				rel, werr := cluster.WaitForRelease(found, ns, tc.release)
				switch {
				case werr != nil && tc.onlySuccess != "":
					// Ready as soon as applied: the automation may be done
					// before the test looks.
					<-done
					require.NoError(t, err, "apply, wait and react")
				case werr != nil:
					<-done
					require.NoError(t, err, "apply, wait and react")
					require.NoError(t, werr)
				case outcome == cube.Failed:
					require.NoError(t, cluster.MarkFailed(ctx, rel, "Boom", "the controller gave up"))
					// A StatefulSet never fails by itself: a crashing pod is
					// what the automation reacts to.
					require.NoError(t, cluster.AddPod(ctx, rel, tc.release+"-crashing", "CrashLoopBackOff", "the controller gave up"))
				default:
					require.NoError(t, cluster.MarkSucceeded(ctx, rel))
				}
				<-done
				require.NoError(t, err)
				if outcome == cube.Failed {
					assert.Contains(t, got, "failed: ")
					if tc.failure == "" {
						assert.Contains(t, got, "the controller gave up")
					} else {
						assert.Regexp(t, tc.failure, got)
					}
					rels, lerr := cluster.Client.Releases(ctx, "")
					require.NoError(t, lerr)
					assert.Empty(t, rels, "the automation deleted the failed release")
				} else {
					assert.Equal(t, string(tc.want), got)
				}
				assert.Less(t, time.Since(start), time.Second, "apply, wait and react take well under a second in memory")
			}
		})
	}
}

// A Volcano job's tasks and a RayJob's head and workers count against the
// quota like any workload's pods. In an 8-H100 tenant a Volcano job of two
// 8-H100 workers has its second refused, as Volcano records it (the
// answer quoted as %#v prints it, which cube reads); a RayJob whose head
// takes no GPU and whose two workers take 8 each has its second worker
// refused on the RayCluster KubeRay would make, which cube reports on the
// RayJob. Ended, a job counts nothing.
func TestQuotaRefusesVolcanoAndRayJobsPods(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	_, err := cluster.Client.Apply(ctx, tenant.New("team-a").Accelerators(hardware.H100, 8))
	require.NoError(t, err)

	vc := train.Volcano("vc").Image("pytorch/pytorch:2.4.0").Command("python", "w.py").Task("worker", 2).On(hardware.H100).Accelerators(8)
	rel, err := cluster.Client.Apply(ctx, vc)
	require.NoError(t, err)
	st, err := rel.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st.Refusals, 1, "%s", st)
	r := st.Refusals[0]
	assert.Equal(t, "Job", r.Object.Kind)
	assert.Equal(t, "batch.volcano.sh", r.Object.Group)
	assert.Equal(t, "QuotaExceeded", r.Reason)
	assert.Equal(t, &cube.QuotaExceededError{Quota: "team-a", Requested: "requests.nvidia.com/gpu=8",
		Used: "requests.nvidia.com/gpu=8", Limited: "requests.nvidia.com/gpu=8"}, r.Quota)
	assert.Regexp(t, `^Error creating pods: \[failed to create pod vc-worker-1, err: &errors.StatusError\{ErrStatus:v1.Status\{.*Message:"pods \\"vc-worker-1\\" is forbidden: exceeded quota: team-a, `, r.Message)
	assert.ErrorContains(t, cluster.MarkSucceeded(ctx, rel), "a workload whose pods were refused cannot run")
	// Volcano records no event for a pod it creates: once the refused pod
	// exists (the quota was raised), the refusal is over, for Status and
	// for Wait.
	require.NoError(t, cluster.AddPod(ctx, rel, "vc-worker-1", "", ""))
	st, err = rel.Status(ctx)
	require.NoError(t, err)
	assert.Empty(t, st.Refusals, "%s", st)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	_, err = rel.Wait(short, cube.Succeeded, cube.FailOnStuckPods)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "no refusal fails the wait: %v", err)
	require.NoError(t, cluster.MarkFailed(ctx, rel, "Refused", "no room"))

	ray := train.Ray("rl").Image("rayproject/ray:2.41.0").Entrypoint("python rl.py").WorkerGroup("gpu", 2).
		On(hardware.H100).Accelerators(8).HeadResources("1", "4Gi")
	rel, err = cluster.Client.Apply(ctx, ray)
	require.NoError(t, err)
	st, err = rel.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st.Refusals, 1, "%s", st)
	r = st.Refusals[0]
	assert.Equal(t, "RayJob", r.Object.Kind)
	assert.Equal(t, "QuotaExceeded", r.Reason)
	assert.Equal(t, "requests.nvidia.com/gpu=8", r.Quota.Used, "the first worker holds the 8 GPUs")
	assert.Regexp(t, `^Failed to create worker Pod for the cluster team-a/(rl-[a-z0-9]{5}), pods "rl-[a-z0-9]{5}-gpu-worker-[a-z0-9]{5}" is forbidden: exceeded quota: team-a, `, r.Message)
	var events corev1.EventList
	require.NoError(t, cluster.Fake.List(ctx, &events, client.InNamespace("team-a")))
	var on []string
	for _, ev := range events.Items {
		if ev.Reason == "FailedToCreateWorkerPod" {
			on = append(on, ev.InvolvedObject.Kind+"/"+ev.InvolvedObject.Name+" "+ev.Source.Component)
		}
	}
	require.Len(t, on, 1)
	assert.Regexp(t, `^RayCluster/rl-[a-z0-9]{5} raycluster-controller$`, on[0])
	require.NoError(t, cluster.MarkFailed(ctx, rel, "Refused", "no room"))

	// Both ended, the tenant's 8 GPUs are free.
	require.NoError(t, cluster.Fake.Create(ctx, gpuPod("probe", "team-a", "8")))
}

// A suspended job has no pods, as its controller keeps it while Kueue
// holds it: its pods count once it is resumed.
func TestSuspendedJobsHaveNoPods(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	_, err := cluster.Client.Apply(ctx, tenant.New("team-a").Accelerators(hardware.H100, 8))
	require.NoError(t, err)
	job := func(suspend bool) cube.Workload {
		return train.PyTorch("ddp").Image("pytorch/pytorch:2.4.0").Command("python", "train.py").Workers(1).
			On(hardware.H100).Accelerators(8).Suspend(suspend)
	}
	rel, err := cluster.Client.Apply(ctx, job(true))
	require.NoError(t, err)
	st, err := rel.Status(ctx)
	require.NoError(t, err)
	assert.Empty(t, st.Refusals, "%s", st)
	require.NoError(t, cluster.Fake.Create(ctx, gpuPod("probe", "team-a", "8")), "the suspended job holds no GPU")
	require.NoError(t, cluster.Fake.Delete(ctx, gpuPod("probe", "team-a", "8")))

	rel, err = cluster.Client.Apply(ctx, job(false))
	require.NoError(t, err)
	st, err = rel.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st.Refusals, 1, "resumed, its worker does not fit: %s", st)
	assert.Equal(t, "QuotaExceeded", st.Refusals[0].Reason)
}
