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
