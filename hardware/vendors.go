package hardware

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// HAMiCommit is the Project-HAMi/HAMi commit whose device code
// (pkg/device/<vendor>/device.go and the chart's
// charts/hami/templates/scheduler/device-configmap.yaml and values.yaml)
// the HAMi resource names and units of this package were read from.
const HAMiCommit = "4707fb02c91c545bc7343ce26dba4c32919f9a3e"

// Collective is a vendor's collective-communication library and the
// environment variables it reads for what a Fabric sets. An empty variable
// name means the library has no (verified) equivalent: a Fabric option that
// needs it is an error on that profile.
type Collective struct {
	// Name of the library: NCCL, RCCL, CNCL, BKCL, MCCL, ECCL…
	Name string
	// SocketInterface is the bootstrap interface variable
	// (NCCL_SOCKET_IFNAME).
	SocketInterface string
	// IBHCA selects RDMA adapters (NCCL_IB_HCA).
	IBHCA string
	// IBGIDIndex pins the RoCE GID (NCCL_IB_GID_INDEX).
	IBGIDIndex string
	// IBDisable set to 1 forces sockets on a TCP fabric (NCCL_IB_DISABLE).
	IBDisable string
	// GDRLevel is the GPUDirect RDMA level (NCCL_NET_GDR_LEVEL).
	GDRLevel string
	// Debug is the log level variable (NCCL_DEBUG); set to DefaultNCCLDebug
	// unless NCCLDebug says otherwise.
	Debug string
}

// ncclNames are NCCL's variables; RCCL (a fork of NCCL) reads the same
// names.
func ncclNames(name string) Collective {
	return Collective{Name: name, SocketInterface: "NCCL_SOCKET_IFNAME", IBHCA: "NCCL_IB_HCA",
		IBGIDIndex: "NCCL_IB_GID_INDEX", IBDisable: "NCCL_IB_DISABLE", GDRLevel: "NCCL_NET_GDR_LEVEL", Debug: "NCCL_DEBUG"}
}

// DefaultCollective is the collective library of a vendor's accelerators:
// NCCL for NVIDIA; RCCL for Hygon DCU (ROCm's NCCL fork reads NCCL_*
// names); MCCL_* for MetaX and Moore Threads, ECCL_* for Enflame, BKCL_*
// for Kunlunxin and CNCL_* for Cambricon, with only the variables seen in
// the vendors' published launch scripts (the rest are left empty, so the
// options that need them are errors until set with UseCollective);
// NCCL_* names for Iluvatar CoreX (unverified). Huawei's HCCL is not
// described by a Collective: Apply sets HCCL variables itself.
func DefaultCollective(v Vendor) Collective {
	switch v {
	case NVIDIA:
		return ncclNames("NCCL")
	case Hygon:
		return ncclNames("RCCL")
	case Iluvatar:
		return ncclNames("NCCL (CoreX)")
	case MetaX:
		// MCCL_SOCKET_IFNAME, MCCL_IB_HCA, MCCL_IB_GID_INDEX and
		// MCCL_IB_DISABLE appear in MetaX MACA launch scripts [2nd].
		return Collective{Name: "MCCL", SocketInterface: "MCCL_SOCKET_IFNAME", IBHCA: "MCCL_IB_HCA",
			IBGIDIndex: "MCCL_IB_GID_INDEX", IBDisable: "MCCL_IB_DISABLE"}
	case MooreThreads:
		// torch_musa's platform names MCCL_SOCKET_IFNAME as its socket
		// variable; no RDMA variables were found.
		return Collective{Name: "MCCL", SocketInterface: "MCCL_SOCKET_IFNAME"}
	case Enflame:
		// ECCL_SOCKET_IFNAME, ECCL_IB_HCA, ECCL_IB_GID_INDEX and
		// ECCL_IB_DISABLE appear in Enflame vLLM deployment scripts [2nd].
		return Collective{Name: "ECCL", SocketInterface: "ECCL_SOCKET_IFNAME", IBHCA: "ECCL_IB_HCA",
			IBGIDIndex: "ECCL_IB_GID_INDEX", IBDisable: "ECCL_IB_DISABLE"}
	case Kunlunxin:
		// BKCL selects RDMA NICs by netdev name (BKCL_RDMA_NICS), not by
		// HCA, so only the socket interface maps [2nd].
		return Collective{Name: "BKCL", SocketInterface: "BKCL_SOCKET_IFNAME"}
	case Cambricon:
		// CNCL's variable names are unverified.
		return Collective{Name: "CNCL", SocketInterface: "CNCL_SOCKET_IFNAME"}
	}
	return Collective{}
}

