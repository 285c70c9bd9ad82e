package dradriver

import (
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/utils/ptr"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/vgpu"
)

// slicesOf is what the API server stores for Resources(node).
func slicesOf(node string) []resourcev1.ResourceSlice {
	var out []resourcev1.ResourceSlice
	for _, s := range Resources(node).Pools[node].Slices {
		out = append(out, resourcev1.ResourceSlice{Spec: resourcev1.ResourceSliceSpec{
			Driver: hardware.DriverNVIDIAGPU, NodeName: ptr.To(node), Devices: s.Devices, SharedCounters: s.SharedCounters,
		}})
	}
	return out
}

// The planner's inventory from this driver's slices: four T4s and one
// A100-80GB on the node, matched to the catalogue; the MIG devices are the
// A100's partitions, not more devices.
func TestInventoryFromResourceSlices(t *testing.T) {
	inv := hardware.InventoryFromResourceSlices(slicesOf("n1"))
	if len(inv.Nodes) != 2 {
		t.Fatalf("want a T4 entry and an A100 entry, got %+v", inv.Nodes)
	}
	for i, want := range []struct {
		profile string
		n       int
	}{{hardware.T4.Name, T4s}, {hardware.A100_80G.Name, 1}} {
		got := inv.Nodes[i]
		if got.Name != "n1" || got.Profile.Name != want.profile || got.Accelerators != want.n {
			t.Errorf("entry %d: %s %q×%d, want n1 %q×%d", i, got.Name, got.Profile.Name, got.Accelerators, want.profile, want.n)
		}
	}
	// The planner packs over them: seven 1g.10gb MIG instances fill the
	// A100, four T4 slices of 8Gi take two T4s, and an eighth MIG
	// instance does not fit.
	var demands []vgpu.Demand
	for range 8 {
		demands = append(demands, vgpu.Demand{Spec: vgpu.MIG(hardware.A100_80G, "1g.10gb")})
	}
	for range 4 {
		demands = append(demands, vgpu.Demand{Spec: vgpu.Slice(hardware.T4).Memory("7Gi")})
	}
	plan, err := vgpu.Pack(inv, demands, vgpu.Planner)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Unplaced) != 1 {
		t.Errorf("want one MIG instance unplaced, got %d: %+v", len(plan.Unplaced), plan.Unplaced)
	}
}
