package vgpu_test

import (
	"fmt"
	"maps"
	"slices"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/train"
	"github.com/cubestudio/cube/vgpu"
)

// printRequest prints what a pod given s asks for: the device resources
// of its container and its annotations, or the problems of s.
func printRequest(s *vgpu.Spec) {
	job, err := train.PyTorch("ft").Image("pytorch:2.4").Slice(s).Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	tmpl := job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster].Template
	limits := tmpl.Spec.Containers[0].Resources.Limits
	for _, n := range slices.Sorted(maps.Keys(limits)) {
		q := limits[n]
		fmt.Printf("  %s: %s\n", n, q.String())
	}
	for _, k := range slices.Sorted(maps.Keys(tmpl.Annotations)) {
		fmt.Printf("  annotation %s: %s\n", k, tmpl.Annotations[k])
	}
}

// A slice is memory and compute on one device: HAMi by default, Volcano's
// vGPU plugin on request.
func ExampleSlice() {
	fmt.Println("HAMi:")
	printRequest(vgpu.Slice(hardware.A100_80G).Memory("10Gi").Cores(30))
	fmt.Println("Volcano:")
	printRequest(vgpu.Slice(hardware.A100_80G).Memory("10Gi").Cores(30).Backend(vgpu.Volcano))
	fmt.Println("too big:")
	printRequest(vgpu.Slice(hardware.L4).Memory("30Gi"))
	// Output:
	// HAMi:
	//   nvidia.com/gpu: 1
	//   nvidia.com/gpucores: 30
	//   nvidia.com/gpumem: 10240
	//   annotation nvidia.com/use-gputype: A100
	// Volcano:
	//   volcano.sh/vgpu-cores: 30
	//   volcano.sh/vgpu-memory: 10240
	//   volcano.sh/vgpu-number: 1
	//   annotation nvidia.com/use-gputype: A100
	// too big:
	// memory: Invalid value: "30Gi": more memory than a L4 has (23034Mi)
}

// MIG instances render per the device plugin's strategy.
func ExampleMIG() {
	fmt.Println("mixed:")
	printRequest(vgpu.MIG(hardware.A100_80G, "1g.10gb"))
	fmt.Println("single:")
	printRequest(vgpu.MIG(hardware.A100_80G, "1g.10gb").Strategy(vgpu.Single))
	fmt.Println("not on this card:")
	printRequest(vgpu.MIG(hardware.H100, "1g.5gb"))
	// Output:
	// mixed:
	//   nvidia.com/mig-1g.10gb: 1
	// single:
	//   nvidia.com/gpu: 1
	// not on this card:
	// mig: Unsupported value: "1g.5gb": supported values: "1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"
}

// Ascend vNPUs: Huawei's static names by default, HAMi's per-SKU names when
// the cluster runs HAMi; a memory-sized slice rounds up to a template.
func ExampleVNPU() {
	fmt.Println("static:")
	printRequest(vgpu.VNPU(hardware.Ascend910B3, "vir10_3c_32g"))
	fmt.Println("HAMi, 2000Mi rounded up:")
	printRequest(vgpu.Slice(hardware.Ascend910B3.Plugin(hardware.HAMi)).Memory("2000Mi"))
	// Output:
	// static:
	//   huawei.com/Ascend910-10c.3cpu.32g: 1
	// HAMi, 2000Mi rounded up:
	//   huawei.com/Ascend910B3: 1
	//   huawei.com/Ascend910B3-memory: 16384
}

// A plan puts every demand on a device or says why not.
func ExamplePack() {
	var inv hardware.Inventory
	inv.Add("gpu-node", hardware.A100_80G, 3)
	demands := []vgpu.Demand{
		{Name: "chat", Spec: vgpu.Slice(hardware.A100_80G).Memory("20Gi").Cores(30)},
		{Name: "notebook", Spec: vgpu.Slice(hardware.A100_80G).Memory("8Gi").Cores(10)},
		{Name: "embed", Spec: vgpu.MIG(hardware.A100_80G, "3g.40gb")},
		{Name: "rerank", Spec: vgpu.MIG(hardware.A100_80G, "2g.20gb")},
		{Name: "train", Spec: vgpu.Whole(hardware.A100_80G, 1)},
		{Name: "huge", Spec: vgpu.Slice(hardware.A100_80G).Memory("100Gi")},
	}
	plan, err := vgpu.Pack(inv, demands, vgpu.Planner)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, a := range plan.Assignments {
		fmt.Printf("%-8s -> %s/%v\n", a.Name, a.Node, a.Devices)
	}
	for _, u := range plan.Unplaced {
		fmt.Printf("%-8s unplaced: %s\n", u.Name, u.Reason)
	}
	s := plan.Summary
	fmt.Printf("devices %d of %d, lower bound %d, memory %.0f%%\n", s.DevicesUsed, s.DevicesTotal, s.LowerBound, 100*s.MemoryUtilisation)
	// Output:
	// chat     -> gpu-node/[2]
	// notebook -> gpu-node/[2]
	// embed    -> gpu-node/[1]
	// rerank   -> gpu-node/[1]
	// train    -> gpu-node/[0]
	// huge     unplaced: memory: Invalid value: "100Gi": more memory than a A100-SXM-80GB has (80Gi)
	// devices 3 of 3, lower bound 3, memory 70%
}

// HAMi shares the other vendors' devices under their own names and units,
// read from HAMi's device code: MiB for a Hygon DCU, 256 MiB units for a
// Cambricon MLU, Kunlunxin's vXPU quarters, GiB for MetaX.
func ExampleSlice_otherVendors() {
	fmt.Println("Hygon K100:")
	printRequest(vgpu.Slice(hardware.HygonK100).Memory("8Gi").Cores(50))
	fmt.Println("Cambricon MLU370:")
	printRequest(vgpu.Slice(hardware.CambriconMLU370).Memory("8Gi").Cores(50))
	fmt.Println("Kunlunxin P800:")
	printRequest(vgpu.Slice(hardware.KunlunxinP800).Memory("8Gi"))
	fmt.Println("MetaX C500:")
	printRequest(vgpu.Slice(hardware.MetaXC500).Memory("8Gi").Cores(50))
	fmt.Println("two DCUs:")
	printRequest(vgpu.Slice(hardware.HygonK100).Memory("8Gi").Accelerators(2))
	// Output:
	// Hygon K100:
	//   hygon.com/dcucores: 50
	//   hygon.com/dcumem: 8192
	//   hygon.com/dcunum: 1
	// Cambricon MLU370:
	//   cambricon.com/mlu.smlu.vcore: 50
	//   cambricon.com/mlu.smlu.vmemory: 32
	//   cambricon.com/vmlu: 1
	// Kunlunxin P800:
	//   kunlunxin.com/vxpu: 1
	//   kunlunxin.com/vxpu-memory: 24576
	// MetaX C500:
	//   metax-tech.com/sgpu: 1
	//   metax-tech.com/vcore: 50
	//   metax-tech.com/vmemory: 8
	// two DCUs:
	// accelerators: Invalid value: 2: HAMi shares one DCU-K100-AI per container; ask for whole devices to use several
}
