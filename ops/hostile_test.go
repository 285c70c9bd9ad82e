package ops_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/vgpuspec"
	"github.com/cubestudio/cube/ops"
	"github.com/cubestudio/cube/vgpu"
)

// flat is a series of one pod's device at value v every minute over the
// hour before now.
func flat(ns, pod string, now time.Time, v float64) ops.DeviceSeries {
	s := ops.DeviceSeries{Exporter: "dcgm", Namespace: ns, Pod: pod, Container: "main", Device: "GPU-0"}
	for at := now.Add(-time.Hour); !at.After(now); at = at.Add(time.Minute) {
		s.Utilisation = append(s.Utilisation, ops.Sample{At: at, Value: v})
	}
	return s
}

func TestIdleDoesNotJudgeNaNUtilisation(t *testing.T) {
	now := t0.Add(48 * time.Hour)
	pods := []corev1.Pod{*apiPod("team", "nan-0", "nan", "vllm"), *apiPod("team", "inf-0", "inf", "vllm"),
		*apiPod("team", "neg-0", "neg", "vllm"), *apiPod("team", "idle-0", "idle", "vllm")}
	nan := flat("team", "nan-0", now, 0)
	nan.Utilisation[30].Value = math.NaN()
	series := []ops.DeviceSeries{nan, flat("team", "inf-0", now, math.Inf(-1)), flat("team", "neg-0", now, -1), flat("team", "idle-0", now, 2)}
	policy := ops.ServingIdle()
	policy.For = 30 * time.Minute
	findings, err := ops.Idle(series, pods, now, policy)
	require.Error(t, err)
	for _, release := range []string{"team/nan not judged", "team/inf not judged", "team/neg not judged"} {
		assert.Contains(t, err.Error(), release)
	}
	require.Len(t, findings, 1, "only the release with real samples is judged: %v", findings)
	assert.Equal(t, "idle", findings[0].Release)

	_, err = ops.Idle(series, pods, time.Time{}, policy)
	assert.ErrorContains(t, err, "now: must be set")
	_, err = ops.Idle(series, pods, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), policy)
	assert.ErrorContains(t, err, "now: 9999-01-01T00:00:00Z is outside")
	policy.Below = math.NaN()
	_, err = ops.Idle(series, pods, now, policy)
	assert.ErrorContains(t, err, "policies[0].below: NaN")
}

func TestActRefusesActionsOutsideTheSet(t *testing.T) {
	ctx := t.Context()
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(deployment("team", "qwen", "vllm"), deployment("other", "qwen", "vllm")).Build()
	replicas := func(ns string) int32 {
		d := &appsv1.Deployment{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "qwen"}, d))
		return *d.Spec.Replicas
	}
	for name, findings := range map[string][]ops.Finding{
		"unknown action": {{Action: "delete-everything", Tenant: "team", Release: "qwen", Kind: "vllm"}},
		"mixed":          {{Action: ops.ScaleDown, Tenant: "team", Release: "qwen", Kind: "vllm"}, {Action: "Stop", Tenant: "team", Release: "qwen"}},
		"no tenant":      {{Action: ops.ScaleDown, Release: "qwen", Kind: "vllm"}},
		"no release":     {{Action: ops.Stop, Tenant: "team", Kind: "vllm"}},
	} {
		out, err := ops.Act(ctx, c, findings, ops.Execute())
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "act: nothing done", name)
		for _, f := range out {
			assert.False(t, f.Done, name)
		}
		assert.Equal(t, int32(1), replicas("team"), name)
		assert.Equal(t, int32(1), replicas("other"), name)
	}
	_, err := ops.Act(ctx, c, []ops.Finding{{Action: "explode", Tenant: "team", Release: "qwen"}})
	assert.ErrorContains(t, err, `findings[0].action: unknown action "explode"`, "a dry run refuses it too")

	done, err := ops.Act(ctx, c, []ops.Finding{{Action: ops.ScaleDown, Tenant: "team", Release: "qwen", Kind: "vllm"}}, ops.Execute())
	require.NoError(t, err)
	assert.True(t, done[0].Done)
	assert.Equal(t, int32(0), replicas("team"))
	assert.Equal(t, int32(1), replicas("other"))
}

