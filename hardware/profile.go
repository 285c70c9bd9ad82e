package hardware

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Vendor names who makes an accelerator. The empty Vendor means CPU only.
type Vendor string

// Vendors known to the catalogue.
const (
	NoAccelerator Vendor = ""
	NVIDIA        Vendor = "NVIDIA"
	Huawei        Vendor = "Huawei"
	// Hygon makes the DCU accelerators (K100, Z100), programmed through
	// DTK/ROCm with RCCL.
	Hygon Vendor = "Hygon"
	// Cambricon makes the MLU accelerators (MLU370, MLU590), with CNCL.
	Cambricon Vendor = "Cambricon"
	// Kunlunxin makes the XPU accelerators (P800, R200), with BKCL.
	Kunlunxin Vendor = "Kunlunxin"
	// MetaX makes the C-series GPUs (C500), programmed through MACA with
	// MCCL.
	MetaX Vendor = "MetaX"
	// MooreThreads makes the MTT GPUs (S4000), programmed through MUSA with
	// MCCL.
	MooreThreads Vendor = "MooreThreads"
	// Enflame makes the GCU accelerators (S60), programmed through TopsRider
	// with ECCL.
	Enflame Vendor = "Enflame"
	// Iluvatar makes the CoreX GPUs (BI-V150, MR-V100).
	Iluvatar Vendor = "Iluvatar"
)

// Flavour is the device plugin a cluster runs. The same card is advertised
// under different resource names depending on it.
type Flavour string

// Device-plugin flavours.
const (
	// NVIDIADevicePlugin is NVIDIA's k8s-device-plugin with migStrategy none:
	// whole GPUs as nvidia.com/gpu. It is the default for NVIDIA profiles.
	NVIDIADevicePlugin Flavour = "nvidia-device-plugin"
	// MIGSingle is the NVIDIA device plugin with migStrategy single: every
	// GPU of a node is cut into identical MIG devices, each advertised as
	// nvidia.com/gpu.
	MIGSingle Flavour = "nvidia-mig-single"
	// MIGMixed is the NVIDIA device plugin with migStrategy mixed: MIG
	// devices are advertised as nvidia.com/mig-<profile>, whole GPUs as
	// nvidia.com/gpu.
	MIGMixed Flavour = "nvidia-mig-mixed"
	// HuaweiDevicePlugin is Huawei's Ascend device plugin (MindX DL /
	// MindCluster): every 910B is huawei.com/Ascend910, 310P is
	// huawei.com/Ascend310P. It is the default for Ascend profiles.
	HuaweiDevicePlugin Flavour = "huawei-device-plugin"
	// HAMi is Project-HAMi: nvidia.com/gpu with gpumem/gpucores for NVIDIA,
	// per-SKU names such as huawei.com/Ascend910B3 for Ascend, and HAMi's
	// count resource for the other vendors (hygon.com/dcunum,
	// cambricon.com/vmlu, kunlunxin.com/vxpu, metax-tech.com/sgpu,
	// mthreads.com/vgpu, enflame.com/gcu, iluvatar.ai/<chip>-vgpu).
	HAMi Flavour = "hami"
	// VendorDevicePlugin is the accelerator maker's own device plugin for
	// the vendors other than NVIDIA and Huawei (hygon.com/dcu,
	// cambricon.com/mlu, kunlunxin.com/xpu, metax-tech.com/gpu,
	// mthreads.com/gpu, enflame.com/gcu, iluvatar.com/gpu). It is the
	// default for their profiles.
	VendorDevicePlugin Flavour = "vendor-device-plugin"
	// NVIDIADRA is NVIDIA's DRA driver (k8s-dra-driver-gpu): a pod's GPUs
	// (or MIG devices) come from a ResourceClaim of DeviceClass
	// gpu.nvidia.com (mig.nvidia.com) selected by the attributes the
	// driver publishes, instead of the extended resource nvidia.com/gpu.
	// See DeviceClaim.
	NVIDIADRA Flavour = "nvidia-dra"
	// HAMiDRA is HAMi's DRA driver (Project-HAMi/k8s-dra-driver): a pod's
	// share of a GPU is a ResourceClaim of DeviceClass
	// hami-core-gpu.project-hami.io consuming the device's memory and
	// cores capacities.
	HAMiDRA Flavour = "hami-dra"
)

