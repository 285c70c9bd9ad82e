package ops_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/ops"
	"github.com/cubestudio/cube/vgpu"
)

func samplePods(t testing.TB) []corev1.Pod {
	h100 := hardware.H100
	a100 := hardware.A100_80G
	return []corev1.Pod{
		// 2 whole H100 for 3 h: 6 device-hours.
		renderedPod(t, "team-a", "qwen", "vllm", h100, 2, nil, t0.Add(time.Hour), 3*time.Hour),
		// A HAMi slice of 20 GiB of an 80 GB A100 and 50% compute, running
		// from 10 h to the end of the 24 h range: 0.5 × 14 h = 7.
		renderedPod(t, "team-a", "lab", "notebook", a100, 0, vgpu.Slice(a100).Memory("20Gi").Cores(50), t0.Add(10*time.Hour), 0),
		// MIG 3g.40gb = 3/7 of an A100 for 7 h: 3.
		renderedPod(t, "team-b", "ft", "pytorchjob", a100, 0, vgpu.MIG(a100, "3g.40gb"), t0.Add(2*time.Hour), 7*time.Hour),
		// An Ascend 910B3 vNPU of 5 of 20 AI cores for 8 h: 2.
		renderedPod(t, "team-b", "mindie", "mindie", hardware.Ascend910B3, 0, vgpu.VNPU(hardware.Ascend910B3, "vir05_1c_16g"), t0, 8*time.Hour),
		// Started two hours before the range: only the 4 h inside count (8).
		renderedPod(t, "team-a", "qwen", "vllm", h100, 2, nil, t0.Add(-2*time.Hour), 6*time.Hour),
	}
}

func TestAccountingCountsSharesAndLifetimes(t *testing.T) {
	pods := samplePods(t)
	// A pod that never started and a CPU-only pod count nothing.
	pending := pods[0]
	pending.Name, pending.Status = "pending", corev1.PodStatus{Phase: corev1.PodPending}
	cpu := renderedPod(t, "team-a", "etl", "job", hardware.CPU, 0, nil, t0, time.Hour)
	pods = append(pods, pending, cpu)

	u, err := ops.Accounting(pods, t0, t0.Add(24*time.Hour))
	require.NoError(t, err)
	got := map[ops.Key]float64{}
	podsOf := map[ops.Key]int{}
	for _, r := range u.Records {
		got[r.Key] = r.DeviceHours
		podsOf[r.Key] = r.Pods
	}
	want := map[ops.Key]float64{
		{Tenant: "team-a", Release: "qwen", Kind: "vllm", Accelerator: "H100-SXM-80GB", Share: vgpu.KindWhole}:    14,
		{Tenant: "team-a", Release: "lab", Kind: "notebook", Accelerator: "A100-SXM-80GB", Share: vgpu.KindSlice}: 7,
		{Tenant: "team-b", Release: "ft", Kind: "pytorchjob", Accelerator: "A100-SXM-80GB", Share: vgpu.KindMIG}:  3,
		{Tenant: "team-b", Release: "mindie", Kind: "mindie", Accelerator: "Ascend910B3", Share: vgpu.KindVNPU}:   2,
	}
	require.Len(t, got, len(want))
	for k, v := range want {
		assert.InDelta(t, v, got[k], 1e-9, "%+v", k)
	}
	assert.Equal(t, 2, podsOf[ops.Key{Tenant: "team-a", Release: "qwen", Kind: "vllm", Accelerator: "H100-SXM-80GB", Share: vgpu.KindWhole}])
	assert.InDelta(t, 14.0, u.Tenant("team-a").Totals("")["H100-SXM-80GB"], 1e-9)
	assert.InDelta(t, 7.0, u.Totals("team-a")["A100-SXM-80GB"], 1e-9)
	assert.InDelta(t, 3.0, u.Totals("team-b")["A100-SXM-80GB"], 1e-9)
}

func TestAccountingDeletionAndInventory(t *testing.T) {
	a100 := hardware.A100_80G
	// A plain nvidia.com/gpu pod with no node selector is named by the
	// node's profile from the inventory; its deletion ends it.
	pod := renderedPod(t, "team-c", "x", "job", hardware.Profile{}, 0, nil, t0, 0)
	pod.Spec.NodeName = "gpu-1"
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{hardware.ResourceNVIDIAGPU: resourceQty("1")}
	pod.DeletionTimestamp = &metav1.Time{Time: t0.Add(90 * time.Minute)}
	inv := (&hardware.Inventory{}).Add("gpu-1", a100, 8)
	u, err := ops.Accounting([]corev1.Pod{pod}, t0, t0.Add(24*time.Hour), ops.Inventory(*inv))
	require.NoError(t, err)
	require.Len(t, u.Records, 1)
	assert.Equal(t, "A100-SXM-80GB", u.Records[0].Accelerator)
	assert.InDelta(t, 1.5, u.Records[0].DeviceHours, 1e-9)

	// Without the inventory the resource names the accelerator.
	u, err = ops.Accounting([]corev1.Pod{pod}, t0, t0.Add(24*time.Hour))
	require.NoError(t, err)
	assert.Equal(t, "nvidia.com/gpu", u.Records[0].Accelerator)
}

func TestAccountingRejectsBadRange(t *testing.T) {
	_, err := ops.Accounting(nil, time.Time{}, time.Time{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "from: must be set")
	assert.Contains(t, err.Error(), "to: ")
	_, err = ops.ReadUsage(t.Context(), nil, t0, t0.Add(time.Hour), nil)
	assert.ErrorContains(t, err, "client: must not be nil")
	var nilUsage *ops.Usage
	assert.Error(t, nilUsage.WriteCSV(&bytes.Buffer{}))
	assert.Error(t, nilUsage.WriteTable(&bytes.Buffer{}))
	assert.Empty(t, nilUsage.Totals(""))
}

func TestUsageCSVAndTable(t *testing.T) {
	u, err := ops.Accounting(samplePods(t), t0, t0.Add(24*time.Hour))
	require.NoError(t, err)
	var csvOut, table bytes.Buffer
	require.NoError(t, u.WriteCSV(&csvOut))
	assert.Equal(t, `tenant,release,kind,accelerator,share,device_hours,pods,from,to
team-a,lab,notebook,A100-SXM-80GB,slice,7.0000,1,2026-11-01T00:00:00Z,2026-11-02T00:00:00Z
team-a,qwen,vllm,H100-SXM-80GB,whole,14.0000,2,2026-11-01T00:00:00Z,2026-11-02T00:00:00Z
team-b,ft,pytorchjob,A100-SXM-80GB,mig,3.0000,1,2026-11-01T00:00:00Z,2026-11-02T00:00:00Z
team-b,mindie,mindie,Ascend910B3,vnpu,2.0000,1,2026-11-01T00:00:00Z,2026-11-02T00:00:00Z
`, csvOut.String())
	require.NoError(t, u.WriteTable(&table))
	lines := strings.Split(strings.TrimSpace(table.String()), "\n")
	assert.Equal(t, "usage 2026-11-01T00:00:00Z to 2026-11-02T00:00:00Z", lines[0])
	assert.Regexp(t, `^TENANT\s+RELEASE\s+KIND\s+ACCELERATOR\s+SHARE\s+DEVICE-HOURS\s+PODS$`, lines[1])
	assert.Regexp(t, `^team-a\s+qwen\s+vllm\s+H100-SXM-80GB\s+whole\s+14.00\s+2$`, lines[3])
	assert.Regexp(t, `^total\s+A100-SXM-80GB\s+10.00\s*$`, lines[6])
}
