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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/ops"
	"github.com/cubestudio/cube/pod"
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
