package vgpu

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
)

// Share is how much of the accelerators one container (or pod) holds,
// read back from the resources it asks for: what accounting counts.
type Share struct {
	// Kind is whole devices, a slice (HAMi or Volcano), a MIG instance or
	// an Ascend vNPU.
	Kind Kind
	// Resource is the extended resource the share was read from
	// (nvidia.com/gpu, nvidia.com/mig-1g.10gb, huawei.com/Ascend910-5c.1cpu.16g…).
	Resource corev1.ResourceName
	// Accelerators is device-equivalents: the number of whole devices, or for a
	// share the fraction of one device it holds times the devices it spans.
	// A slice counts the larger of its memory and compute fraction, the
	// size the packing planner gives it; a MIG instance its compute slices
	// out of hardware.MIGComputeSlices; a vNPU its AI cores out of the
	// chip's.
	Accelerators float64
	// Detail names the share: the MIG profile ("3g.40gb") or the vNPU type
	// ("5c.1cpu.16g"); empty otherwise.
	Detail string
}

// deviceShare is the fraction of one device a share of memBytes of a
// device of devMemory bytes and a compute fraction holds: the larger of the
// two, as the planner orders and the accounting counts.
func deviceShare(memBytes, devMemory int64, compute float64) float64 {
	share := compute
	if devMemory > 0 && memBytes > 0 {
		share = max(share, float64(memBytes)/float64(devMemory))
	}
	return min(max(share, 0), 1)
}

// wholeResources are the whole-device resources of every flavour a
// profile renders for.
var wholeResources = map[corev1.ResourceName]bool{
	hardware.ResourceNVIDIAGPU:       true,
	hardware.ResourceAscend910:       true,
	hardware.ResourceAscend310P:      true,
	hardware.ResourceHygonDCU:        true,
	hardware.ResourceCambriconMLU:    true,
	hardware.ResourceKunlunxinXPU:    true,
	hardware.ResourceMetaXGPU:        true,
	hardware.ResourceMooreThreadsGPU: true,
	hardware.ResourceEnflameGCU:      true,
	hardware.ResourceIluvatarGPU:     true,
}

// RequestShare reads the accelerator share of a container from the
// resources it asks for (pass its limits merged over its requests:
// extended resources are set as limits). p is the profile of the device
// when known (from the node the pod runs on); memory-sized slices need its
// memory, vNPUs its AI cores, and a vNPU of an unknown chip counts as a
// whole device. It reports false when res asks for no accelerator.
//
// It reads the names Slice, MIG, VNPU and Whole render: HAMi's
// nvidia.com/gpu with gpucores, gpumem or gpumem-percentage, Volcano's
// volcano.sh/vgpu-*, nvidia.com/mig-<profile>, Huawei's static
// huawei.com/Ascend910-<type>, HAMi's per-SKU huawei.com/<chip> with
// -memory, and the whole-device resources of every vendor.
func RequestShare(res corev1.ResourceList, p hardware.Profile) (Share, bool) {
	count := func(name corev1.ResourceName) (int64, bool) {
		q, ok := res[name]
		if !ok {
			return 0, false
		}
		return q.Value(), true
	}
	// MIG (mixed strategy) and static vNPUs carry their size in the name.
	for name, q := range res {
		n := q.Value()
		if n <= 0 {
			continue
		}
		s := string(name)
		if profile, ok := strings.CutPrefix(s, "nvidia.com/mig-"); ok {
			profile = strings.Replace(profile, ".me", "+me", 1)
			c, _, _, err := ParseMIGProfile(profile)
			if err != nil {
				continue
			}
			return Share{Kind: KindMIG, Resource: name, Accelerators: float64(n) * float64(c) / hardware.MIGComputeSlices, Detail: profile}, true
		}
		if base, typ, ok := strings.Cut(s, "-"); ok && strings.HasPrefix(base, "huawei.com/Ascend") && typ != "memory" && typ != "core" {
			cores, err := strconv.Atoi(strings.SplitN(typ, "c", 2)[0])
			if err != nil || cores < 1 {
				continue
			}
			share := 1.0
			if p.AICores > 0 {
				share = min(float64(cores)/float64(p.AICores), 1)
			}
			return Share{Kind: KindVNPU, Resource: name, Accelerators: float64(n) * share, Detail: typ}, true
		}
	}
	if n, ok := count(ResourceVolcanoNumber); ok && n > 0 {
		compute, pct := 1.0, int64(0)
		if c, ok := count(ResourceVolcanoCores); ok {
			compute = float64(c) / 100
		}
		mem, _ := count(ResourceVolcanoMemory)
		if v, ok := count(ResourceVolcanoMemPct); ok {
			pct = v
		}
		share := volcanoOrHAMiShare(compute, mem*mib, pct, p.MemoryBytes)
		return Share{Kind: KindSlice, Resource: ResourceVolcanoNumber, Accelerators: float64(n) * share}, true
	}
	if n, ok := count(hardware.ResourceNVIDIAGPU); ok && n > 0 {
		cores, hasCores := count(ResourceGPUCores)
		mem, hasMem := count(ResourceGPUMem)
		pct, hasPct := count(ResourceGPUMemPercentage)
		exclusive := (hasCores && cores >= 100) || (hasPct && pct >= 100)
		if exclusive || !(hasCores || hasMem || hasPct) {
			return Share{Kind: KindWhole, Resource: hardware.ResourceNVIDIAGPU, Accelerators: float64(n)}, true
		}
		compute := 0.0
		if hasCores {
			compute = float64(cores) / 100
		}
		share := volcanoOrHAMiShare(compute, mem*mib, pct, p.MemoryBytes)
		return Share{Kind: KindSlice, Resource: hardware.ResourceNVIDIAGPU, Accelerators: float64(n) * share}, true
	}
	for name, q := range res {
		n := q.Value()
		if n <= 0 {
			continue
		}
		if memMiB, ok := count(name + "-memory"); ok && strings.HasPrefix(string(name), "huawei.com/") {
			share := 1.0
			if p.MemoryBytes > 0 {
				share = deviceShare(memMiB*mib, p.MemoryBytes, 0)
			}
			return Share{Kind: KindVNPU, Resource: name, Accelerators: float64(n) * share}, true
		}
		if wholeResources[name] || (p.ResourceName != "" && name == p.ResourceName) ||
			(strings.HasPrefix(string(name), "huawei.com/Ascend") && !strings.Contains(string(name), "-")) {
			return Share{Kind: KindWhole, Resource: name, Accelerators: float64(n)}, true
		}
	}
	return Share{}, false
}

// volcanoOrHAMiShare sizes a HAMi or Volcano slice: memory in bytes or as
// a percentage of the card, compute as a fraction. Without the card's
// memory a byte-sized slice counts only its compute, or a whole device
// when it asks for no compute.
func volcanoOrHAMiShare(compute float64, memBytes, pct, devMemory int64) float64 {
	if pct > 0 {
		return min(max(compute, float64(pct)/100, 0), 1)
	}
	if memBytes > 0 && devMemory == 0 && compute == 0 {
		return 1
	}
	return deviceShare(memBytes, devMemory, compute)
}
