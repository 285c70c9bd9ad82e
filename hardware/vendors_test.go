package hardware_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
)

func TestDomesticCatalogueFacts(t *testing.T) {
	const mib = int64(1) << 20
	cases := []struct {
		p                 hardware.Profile
		vendor            hardware.Vendor
		memMiB            int64
		plugin, hami      corev1.ResourceName
		accelerator, coll string
	}{
		{hardware.HygonK100, hardware.Hygon, 65536, "hygon.com/dcu", "hygon.com/dcunum", "hygon-K100_AI", "RCCL"},
		{hardware.HygonZ100, hardware.Hygon, 32768, "hygon.com/dcu", "hygon.com/dcunum", "hygon-Z100", "RCCL"},
		{hardware.CambriconMLU370, hardware.Cambricon, 49152, "cambricon.com/mlu", "cambricon.com/vmlu", "cambricon-MLU370-X8", "CNCL"},
		{hardware.CambriconMLU590, hardware.Cambricon, 81920, "cambricon.com/mlu", "cambricon.com/vmlu", "cambricon-MLU590", "CNCL"},
		{hardware.KunlunxinP800, hardware.Kunlunxin, 98304, "kunlunxin.com/xpu", "kunlunxin.com/xpu", "kunlunxin-P800", "BKCL"},
		{hardware.KunlunxinR200, hardware.Kunlunxin, 32768, "kunlunxin.com/xpu", "kunlunxin.com/xpu", "kunlunxin-R200", "BKCL"},
		{hardware.MetaXC500, hardware.MetaX, 65536, "metax-tech.com/gpu", "metax-tech.com/gpu", "metax-C500", "MCCL"},
		{hardware.MooreThreadsS4000, hardware.MooreThreads, 49152, "mthreads.com/gpu", "mthreads.com/vgpu", "mthreads-MTT-S4000", "MCCL"},
		{hardware.EnflameS60, hardware.Enflame, 49152, "enflame.com/gcu", "enflame.com/gcu", "enflame-S60", "ECCL"},
		{hardware.IluvatarBIV150, hardware.Iluvatar, 65536, "iluvatar.com/gpu", "iluvatar.ai/BI-V150-vgpu", "iluvatar-BI-V150", "NCCL (CoreX)"},
		{hardware.IluvatarMRV100, hardware.Iluvatar, 32768, "iluvatar.com/gpu", "iluvatar.ai/MR-V100-vgpu", "iluvatar-MR-V100", "NCCL (CoreX)"},
	}
	for _, c := range cases {
		t.Run(c.p.Name, func(t *testing.T) {
			assert.Equal(t, c.vendor, c.p.Vendor)
			assert.Equal(t, c.memMiB*mib, c.p.MemoryBytes)
			assert.Equal(t, hardware.VendorDevicePlugin, c.p.Flavour)
			assert.Equal(t, c.plugin, c.p.ResourceName)
			assert.Equal(t, c.hami, c.p.Plugin(hardware.HAMi).ResourceName)
			assert.Equal(t, c.plugin, c.p.Plugin(hardware.HAMi).Plugin(hardware.VendorDevicePlugin).ResourceName)
			assert.Equal(t, corev1.ResourceName(""), c.p.Plugin(hardware.HuaweiDevicePlugin).ResourceName)
			assert.Equal(t, map[string]string{"accelerator": c.accelerator}, c.p.NodeLabels())
			assert.Equal(t, []corev1.Toleration{{Key: string(c.plugin), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
				c.p.Tolerations())
			assert.Equal(t, c.coll, c.p.Collective().Name)
			assert.Equal(t, 8, c.p.MaxPerNode)
			assert.False(t, c.p.HasMIG())
			assert.False(t, c.p.OnChipRoCE)
			assert.True(t, c.p.Accelerated())
		})
	}
	assert.Equal(t, []hardware.HostMount{{Volume: "hygon-hyhal", Path: "/opt/hyhal", Type: corev1.HostPathDirectory}},
		hardware.HygonK100.HostMounts())
	assert.Empty(t, hardware.MetaXC500.HostMounts())
	assert.Empty(t, hardware.HygonK100.MountHost().HostMounts())
	assert.Len(t, hardware.HygonK100.HostMounts(), 1, "MountHost returns a copy")
}

func TestHAMiSlicingNames(t *testing.T) {
	cases := []struct {
		p    hardware.Profile
		want hardware.HAMiSlicing
	}{
		{hardware.HygonK100, hardware.HAMiSlicing{Count: "hygon.com/dcunum", Memory: "hygon.com/dcumem", MemoryUnitMiB: 1,
			Cores: "hygon.com/dcucores", CoreUnits: 100, DefaultCorePercent: 100, MinMemoryMiB: 1}},
		{hardware.CambriconMLU370, hardware.HAMiSlicing{Count: "cambricon.com/vmlu", Memory: "cambricon.com/mlu.smlu.vmemory",
			MemoryUnitMiB: 256, Cores: "cambricon.com/mlu.smlu.vcore", CoreUnits: 100, DefaultCorePercent: 100, MinMemoryMiB: 256}},
		{hardware.KunlunxinP800, hardware.HAMiSlicing{Count: "kunlunxin.com/vxpu", Memory: "kunlunxin.com/vxpu-memory", MemoryUnitMiB: 1,
			MemorySteps: []int64{24576, 49152, 98304}, RoundUp: true, MinMemoryMiB: 1, MultiDevice: true}},
		{hardware.MetaXC500, hardware.HAMiSlicing{Count: "metax-tech.com/sgpu", Memory: "metax-tech.com/vmemory", MemoryUnitMiB: 1024,
			Cores: "metax-tech.com/vcore", CoreUnits: 100, DefaultCorePercent: 100, MinMemoryMiB: 1024}},
		{hardware.MooreThreadsS4000, hardware.HAMiSlicing{Count: "mthreads.com/vgpu", Memory: "mthreads.com/sgpu-memory", MemoryUnitMiB: 512,
			Cores: "mthreads.com/sgpu-core", CoreUnits: 16, MemorySteps: []int64{2, 4, 8, 16, 32, 64, 96}, MinMemoryMiB: 1024}},
		{hardware.EnflameS60, hardware.HAMiSlicing{Memory: "enflame.com/gcu-memory", MemoryUnitMiB: 1,
			Cores: "enflame.com/gcu-core", CoreUnits: 100, MinMemoryMiB: 1024}},
		{hardware.IluvatarBIV150, hardware.HAMiSlicing{Count: "iluvatar.ai/BI-V150-vgpu", Memory: "iluvatar.ai/BI-V150.vMem", MemoryUnitMiB: 256,
			Cores: "iluvatar.ai/BI-V150.vCore", CoreUnits: 100, MinMemoryMiB: 256}},
	}
	for _, c := range cases {
		got, ok := c.p.HAMiSlicing()
		require.True(t, ok, c.p.Name)
		assert.Equal(t, c.want, got, c.p.Name)
	}
	for _, p := range []hardware.Profile{hardware.KunlunxinR200, hardware.H100, hardware.Ascend910B3, hardware.CPU} {
		_, ok := p.HAMiSlicing()
		assert.False(t, ok, p.Name)
	}
	s, _ := hardware.MooreThreadsS4000.HAMiSlicing()
	s.MemorySteps[0] = 1
	again, _ := hardware.MooreThreadsS4000.HAMiSlicing()
	assert.Equal(t, int64(2), again.MemorySteps[0], "HAMiSlicing returns a copy")
	assert.Len(t, hardware.HAMiCommit, 40)
}

// TestCatalogueValuesShareNothing is issue 10's leak: a caller changing the
// maps of its copy of hardware.H100 must not change what later jobs get.
func TestCatalogueValuesShareNothing(t *testing.T) {
	mine := hardware.H100
	mine.NodeLabels()["zone"] = "a"
	mine.Tolerations()[0].Key = "changed"
	mine.MIGProfiles()[0].Name = "changed"
	m, _ := mine.MIGProfile("1g.10gb")
	m.Placements[0] = 6
	mine = mine.SelectNodes(map[string]string{"zone": "b"})

	tmpl := baseTemplate()
	require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.H100, Accelerators: 1}, tmplPath))
	assert.Equal(t, map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}, tmpl.Spec.NodeSelector)
	assert.Equal(t, "nvidia.com/gpu", tmpl.Spec.Tolerations[0].Key)
	again, ok := hardware.H100.MIGProfile("1g.10gb")
	require.True(t, ok)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6}, again.Placements)
	assert.Equal(t, map[string]string{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "zone": "b"}, mine.NodeLabels())

	// Apply's output shares nothing with the profile either.
	tmpl.Spec.Tolerations[0].Key = "edited"
	assert.Equal(t, "nvidia.com/gpu", hardware.H100.Tolerations()[0].Key)
	looked, _ := hardware.Lookup("H100-SXM-80GB")
	looked.NodeLabels()["x"] = "y"
	assert.NotContains(t, hardware.H100.NodeLabels(), "x")
}

