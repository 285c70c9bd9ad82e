package cube

import (
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/dradriver"
)

func TestExplainRequestNamesWhatIsMissing(t *testing.T) {
	pool := dradriver.Resources("node").Pools["node"]
	var rs []resourcev1.ResourceSlice
	for _, s := range pool.Slices {
		rs = append(rs, resourcev1.ResourceSlice{Spec: resourcev1.ResourceSliceSpec{Driver: hardware.DriverNVIDIAGPU, Devices: s.Devices}})
	}
	h100, _ := hardware.WholeClaim(hardware.H100.Plugin(hardware.NVIDIADRA), 1)
	got := explainRequest("job-0-accelerators", h100.Spec().Devices.Requests[0].Exactly, rs)
	want := "no device satisfies claim job-0-accelerators: needs productName NVIDIA H100 80GB HBM3; the node's devices have 4× Tesla T4 (memory 15Gi), NVIDIA A100-SXM4-80GB (memory 80Gi)"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	t4, _ := hardware.WholeClaim(hardware.T4.Plugin(hardware.NVIDIADRA), 1)
	if got := explainRequest("c", t4.Spec().Devices.Requests[0].Exactly, rs); !strings.HasPrefix(got, "no free device satisfies claim c: needs productName Tesla T4; the 4 devices") {
		t.Errorf("a T4 claim on a node of busy T4s: %s", got)
	}
	t4.Capacity = map[resourcev1.QualifiedName]resource.Quantity{hardware.CapacityMemory: resource.MustParse("40Gi")}
	got = explainRequest("m", t4.Spec().Devices.Requests[0].Exactly, rs)
	want = "no device satisfies claim m: needs productName Tesla T4, memory ≥ 40Gi; the node's devices have 4× Tesla T4 (memory 15Gi), NVIDIA A100-SXM4-80GB (memory 80Gi)"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	mig := hardware.DeviceClaim{Class: hardware.DeviceClassNVIDIAMIG, Count: 1, Selectors: []string{"device.attributes['gpu.nvidia.com'].profile == '7g.80gb'"}}
	got = explainRequest("g", mig.Spec().Devices.Requests[0].Exactly, rs)
	want = "no device satisfies claim g: needs MIG profile 7g.80gb; the node's devices have 7× NVIDIA A100-SXM4-80GB MIG 1g.10gb (memory 9856Mi), 2× NVIDIA A100-SXM4-80GB MIG 3g.40gb (memory 40192Mi)"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
