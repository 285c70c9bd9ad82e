package hardware_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cubestudio/cube/hardware"
)

func node(name string, labels map[string]string, alloc map[corev1.ResourceName]string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("96")}
	for k, v := range alloc {
		n.Status.Allocatable[k] = resource.MustParse(v)
	}
	n.Status.Capacity = n.Status.Allocatable.DeepCopy()
	return n
}

// inventoryNodes are the nodes both the unit test and the API-server test
// read; suffix keeps cluster-scoped names unique.
func inventoryNodes(suffix string, extra map[string]string) []corev1.Node {
	with := func(l map[string]string) map[string]string {
		for k, v := range extra {
			l[k] = v
		}
		return l
	}
	cordoned := node("a100-cordoned"+suffix, with(map[string]string{
		"kubernetes.io/arch": "amd64", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.count": "8",
	}), map[corev1.ResourceName]string{"nvidia.com/gpu": "8"})
	cordoned.Spec.Unschedulable = true
	return []corev1.Node{
		node("h100"+suffix, with(map[string]string{
			"kubernetes.io/arch": "amd64", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
			"nvidia.com/gpu.memory": "81559",
		}), map[corev1.ResourceName]string{"nvidia.com/gpu": "8", "rdma/rdma_shared_device_a": "63"}),
		node("a100-mig"+suffix, with(map[string]string{
			"kubernetes.io/arch": "amd64", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB", "nvidia.com/gpu.count": "8",
			"nvidia.com/mig.strategy": "mixed", "nvidia.com/mig-1g.10gb.count": "14", "nvidia.com/mig-3g.40gb.count": "4",
			"nvidia.com/mig-3g.40gb.memory": "40192",
		}), map[corev1.ResourceName]string{"nvidia.com/gpu": "4", "nvidia.com/mig-1g.10gb": "14", "nvidia.com/mig-3g.40gb": "4"}),
		node("a100-pcie"+suffix, with(map[string]string{
			"kubernetes.io/arch": "amd64", "nvidia.com/gpu.product": "NVIDIA-A100-80GB-PCIe-SHARED", "nvidia.com/gpu.memory": "81920",
		}), map[corev1.ResourceName]string{"nvidia.com/gpu": "4"}),
		node("a100-40-single"+suffix, with(map[string]string{
			"kubernetes.io/arch": "amd64", "nvidia.com/gpu.product": "A100-SXM4-40GB-MIG-1g.5gb", "nvidia.com/gpu.count": "56",
			"nvidia.com/mig.strategy": "single", "nvidia.com/gpu.memory": "4864",
		}), map[corev1.ResourceName]string{"nvidia.com/gpu": "56"}),
		node("ascend"+suffix, with(map[string]string{
			"kubernetes.io/arch": "arm64", "accelerator": "huawei-Ascend910", "node.kubernetes.io/npu.chip.name": "910B3",
			"accelerator-type": "module-910b-8",
		}), map[corev1.ResourceName]string{"huawei.com/Ascend910": "8"}),
		node("ascend-hami"+suffix, with(map[string]string{
			"kubernetes.io/arch": "arm64", "accelerator": "huawei-Ascend910", "node.kubernetes.io/npu.chip.name": "910B4",
		}), map[corev1.ResourceName]string{"huawei.com/Ascend910B4": "8", "huawei.com/Ascend910B4-memory": "262144"}),
		node("v100"+suffix, with(map[string]string{
			"kubernetes.io/arch": "amd64", "nvidia.com/gpu.product": "Tesla-V100-SXM2-32GB", "nvidia.com/gpu.count": "8",
		}), map[corev1.ResourceName]string{"nvidia.com/gpu": "8"}),
		node("mlu"+suffix, with(map[string]string{"kubernetes.io/arch": "amd64", "accelerator": "cambricon-MLU370-X8"}),
			map[corev1.ResourceName]string{"cambricon.com/mlu": "8"}),
		node("dcu-hami"+suffix, with(map[string]string{"kubernetes.io/arch": "amd64", "accelerator": "hygon-Z100"}),
			map[corev1.ResourceName]string{"hygon.com/dcunum": "8", "hygon.com/dcumem": "262144"}),
		node("xpu-unlabelled"+suffix, with(map[string]string{"kubernetes.io/arch": "amd64"}),
			map[corev1.ResourceName]string{"kunlunxin.com/xpu": "8"}),
		node("mthreads-unlabelled"+suffix, with(map[string]string{"kubernetes.io/arch": "amd64"}),
			map[corev1.ResourceName]string{"mthreads.com/gpu": "8"}),
		node("kunpeng"+suffix, with(map[string]string{"kubernetes.io/arch": "arm64", "host-arch": "huawei-arm"}), nil),
		node("x86"+suffix, with(map[string]string{"kubernetes.io/arch": "amd64"}), nil),
		cordoned,
	}
}

