package hardware

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

const gib = int64(1) << 30

// Placements of MIG instances by memory-slice size (`nvidia-smi mig -lgipp`
// on A100, H100, H200 and B200, which share the 7/8 geometry).
var (
	placeOne   = []int{0, 1, 2, 3, 4, 5, 6}
	placeTwo   = []int{0, 2, 4, 6}
	placeTwoG  = []int{0, 2, 4}
	placeFour  = []int{0, 4}
	placeWhole = []int{0}
)

// migTable builds the seven standard profiles of a card from its profile
// memory labels ("5gb", "10gb", "20gb", "40gb") and instance memories in MiB
// (0 = derive from the card's memory).
func migTable(deviceMiB int64, names [7]string, sms [7]int, mib [7]int64) []MIGProfile {
	shape := [7]struct{ c, m, max int }{
		{1, 1, 7}, {1, 1, 1}, {1, 2, 4}, {2, 2, 3}, {3, 4, 2}, {4, 4, 1}, {7, 8, 1},
	}
	places := [7][]int{placeOne, placeOne, placeTwo, placeTwoG, placeFour, placeWhole, placeWhole}
	out := make([]MIGProfile, 7)
	for i := range out {
		mem := mib[i]
		if mem == 0 {
			mem = deviceMiB * int64(shape[i].m) / MIGMemorySlices
		}
		out[i] = MIGProfile{
			Name: names[i], ComputeSlices: shape[i].c, MemorySlices: shape[i].m,
			MaxInstances: shape[i].max, SMs: sms[i], MemoryMiB: mem,
			Placements: append([]int(nil), places[i]...),
		}
	}
	return out
}

func nvidia(name, product, hamiType string, memGiB int64, bw, bf16, fp16 float64, link string, mig []MIGProfile) Profile {
	return Profile{
		Name: name, Vendor: NVIDIA, Product: product,
		MemoryBytes: memGiB * gib, MemoryBandwidthGBps: bw, BF16TFLOPS: bf16, FP16TFLOPS: fp16,
		Interconnect: link, MaxPerNode: 8,
		Flavour: NVIDIADevicePlugin, ResourceName: ResourceNVIDIAGPU,
		nodeLabels: map[string]string{LabelGPUProduct: product},
		tolerations: []corev1.Toleration{{
			Key: string(ResourceNVIDIAGPU), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
		}},
		mig:      mig,
		HAMiType: hamiType,
	}
}

func ascend(name, chip, hamiType, huaweiType, accel string, memGiB int64, bw, bf16, fp16 float64, link string, cores int, ring string, vnpu []VNPUTemplate) Profile {
	return Profile{
		Name: name, Vendor: Huawei, Product: chip,
		MemoryBytes: memGiB * gib, MemoryBandwidthGBps: bw, BF16TFLOPS: bf16, FP16TFLOPS: fp16,
		Interconnect: link, MaxPerNode: 8,
		Flavour: HuaweiDevicePlugin, ResourceName: corev1.ResourceName("huawei.com/" + huaweiType),
		nodeLabels: map[string]string{LabelAccelerator: accel, LabelNPUChipName: chip},
		tolerations: []corev1.Toleration{{
			Key: "huawei.com/" + huaweiType, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
		}},
		HAMiType: hamiType, HuaweiType: huaweiType, AICores: cores, vnpu: vnpu,
		AscendRuntime: true, VisibleDevicesFromAnnotation: true, RingController: ring,
	}
}

// reported sets a card's memory to what its driver reports (NVML's total,
// which nvidia-smi prints and GPU Feature Discovery labels
// nvidia.com/gpu.memory) where that differs from the datasheet's GiB: the
// engines size their share of memory by it (vLLM's gpu_memory_utilization
// is of torch.cuda.mem_get_info's total), and the planners must too.
func reported(p Profile, mib int64) Profile { p.MemoryBytes = mib << 20; return p }

// Ascend 910B inter-node traffic uses the NPUs' own RoCE ports.
func onChipRoCE(p Profile) Profile { p.OnChipRoCE = true; return p }

// vnpu910TrainingTemplates are the Atlas A2 training (24 AI-core) static
// templates; vir03_1c_8g exists only in HAMi (910B2).
func vnpu910Training(hami bool) []VNPUTemplate {
	t := []VNPUTemplate{
		{Name: "vir06_1c_16g", AICores: 6, AICPUs: 1, MemoryMiB: 16384, Static: true, HAMi: hami},
		{Name: "vir12_3c_32g", AICores: 12, AICPUs: 3, MemoryMiB: 32768, Static: true, HAMi: hami},
	}
	if hami {
		t = append([]VNPUTemplate{{Name: "vir03_1c_8g", AICores: 3, AICPUs: 1, MemoryMiB: 8192, HAMi: true}}, t...)
	}
	return t
}