// Architectures of nodes, as the kubernetes.io/arch label spells them.
const (
	AMD64 = "amd64"
	ARM64 = "arm64"
)

// Well-known label, annotation and resource names.
const (
	LabelArch               = "kubernetes.io/arch"
	LabelGPUProduct         = "nvidia.com/gpu.product"
	LabelGPUMemory          = "nvidia.com/gpu.memory"
	LabelGPUCount           = "nvidia.com/gpu.count"
	LabelMIGStrategy        = "nvidia.com/mig.strategy"
	LabelNPUChipName        = "node.kubernetes.io/npu.chip.name"
	LabelAccelerator        = "accelerator"
	LabelAcceleratorType    = "accelerator-type"
	LabelNPUChipMemory      = "mind-cluster/npu-chip-memory"
	LabelRingController     = "ring-controller.atlas"
	LabelCPUVendor          = "feature.node.kubernetes.io/cpu-model.vendor_id"
	AnnotationMultus        = "k8s.v1.cni.cncf.io/networks"
	AnnotationHAMiGPUType   = "nvidia.com/use-gputype"
	ResourceNVIDIAGPU       = corev1.ResourceName("nvidia.com/gpu")
	ResourceAscend910       = corev1.ResourceName("huawei.com/Ascend910")
	ResourceAscend310P      = corev1.ResourceName("huawei.com/Ascend310P")
	DefaultRDMASharedDevice = corev1.ResourceName("rdma/rdma_shared_device_a")

	// Whole-device resources of the vendors' own device plugins.
	// hygon.com/dcu: HAMi's Hygon guide and GPUStack's runtime map;
	// cambricon.com/mlu: cambricon-k8s-device-plugin pkg/mlu/server.go;
	// kunlunxin.com/xpu: HAMi pkg/device/kunlun/config.go (the vendor
	// plugin's name); metax-tech.com/gpu: HAMi pkg/device/metax/config.go;
	// mthreads.com/gpu: Moore Threads' KUAE guide and GPUStack;
	// enflame.com/gcu: HAMi pkg/device/enflame/config.go;
	// iluvatar.com/gpu: GPUStack's runtime map (older ix-device-plugin
	// releases advertise iluvatar.ai/gpu; unverified, override with
	// Resource).
	ResourceHygonDCU        = corev1.ResourceName("hygon.com/dcu")
	ResourceCambriconMLU    = corev1.ResourceName("cambricon.com/mlu")
	ResourceKunlunxinXPU    = corev1.ResourceName("kunlunxin.com/xpu")
	ResourceMetaXGPU        = corev1.ResourceName("metax-tech.com/gpu")
	ResourceMooreThreadsGPU = corev1.ResourceName("mthreads.com/gpu")
	ResourceEnflameGCU      = corev1.ResourceName("enflame.com/gcu")
	ResourceIluvatarGPU     = corev1.ResourceName("iluvatar.com/gpu")
)

// MIGSlices is the geometry every MIG-capable card shares: 7 compute slices
// and 8 memory slices.
const (
	MIGComputeSlices = 7
	MIGMemorySlices  = 8
)

// MIGProfile is one GPU-instance profile a card offers, as `nvidia-smi mig
// -lgip` lists it.
type MIGProfile struct {
	// Name is the profile as the driver prints it, e.g. "1g.10gb" or
	// "1g.10gb+me".
	Name string
	// ComputeSlices out of MIGComputeSlices and MemorySlices out of
	// MIGMemorySlices.
	ComputeSlices, MemorySlices int
	// MaxInstances per GPU.
	MaxInstances int
	// SMs is the streaming-multiprocessor count of one instance.
	SMs int
	// MemoryMiB is the memory the driver reports for one instance.
	MemoryMiB int64
	// Placements are the memory-slice indices an instance may start at
	// (`nvidia-smi mig -lgipp`); it occupies MemorySlices slices from there.
	Placements []int
}

// ResourceName is the mixed-strategy resource of the profile:
// nvidia.com/mig-1g.10gb, with "+" replaced by "." (nvidia.com/mig-1g.10gb.me).
func (m MIGProfile) ResourceName() corev1.ResourceName {
	return corev1.ResourceName("nvidia.com/mig-" + strings.ReplaceAll(m.Name, "+", "."))
}

