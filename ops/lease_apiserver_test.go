package ops_test

// Lease expiry against the real kube-apiserver of internal/testsupport/testenv, with
// an injected clock: the enforcer stops the leased notebook at expiry, not
// before, and a renewal moves the expiry.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/ops"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/vgpu"
)

func TestLeaseEnforcedAtExpiryOnTestAPIServer(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	cc := cube.NewFromClient(env.Client, cube.Namespace(ns))
	_, err := cc.Apply(ctx, notebook.Jupyter("ws", "bob").Namespace(ns).Credential(pod.SecretKeyRef{Name: "ws-token", Key: "token"}).
		AllowNamespace(map[string]string{"kubernetes.io/metadata.name": "ingress"}).On(hardware.A100_80G).Accelerators(1))
	require.NoError(t, err)

	start := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	_, err = cc.Apply(ctx, ops.Lease("bob-a100", ns).Holder("bob").Workload(notebook.Kind, "ws").
		Accelerators(hardware.A100_80G, 1).Period(start, time.Hour))
	require.NoError(t, err)

	stored := &coordinationv1.Lease{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bob-a100"}, stored))
	assert.Equal(t, "bob", *stored.Spec.HolderIdentity)
	assert.Equal(t, int32(3600), *stored.Spec.LeaseDurationSeconds)
	end, ok := ops.Expiry(stored)
	require.True(t, ok)
	assert.Equal(t, start.Add(time.Hour), end.UTC())
	assert.Equal(t, "A100-SXM-80GB", stored.Annotations[ops.AnnotationAccelerator])

	clock := start
	enf := ops.Enforcer{Client: env.Client, Now: func() time.Time { return clock }}
	replicas := func() int32 {
		sts := &appsv1.StatefulSet{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ws"}, sts))
		return *sts.Spec.Replicas
	}

	clock = start.Add(59 * time.Minute)
	got, err := enf.Enforce(ctx, ns)
	require.NoError(t, err)
	assert.Empty(t, got, "not expired yet")
	assert.Equal(t, int32(1), replicas())

	// Renewed at 50 minutes: the old expiry passes without a stop.
	require.NoError(t, ops.Renew(ctx, env.Client, ns, "bob-a100", start.Add(50*time.Minute)))
	clock = start.Add(61 * time.Minute)
	got, err = enf.Enforce(ctx, ns)
	require.NoError(t, err)
	assert.Empty(t, got)
	assert.Equal(t, int32(1), replicas())

	clock = start.Add(110 * time.Minute)
	got, err = enf.Enforce(ctx, ns)
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, ops.Expired{Tenant: ns, Lease: "bob-a100", Holder: "bob", Workload: "ws", ExpiredAt: start.Add(110 * time.Minute)}, normalise(got[0]))
	assert.Equal(t, int32(0), replicas(), "the enforcer stopped the notebook")
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bob-a100"}, stored))
	assert.Equal(t, "2026-11-03T10:50:00Z", stored.Annotations[ops.AnnotationEnforcedAt])
	assert.Equal(t, int32(1), *stored.Spec.LeaseTransitions)

	// Enforced once only.
	clock = start.Add(5 * time.Hour)
	got, err = enf.Enforce(ctx, ns)
	require.NoError(t, err)
	assert.Empty(t, got)
}

func normalise(e ops.Expired) ops.Expired { e.ExpiredAt = e.ExpiredAt.UTC(); return e }

func TestLeaseValidation(t *testing.T) {
	_, err := ops.Lease("Bad_Name", "").Build()
	require.Error(t, err)
	for _, want := range []string{"metadata.name", "metadata.namespace", "spec.holderIdentity",
		"ops.cube.dev/workload-release", "ops.cube.dev/accelerator", "ops.cube.dev/devices", "spec.acquireTime", "spec.leaseDurationSeconds"} {
		assert.Contains(t, err.Error(), want)
	}
	var nilLease *ops.LeaseSpec
	_, err = nilLease.Holder("x").Objects()
	assert.ErrorContains(t, err, "builder is nil")
	_, err = ops.Enforcer{}.Enforce(t.Context(), "")
	assert.ErrorContains(t, err, "client: must not be nil")
	assert.ErrorContains(t, ops.Renew(t.Context(), nil, "a", "b", t0), "client: must not be nil")
	_, ok := ops.Expiry(nil)
	assert.False(t, ok)
	_, ok = ops.Expiry(&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "x"}})
	assert.False(t, ok)
}