func TestLookupIgnoresCase(t *testing.T) {
	for _, name := range []string{"h100-sxm-80gb", "H100-SXM-80GB", "H100-sxm-80GB", " h100-sxm-80gb\n"} {
		p, ok := hardware.Lookup(name)
		require.True(t, ok, name)
		assert.Equal(t, "H100-SXM-80GB", p.Name)
	}
	p, ok := hardware.Lookup("mtt-s4000")
	require.True(t, ok)
	assert.Equal(t, hardware.MooreThreadsS4000, p)
	_, ok = hardware.Lookup("H100")
	assert.False(t, ok, "case-insensitive, not a prefix match")

	// The tables of a profile follow the same rule, and give back their
	// own spelling.
	m, ok := hardware.A100_80G.MIGProfile(" 3G.40GB")
	require.True(t, ok)
	assert.Equal(t, "3g.40gb", m.Name)
	v, ok := hardware.Ascend910B3.VNPUTemplate("VIR05_1C_16G")
	require.True(t, ok)
	assert.Equal(t, "vir05_1c_16g", v.Name)
	_, ok = hardware.A100_80G.MIGProfile("3g.41gb")
	assert.False(t, ok)
}

func TestRDMAOnCPUIsAnError(t *testing.T) {
	for _, c := range []struct {
		fabric hardware.Fabric
		want   []string
	}{
		{hardware.InfiniBand(), []string{`spec.template.fabric.kind: Invalid value: "infiniband": cpu-amd64 has no accelerators, so no collective library to carry over RDMA; use TCP or an accelerator profile`}},
		{hardware.RoCE(hardware.LegacyNCCL()), []string{
			`spec.template.fabric.kind: Invalid value: "roce": cpu-amd64 has no accelerators, so no collective library to carry over RDMA; use TCP or an accelerator profile`,
			`spec.template.fabric.gidIndex: Forbidden: cpu-amd64 has no accelerators; collective library settings do not apply`}},
		{hardware.TCP(hardware.HCCLBufferSize(10)), []string{
			`spec.template.fabric.hcclBufferSize: Forbidden: cpu-amd64 has no accelerators; collective library settings do not apply`}},
	} {
		tmpl := baseTemplate()
		errs := hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.CPU, Fabric: c.fabric}, tmplPath)
		assert.Equal(t, c.want, errStrings(errs))
		assert.Equal(t, baseTemplate(), tmpl, "template untouched on error")
	}
	tmpl := baseTemplate()
	require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.CPU, Fabric: hardware.TCP(hardware.SocketInterface("eth0"))}, tmplPath))
	assert.Empty(t, tmpl.Spec.Containers[0].Env, "no collective library on CPU")
	assert.Equal(t, "dshm", tmpl.Spec.Volumes[0].Name)
}