// VNPUTemplate is an Ascend virtualisation template (`npu-smi info -t
// template-info`) such as vir05_1c_16g.
type VNPUTemplate struct {
	// Name is the template name, e.g. "vir10_3c_32g".
	Name string
	// AICores and AICPUs the vNPU gets.
	AICores, AICPUs int
	// MemoryMiB of device memory.
	MemoryMiB int64
	// Media is "dvpp" (with media engines), "ndvpp" (without) or "".
	Media string
	// Static says Huawei's device plugin offers the template as a static
	// vNPU resource; HAMi says HAMi's vnpus configuration lists it.
	Static, HAMi bool
}

// StaticType is the vNPU type Huawei's device plugin appends to the
// resource name: "5c.1cpu.16g" for vir05_1c_16g, "2c" for vir02.
func (t VNPUTemplate) StaticType() string {
	s := strconv.Itoa(t.AICores) + "c"
	if t.AICPUs > 0 {
		s += "." + strconv.Itoa(t.AICPUs) + "cpu"
	}
	if g := templateGB(t.Name); g != "" {
		s += "." + g + "g"
	}
	if t.Media != "" {
		s += "." + t.Media
	}
	return s
}

// Profile describes one kind of accelerator (or a CPU-only node) and how a
// cluster advertises it. Profiles are values: copy one and change its
// fields (or call the methods that return a changed copy, which also
// reach the labels, tolerations, MIG and vNPU tables, host mounts,
// collective and images behind accessors) to describe a card the catalogue
// lacks or to override a default marked unverified. A copy shares nothing
// with the catalogue.
//
// Those methods are named after what they set (MIG, VNPU, Resource,
// PerNode, Plugin); where that noun is already a field or a read of the
// Profile they take a verb: SelectNodes, Tolerate, MountHost,
// UseCollective, UseImages, AscendDockerRuntime.
type Profile struct {
	// Name identifies the profile, e.g. "H100-SXM-80GB".
	Name   string
	Vendor Vendor
	// Product is what the cluster calls the card: the GPU Feature Discovery
	// product name for NVIDIA ("NVIDIA-H100-80GB-HBM3"), the chip name for
	// Ascend ("910B3").
	Product string
	// MemoryBytes of device memory per device (0 for CPU).
	MemoryBytes         int64
	MemoryBandwidthGBps float64
	// BF16TFLOPS and FP16TFLOPS are dense (no 2:4 sparsity) peak numbers.
	BF16TFLOPS, FP16TFLOPS float64
	Interconnect           string
	// MaxPerNode is how many devices a node of this type holds.
	MaxPerNode int
	// Flavour is the device plugin the profile renders for.
	Flavour Flavour
	// ResourceName is the extended resource for one whole device under
	// Flavour.
	ResourceName corev1.ResourceName
	// nodeLabels select nodes that carry the device (NodeLabels,
	// SelectNodes).
	nodeLabels map[string]string
	// tolerations let pods onto nodes tainted for the device.
	tolerations []corev1.Toleration
	// mig lists the MIG profiles the card offers; nil when it has no MIG.
	mig []MIGProfile
	// Arch is the node architecture the profile implies ("" = any).
	Arch string
	// HAMiType is the HAMi name of the card: the nvidia.com/use-gputype
	// value for NVIDIA ("A100"), the per-SKU resource base for Ascend
	// ("Ascend910B3"); "" when HAMi does not know the card.
	HAMiType string
	// HuaweiType is the Huawei device-plugin resource base ("Ascend910",
	// "Ascend310P").
	HuaweiType string
	// AICores per Ascend chip.
	AICores int
	// vnpu lists the Ascend virtualisation templates of the chip.
	vnpu []VNPUTemplate
	// AscendRuntime says the nodes run the Ascend Docker Runtime, which
	// mounts the driver into containers. When false, Apply mounts the driver
	// host paths itself.
	AscendRuntime bool
	// OnChipRoCE says the devices carry their own RoCE ports (Ascend 910B):
	// collective traffic between nodes needs no RDMA device plugin or Multus
	// network.
	OnChipRoCE bool
	// VisibleDevicesFromAnnotation sets ASCEND_VISIBLE_DEVICES from the
	// scheduler's allocation annotation (Volcano with Huawei's plugin).
	VisibleDevicesFromAnnotation bool
	// RingController is the ring-controller.atlas label value of Ascend jobs
	// ("ascend-910b"); workload builders copy it onto their jobs.
	RingController string
	// pluginResource and hamiResource are the whole-device resources of the
	// vendors other than NVIDIA and Huawei under VendorDevicePlugin and HAMi.
	pluginResource, hamiResource corev1.ResourceName
	// hostMounts are host paths the vendor's runtime needs in the container.
	hostMounts []HostMount
	// collective overrides the vendor's collective library settings.
	collective *Collective
	// images overrides the vendor images (Images, UseImages).
	images *Images
}