func checkInventory(t *testing.T, inv hardware.Inventory, suffix string) {
	t.Helper()
	byName := map[string]hardware.NodeInventory{}
	for _, n := range inv.Nodes {
		byName[n.Name] = n
	}
	require.Len(t, byName, 14)
	get := func(name string) hardware.NodeInventory { return byName[name+suffix] }

	h := get("h100")
	assert.Equal(t, "H100-SXM-80GB", h.Profile.Name)
	assert.Equal(t, 8, h.Accelerators)
	assert.Equal(t, "amd64", h.Arch)
	assert.Equal(t, map[corev1.ResourceName]int64{"nvidia.com/gpu": 8, "rdma/rdma_shared_device_a": 63}, h.Allocatable)

	mig := get("a100-mig")
	assert.Equal(t, "A100-SXM-80GB", mig.Profile.Name)
	assert.Equal(t, 8, mig.Accelerators, "physical GPUs from gpu.count, not the 4 left whole")
	assert.Equal(t, map[string]int{"1g.10gb": 14, "3g.40gb": 4}, mig.MIG)
	assert.Equal(t, int64(14), mig.Allocatable["nvidia.com/mig-1g.10gb"])

	pcie := get("a100-pcie")
	assert.Equal(t, "A100-SXM-80GB", pcie.Profile.Name, "matched by model and memory")
	assert.Equal(t, 4, pcie.Accelerators)

	single := get("a100-40-single")
	assert.Equal(t, "A100-SXM-40GB", single.Profile.Name)
	assert.Equal(t, 56, single.Accelerators, "single strategy: MIG devices")

	asc := get("ascend")
	assert.Equal(t, "Ascend910B3", asc.Profile.Name)
	assert.Equal(t, 8, asc.Accelerators)
	assert.Equal(t, "arm64", asc.Arch)
	assert.Equal(t, "module-910b-8", asc.Labels["accelerator-type"])

	hami := get("ascend-hami")
	assert.Equal(t, "Ascend910B4", hami.Profile.Name)
	assert.Equal(t, 8, hami.Accelerators)

	v100 := get("v100")
	assert.True(t, v100.Profile.IsZero(), "no V100 profile")
	assert.Equal(t, "Tesla-V100-SXM2-32GB", v100.Product)
	assert.Equal(t, 8, v100.Accelerators)

	mlu := get("mlu")
	assert.Equal(t, "MLU370-X8", mlu.Profile.Name, "by the accelerator label")
	assert.Equal(t, 8, mlu.Accelerators)
	assert.Equal(t, map[corev1.ResourceName]int64{"cambricon.com/mlu": 8}, mlu.Allocatable)

	dcu := get("dcu-hami")
	assert.Equal(t, "DCU-Z100", dcu.Profile.Name)
	assert.Equal(t, 8, dcu.Accelerators, "HAMi's count when the vendor plugin's is absent")

	xpu := get("xpu-unlabelled")
	assert.True(t, xpu.Profile.IsZero(), "P800 or R200: the resource alone does not say")
	assert.Equal(t, 8, xpu.Accelerators)

	mt := get("mthreads-unlabelled")
	assert.Equal(t, "MTT-S4000", mt.Profile.Name, "the only Moore Threads profile")
	assert.Equal(t, 8, mt.Accelerators)

	assert.Equal(t, "cpu-kunpeng", get("kunpeng").Profile.Name)
	assert.Equal(t, "cpu-amd64", get("x86").Profile.Name)
	assert.True(t, get("a100-cordoned").Unschedulable)

	assert.Equal(t, map[string]int{"H100-SXM-80GB": 8, "A100-SXM-80GB": 12, "A100-SXM-40GB": 56,
		"Ascend910B3": 8, "Ascend910B4": 8, "MLU370-X8": 8, "DCU-Z100": 8, "MTT-S4000": 8}, inv.Accelerators())
}

func TestInventoryFromNodes(t *testing.T) {
	checkInventory(t, hardware.InventoryFromNodes(inventoryNodes("", nil)), "")
}

