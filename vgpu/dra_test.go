package vgpu_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	resourcev1 "k8s.io/api/resource/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/train"
	"github.com/cubestudio/cube/vgpu"
)

// A serving group on a MIG device of NVIDIA's DRA driver, sharing one
// claim: the Deployment's pods use the ResourceClaim cube renders beside it.
func ExampleMIG_dra() {
	svc := serve.VLLM("chat", "hf://Qwen/Qwen2.5-0.5B-Instruct").Replicas(2).SharedClaim(true).
		Slice(vgpu.MIG(hardware.A100_80G.Plugin(hardware.NVIDIADRA), "1g.10gb"))
	objs, err := svc.Objects()
	fmt.Println(err)
	for _, o := range objs {
		if c, ok := o.(*resourcev1.ResourceClaim); ok {
			r := c.Spec.Devices.Requests[0].Exactly
			fmt.Println(c.Name, r.DeviceClassName, r.Selectors[0].CEL.Expression)
		}
	}
	// Output:
	// <nil>
	// chat-accelerators mig.nvidia.com device.attributes['gpu.nvidia.com'].profile == '1g.10gb'
}

func TestSpecsUnderDRARefuseWhatTheDriversCannotDo(t *testing.T) {
	cases := []struct {
		spec *vgpu.Spec
		want string
	}{
		{vgpu.Slice(hardware.A100_80G.Plugin(hardware.NVIDIADRA)).Memory("10Gi"), "spec.slice.profile.flavour"},
		{vgpu.MIG(hardware.A100_80G.Plugin(hardware.HAMiDRA), "1g.10gb"), "spec.slice.profile.flavour"},
		{vgpu.MIG(hardware.A100_80G.Plugin(hardware.NVIDIADRA), "1g.10gb").Strategy(vgpu.Single), "spec.slice.strategy"},
		{vgpu.Slice(hardware.A100_80G.Plugin(hardware.HAMiDRA)).Memory("10Gi").Backend(vgpu.Volcano), "spec.slice.backend"},
	}
	for _, tc := range cases {
		_, err := serve.VLLM("s", "hf://Qwen/Qwen2.5-0.5B-Instruct").Slice(tc.spec).Objects()
		require.Error(t, err, "%s", tc.spec)
		assert.Contains(t, err.Error(), strings.TrimPrefix(tc.want, "spec.slice."), "%s", tc.spec)
	}
}

func TestHAMiDRASliceConsumesCapacity(t *testing.T) {
	objs, err := train.Ray("r").Image("python:3").Entrypoint("python3 x.py").WorkerGroup("gpu", 1).
		Slice(vgpu.Slice(hardware.T4.Plugin(hardware.HAMiDRA)).Memory("4Gi").Cores(30)).Objects()
	require.NoError(t, err)
	var tmpl *resourcev1.ResourceClaimTemplate
	for _, o := range objs {
		if c, ok := o.(*resourcev1.ResourceClaimTemplate); ok {
			tmpl = c
		}
	}
	require.NotNil(t, tmpl, "a per-pod claim template")
	r := tmpl.Spec.Spec.Devices.Requests[0].Exactly
	assert.Equal(t, hardware.DeviceClassHAMi, r.DeviceClassName)
	mem, cores := r.Capacity.Requests[hardware.CapacityMemory], r.Capacity.Requests[hardware.CapacityCores]
	assert.Equal(t, "4Gi", mem.String())
	assert.Equal(t, "30", cores.String())
}

func TestTrainingOperatorJobsRefuseDRA(t *testing.T) {
	_, err := train.PyTorch("p").Image("pytorch:2.4").On(hardware.T4.Plugin(hardware.NVIDIADRA)).Accelerators(1).Objects()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.profile.flavour")
	assert.Contains(t, err.Error(), "training-operator")
}