// HostMount is a host path mounted read-only at the same path in the
// container: driver files the vendor's container runtime does not inject.
type HostMount struct {
	// Volume names the pod volume.
	Volume string
	// Path on the host and in the container.
	Path string
	// Type is the hostPath type (Directory, File…).
	Type corev1.HostPathType
}

// IsZero reports whether p is the zero Profile.
func (p Profile) IsZero() bool { return p.Name == "" && p.Vendor == "" && p.ResourceName == "" }

// Accelerated reports whether p has devices a pod can request.
func (p Profile) Accelerated() bool { return p.Vendor != NoAccelerator }

// HasMIG reports whether the card supports MIG.
func (p Profile) HasMIG() bool { return len(p.mig) > 0 }

// NodeLabels returns a copy of the node labels the profile selects.
// Profiles are values that share nothing with the catalogue: change them
// with SelectNodes.
func (p Profile) NodeLabels() map[string]string { return maps.Clone(p.nodeLabels) }

// Tolerations returns a copy of the tolerations the profile adds.
func (p Profile) Tolerations() []corev1.Toleration { return cloneTolerations(p.tolerations) }

// MIGProfiles returns a copy of the card's MIG table; nil when it has no
// MIG.
func (p Profile) MIGProfiles() []MIGProfile { return cloneMIG(p.mig) }

// VNPUTemplates returns a copy of the chip's Ascend vNPU templates.
func (p Profile) VNPUTemplates() []VNPUTemplate { return slices.Clone(p.vnpu) }

// HostMounts returns a copy of the host paths Apply mounts for the
// vendor's runtime (the Ascend driver paths are governed by AscendRuntime).
func (p Profile) HostMounts() []HostMount { return slices.Clone(p.hostMounts) }

// MIGProfile returns the MIG profile named name ("3g.40gb"), ignoring case
// and surrounding space as every catalogue look-up does (Lookup,
// models.Lookup); the result's Name is the spelling resources use.
func (p Profile) MIGProfile(name string) (MIGProfile, bool) {
	name = strings.TrimSpace(name)
	for _, m := range p.mig {
		if strings.EqualFold(m.Name, name) {
			m.Placements = slices.Clone(m.Placements)
			return m, true
		}
	}
	return MIGProfile{}, false
}

// VNPUTemplate returns the vNPU template named name ("vir05_1c_16g"),
// ignoring case and surrounding space; the result's Name is the spelling
// resources use.
func (p Profile) VNPUTemplate(name string) (VNPUTemplate, bool) {
	name = strings.TrimSpace(name)
	for _, t := range p.vnpu {
		if strings.EqualFold(t.Name, name) {
			return t, true
		}
	}
	return VNPUTemplate{}, false
}

// Tolerate returns p with its tolerations replaced.
func (p Profile) Tolerate(tolerations ...corev1.Toleration) Profile {
	p = p.clone()
	p.tolerations = cloneTolerations(tolerations)
	return p
}

// VNPU returns p with its vNPU templates replaced.
func (p Profile) VNPU(templates ...VNPUTemplate) Profile {
	p = p.clone()
	p.vnpu = slices.Clone(templates)
	return p
}

// MountHost returns p with the host paths for the vendor's runtime
// replaced; none (MountHost()) when the container runtime injects the
// driver itself.
func (p Profile) MountHost(mounts ...HostMount) Profile {
	p = p.clone()
	p.hostMounts = slices.Clone(mounts)
	return p
}

// Plugin returns p rendered for the device-plugin flavour f: its
// ResourceName changes to what f advertises. A flavour that does not suit
// the vendor is kept and reported by Apply.
func (p Profile) Plugin(f Flavour) Profile {
	p = p.clone()
	p.Flavour = f
	p.ResourceName = resourceFor(p, f)
	return p
}

