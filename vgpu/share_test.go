package vgpu_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/vgpuspec"
	"github.com/cubestudio/cube/vgpu"
)

// TestRequestShareReadsWhatApplyRenders renders every kind of share with
// Spec.Apply and reads it back.
func TestRequestShareReadsWhatApplyRenders(t *testing.T) {
	a100, b3 := hardware.A100_80G, hardware.Ascend910B3
	cases := []struct {
		name    string
		spec    *vgpu.Spec
		prof    hardware.Profile
		kind    vgpu.Kind
		devices float64
	}{
		{"hami memory", vgpu.Slice(a100).Memory("20Gi"), a100, vgpu.KindSlice, 0.25},
		{"hami memory and more compute", vgpu.Slice(a100).Memory("20Gi").Cores(60), a100, vgpu.KindSlice, 0.6},
		{"hami percent", vgpu.Slice(a100).MemoryPercent(40).Cores(10), a100, vgpu.KindSlice, 0.4},
		{"volcano", vgpu.Slice(a100).Memory("40Gi").Cores(20).Backend(vgpu.Volcano), a100, vgpu.KindSlice, 0.5},
		{"mig", vgpu.MIG(a100, "3g.40gb"), a100, vgpu.KindMIG, 3.0 / 7},
		{"mig twice", vgpu.MIG(a100, "1g.10gb").Accelerators(2), a100, vgpu.KindMIG, 2.0 / 7},
		{"static vnpu", vgpu.VNPU(b3, "vir10_3c_32g"), b3, vgpu.KindVNPU, 0.5},
		{"hami vnpu", vgpu.VNPU(b3, "vir05_1c_16g").Backend(vgpu.HAMi), b3, vgpu.KindVNPU, 0.25},
		{"whole", vgpu.Whole(a100, 4), a100, vgpu.KindWhole, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}}
			if c.kind == vgpu.KindWhole {
				require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: c.prof, Accelerators: 4}, nil))
			} else {
				require.Empty(t, vgpuspec.Of(c.spec).Apply(&tmpl, "main", nil))
			}
			s, ok := vgpu.RequestShare(tmpl.Spec.Containers[0].Resources.Limits, c.prof)
			require.True(t, ok, "%v", tmpl.Spec.Containers[0].Resources.Limits)
			assert.Equal(t, c.kind, s.Kind)
			assert.InDelta(t, c.devices, s.Accelerators, 1e-9)
		})
	}
}

func TestRequestShareWithoutAccelerator(t *testing.T) {
	_, ok := vgpu.RequestShare(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}, hardware.Profile{})
	assert.False(t, ok)
	_, ok = vgpu.RequestShare(nil, hardware.Profile{})
	assert.False(t, ok)
	// A bad MIG name is no share rather than a panic.
	_, ok = vgpu.RequestShare(corev1.ResourceList{"nvidia.com/mig-zz": resource.MustParse("1")}, hardware.Profile{})
	assert.False(t, ok)
	// A static vNPU of an unknown chip counts as a whole device.
	s, ok := vgpu.RequestShare(corev1.ResourceList{"huawei.com/Ascend910-5c.1cpu.16g": resource.MustParse("1")}, hardware.Profile{})
	require.True(t, ok)
	assert.Equal(t, 1.0, s.Accelerators)
}

func FuzzRequestShare(f *testing.F) {
	f.Add("nvidia.com/mig-3g.40gb", int64(1), "nvidia.com/gpucores", int64(30))
	f.Add("huawei.com/Ascend910-5c.1cpu.16g", int64(1), "", int64(0))
	f.Add("nvidia.com/gpu", int64(2), "nvidia.com/gpumem", int64(1000))
	f.Fuzz(func(t *testing.T, name string, n int64, other string, v int64) {
		res := corev1.ResourceList{corev1.ResourceName(name): *resource.NewQuantity(n, resource.DecimalSI)}
		if other != "" {
			res[corev1.ResourceName(other)] = *resource.NewQuantity(v, resource.DecimalSI)
		}
		s, ok := vgpu.RequestShare(res, hardware.A100_80G)
		if ok && s.Accelerators < 0 {
			t.Fatalf("negative share %v from %v", s, res)
		}
	})
}