func TestInventoryFromNodeInfoArchAndProfiles(t *testing.T) {
	n := node("plain", nil, nil)
	n.Status.NodeInfo.Architecture = "arm64"
	inv := hardware.InventoryFromNodes([]corev1.Node{n})
	assert.Equal(t, "arm64", inv.Nodes[0].Arch)
	assert.Equal(t, "cpu-arm64", inv.Nodes[0].Profile.Name)

	// A caller's own profile list: a V100 the catalogue lacks.
	v100 := hardware.T4
	v100.Name, v100.Product, v100.HAMiType, v100.MemoryBytes = "V100-SXM2-32GB", "Tesla-V100-SXM2-32GB", "V100", 32<<30
	inv = hardware.InventoryFromNodes(inventoryNodes("", nil)[6:7], v100)
	require.Equal(t, "v100", inv.Nodes[0].Name)
	assert.Equal(t, "V100-SXM2-32GB", inv.Nodes[0].Profile.Name)

	var built hardware.Inventory
	built.Add("n1", hardware.H100, 8).Add("n2", hardware.Ascend910B2, 8)
	assert.Equal(t, map[string]int{"H100-SXM-80GB": 8, "Ascend910B2": 8}, built.Accelerators())
	assert.Equal(t, "NVIDIA-H100-80GB-HBM3", built.Nodes[0].Labels["nvidia.com/gpu.product"])
}

func TestCatalogueFacts(t *testing.T) {
	const gib = int64(1) << 30
	cases := []struct {
		p                hardware.Profile
		memGiB           int64
		bw, bf16, fp16   float64
		resource         corev1.ResourceName
		labels           map[string]string
		mig, vnpu, maxPN int
	}{
		{hardware.T4, 16, 320, 0, 65, "nvidia.com/gpu", map[string]string{"nvidia.com/gpu.product": "Tesla-T4"}, 0, 0, 8},
		{hardware.A10, 24, 600, 125, 125, "nvidia.com/gpu", map[string]string{"nvidia.com/gpu.product": "NVIDIA-A10"}, 0, 0, 8},
		{hardware.L4, 24, 300, 121, 121, "nvidia.com/gpu", map[string]string{"nvidia.com/gpu.product": "NVIDIA-L4"}, 0, 0, 8},
		{hardware.L40S, 48, 864, 362, 362, "nvidia.com/gpu", map[string]string{"nvidia.com/gpu.product": "NVIDIA-L40S"}, 0, 0, 8},
		{hardware.A100_40G, 40, 1555, 312, 312, "nvidia.com/gpu", map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}, 7, 0, 8},
		{hardware.A100_80G, 80, 2039, 312, 312, "nvidia.com/gpu", map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}, 7, 0, 8},
		{hardware.H100, 80, 3350, 989, 989, "nvidia.com/gpu", map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, 7, 0, 8},
		{hardware.H200, 141, 4800, 989, 989, "nvidia.com/gpu", map[string]string{"nvidia.com/gpu.product": "NVIDIA-H200"}, 7, 0, 8},
		{hardware.B200, 180, 8000, 2250, 2250, "nvidia.com/gpu", map[string]string{"nvidia.com/gpu.product": "NVIDIA-B200"}, 7, 0, 8},
		{hardware.Ascend910B1, 64, 1600, 414, 414, "huawei.com/Ascend910", map[string]string{"accelerator": "huawei-Ascend910", "node.kubernetes.io/npu.chip.name": "910B1"}, 0, 2, 8},
		{hardware.Ascend910B2, 64, 1600, 353.9, 353.9, "huawei.com/Ascend910", map[string]string{"accelerator": "huawei-Ascend910", "node.kubernetes.io/npu.chip.name": "910B2"}, 0, 3, 8},
		{hardware.Ascend910B3, 64, 1600, 294.9, 294.9, "huawei.com/Ascend910", map[string]string{"accelerator": "huawei-Ascend910", "node.kubernetes.io/npu.chip.name": "910B3"}, 0, 6, 8},
		{hardware.Ascend910B4, 32, 800, 280, 280, "huawei.com/Ascend910", map[string]string{"accelerator": "huawei-Ascend910", "node.kubernetes.io/npu.chip.name": "910B4"}, 0, 6, 8},
		{hardware.Ascend310P3, 24, 204.8, 0, 70, "huawei.com/Ascend310P", map[string]string{"accelerator": "huawei-Ascend310P", "node.kubernetes.io/npu.chip.name": "310P3"}, 0, 7, 8},
		{hardware.CPU, 0, 0, 0, 0, "", map[string]string{"kubernetes.io/arch": "amd64"}, 0, 0, 0},
		{hardware.CPUArm64, 0, 0, 0, 0, "", map[string]string{"kubernetes.io/arch": "arm64"}, 0, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.p.Name, func(t *testing.T) {
			// Memory as the driver reports it where that differs from the
			// datasheet's GiB (catalogue.go, reported).
			want := c.memGiB * gib
			if mib, ok := map[string]int64{"T4": 15360, "L4": 23034, "H100-SXM-80GB": 81559}[c.p.Name]; ok {
				want = mib << 20
			}
			assert.Equal(t, want, c.p.MemoryBytes)
			assert.Equal(t, c.bw, c.p.MemoryBandwidthGBps)
			assert.Equal(t, c.bf16, c.p.BF16TFLOPS)
			assert.Equal(t, c.fp16, c.p.FP16TFLOPS)
			assert.Equal(t, c.resource, c.p.ResourceName)
			assert.Equal(t, c.labels, c.p.NodeLabels())
			assert.Len(t, c.p.MIGProfiles(), c.mig)
			assert.Equal(t, c.mig > 0, c.p.HasMIG())
			assert.Len(t, c.p.VNPUTemplates(), c.vnpu)
			assert.Equal(t, c.maxPN, c.p.MaxPerNode)
			assert.NotEmpty(t, c.p.Name)
		})
	}
	assert.True(t, hardware.Ascend910B3.OnChipRoCE)
	assert.False(t, hardware.Ascend310P3.OnChipRoCE)
	assert.False(t, hardware.H100.OnChipRoCE)
	assert.Equal(t, "arm64", hardware.CPUArm64.Arch)
	assert.Equal(t, map[string]string{"kubernetes.io/arch": "arm64", "host-arch": "huawei-arm"}, hardware.Kunpeng.NodeLabels())
	assert.Equal(t, "cpu-kunpeng", hardware.Kunpeng.Name)
	assert.Equal(t, "cpu-hygon", hardware.HygonCPU.Name)
}

