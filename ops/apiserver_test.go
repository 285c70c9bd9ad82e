package ops_test

// Utilisation and idle detection against a real Prometheus (Debian's
// prometheus binary) scraping the test's exporter, and the idle actions
// against the real kube-apiserver of internal/testsupport/testenv. No GPUs and no
// kubelet run here: the pods exist only as API objects, and the exporter
// serves what dcgm-exporter, HAMi and npu-exporter would serve for them.

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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

func apiPod(ns, name, release, kind string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: cube.Identity{Kind: kind, Release: release}.Labels()},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
}

func deployment(ns, release, kind string) *appsv1.Deployment {
	id := cube.Identity{Kind: kind, Release: release}
	return &appsv1.Deployment{
		ObjectMeta: id.ObjectMeta(release, ns, nil, nil),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: id.Selector("")},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: id.Labels()},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
			},
		},
	}
}

func TestIdleFromPrometheusOnTestAPIServer(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()

	// Releases: an idle vLLM, a busy vLLM, an idle notebook, an Ascend MindIE.
	for _, d := range []*appsv1.Deployment{deployment(ns, "qwen", "vllm"), deployment(ns, "busy", "vllm"), deployment(ns, "npu", "mindie")} {
		require.NoError(t, env.Client.Create(ctx, d))
	}
	cc := cube.NewFromClient(env.Client, cube.Namespace(ns))
	_, err := cc.Apply(ctx, notebook.Jupyter("lab", "alice").Namespace(ns).Credential(pod.SecretKeyRef{Name: "lab-token", Key: "token"}).
		AllowNamespace(map[string]string{"kubernetes.io/metadata.name": "ingress"}))
	require.NoError(t, err)
	pods := []*corev1.Pod{apiPod(ns, "qwen-0", "qwen", "vllm"), apiPod(ns, "busy-0", "busy", "vllm"),
		apiPod(ns, "lab-0", "lab", notebook.Kind), apiPod(ns, "npu-0", "npu", "mindie"), apiPod(ns, "stray", "", "")}
	pods[4].Labels = nil
	for _, p := range pods {
		require.NoError(t, env.Client.Create(ctx, p))
	}

	target := startExporter(t,
		dcgm(0, ns, "qwen-0", 3, 1200), dcgm(1, ns, "busy-0", 80, 60000), dcgm(2, ns, "stray", 0, 0),
		dcgm(3, "", "", 0, 0), // a GPU no pod holds
		hamiLegacy(ns, "lab-0", 0, 512<<20), ascend(ns, "npu-0", 40, 16384))
	prom := startPrometheus(t, target)
	m, err := ops.NewMetrics(prom)
	require.NoError(t, err)
	// Wait for the first scrape, then let six seconds of samples gather.
	require.Eventually(t, func() bool {
		s, err := m.Utilisation(ctx, time.Now().Add(-time.Minute), time.Now(), time.Second)
		return err == nil && len(s) > 0
	}, 60*time.Second, 200*time.Millisecond, "no samples scraped")
	start := time.Now()
	time.Sleep(6 * time.Second)
	now := time.Now()
	series, err := m.Utilisation(ctx, start, now, time.Second)
	require.NoError(t, err)
	got := map[string]ops.DeviceSeries{}
	for _, s := range series {
		got[s.Exporter+"/"+s.Pod] = s
	}
	require.Len(t, got, 5, "one series per pod-held device; the free GPU is left out: %v", got)
	for key, want := range map[string][2]float64{
		"dcgm/qwen-0": {3, 1200 << 20}, "dcgm/busy-0": {80, 60000 << 20}, "dcgm/stray": {0, 0},
		"hami-legacy/lab-0": {0, 512 << 20}, "ascend/npu-0": {40, 16384 << 20},
	} {
		s := got[key]
		require.NotEmpty(t, s.Utilisation, key)
		require.NotEmpty(t, s.MemoryBytes, key)
		for _, smp := range s.Utilisation {
			assert.Equal(t, want[0], smp.Value, key)
		}
		assert.Equal(t, want[1], s.MemoryBytes[len(s.MemoryBytes)-1].Value, key)
		assert.Equal(t, ns, s.Namespace)
		assert.Equal(t, "main", s.Container)
	}
	assert.Equal(t, "GPU-00000000-0000-0000-0000-000000000000", got["dcgm/qwen-0"].Device)

	var list corev1.PodList
	require.NoError(t, env.Client.List(ctx, &list, client.InNamespace(ns)))
	window := 4 * time.Second
	serving, nb := ops.ServingIdle(), ops.NotebookIdle()
	serving.For, nb.For = window, window
	findings, err := ops.Idle(series, list.Items, now, serving, nb)
	require.NoError(t, err)
	require.Len(t, findings, 2, "%v", findings)
	assert.Equal(t, "lab", findings[0].Release)
	assert.Equal(t, ops.Stop, findings[0].Action)
	assert.Equal(t, 0.0, findings[0].Peak)
	assert.Equal(t, "qwen", findings[1].Release)
	assert.Equal(t, ops.ScaleDown, findings[1].Action)
	assert.Equal(t, 3.0, findings[1].Mean)
	assert.Equal(t, []string{"qwen-0"}, findings[1].Pods)

	// A window longer than the data judges nothing.
	serving.For = time.Hour
	none, err := ops.Idle(series, list.Items, now, serving)
	require.NoError(t, err)
	assert.Empty(t, none)

	// Dry run by default: nothing changes.
	dry, err := ops.Act(ctx, env.Client, findings)
	require.NoError(t, err)
	assert.False(t, dry[0].Done || dry[1].Done)
	replicas := func(obj client.Object) int32 {
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj))
		switch o := obj.(type) {
		case *appsv1.Deployment:
			return *o.Spec.Replicas
		case *appsv1.StatefulSet:
			return *o.Spec.Replicas
		}
		return -1
	}
	qwen := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "qwen"}}
	lab := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lab"}}
	busy := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "busy"}}
	assert.Equal(t, int32(1), replicas(qwen))
	assert.Equal(t, int32(1), replicas(lab))

	done, err := ops.Act(ctx, env.Client, findings, ops.Execute())
	require.NoError(t, err)
	assert.True(t, done[0].Done && done[1].Done)
	assert.Equal(t, int32(0), replicas(qwen))
	assert.Equal(t, int32(0), replicas(lab))
	assert.Equal(t, int32(1), replicas(busy), "the busy release is left alone")

	var out bytes.Buffer
	require.NoError(t, ops.WriteFindings(&out, done))
	assert.Contains(t, out.String(), "scale-down (done)")
}

func TestIdleRejectsBadPolicies(t *testing.T) {
	_, err := ops.Idle(nil, nil, t0)
	assert.ErrorContains(t, err, "policies: at least one is needed")
	_, err = ops.Idle(nil, nil, t0, ops.Policy{Below: 200, Action: "explode"})
	require.Error(t, err)
	for _, want := range []string{"policies[0].name", "policies[0].below", "policies[0].for", "policies[0].action"} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = ops.NewMetrics("", ops.Exporters(ops.Exporter{Name: "x", Utilisation: "bad name"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "address: must not be empty")
	assert.Contains(t, err.Error(), `exporters[0] "x"`)
	var m *ops.Metrics
	_, err = m.Utilisation(t.Context(), t0, t0.Add(time.Hour), time.Minute)
	assert.ErrorContains(t, err, "metrics is nil")
	_, err = ops.Act(t.Context(), nil, []ops.Finding{{Action: ops.Stop, Tenant: "team", Release: "lab"}}, ops.Execute())
	assert.ErrorContains(t, err, "client: must not be nil")
}

// Lease expiry against the real kube-apiserver of internal/testsupport/testenv, with
// an injected clock: the enforcer stops the leased notebook at expiry, not
// before, and a renewal moves the expiry.

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