func TestDomesticCollectives(t *testing.T) {
	cases := []struct {
		p      hardware.Profile
		fabric hardware.Fabric
		env    []corev1.EnvVar
	}{
		{hardware.HygonK100, hardware.TCP(hardware.SocketInterface("eth0")), []corev1.EnvVar{
			{Name: "NCCL_IB_DISABLE", Value: "1"}, {Name: "NCCL_SOCKET_IFNAME", Value: "eth0"}, {Name: "NCCL_DEBUG", Value: "WARN"}}},
		{hardware.MetaXC500, hardware.RoCE(hardware.HCAs("xscale_0", "xscale_1"), hardware.SocketInterface("eth0"), hardware.GIDIndex(5)), []corev1.EnvVar{
			{Name: "MCCL_IB_HCA", Value: "xscale_0,xscale_1"}, {Name: "MCCL_SOCKET_IFNAME", Value: "eth0"}, {Name: "MCCL_IB_GID_INDEX", Value: "5"}}},
		{hardware.EnflameS60, hardware.TCP(hardware.SocketInterface("ens80f0np0")), []corev1.EnvVar{
			{Name: "ECCL_IB_DISABLE", Value: "1"}, {Name: "ECCL_SOCKET_IFNAME", Value: "ens80f0np0"}}},
		{hardware.KunlunxinP800, hardware.InfiniBand(hardware.SocketInterface("ens13np0")), []corev1.EnvVar{
			{Name: "BKCL_SOCKET_IFNAME", Value: "ens13np0"}}},
		{hardware.CambriconMLU370, hardware.TCP(), nil},
		{hardware.IluvatarBIV150, hardware.InfiniBand(hardware.GDRLevel("PIX")), []corev1.EnvVar{
			{Name: "NCCL_NET_GDR_LEVEL", Value: "PIX"}, {Name: "NCCL_DEBUG", Value: "WARN"}}},
	}
	for _, c := range cases {
		t.Run(c.p.Name, func(t *testing.T) {
			tmpl := baseTemplate()
			require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: c.p, Accelerators: 1, Fabric: c.fabric}, tmplPath))
			assert.Equal(t, c.env, tmpl.Spec.Containers[0].Env)
		})
	}
}