// Collective is the collective library the profile's pods use between
// nodes: the one set with UseCollective, else DefaultCollective of its
// vendor. Huawei profiles use HCCL, which Apply configures itself.
func (p Profile) Collective() Collective {
	if p.collective != nil {
		return *p.collective
	}
	return DefaultCollective(p.Vendor)
}

// UseCollective returns p using c's variable names for Fabric settings,
// for images whose library differs from the default.
func (p Profile) UseCollective(c Collective) Profile {
	p = p.clone()
	p.collective = &c
	return p
}

// HAMiSlicing is how HAMi shares one device of a vendor, read from HAMi's
// device code at HAMiCommit: the resource names, the unit of the memory
// resource and what the core resource counts to.
type HAMiSlicing struct {
	// Count is the resource counting devices a container takes slices of
	// (hygon.com/dcunum); empty when HAMi gives one device per container
	// without a count (Enflame).
	Count corev1.ResourceName
	// Memory is device memory per device, in MemoryUnitMiB units.
	Memory corev1.ResourceName
	// MemoryUnitMiB is one unit of Memory in MiB: 1 (Hygon, Kunlunxin,
	// Enflame), 256 (Cambricon, Iluvatar), 512 (Moore Threads), 1024
	// (MetaX, whose bare vmemory value is GiB).
	MemoryUnitMiB int64
	// Cores is compute per device in CoreUnits parts of a device; empty
	// when HAMi derives compute from memory (Kunlunxin).
	Cores corev1.ResourceName
	// CoreUnits is what Cores counts to for a whole device: 100 (percent)
	// or 16 (Moore Threads).
	CoreUnits int
	// DefaultCorePercent is the compute HAMi reserves when Cores is not
	// given: 100 for Hygon, Cambricon and MetaX, 0 for the others.
	DefaultCorePercent int
	// MemorySteps are the memory sizes (in units) a slice may take. With
	// RoundUp a request rounds up to the next step (Kunlunxin's vXPU
	// quarters and halves); without, it must equal one (Moore Threads).
	MemorySteps []int64
	RoundUp     bool
	// MinMemoryMiB is the least memory a slice may ask for.
	MinMemoryMiB int64
	// MultiDevice says a container may take slices of several devices;
	// HAMi gives whole devices otherwise.
	MultiDevice bool
}

// HAMiSlicing returns how HAMi shares the profile's devices; false when
// HAMi cannot share them (NVIDIA and Ascend are sliced by their own rules
// in package vgpu; Kunlunxin R200 has no vXPU).
func (p Profile) HAMiSlicing() (HAMiSlicing, bool) {
	s, ok := hamiSlicing(p)
	s.MemorySteps = slices.Clone(s.MemorySteps)
	return s, ok
}

// kunlunVXPUMiB are the vXPU sizes of a P800 (HAMi pkg/device/kunlun
// vdevice.go trimMemory and KunlunMaxMemory).
var kunlunVXPUMiB = []int64{24576, 49152, 98304}

// mthreadsMemory are the legal sgpu-memory values (HAMi pkg/device/mthreads
// device.go legalMemoryslices), in 512 MiB units.
var mthreadsMemory = []int64{2, 4, 8, 16, 32, 64, 96}