func TestLeaseTimesMustBeReal(t *testing.T) {
	lease := func(start time.Time, period time.Duration) error {
		_, err := ops.Lease("gpu", "team").Holder("alice").Workload("notebook", "lab").Accelerators(hardware.H100, 1).Period(start, period).Build()
		return err
	}
	require.NoError(t, lease(t0, time.Hour))
	assert.ErrorContains(t, lease(time.Time{}, time.Hour), "spec.acquireTime: Required value")
	assert.ErrorContains(t, lease(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC), time.Hour), "spec.acquireTime: Invalid value: \"9999-12-31T00:00:00Z\": start: 9999-12-31T00:00:00Z is outside")
	assert.ErrorContains(t, lease(time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC), time.Hour), "start: 0001-01-02T00:00:00Z is outside")
	assert.ErrorContains(t, lease(time.Date(2262, 1, 1, 0, 0, 0, 0, time.UTC), 5000*24*time.Hour), "spec.leaseDurationSeconds: Invalid value: \"120000h0m0s\": expiry")

	ctx := t.Context()
	nb := &appsv1.StatefulSet{ObjectMeta: cube.Identity{Kind: "notebook", Release: "lab"}.ObjectMeta("lab", "team", nil, nil),
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1)}}
	zero := &coordinationv1.Lease{
		ObjectMeta: cube.Identity{Kind: ops.LeaseKind, Release: "zero"}.ObjectMeta("zero", "team", nil,
			map[string]string{ops.AnnotationWorkloadKind: "notebook", ops.AnnotationWorkloadRelease: "lab"}),
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("alice"), LeaseDurationSeconds: ptr.To[int32](3600),
			RenewTime: &metav1.MicroTime{}},
	}
	never := zero.DeepCopy()
	never.Name, never.Spec.RenewTime = "never", &metav1.MicroTime{Time: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}
	noLength := zero.DeepCopy()
	noLength.Name, noLength.Spec.RenewTime, noLength.Spec.LeaseDurationSeconds = "no-length", &metav1.MicroTime{Time: t0}, ptr.To[int32](0)
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(nb, zero, never, noLength).Build()
	expired, err := ops.Enforcer{Client: c, Now: func() time.Time { return t0.Add(time.Hour) }}.Enforce(ctx, "team")
	require.Error(t, err)
	assert.Empty(t, expired, "no lease with made-up times stops its workload")
	assert.Contains(t, err.Error(), "team/zero: not enforced: spec.renewTime: must be set")
	assert.Contains(t, err.Error(), "team/never: not enforced: spec.renewTime: 9999-01-01T00:00:00Z is outside")
	assert.Contains(t, err.Error(), "team/no-length: not enforced: spec.leaseDurationSeconds: must be at least 1")
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(nb), nb))
	assert.Equal(t, int32(1), *nb.Spec.Replicas)

	_, err = ops.Enforcer{Client: c, Now: func() time.Time { return time.Time{} }}.Enforce(ctx, "team")
	assert.ErrorContains(t, err, "enforce leases: now: must be set")
	assert.ErrorContains(t, ops.Renew(ctx, c, "team", "zero", time.Time{}), "renew lease team/zero: at: must be set")
	assert.ErrorContains(t, ops.Renew(ctx, c, "team", "zero", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)), "at: 9999-01-01T00:00:00Z is outside")
}

func TestStatementRefusesNonFinitePrices(t *testing.T) {
	u, err := ops.Accounting(samplePods(t), t0, t0.Add(24*time.Hour))
	require.NoError(t, err)
	for _, p := range []float64{math.NaN(), math.Inf(1)} {
		_, err := ops.NewStatement(u, "team-b", ops.PriceTable{"A100-SXM-80GB": p, "Ascend910B3": 1}, "CNY")
		assert.ErrorContains(t, err, `prices["A100-SXM-80GB"]`, "%v", p)
	}
}

func TestNewMetricsRefusesExportersThatBreakTheQuery(t *testing.T) {
	injected := ops.DCGM
	injected.Pod = `pod"} or vector(1) or up{x="`
	noDevice := ops.DCGM
	noDevice.Device = ""
	noScale := ops.DCGM
	noScale.MemoryScale = 0
	nanScale := ops.DCGM
	nanScale.MemoryScale = math.NaN()
	_, err := ops.NewMetrics("http://prometheus:9090", ops.Exporters(injected, noDevice, noScale, nanScale))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `exporters[0] "dcgm": pod label`)
	assert.Contains(t, err.Error(), `exporters[1] "dcgm": device label ""`)
	assert.Contains(t, err.Error(), `exporters[2] "dcgm": memory scale 0`)
	assert.Contains(t, err.Error(), `exporters[3] "dcgm": memory scale NaN`)
}