// ReadUsage against the real kube-apiserver of internal/testsupport/testenv: pods are
// created with the resources the appliers render and their status written
// as the kubelet would (no kubelet runs on the test API server).

func TestReadUsageFromTestAPIServer(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	start := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
	a100 := hardware.A100_80G
	pods := []corev1.Pod{
		renderedPod(t, ns, "qwen", "vllm", hardware.H100, 2, nil, start, 0),
		renderedPod(t, ns, "lab", "notebook", a100, 0, vgpu.Slice(a100).Memory("40Gi").Cores(20), start.Add(time.Hour), 0),
	}
	for i := range pods {
		p := pods[i].DeepCopy()
		status := p.Status
		p.Status = corev1.PodStatus{}
		require.NoError(t, env.Client.Create(ctx, p))
		p.Status = status
		require.NoError(t, env.Client.Status().Update(ctx, p))
	}
	// A pod cube did not make is not counted.
	stray := renderedPod(t, ns, "x", "job", hardware.H100, 1, nil, start, 0)
	stray.Labels = nil
	stray.Status = corev1.PodStatus{}
	require.NoError(t, env.Client.Create(ctx, &stray))

	to := start.Add(3 * time.Hour)
	u, err := ops.ReadUsage(ctx, env.Client, start, to, []client.ListOption{client.InNamespace(ns)})
	require.NoError(t, err)
	require.Len(t, u.Records, 2, "%+v", u.Records)
	assert.Equal(t, ops.Key{Tenant: ns, Release: "lab", Kind: "notebook", Accelerator: "A100-SXM-80GB", Share: vgpu.KindSlice}, u.Records[0].Key)
	assert.InDelta(t, 0.5*2, u.Records[0].DeviceHours, 1e-9, "40 GiB of 80 for 2 h")
	assert.Equal(t, ops.Key{Tenant: ns, Release: "qwen", Kind: "vllm", Accelerator: "H100-SXM-80GB", Share: vgpu.KindWhole}, u.Records[1].Key)
	assert.InDelta(t, 6, u.Records[1].DeviceHours, 1e-9)
}

// Edge placement applied strictly to the real kube-apiserver of
// internal/testsupport/testenv. No KubeEdge runs here (no cloudcore, no edgecore, no
// edge nodes): the test proves the objects are valid and carry the edge
// placement; it cannot prove a pod lands on an edge device.

func TestEdgePlacementAppliedStrictly(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cc := cube.NewFromClient(env.Client, cube.Namespace(ns))
	edge := hardware.Edge{NodeLabels: map[string]string{"site": "factory-2"}, Arch: hardware.ARM64, HostNetwork: true,
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi")}}

	svc := serve.Ollama("edge-chat", "qwen2.5:0.5b").CPU("2").Memory("4Gi").Edge(edge)
	_, err := cc.Apply(t.Context(), svc)
	require.NoError(t, err)
	dep := &appsv1.Deployment{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "edge-chat"}, dep))
	spec := dep.Spec.Template.Spec
	assert.Equal(t, "", spec.NodeSelector[hardware.LabelEdgeRole])
	assert.Equal(t, "factory-2", spec.NodeSelector["site"])
	assert.Equal(t, "arm64", spec.NodeSelector[hardware.LabelArch])
	assert.True(t, spec.HostNetwork)
	assert.Equal(t, corev1.DNSClusterFirstWithHostNet, spec.DNSPolicy)
	assert.Contains(t, spec.Tolerations, corev1.Toleration{Key: hardware.LabelEdgeRole, Operator: corev1.TolerationOpExists})

	nb := notebook.Jupyter("edge-lab", "carol").Namespace(ns).Credential(pod.SecretKeyRef{Name: "edge-lab-token", Key: "token"}).
		AllowNamespace(map[string]string{"kubernetes.io/metadata.name": "ingress"}).Edge(hardware.Edge{})
	_, err = cc.Apply(t.Context(), nb)
	require.NoError(t, err)
	sts := &appsv1.StatefulSet{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "edge-lab"}, sts))
	assert.Equal(t, "", sts.Spec.Template.Spec.NodeSelector[hardware.LabelEdgeRole])
	assert.Len(t, sts.Spec.Template.Spec.Tolerations, 3)
	assert.False(t, sts.Spec.Template.Spec.HostNetwork)

	// Too big for the edge device: refused before anything is sent.
	_, err = cc.Apply(t.Context(), serve.Ollama("too-big", "qwen2.5:7b").CPU("16").Edge(edge))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exceeds the edge device's 8")
}