func TestDomesticFabricErrors(t *testing.T) {
	tmpl := baseTemplate()
	errs := hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.MooreThreadsS4000, Accelerators: 8,
		Fabric: hardware.InfiniBand(hardware.HCAs("mlx5_0"), hardware.GDRLevel("PHB"), hardware.NCCLDebug("INFO"),
			hardware.HCCLConnectTimeout(0), hardware.RDMASharedDevice(""))}, tmplPath)
	assert.Equal(t, []string{
		`spec.template.fabric.hcclConnectTimeout: Invalid value: "0s": must be between 2m0s and 2h0m0s`,
		`spec.template.fabric.hcclConnectTimeout: Forbidden: MTT-S4000 collectives use MCCL; HCCL settings do not apply`,
		`spec.template.fabric.hcas: Forbidden: MCCL has no known equivalent of NCCL's NCCL_IB_HCA; set the variable with Env, or its name with UseCollective`,
		`spec.template.fabric.gdrLevel: Forbidden: MCCL has no known equivalent of NCCL's NCCL_NET_GDR_LEVEL; set the variable with Env, or its name with UseCollective`,
		`spec.template.fabric.ncclDebug: Forbidden: MCCL has no known equivalent of NCCL's NCCL_DEBUG; set the variable with Env, or its name with UseCollective`,
		`spec.template.fabric.rdmaResource: Required value: an RDMA fabric needs an RDMA device resource (RDMASharedDevice or SRIOV)`,
	}, errStrings(errs))
	assert.Equal(t, baseTemplate(), tmpl)

	// UseCollective names the variables an image's library reads.
	c := hardware.MooreThreadsS4000.Collective()
	c.IBHCA, c.Debug = "MCCL_IB_HCA", "MCCL_DEBUG"
	p := hardware.MooreThreadsS4000.UseCollective(c)
	assert.Equal(t, "MCCL", hardware.MooreThreadsS4000.Collective().Name)
	assert.Empty(t, hardware.MooreThreadsS4000.Collective().IBHCA, "the catalogue keeps its default")
	require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: p, Accelerators: 8,
		Fabric: hardware.InfiniBand(hardware.HCAs("mlx5_0"), hardware.NCCLDebug("INFO"))}, tmplPath))
	assert.Equal(t, []corev1.EnvVar{{Name: "MCCL_IB_HCA", Value: "mlx5_0"}, {Name: "MCCL_DEBUG", Value: "INFO"}},
		tmpl.Spec.Containers[0].Env)
	assert.Equal(t, []corev1.Capability{"IPC_LOCK"}, tmpl.Spec.Containers[0].SecurityContext.Capabilities.Add)

	// Flavours of another vendor are refused.
	tmpl = baseTemplate()
	errs = hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.EnflameS60.Plugin(hardware.MIGMixed), Accelerators: 1}, tmplPath)
	assert.Equal(t, []string{
		`spec.template.profile.flavour: Unsupported value: "nvidia-mig-mixed": supported values: "vendor-device-plugin", "hami"`,
		`spec.template.profile.flavour: Invalid value: "nvidia-mig-mixed": S60 has no MIG; use vendor-device-plugin`,
		`spec.template.profile.resourceName: Required value: S60 has no resource name under flavour "nvidia-mig-mixed"; set one with Resource`,
	}, errStrings(errs))
}