func TestPlaceholderTimesAndValuesRefused(t *testing.T) {
	_, err := ops.Accounting(samplePods(t), t0, time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC))
	assert.ErrorContains(t, err, "usage: to: 9999-12-31T00:00:00Z is outside")

	var out strings.Builder
	err = ops.WriteUtilisationSVG(&out, nil, time.Time{}, t0, math.NaN())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "from: must be set")
	assert.Contains(t, err.Error(), "idleBelow: NaN must be a percent in [0, 100]")

	// A NaN sample is left out of the picture rather than coloured.
	s := flat("team", "nan-0", t0.Add(time.Hour), 50)
	s.Utilisation[3].Value = math.NaN()
	out.Reset()
	require.NoError(t, ops.WriteUtilisationSVG(&out, []ops.DeviceSeries{s}, t0, t0.Add(time.Hour), 15))
	assert.NotContains(t, out.String(), "NaN")
	assert.Contains(t, out.String(), "mean  50%  peak  50%")

	_, err = ops.Lease("gpu", "team").Holder("alice").Workload("notebook", "lab; rm -rf").Accelerators(hardware.H100, 1).Period(t0, time.Hour).Build()
	assert.ErrorContains(t, err, `metadata.annotations[ops.cube.dev/workload-release]: Invalid value: "lab; rm -rf"`)
}

func TestUtilisationRefusesPlaceholderTimes(t *testing.T) {
	m, err := ops.NewMetrics("http://127.0.0.1:1")
	require.NoError(t, err)
	_, err = m.Utilisation(t.Context(), time.Time{}, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), time.Minute)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "query utilisation: from: must be set")
	assert.Contains(t, err.Error(), "to: 9999-01-01T00:00:00Z is outside")
	assert.NotContains(t, err.Error(), "127.0.0.1", "refused before asking Prometheus")
}

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// renderedPod is a pod whose container resources, node selectors and
// annotations come from the appliers the builders use: hardware.Apply for
// whole devices, the vgpu.Spec reads (internal/vgpuspec) for shares.
func renderedPod(t testing.TB, ns, release, kind string, p hardware.Profile, whole int, spec *vgpu.Spec, start time.Time, run time.Duration) corev1.Pod {
	t.Helper()
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
	require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: p, Accelerators: whole}, nil))
	if spec != nil {
		require.Empty(t, vgpuspec.Of(spec).Apply(&tmpl, "main", nil))
	}
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: release + "-" + start.Format("150405"), Namespace: ns,
			Labels:      cube.Identity{Kind: kind, Release: release}.Labels(),
			Annotations: tmpl.Annotations,
		},
		Spec: tmpl.Spec,
	}
	pod.Status.StartTime = &metav1.Time{Time: start}
	pod.Status.Phase = corev1.PodRunning
	if run > 0 {
		pod.Status.Phase = corev1.PodSucceeded
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.Time{Time: start.Add(run)}}}}}
	}
	return pod
}

func resourceQty(s string) resource.Quantity { return resource.MustParse(s) }

func TestWriteUtilisationSVG(t *testing.T) {
	var idle, busy []ops.Sample
	for i := range 60 {
		at := t0.Add(time.Duration(i) * time.Minute)
		idle = append(idle, ops.Sample{At: at, Value: 2})
		busy = append(busy, ops.Sample{At: at, Value: float64(50 + i%40)})
	}
	series := []ops.DeviceSeries{
		{Exporter: "dcgm", Namespace: "team-a", Pod: "qwen-0", Device: "GPU-0000-<&>", Utilisation: idle},
		{Exporter: "dcgm", Namespace: "team-a", Pod: "chat-0", Device: "GPU-1", Utilisation: busy},
	}
	var out bytes.Buffer
	require.NoError(t, ops.WriteUtilisationSVG(&out, series, t0, t0.Add(time.Hour), 15))
	svg := out.String()
	// Well-formed XML.
	d := xml.NewDecoder(strings.NewReader(svg))
	rects := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
	}
	// Background, two row backgrounds, and one cell per bucket with samples
	// (60 minutes over 130 buckets: 60 buckets per row).
	assert.Equal(t, 1+2+2*60, rects)
	assert.Contains(t, svg, "2 devices, 1 idle (peak under 15%)")
	assert.Contains(t, svg, "mean   2%  peak   2%  idle")
	assert.Contains(t, svg, "GPU-0000-&lt;&amp;&gt;")
	assert.Contains(t, svg, `fill="hsl(54,85%,88%)"`, "idle is pale")
	assert.ErrorContains(t, ops.WriteUtilisationSVG(&out, nil, t0, t0, 15), "to: must be after from")
}