func TestMIGTables(t *testing.T) {
	m, ok := hardware.A100_80G.MIGProfile("3g.40gb")
	require.True(t, ok)
	assert.Equal(t, hardware.MIGProfile{Name: "3g.40gb", ComputeSlices: 3, MemorySlices: 4, MaxInstances: 2, SMs: 42,
		MemoryMiB: 40192, Placements: []int{0, 4}}, m)
	assert.Equal(t, corev1.ResourceName("nvidia.com/mig-3g.40gb"), m.ResourceName())
	me, ok := hardware.H200.MIGProfile("1g.18gb+me")
	require.True(t, ok)
	assert.Equal(t, corev1.ResourceName("nvidia.com/mig-1g.18gb.me"), me.ResourceName())
	assert.Equal(t, 1, me.MaxInstances)
	h, _ := hardware.H100.MIGProfile("2g.20gb")
	assert.Equal(t, int64(20480), h.MemoryMiB, "derived from the card when the driver's figure is not recorded")
	_, ok = hardware.T4.MIGProfile("1g.5gb")
	assert.False(t, ok)
	for _, p := range []hardware.Profile{hardware.A100_40G, hardware.A100_80G, hardware.H100, hardware.H200, hardware.B200} {
		names := []string{}
		for _, m := range p.MIGProfiles() {
			names = append(names, m.Name)
			for _, start := range m.Placements {
				assert.LessOrEqual(t, start+m.MemorySlices, hardware.MIGMemorySlices, "%s %s", p.Name, m.Name)
			}
			assert.LessOrEqual(t, m.ComputeSlices*m.MaxInstances, hardware.MIGComputeSlices)
		}
		assert.Len(t, names, 7, p.Name)
	}
}

func TestVNPUTemplates(t *testing.T) {
	tpl, ok := hardware.Ascend910B3.VNPUTemplate("vir10_3c_16g_nm")
	require.True(t, ok)
	assert.Equal(t, "10c.3cpu.16g.ndvpp", tpl.StaticType())
	assert.True(t, tpl.Static)
	assert.False(t, tpl.HAMi)
	tpl, _ = hardware.Ascend910B3.VNPUTemplate("vir05_1c_16g")
	assert.True(t, tpl.HAMi)
	tpl, _ = hardware.Ascend310P3.VNPUTemplate("vir04_4c_dvpp")
	assert.Equal(t, "4c.4cpu.dvpp", tpl.StaticType())
	tpl, _ = hardware.Ascend310P3.VNPUTemplate("vir02")
	assert.Equal(t, "2c", tpl.StaticType())
	tpl, _ = hardware.Ascend910B2.VNPUTemplate("vir03_1c_8g")
	assert.False(t, tpl.Static, "vir03_1c_8g is HAMi-only")
	_, ok = hardware.Ascend910B4.VNPUTemplate("vir12_3c_32g")
	assert.False(t, ok)
}