// SelectNodes returns p with labels merged into its node selectors; an
// empty value removes the label.
func (p Profile) SelectNodes(labels map[string]string) Profile {
	p = p.clone()
	if p.nodeLabels == nil {
		p.nodeLabels = map[string]string{}
	}
	for k, v := range labels {
		if v == "" {
			delete(p.nodeLabels, k)
			continue
		}
		p.nodeLabels[k] = v
	}
	return p
}

// Resource returns p requesting name for one whole device, for
// clusters whose device plugin renames resources.
func (p Profile) Resource(name corev1.ResourceName) Profile {
	p = p.clone()
	p.ResourceName = name
	return p
}

// PerNode returns p for nodes holding n devices (16 for an Atlas
// 200T A2 Box16).
func (p Profile) PerNode(n int) Profile {
	p = p.clone()
	p.MaxPerNode = n
	return p
}

// AscendDockerRuntime returns p for nodes with (true) or without (false) the
// Ascend Docker Runtime. Without it Apply mounts the driver host paths.
func (p Profile) AscendDockerRuntime(present bool) Profile {
	p = p.clone()
	p.AscendRuntime = present
	return p
}

// MIG returns p with its MIG table replaced, for drivers that name
// profiles differently (an A100-80GB reporting 3g.39gb).
func (p Profile) MIG(profiles ...MIGProfile) Profile {
	p = p.clone()
	p.mig = cloneMIG(profiles)
	return p
}

func (p Profile) clone() Profile {
	p.nodeLabels = maps.Clone(p.nodeLabels)
	p.tolerations = cloneTolerations(p.tolerations)
	p.mig = cloneMIG(p.mig)
	p.vnpu = slices.Clone(p.vnpu)
	p.hostMounts = slices.Clone(p.hostMounts)
	if p.collective != nil {
		c := *p.collective
		p.collective = &c
	}
	if p.images != nil {
		imgs := *p.images
		p.images = &imgs
	}
	return p
}

func cloneTolerations(in []corev1.Toleration) []corev1.Toleration {
	if in == nil {
		return nil
	}
	out := make([]corev1.Toleration, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

func cloneMIG(in []MIGProfile) []MIGProfile {
	if in == nil {
		return nil
	}
	out := make([]MIGProfile, len(in))
	for i, m := range in {
		m.Placements = slices.Clone(m.Placements)
		out[i] = m
	}
	return out
}

// resourceFor is the whole-device resource of p under flavour f; "" when f
// does not suit p.
func resourceFor(p Profile, f Flavour) corev1.ResourceName {
	switch p.Vendor {
	case NoAccelerator:
		return ""
	case NVIDIA:
		switch f {
		case NVIDIADevicePlugin, MIGSingle, MIGMixed, HAMi:
			return ResourceNVIDIAGPU
		}
		// A DRA flavour has no extended resource: devices come from a claim.
	case Huawei:
		switch f {
		case HuaweiDevicePlugin:
			if p.HuaweiType != "" {
				return corev1.ResourceName("huawei.com/" + p.HuaweiType)
			}
		case HAMi:
			if p.HAMiType != "" {
				return corev1.ResourceName("huawei.com/" + p.HAMiType)
			}
		}
	default:
		switch f {
		case VendorDevicePlugin:
			return p.pluginResource
		case HAMi:
			return p.hamiResource
		}
	}
	return ""
}

// flavourSuits reports whether f is a flavour of p's vendor.
func flavourSuits(p Profile, f Flavour) bool {
	return slices.Contains(flavoursOf(p.Vendor), string(f))
}

// flavoursOf lists the device-plugin flavours of a vendor, the default
// first.
func flavoursOf(v Vendor) []string {
	switch v {
	case NoAccelerator:
		return []string{""}
	case NVIDIA:
		return []string{string(NVIDIADevicePlugin), string(MIGSingle), string(MIGMixed), string(HAMi), string(NVIDIADRA), string(HAMiDRA)}
	case Huawei:
		return []string{string(HuaweiDevicePlugin), string(HAMi)}
	default:
		return []string{string(VendorDevicePlugin), string(HAMi)}
	}
}

// templateGB is the memory part of a template name: "16" for vir05_1c_16g.
func templateGB(name string) string {
	parts := strings.Split(name, "_")
	for _, part := range parts[1:] {
		if gb, ok := strings.CutSuffix(part, "g"); ok && isDigits(gb) {
			return gb
		}
	}
	return ""
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
