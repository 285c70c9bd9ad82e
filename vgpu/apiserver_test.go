package vgpu_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/internal/vgpuspec"
	"github.com/cubestudio/cube/vgpu"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestSlicesOnAPIServer renders every kind of slice the way the pod
// settings do (hardware.Apply with Count 0, then the slice) and creates the
// Pod with strict validation: every extended resource name, annotation and
// selector is one the real API server accepts.
func TestSlicesOnAPIServer(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	specs := []*vgpu.Spec{
		vgpu.Slice(hardware.A100_80G).Memory("10Gi").Cores(30),
		vgpu.Slice(hardware.L4).MemoryPercent(50).Accelerators(2),
		vgpu.Slice(hardware.A10).Memory("8Gi").Cores(25).Backend(vgpu.Volcano),
		vgpu.MIG(hardware.A100_80G, "1g.10gb"),
		vgpu.MIG(hardware.H200, "1g.18gb+me"),
		vgpu.MIG(hardware.A100_40G, "3g.20gb").Strategy(vgpu.Single),
		vgpu.VNPU(hardware.Ascend910B3, "vir10_3c_16g_nm"),
		vgpu.VNPU(hardware.Ascend310P3, "vir04_4c_dvpp"),
		vgpu.VNPU(hardware.Ascend910B2.Plugin(hardware.HAMi), "vir03_1c_8g"),
		vgpu.Slice(hardware.Ascend910B4.Plugin(hardware.HAMi)).Memory("6Gi"),
		vgpu.Whole(hardware.B200, 8).Backend(vgpu.HAMi),
	}
	for i, s := range specs {
		tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers:    []corev1.Container{{Name: "main", Image: "registry.example/serve:1"}},
			RestartPolicy: corev1.RestartPolicyNever,
		}}
		prof := vgpuspec.Of(s).Profile()
		if prof.Vendor == hardware.NVIDIA && vgpu.Kind(vgpuspec.Of(s).Kind()) == vgpu.KindMIG && s.String() == "A100-SXM-40GB mig 3g.20gb" {
			prof = prof.Plugin(hardware.MIGSingle)
		}
		require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: prof}, specPath), s.String())
		require.Empty(t, vgpuspec.Of(s).Apply(&tmpl, "main", specPath), s.String())
		pod := &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("slice-%02d", i), Labels: tmpl.Labels, Annotations: tmpl.Annotations},
			Spec:       tmpl.Spec,
		}
		require.NoError(t, env.CreateStrict(t.Context(), pod), s.String())
		r, errs := vgpuspec.Of(s).Request(specPath)
		require.Empty(t, errs)
		for name, n := range r.Resources {
			got := pod.Spec.Containers[0].Resources.Limits[name]
			assert.Equal(t, n, got.Value(), "%s %s", s, name)
		}
	}
}