func hamiSlicing(p Profile) (HAMiSlicing, bool) {
	switch p.Vendor {
	case Hygon:
		// pkg/device/hygon/device.go: flags dcu-name/dcu-memory/dcu-cores;
		// memory in MiB, cores default to 100.
		return HAMiSlicing{Count: "hygon.com/dcunum", Memory: "hygon.com/dcumem", MemoryUnitMiB: 1,
			Cores: "hygon.com/dcucores", CoreUnits: 100, DefaultCorePercent: 100, MinMemoryMiB: 1}, true
	case Cambricon:
		// pkg/device/cambricon/device.go: MemoryFactor 256 MiB per vmemory;
		// the chart names the count cambricon.com/vmlu (values.yaml
		// mluResourceName).
		return HAMiSlicing{Count: "cambricon.com/vmlu", Memory: "cambricon.com/mlu.smlu.vmemory", MemoryUnitMiB: 256,
			Cores: "cambricon.com/mlu.smlu.vcore", CoreUnits: 100, DefaultCorePercent: 100, MinMemoryMiB: 256}, true
	case Kunlunxin:
		if p.Product != "P800" {
			return HAMiSlicing{}, false
		}
		// pkg/device/kunlun/config.go and vdevice.go: vxpu, vxpu-memory in
		// MiB rounded up to a quarter, a half or the whole 96 GiB; compute
		// follows memory.
		return HAMiSlicing{Count: "kunlunxin.com/vxpu", Memory: "kunlunxin.com/vxpu-memory", MemoryUnitMiB: 1,
			MemorySteps: kunlunVXPUMiB, RoundUp: true, MinMemoryMiB: 1, MultiDevice: true}, true
	case MetaX:
		// pkg/device/metax/config.go and sdevice.go: sgpu, vmemory (a bare
		// value is GiB), vcore default 100.
		return HAMiSlicing{Count: "metax-tech.com/sgpu", Memory: "metax-tech.com/vmemory", MemoryUnitMiB: 1024,
			Cores: "metax-tech.com/vcore", CoreUnits: 100, DefaultCorePercent: 100, MinMemoryMiB: 1024}, true
	case MooreThreads:
		// pkg/device/mthreads/device.go: vgpu, sgpu-memory in 512 MiB units
		// from a fixed list, sgpu-core out of 16.
		return HAMiSlicing{Count: "mthreads.com/vgpu", Memory: "mthreads.com/sgpu-memory", MemoryUnitMiB: 512,
			Cores: "mthreads.com/sgpu-core", CoreUnits: 16, MemorySteps: mthreadsMemory, MinMemoryMiB: 1024}, true
	case Enflame:
		// pkg/device/enflame/config.go and device.go: gcu-memory and
		// gcu-core pick a DRS profile on the node, one device per
		// container; memory at or below twice the largest profile's GB is
		// read as GB, so slices ask for at least 1 GiB in MiB.
		return HAMiSlicing{Memory: "enflame.com/gcu-memory", MemoryUnitMiB: 1,
			Cores: "enflame.com/gcu-core", CoreUnits: 100, MinMemoryMiB: 1024}, true
	case Iluvatar:
		if p.HAMiType == "" {
			return HAMiSlicing{}, false
		}
		// charts/hami/templates/scheduler/device-configmap.yaml iluvatars
		// and pkg/device/iluvatar/device.go: MemoryFactor 256.
		return HAMiSlicing{Count: corev1.ResourceName("iluvatar.ai/" + p.HAMiType + "-vgpu"),
			Memory: corev1.ResourceName("iluvatar.ai/" + p.HAMiType + ".vMem"), MemoryUnitMiB: 256,
			Cores: corev1.ResourceName("iluvatar.ai/" + p.HAMiType + ".vCore"), CoreUnits: 100, MinMemoryMiB: 256}, true
	}
	return HAMiSlicing{}, false
}

// HAMiWholeResources are the resources HAMi needs for n whole devices of p
// besides p.ResourceName: nvidia.com/gpumem-percentage and gpucores at
// 100, Iluvatar's vCore at 100 per device; nil when none.
func HAMiWholeResources(p Profile, n int64) map[corev1.ResourceName]int64 {
	switch p.Vendor {
	case NVIDIA:
		return map[corev1.ResourceName]int64{HAMiGPUMemoryPercentage: 100, HAMiGPUCores: 100}
	case Iluvatar:
		// Iluvatar's cores default to 0; HAMi's webhook sets 100 per device
		// for multi-device requests, so one device asks the same.
		if s, ok := hamiSlicing(p); ok {
			return map[corev1.ResourceName]int64{s.Cores: 100 * n}
		}
	}
	return nil
}

// domesticVendors lists the vendors other than NVIDIA and Huawei.
var domesticVendors = []Vendor{Hygon, Cambricon, Kunlunxin, MetaX, MooreThreads, Enflame, Iluvatar}

// vendorPrefix is the resource-name domain of each vendor's device
// plugins and HAMi names.
func vendorPrefixes(v Vendor) []string {
	switch v {
	case Hygon:
		return []string{"hygon.com/"}
	case Cambricon:
		return []string{"cambricon.com/"}
	case Kunlunxin:
		return []string{"kunlunxin.com/"}
	case MetaX:
		return []string{"metax-tech.com/"}
	case MooreThreads:
		return []string{"mthreads.com/"}
	case Enflame:
		return []string{"enflame.com/"}
	case Iluvatar:
		return []string{"iluvatar.com/", "iluvatar.ai/"}
	}
	return nil
}