func TestWithMethodsCopy(t *testing.T) {
	p := hardware.H100.SelectNodes(map[string]string{"zone": "a", hardware.LabelGPUProduct: ""})
	assert.Equal(t, map[string]string{"zone": "a"}, p.NodeLabels())
	assert.Equal(t, map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, hardware.H100.NodeLabels(), "catalogue untouched")
	p.NodeLabels()["x"] = "y"
	p.Tolerations()[0].Key = "changed"
	p.MIGProfiles()[0].Placements[0] = 5
	assert.Equal(t, map[string]string{"zone": "a"}, p.NodeLabels(), "accessors hand out copies")
	assert.Equal(t, "nvidia.com/gpu", hardware.H100.Tolerations()[0].Key)
	assert.Equal(t, 0, hardware.H100.MIGProfiles()[0].Placements[0])

	assert.Equal(t, corev1.ResourceName("huawei.com/Ascend910B3"), hardware.Ascend910B3.Plugin(hardware.HAMi).ResourceName)
	assert.Equal(t, corev1.ResourceName("huawei.com/Ascend910"), hardware.Ascend910B3.Plugin(hardware.HAMi).Plugin(hardware.HuaweiDevicePlugin).ResourceName)
	assert.Equal(t, corev1.ResourceName("huawei.com/Ascend310P"), hardware.Ascend310P3.Plugin(hardware.HAMi).ResourceName)
	assert.Equal(t, corev1.ResourceName(""), hardware.Ascend910B1.Plugin(hardware.HAMi).ResourceName)
	assert.Equal(t, corev1.ResourceName("nvidia.com/gpu"), hardware.A100_80G.Plugin(hardware.MIGMixed).ResourceName)
	assert.Equal(t, corev1.ResourceName(""), hardware.CPU.Plugin(hardware.HAMi).ResourceName)
	assert.Equal(t, corev1.ResourceName("example.com/gpu"), hardware.L4.Resource("example.com/gpu").ResourceName)
	assert.Equal(t, 16, hardware.Ascend910B3.PerNode(16).MaxPerNode)
	assert.False(t, hardware.Ascend910B3.AscendDockerRuntime(false).AscendRuntime)
	custom := hardware.A100_80G.MIG(hardware.MIGProfile{Name: "3g.39gb", ComputeSlices: 3, MemorySlices: 4, MaxInstances: 2, Placements: []int{0, 4}})
	_, ok := custom.MIGProfile("3g.39gb")
	assert.True(t, ok)
	_, ok = custom.MIGProfile("3g.40gb")
	assert.False(t, ok)

	assert.True(t, hardware.Profile{}.IsZero())
	assert.False(t, hardware.CPU.IsZero())
	assert.False(t, hardware.CPU.Accelerated())
	assert.True(t, hardware.L4.Accelerated())
}

func TestCatalogueAndLookup(t *testing.T) {
	all := hardware.Catalogue()
	require.Len(t, all, 29)
	seen := map[string]bool{}
	for _, p := range all {
		assert.False(t, seen[p.Name], "duplicate %s", p.Name)
		seen[p.Name] = true
		got, ok := hardware.Lookup(p.Name)
		require.True(t, ok)
		assert.Equal(t, p, got)
	}
	all[0].NodeLabels()["x"] = "y"
	assert.NotContains(t, hardware.T4.NodeLabels(), "x")
	_, ok := hardware.Lookup("V100")
	assert.False(t, ok)
}

func TestClusterSettings(t *testing.T) {
	var defaults hardware.Cluster
	assert.Equal(t, hardware.H100, defaults.Profile(hardware.H100))
	assert.Equal(t, hardware.Ascend910B3, defaults.Profile(hardware.Ascend910B3))
	assert.Equal(t, hardware.CPU, defaults.Profile(hardware.CPU))

	hami := hardware.Cluster{NVIDIA: hardware.MIGMixed, Ascend: hardware.HAMi, NoAscendRuntime: true}
	p := hami.Profile(hardware.Ascend910B4)
	assert.Equal(t, hardware.HAMi, p.Flavour)
	assert.Equal(t, corev1.ResourceName("huawei.com/Ascend910B4"), p.ResourceName)
	assert.False(t, p.AscendRuntime)
	g := hami.Profile(hardware.A100_80G)
	assert.Equal(t, hardware.MIGMixed, g.Flavour)
	assert.Equal(t, corev1.ResourceName("nvidia.com/gpu"), g.ResourceName)
}