// vnpu910Inference are the Atlas A2 inference (20 AI-core) static
// templates; hami names the ones HAMi lists for the chip.
func vnpu910Inference(hami ...string) []VNPUTemplate {
	t := []VNPUTemplate{
		{Name: "vir05_1c_8g", AICores: 5, AICPUs: 1, MemoryMiB: 8192, Static: true},
		{Name: "vir05_1c_16g", AICores: 5, AICPUs: 1, MemoryMiB: 16384, Static: true},
		{Name: "vir10_3c_16g", AICores: 10, AICPUs: 3, MemoryMiB: 16384, Static: true},
		{Name: "vir10_3c_16g_nm", AICores: 10, AICPUs: 3, MemoryMiB: 16384, Media: "ndvpp", Static: true},
		{Name: "vir10_4c_16g_m", AICores: 10, AICPUs: 4, MemoryMiB: 16384, Media: "dvpp", Static: true},
		{Name: "vir10_3c_32g", AICores: 10, AICPUs: 3, MemoryMiB: 32768, Static: true},
	}
	for i := range t {
		for _, h := range hami {
			if t[i].Name == h {
				t[i].HAMi = true
			}
		}
	}
	return t
}

// The catalogue. Numbers come from vendor datasheets and device-plugin
// sources (see doc.go); those marked unverified there are defaults to
// override by copying the Profile and changing the field.
var (
	T4   = reported(nvidia("T4", "Tesla-T4", "T4", 16, 320, 0, 65, "PCIe Gen3 x16", nil), 15360)
	A10  = nvidia("A10", "NVIDIA-A10", "A10", 24, 600, 125, 125, "PCIe Gen4 x16", nil)
	L4   = reported(nvidia("L4", "NVIDIA-L4", "L4", 24, 300, 121, 121, "PCIe Gen4 x16", nil), 23034)
	L40S = nvidia("L40S", "NVIDIA-L40S", "L40S", 48, 864, 362, 362, "PCIe Gen4 x16", nil)

	A100_40G = nvidia("A100-SXM-40GB", "NVIDIA-A100-SXM4-40GB", "A100", 40, 1555, 312, 312, "NVLink3 600 GB/s",
		migTable(40960,
			[7]string{"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"},
			[7]int{14, 14, 14, 28, 42, 56, 98},
			[7]int64{4864, 4864, 9856, 9856, 19968, 19968, 40192}))
	A100_80G = nvidia("A100-SXM-80GB", "NVIDIA-A100-SXM4-80GB", "A100", 80, 2039, 312, 312, "NVLink3 600 GB/s",
		migTable(81920,
			[7]string{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
			[7]int{14, 14, 14, 28, 42, 56, 98},
			[7]int64{9856, 9856, 19968, 19968, 40192, 40192, 80384}))
	H100 = reported(nvidia("H100-SXM-80GB", "NVIDIA-H100-80GB-HBM3", "H100", 80, 3350, 989, 989, "NVLink4 900 GB/s",
		migTable(81920,
			[7]string{"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
			[7]int{16, 16, 26, 32, 60, 64, 132},
			[7]int64{})), 81559)
	H200 = nvidia("H200-SXM-141GB", "NVIDIA-H200", "H200", 141, 4800, 989, 989, "NVLink4 900 GB/s",
		migTable(144384,
			[7]string{"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"},
			[7]int{16, 16, 26, 32, 60, 64, 132},
			[7]int64{16384, 16384, 33024, 33024, 71168, 71168, 0}))
	B200 = nvidia("B200-SXM-180GB", "NVIDIA-B200", "B200", 180, 8000, 2250, 2250, "NVLink5 1.8 TB/s",
		migTable(184320,
			[7]string{"1g.23gb", "1g.23gb+me", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"},
			[7]int{18, 18, 30, 36, 0, 0, 0},
			[7]int64{22528, 22528, 0, 0, 0, 0, 0}))

	Ascend910B1 = onChipRoCE(ascend("Ascend910B1", "910B1", "", "Ascend910", "huawei-Ascend910", 64, 1600, 414, 414,
		"HCCS; 200GbE RoCE per NPU", 24, "ascend-910b", vnpu910Training(false)))
	Ascend910B2 = onChipRoCE(ascend("Ascend910B2", "910B2", "Ascend910B2", "Ascend910", "huawei-Ascend910", 64, 1600, 353.9, 353.9,
		"HCCS; 200GbE RoCE per NPU", 24, "ascend-910b", vnpu910Training(true)))
	Ascend910B3 = onChipRoCE(ascend("Ascend910B3", "910B3", "Ascend910B3", "Ascend910", "huawei-Ascend910", 64, 1600, 294.9, 294.9,
		"HCCS; 200GbE RoCE per NPU", 20, "ascend-910b", vnpu910Inference("vir05_1c_16g", "vir10_3c_32g")))
	Ascend910B4 = onChipRoCE(ascend("Ascend910B4", "910B4", "Ascend910B4", "Ascend910", "huawei-Ascend910", 32, 800, 280, 280,
		"HCCS; 200GbE RoCE per NPU", 20, "ascend-910b", vnpu910Inference("vir05_1c_8g", "vir10_3c_16g")))
	Ascend310P3 = ascend("Ascend310P3", "310P3", "Ascend310P", "Ascend310P", "huawei-Ascend310P", 24, 204.8, 0, 70,
		"PCIe Gen4 x16", 8, "ascend-310P", []VNPUTemplate{
			{Name: "vir01", AICores: 1, MemoryMiB: 3072, Static: true, HAMi: true},
			{Name: "vir02", AICores: 2, MemoryMiB: 6144, Static: true, HAMi: true},
			{Name: "vir02_1c", AICores: 2, AICPUs: 1, MemoryMiB: 6144, Static: true},
			{Name: "vir04", AICores: 4, MemoryMiB: 12288, Static: true, HAMi: true},
			{Name: "vir04_3c", AICores: 4, AICPUs: 3, MemoryMiB: 12288, Static: true},
			{Name: "vir04_3c_ndvpp", AICores: 4, AICPUs: 3, MemoryMiB: 12288, Media: "ndvpp", Static: true},
			{Name: "vir04_4c_dvpp", AICores: 4, AICPUs: 4, MemoryMiB: 12288, Media: "dvpp", Static: true},
		})

	// CPU selects amd64 nodes without accelerators.
	CPU = Profile{Name: "cpu-amd64", Arch: AMD64, nodeLabels: map[string]string{LabelArch: AMD64}}
	// CPUArm64 selects arm64 nodes (Kunpeng, Graviton, Ampere…).
	CPUArm64 = Profile{Name: "cpu-arm64", Arch: ARM64, nodeLabels: map[string]string{LabelArch: ARM64}}
	// Kunpeng selects Huawei Kunpeng arm64 nodes by the host-arch label
	// Huawei's installation guide has administrators set.
	Kunpeng = renamed(CPUArm64.SelectNodes(map[string]string{"host-arch": "huawei-arm"}), "cpu-kunpeng")
	// HygonCPU selects Hygon x86 nodes by Node Feature Discovery's CPU
	// vendor label (value unverified; override with SelectNodes).
	HygonCPU = renamed(CPU.SelectNodes(map[string]string{LabelCPUVendor: "Hygon"}), "cpu-hygon")
)

// The other domestic accelerators. Resource names: the vendor device
// plugins' (VendorDevicePlugin) and HAMi's at HAMiCommit (HAMi flavour);
// see doc.go for the sources and for which figures are unverified. A zero
// bandwidth or TFLOPS figure means the vendor publishes none the team could
// confirm: set it on a copy when you know it.
var (
	// HygonK100 is the Hygon DCU K100-AI (the HAMi example's DCU-K100_AI).
	HygonK100 = withHostMounts(domestic("DCU-K100-AI", Hygon, "K100_AI", 64<<10, 0, 0, 0, "PCIe Gen4 x16",
		ResourceHygonDCU, "hygon.com/dcunum", "K100_AI"))
	// HygonZ100 is the Hygon DCU Z100.
	HygonZ100 = withHostMounts(domestic("DCU-Z100", Hygon, "Z100", 32<<10, 0, 0, 0, "PCIe Gen4 x16",
		ResourceHygonDCU, "hygon.com/dcunum", "Z100"))
	// CambriconMLU370 is the Cambricon MLU370-X8 (two chips, one device).
	CambriconMLU370 = domestic("MLU370-X8", Cambricon, "MLU370-X8", 48<<10, 614.4, 96, 96, "MLU-Link 200 GB/s",
		ResourceCambriconMLU, "cambricon.com/vmlu", "")
	// CambriconMLU590 is the Cambricon MLU590.
	CambriconMLU590 = domestic("MLU590", Cambricon, "MLU590", 80<<10, 0, 0, 0, "MLU-Link",
		ResourceCambriconMLU, "cambricon.com/vmlu", "")
	// KunlunxinP800 is the Kunlunxin P800 (OAM), 96 GiB as HAMi's
	// KunlunMaxMemory says.
	KunlunxinP800 = domestic("P800", Kunlunxin, "P800", 98304, 0, 0, 0, "XPU Link",
		ResourceKunlunxinXPU, "kunlunxin.com/xpu", "")
	// KunlunxinR200 is the Kunlunxin R200 PCIe card.
	KunlunxinR200 = domestic("R200", Kunlunxin, "R200", 32<<10, 512, 0, 128, "PCIe Gen4 x16",
		ResourceKunlunxinXPU, "kunlunxin.com/xpu", "")
	// MetaXC500 is the MetaX C500.
	MetaXC500 = domestic("C500", MetaX, "C500", 64<<10, 1800, 280, 280, "MetaXLink",
		ResourceMetaXGPU, "metax-tech.com/gpu", "")
	// MooreThreadsS4000 is the Moore Threads MTT S4000, 48 GiB as HAMi's
	// memoryPerMthreadsGPU (96 × 512 MiB) says.
	MooreThreadsS4000 = domestic("MTT-S4000", MooreThreads, "MTT-S4000", 48<<10, 768, 100, 100, "MTLink",
		ResourceMooreThreadsGPU, "mthreads.com/vgpu", "")
	// EnflameS60 is the Enflame S60 GCU.
	EnflameS60 = domestic("S60", Enflame, "S60", 48<<10, 0, 0, 0, "PCIe Gen5 x16",
		ResourceEnflameGCU, "enflame.com/gcu", "")
	// IluvatarBIV150 is the Iluvatar CoreX BI-V150 (Tiangai 150).
	IluvatarBIV150 = domestic("BI-V150", Iluvatar, "BI-V150", 64<<10, 0, 0, 0, "IxLink",
		ResourceIluvatarGPU, "iluvatar.ai/BI-V150-vgpu", "BI-V150")
	// IluvatarMRV100 is the Iluvatar CoreX MR-V100 (Zhikai 100).
	IluvatarMRV100 = domestic("MR-V100", Iluvatar, "MR-V100", 32<<10, 0, 0, 0, "PCIe Gen4 x16",
		ResourceIluvatarGPU, "iluvatar.ai/MR-V100-vgpu", "MR-V100")
)

// hygonDriverMounts is the DCU driver tree (hy-smi and the driver
// libraries) that DCU containers mount from the host; seen in GPUStack's
// chart and Hygon DCU deployment notes [2nd, unverified]. Override with
// MountHost.
var hygonDriverMounts = []HostMount{{Volume: "hygon-hyhal", Path: "/opt/hyhal", Type: corev1.HostPathDirectory}}

func withHostMounts(p Profile) Profile {
	if p.Vendor == Hygon {
		p.hostMounts = append([]HostMount(nil), hygonDriverMounts...)
	}
	return p
}

func renamed(p Profile, name string) Profile { p.Name = name; return p }

// Catalogue returns fresh copies of every profile the package defines, in a
// stable order.
func Catalogue() []Profile {
	all := []Profile{T4, A10, L4, L40S, A100_40G, A100_80G, H100, H200, B200,
		Ascend910B1, Ascend910B2, Ascend910B3, Ascend910B4, Ascend310P3,
		HygonK100, HygonZ100, CambriconMLU370, CambriconMLU590, KunlunxinP800, KunlunxinR200,
		MetaXC500, MooreThreadsS4000, EnflameS60, IluvatarBIV150, IluvatarMRV100,
		CPU, CPUArm64, Kunpeng, HygonCPU}
	for i := range all {
		all[i] = all[i].clone()
	}
	return all
}

// Lookup returns a copy of the catalogue profile named name, ignoring
// case and surrounding space ("h100-sxm-80gb" finds H100-SXM-80GB), as
// models.Lookup does for models and Profile.MIGProfile and
// Profile.VNPUTemplate do for their tables.
func Lookup(name string) (Profile, bool) {
	name = strings.TrimSpace(name)
	for _, p := range Catalogue() {
		if strings.EqualFold(p.Name, name) {
			return p, true
		}
	}
	return Profile{}, false
}