func TestKunlunxinHAMiCounts(t *testing.T) {
	for _, n := range []int{1, 2, 4, 8} {
		tmpl := baseTemplate()
		assert.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.KunlunxinP800.Plugin(hardware.HAMi), Accelerators: n}, tmplPath))
	}
	tmpl := baseTemplate()
	errs := hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.KunlunxinP800.Plugin(hardware.HAMi), Accelerators: 3}, tmplPath)
	assert.Equal(t, []string{"spec.template.accelerators: Invalid value: 3: HAMi places 1, 2, 4 or 8 Kunlunxin XPUs per pod"}, errStrings(errs))
	assert.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.KunlunxinP800, Accelerators: 3}, tmplPath),
		"the vendor's own plugin has no such rule")
}

func TestClusterOthersFlavour(t *testing.T) {
	var defaults hardware.Cluster
	assert.Equal(t, hardware.HygonK100, defaults.Profile(hardware.HygonK100))
	hami := hardware.Cluster{Others: hardware.HAMi}
	p := hami.Profile(hardware.CambriconMLU370)
	assert.Equal(t, hardware.HAMi, p.Flavour)
	assert.Equal(t, corev1.ResourceName("cambricon.com/vmlu"), p.ResourceName)
	assert.Equal(t, hardware.NVIDIADevicePlugin, hami.Profile(hardware.H100).Flavour)
}

func TestVendorImages(t *testing.T) {
	img, err := hardware.HygonK100.Image(hardware.FrameworkVLLM)
	require.NoError(t, err)
	assert.Equal(t, "image.sourcefind.cn:5000/dcu/admin/base/vllm:0.9.2-ubuntu22.04-dtk25.04.2-py3.10", img)
	img, err = hardware.HygonZ100.Image(hardware.FrameworkPyTorch)
	require.NoError(t, err)
	assert.Equal(t, "image.sourcefind.cn:5000/dcu/admin/base/pytorch:2.1.0-ubuntu22.04-dtk24.04.2-py3.10", img)
	img, err = hardware.MetaXC500.Image(hardware.FrameworkVLLM)
	require.NoError(t, err)
	assert.Equal(t, "cr.metax-tech.com/public-ai-release/maca/vllm:maca.ai3.1.0.7-torch2.6-py310-ubuntu22.04-amd64", img)

	_, err = hardware.CambriconMLU370.Image(hardware.FrameworkVLLM)
	require.EqualError(t, err, "no vllm image for MLU370-X8 is known to cube: set one with UseImages or on the builder")
	_, err = hardware.MetaXC500.Image("jax")
	require.EqualError(t, err, `unknown framework "jax": use "pytorch" or "vllm"`)

	mine := hardware.CambriconMLU370.UseImages(hardware.Images{VLLM: "registry.example/vllm-mlu:1"})
	img, err = mine.Image(hardware.FrameworkVLLM)
	require.NoError(t, err)
	assert.Equal(t, "registry.example/vllm-mlu:1", img)
	assert.Equal(t, hardware.Images{}, hardware.CambriconMLU370.Images(), "the catalogue keeps its defaults")
	renamed := hardware.HygonK100
	renamed.Name = "my-dcu"
	assert.Equal(t, hardware.HygonK100.Images(), renamed.Images(), "a copy keeps the images")
}
