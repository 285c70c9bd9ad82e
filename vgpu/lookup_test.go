package vgpu_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/vgpuspec"
	"github.com/cubestudio/cube/vgpu"
)

// A MIG profile or vNPU template is looked up as every catalogue name is,
// ignoring case and surrounding space, and rendered in the card's own
// spelling: resource names are case-sensitive.
func TestMIGAndVNPUNamesIgnoreCase(t *testing.T) {
	mig := vgpu.MIG(hardware.A100_80G, " 3G.40GB ")
	assert.Equal(t, "3g.40gb", vgpuspec.Of(mig).MIGProfile())
	r, errs := vgpuspec.Of(mig).Request(specPath)
	require.Empty(t, errs)
	assert.Equal(t, map[corev1.ResourceName]int64{"nvidia.com/mig-3g.40gb": 1}, r.Resources)

	vnpu := vgpu.VNPU(hardware.Ascend910B3, "VIR05_1C_16G")
	assert.Equal(t, "vir05_1c_16g", vgpuspec.Of(vnpu).Template())
	r, errs = vgpuspec.Of(vnpu).Request(specPath)
	require.Empty(t, errs)
	assert.Equal(t, map[corev1.ResourceName]int64{"huawei.com/Ascend910-5c.1cpu.16g": 1}, r.Resources)

	// A name the card does not have is still refused, in the caller's spelling.
	_, errs = vgpuspec.Of(vgpu.MIG(hardware.A100_80G, "9G.99GB")).Request(specPath)
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), `"9G.99GB"`)
}