// domestic builds a profile of a vendor other than NVIDIA and Huawei.
// plugin is the vendor device plugin's resource, hami HAMi's whole-device
// count; the node is selected by the accelerator label, cube's convention
// for these vendors (the key Huawei's guide has administrators set for
// Ascend), valued <vendor>-<product>.
func domestic(name string, v Vendor, product string, memMiB int64, bw, bf16, fp16 float64, link string,
	plugin, hami corev1.ResourceName, hamiType string) Profile {
	var imgs *Images
	if known, ok := vendorImages[name]; ok {
		imgs = &known
	}
	return Profile{
		Name: name, Vendor: v, Product: product,
		MemoryBytes: memMiB << 20, MemoryBandwidthGBps: bw, BF16TFLOPS: bf16, FP16TFLOPS: fp16,
		Interconnect: link, MaxPerNode: 8,
		Flavour: VendorDevicePlugin, ResourceName: plugin,
		pluginResource: plugin, hamiResource: hami, HAMiType: hamiType,
		nodeLabels: map[string]string{LabelAccelerator: fmt.Sprintf("%s-%s", vendorLabel(v), product)},
		tolerations: []corev1.Toleration{{
			Key: string(plugin), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
		}},
		images: imgs,
	}
}

// vendorLabel is the vendor part of the accelerator label value.
func vendorLabel(v Vendor) string {
	switch v {
	case Hygon:
		return "hygon"
	case Cambricon:
		return "cambricon"
	case Kunlunxin:
		return "kunlunxin"
	case MetaX:
		return "metax"
	case MooreThreads:
		return "mthreads"
	case Enflame:
		return "enflame"
	case Iluvatar:
		return "iluvatar"
	}
	return string(v)
}

// Framework names a software stack a vendor publishes images for.
type Framework string

// Frameworks with vendor images.
const (
	// FrameworkPyTorch is a training image with the vendor's PyTorch build.
	FrameworkPyTorch Framework = "pytorch"
	// FrameworkVLLM is a vLLM serving image built for the devices.
	FrameworkVLLM Framework = "vllm"
)

// Images are container images an accelerator's vendor publishes, as
// overridable defaults; "" where the team found none.
type Images struct {
	PyTorch, VLLM string
}

// Vendor images. Hygon's come from its SourceFind registry: the PyTorch
// image of HAMi's examples/hygon/default_use.yaml at HAMiCommit and the
// vLLM image PaddleX's DCU build uses [2nd]; MetaX's vLLM image from its
// public-ai-release registry as MACA deployment guides use it [2nd];
// Iluvatar's CoreX base image of HAMi's examples/iluvatar (BI-V150). Tags
// move: override with UseImages.
var vendorImages = map[string]Images{
	"DCU-K100-AI": {
		PyTorch: "image.sourcefind.cn:5000/dcu/admin/base/pytorch:2.1.0-ubuntu22.04-dtk24.04.2-py3.10",
		VLLM:    "image.sourcefind.cn:5000/dcu/admin/base/vllm:0.9.2-ubuntu22.04-dtk25.04.2-py3.10",
	},
	"DCU-Z100": {
		PyTorch: "image.sourcefind.cn:5000/dcu/admin/base/pytorch:2.1.0-ubuntu22.04-dtk24.04.2-py3.10",
		VLLM:    "image.sourcefind.cn:5000/dcu/admin/base/vllm:0.9.2-ubuntu22.04-dtk25.04.2-py3.10",
	},
	"C500": {
		VLLM: "cr.metax-tech.com/public-ai-release/maca/vllm:maca.ai3.1.0.7-torch2.6-py310-ubuntu22.04-amd64",
	},
	"BI-V150": {
		PyTorch: "registry.iluvatar.com.cn:10443/saas/mr-bi150-4.3.0-x86-ubuntu22.04-py3.10-base-base:v1.0",
	},
}

// Images returns the vendor images of the profile (the catalogue's
// defaults, or those set with UseImages).
func (p Profile) Images() Images {
	if p.images != nil {
		return *p.images
	}
	return Images{}
}

// UseImages returns p with its vendor images replaced.
func (p Profile) UseImages(images Images) Profile {
	p = p.clone()
	p.images = &images
	return p
}

// Image returns the vendor's image for framework f on the profile, or an
// error saying none is known, so that a builder can ask for Image instead
// of running a CUDA build on another vendor's devices.
func (p Profile) Image(f Framework) (string, error) {
	imgs := p.Images()
	var img string
	switch f {
	case FrameworkPyTorch:
		img = imgs.PyTorch
	case FrameworkVLLM:
		img = imgs.VLLM
	default:
		return "", fmt.Errorf("unknown framework %q: use %q or %q", f, FrameworkPyTorch, FrameworkVLLM)
	}
	if img == "" {
		return "", fmt.Errorf("no %s image for %s is known to cube: set one with UseImages or on the builder", f, p.Name)
	}
	return img, nil
}
