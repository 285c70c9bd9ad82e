package vgpu_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/vgpuspec"
	"github.com/cubestudio/cube/vgpu"
)

var specPath = field.NewPath("spec", "template")

func errStrings(errs field.ErrorList) []string {
	out := make([]string, len(errs))
	for i, e := range errs {
		out[i] = e.Error()
	}
	return out
}

func TestRequests(t *testing.T) {
	type res = map[corev1.ResourceName]int64
	cases := []struct {
		name      string
		spec      *vgpu.Spec
		resources res
		ann       map[string]string
		sel       map[string]string
	}{
		{"hami slice", vgpu.Slice(hardware.A100_80G).Memory("10Gi").Cores(30),
			res{"nvidia.com/gpu": 1, "nvidia.com/gpumem": 10240, "nvidia.com/gpucores": 30},
			map[string]string{"nvidia.com/use-gputype": "A100"}, nil},
		{"hami memory rounded up to MiB", vgpu.Slice(hardware.L4).Memory("3000M").Accelerators(2),
			res{"nvidia.com/gpu": 2, "nvidia.com/gpumem": 2862},
			map[string]string{"nvidia.com/use-gputype": "L4"}, nil},
		{"hami percentage", vgpu.Slice(hardware.T4).MemoryPercent(25),
			res{"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 25},
			map[string]string{"nvidia.com/use-gputype": "T4"}, nil},
		{"hami cores only", vgpu.Slice(hardware.H100).Cores(50),
			res{"nvidia.com/gpu": 1, "nvidia.com/gpucores": 50},
			map[string]string{"nvidia.com/use-gputype": "H100"}, nil},
		{"volcano", vgpu.Slice(hardware.A10).Memory("8Gi").Cores(25).Backend(vgpu.Volcano),
			res{"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory": 8192, "volcano.sh/vgpu-cores": 25},
			map[string]string{"nvidia.com/use-gputype": "A10"}, nil},
		{"volcano percentage", vgpu.Slice(hardware.A10).MemoryPercent(50).Backend(vgpu.Volcano),
			res{"volcano.sh/vgpu-number": 1, "volcano.sh/vgpu-memory-percentage": 50},
			map[string]string{"nvidia.com/use-gputype": "A10"}, nil},
		{"mig mixed", vgpu.MIG(hardware.A100_80G, "1g.10gb"),
			res{"nvidia.com/mig-1g.10gb": 1}, nil, nil},
		{"mig mixed media extension", vgpu.MIG(hardware.H200, "1g.18gb+me").Accelerators(1),
			res{"nvidia.com/mig-1g.18gb.me": 1}, nil, nil},
		{"mig single", vgpu.MIG(hardware.A100_40G, "1g.5gb").Strategy(vgpu.Single).Accelerators(2),
			res{"nvidia.com/gpu": 2}, nil,
			map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "nvidia.com/mig.strategy": "single"}},
		{"static vnpu", vgpu.VNPU(hardware.Ascend910B3, "vir05_1c_16g"),
			res{"huawei.com/Ascend910-5c.1cpu.16g": 1}, nil, nil},
		{"static vnpu 310P", vgpu.VNPU(hardware.Ascend310P3, "vir02_1c"),
			res{"huawei.com/Ascend310P-2c.1cpu": 1}, nil, nil},
		{"hami vnpu by template", vgpu.VNPU(hardware.Ascend910B2, "vir03_1c_8g").Backend(vgpu.HAMi),
			res{"huawei.com/Ascend910B2": 1, "huawei.com/Ascend910B2-memory": 8192}, nil, nil},
		{"hami vnpu from the profile's flavour", vgpu.VNPU(hardware.Ascend910B4.Plugin(hardware.HAMi), "vir10_3c_16g"),
			res{"huawei.com/Ascend910B4": 1, "huawei.com/Ascend910B4-memory": 16384}, nil, nil},
		{"ascend slice rounds up like HAMi", vgpu.Slice(hardware.Ascend910B3).Memory("2000Mi").Backend(vgpu.HAMi),
			res{"huawei.com/Ascend910B3": 1, "huawei.com/Ascend910B3-memory": 16384}, nil, nil},
		{"ascend slice by cores picks the bigger template", vgpu.Slice(hardware.Ascend910B3).Memory("1Gi").Cores(40).Backend(vgpu.HAMi),
			res{"huawei.com/Ascend910B3": 1, "huawei.com/Ascend910B3-memory": 32768}, nil, nil},
		{"ascend slice static", vgpu.Slice(hardware.Ascend910B4).Memory("12Gi"),
			res{"huawei.com/Ascend910-5c.1cpu.16g": 1}, nil, nil},
		{"ascend slice static 8g", vgpu.Slice(hardware.Ascend910B4).Memory("8Gi"),
			res{"huawei.com/Ascend910-5c.1cpu.8g": 1}, nil, nil},
		{"whole", vgpu.Whole(hardware.B200, 4),
			res{"nvidia.com/gpu": 4}, nil, nil},
		{"whole hami", vgpu.Whole(hardware.B200, 1).Backend(vgpu.HAMi),
			res{"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 100, "nvidia.com/gpucores": 100}, nil, nil},
		{"whole on a HAMi profile", vgpu.Whole(hardware.L40S.Plugin(hardware.HAMi), 2),
			res{"nvidia.com/gpu": 2, "nvidia.com/gpumem-percentage": 100, "nvidia.com/gpucores": 100}, nil, nil},
		{"whole Ascend under HAMi", vgpu.Whole(hardware.Ascend910B2.Plugin(hardware.HAMi), 8),
			res{"huawei.com/Ascend910B2": 8}, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, errs := vgpuspec.Of(c.spec).Request(specPath)
			require.Empty(t, errs)
			assert.Equal(t, c.resources, r.Resources)
			assert.Equal(t, c.ann, r.Annotations)
			assert.Equal(t, c.sel, r.NodeSelector)
		})
	}
}

func TestSpecApplyAfterHardware(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "x"}}}}
	require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: hardware.A100_40G.Plugin(hardware.MIGSingle),
		Fabric: hardware.TCP()}, specPath))
	s := vgpu.MIG(hardware.A100_40G, "3g.20gb").Strategy(vgpu.Single)
	require.Empty(t, vgpuspec.Of(s).Apply(&tmpl, "main", specPath))
	c := tmpl.Spec.Containers[0]
	assert.Equal(t, "1", qty(c.Resources.Limits["nvidia.com/gpu"]))
	assert.Equal(t, "1", qty(c.Resources.Requests["nvidia.com/gpu"]))
	assert.Equal(t, map[string]string{"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-3g.20gb", "nvidia.com/mig.strategy": "single"},
		tmpl.Spec.NodeSelector)
	assert.Equal(t, []corev1.EnvVar{{Name: "NCCL_IB_DISABLE", Value: "1"}, {Name: "NCCL_DEBUG", Value: "WARN"}}, c.Env)

	assert.Equal(t, []string{"spec.template.memory: Invalid value: \"90Gi\": more memory than a A100-SXM-80GB has (80Gi)"},
		errStrings(vgpuspec.Of(vgpu.Slice(hardware.A100_80G).Memory("90Gi")).Apply(&tmpl, "main", specPath)))
	assert.Equal(t, []string{`spec.template.spec.containers: Not found: "other"`},
		errStrings(vgpuspec.Of(vgpu.Slice(hardware.A100_80G).Memory("9Gi")).Apply(&tmpl, "other", specPath)))
}

func qty(q resource.Quantity) string { return q.String() }

func TestSpecErrors(t *testing.T) {
	cases := []struct {
		name string
		spec *vgpu.Spec
		want []string
	}{
		{"memory above the card", vgpu.Slice(hardware.T4).Memory("17Gi"),
			[]string{`spec.template.memory: Invalid value: "17Gi": more memory than a T4 has (15Gi)`}},
		{"memory not a quantity", vgpu.Slice(hardware.T4).Memory("ten gigs"),
			[]string{`spec.template.memory: Invalid value: "ten gigs": parse memory "ten gigs": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`}},
		{"memory not positive", vgpu.Slice(hardware.T4).Memory("-1Gi"),
			[]string{`spec.template.memory: Invalid value: "-1Gi": memory "-1Gi" must be positive`}},
		{"an empty memory is not compute only", vgpu.Slice(hardware.T4).Memory(" ").Cores(25),
			[]string{`spec.template.memory: Invalid value: " ": an empty quantity: give one ("10Gi"), or leave Memory out for a slice of compute only`}},
		{"memory below a MiB", vgpu.Slice(hardware.T4).Memory("1Ki"),
			[]string{`spec.template.memory: Invalid value: "1Ki": must be at least 1Mi`}},
		{"cores above 100", vgpu.Slice(hardware.L40S).Memory("1Gi").Cores(101),
			[]string{"spec.template.cores: Invalid value: 101: must be between 1 and 100"}},
		{"cores below 1", vgpu.Slice(hardware.L40S).Cores(0),
			[]string{"spec.template.cores: Invalid value: 0: must be between 1 and 100"}},
		{"memory percent out of range", vgpu.Slice(hardware.L40S).MemoryPercent(120),
			[]string{"spec.template.memoryPercent: Invalid value: 120: must be between 1 and 100"}},
		{"nothing asked", vgpu.Slice(hardware.L40S),
			[]string{"spec.template.memory: Required value: a slice needs Memory, MemoryPercent or Cores"}},
		{"volcano needs memory", vgpu.Slice(hardware.L40S).Cores(20).Backend(vgpu.Volcano),
			[]string{"spec.template.memory: Required value: a Volcano vGPU slice needs Memory or MemoryPercent"}},
		{"device plugin cannot share", vgpu.Slice(hardware.A100_80G).Memory("10Gi").Backend(vgpu.DevicePlugin),
			[]string{`spec.template.backend: Invalid value: "device-plugin": the device plugin cannot share a device; fractions need HAMi or Volcano`}},
		{"huawei backend on NVIDIA", vgpu.Slice(hardware.A100_80G).Memory("10Gi").Backend(vgpu.HuaweiStatic),
			[]string{`spec.template.backend: Unsupported value: "huawei-static": supported values: "hami", "volcano"`}},
		{"volcano cannot share an NPU", vgpu.Slice(hardware.Ascend910B3).Memory("10Gi").Backend(vgpu.Volcano),
			[]string{`spec.template.backend: Invalid value: "volcano": volcano cannot share an Ascend NPU; use HAMi or HuaweiStatic vNPU templates`}},
		{"unknown backend on Ascend", vgpu.Slice(hardware.Ascend910B3).Memory("10Gi").Backend("gpushare"),
			[]string{`spec.template.backend: Unsupported value: "gpushare": supported values: "hami", "huawei-static"`}},
		{"HAMi has no 910B1", vgpu.Slice(hardware.Ascend910B1).Memory("10Gi").Backend(vgpu.HAMi),
			[]string{`spec.template.backend: Invalid value: "hami": HAMi has no vNPU configuration for Ascend910B1`}},
		{"no template fits", vgpu.Slice(hardware.Ascend910B3).Memory("40Gi").Backend(vgpu.HAMi),
			[]string{`spec.template.memory: Invalid value: "40Gi": no hami vNPU template of Ascend910B3 fits 40Gi memory and 0% of the AI cores`}},
		{"static vnpu one per container", vgpu.Slice(hardware.Ascend910B3).Memory("8Gi").Accelerators(2),
			[]string{"spec.template.accelerators: Invalid value: 2: a static vNPU is requested one per container"}},
		{"slice on CPU", vgpu.Slice(hardware.CPU).Memory("1Gi"),
			[]string{`spec.template.profile: Invalid value: "cpu-amd64": a CPU profile has no devices to share`}},
		{"no profile", vgpu.Slice(hardware.Profile{}).Memory("1Gi"),
			[]string{"spec.template.profile: Required value: a hardware profile is required"}},
		{"too many devices", vgpu.Slice(hardware.H100).Memory("1Gi").Accelerators(9),
			[]string{"spec.template.accelerators: Invalid value: 9: more devices per pod than a H100-SXM-80GB node holds (8)"}},
		{"no devices", vgpu.Whole(hardware.H100, 0),
			[]string{"spec.template.accelerators: Invalid value: 0: must be at least 1"}},
		{"whole on volcano", vgpu.Whole(hardware.H100, 1).Backend(vgpu.Volcano),
			[]string{`spec.template.backend: Unsupported value: "volcano": supported values: "device-plugin", "hami"`}},
		{"MIG on a card without MIG", vgpu.MIG(hardware.L4, "1g.6gb"),
			[]string{`spec.template.mig: Invalid value: "1g.6gb": L4 has no MIG`}},
		{"MIG profile the card lacks", vgpu.MIG(hardware.A100_40G, "1g.10gb+me"),
			[]string{`spec.template.mig: Unsupported value: "1g.10gb+me": supported values: "1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"`}},
		{"MIG name malformed", vgpu.MIG(hardware.A100_40G, "3g-20gb"),
			[]string{`spec.template.mig: Invalid value: "3g-20gb": mig profile "3g-20gb": want <n>g.<m>gb`}},
		{"MIG media extension single", vgpu.MIG(hardware.A100_40G, "1g.5gb+me").Strategy(vgpu.Single),
			[]string{`spec.template.mig: Invalid value: "1g.5gb+me": media-extension profiles are not exposed under the single strategy`}},
		{"MIG strategy and backend", vgpu.MIG(hardware.A100_40G, "1g.5gb").Strategy("split").Backend(vgpu.HAMi),
			[]string{`spec.template.backend: Unsupported value: "hami": supported values: "device-plugin"`,
				`spec.template.strategy: Unsupported value: "split": supported values: "mixed", "single"`}},
		{"template the chip lacks", vgpu.VNPU(hardware.Ascend910B4, "vir12_3c_32g"),
			[]string{`spec.template.template: Unsupported value: "vir12_3c_32g": supported values: "vir05_1c_8g", "vir05_1c_16g", "vir10_3c_16g", "vir10_3c_16g_nm", "vir10_4c_16g_m", "vir10_3c_32g"`}},
		{"template HAMi lacks", vgpu.VNPU(hardware.Ascend910B3, "vir05_1c_8g").Backend(vgpu.HAMi),
			[]string{`spec.template.template: Unsupported value: "vir05_1c_8g": supported values: "vir05_1c_16g", "vir10_3c_32g"`}},
		{"template only HAMi has", vgpu.VNPU(hardware.Ascend910B2, "vir03_1c_8g"),
			[]string{`spec.template.template: Unsupported value: "vir03_1c_8g": supported values: "vir06_1c_16g", "vir12_3c_32g"`}},
		{"template malformed", vgpu.VNPU(hardware.Ascend910B2, "virtual"),
			[]string{`spec.template.template: Invalid value: "virtual": vnpu template "virtual": AI cores must be a positive number`}},
		{"vnpu on NVIDIA", vgpu.VNPU(hardware.H100, "vir05_1c_16g"),
			[]string{`spec.template.profile: Invalid value: "H100-SXM-80GB": vNPU templates are for Ascend NPUs`}},
		{"vnpu with memory", vgpu.VNPU(hardware.Ascend910B3, "vir05_1c_16g").Memory("4Gi"),
			[]string{"spec.template.memory: Forbidden: a vNPU template fixes memory and AI cores; use Slice to size by memory"}},
		{"vnpu on volcano", vgpu.VNPU(hardware.Ascend910B3, "vir05_1c_16g").Backend(vgpu.Volcano),
			[]string{`spec.template.backend: Invalid value: "volcano": volcano cannot share an Ascend NPU; use HAMi or HuaweiStatic`}},
		{"vnpu HAMi 910B1", vgpu.VNPU(hardware.Ascend910B1, "vir06_1c_16g").Backend(vgpu.HAMi),
			[]string{`spec.template.backend: Invalid value: "hami": HAMi has no vNPU configuration for Ascend910B1`}},
		{"static vnpu devices", vgpu.VNPU(hardware.Ascend910B1, "vir06_1c_16g").Accelerators(2),
			[]string{"spec.template.accelerators: Invalid value: 2: a static vNPU is requested one per container"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, errStrings(vgpuspec.Of(c.spec).Validate(specPath)))
			_, errs := vgpuspec.Of(c.spec).Request(specPath)
			assert.Equal(t, c.want, errStrings(errs))
			assert.Zero(t, vgpuspec.Of(c.spec).MemoryBytes())
		})
	}
	var nilSpec *vgpu.Spec
	assert.Equal(t, []string{"spec.template: Required value: accelerator spec must not be nil"}, errStrings(vgpuspec.Of(nilSpec).Validate(specPath)))
	assert.Equal(t, "<nil>", nilSpec.String())
}

func TestSpecAccessors(t *testing.T) {
	s := vgpu.Slice(hardware.A100_80G).Memory("10Gi").Cores(30).Accelerators(2)
	assert.Equal(t, "A100-SXM-80GB slice 10Gi 30% ×2", s.String())
	assert.Equal(t, vgpu.KindSlice, vgpu.Kind(vgpuspec.Of(s).Kind()))
	assert.Equal(t, 2, vgpuspec.Of(s).Count())
	assert.Equal(t, vgpu.HAMi, vgpu.Backend(vgpuspec.Of(s).Backend()))
	assert.Equal(t, int64(10)<<30, vgpuspec.Of(s).MemoryBytes())
	assert.Equal(t, "A100-SXM-80GB", vgpuspec.Of(s).Profile().Name)
	p := vgpuspec.Of(s).Profile()
	p.NodeLabels()["x"] = "y"
	assert.NotContains(t, vgpuspec.Of(s).Profile().NodeLabels(), "x", "Profile returns a copy")

	m := vgpu.MIG(hardware.A100_80G, "3g.40gb")
	assert.Equal(t, "3g.40gb", vgpuspec.Of(m).MIGProfile())
	assert.Equal(t, int64(40)<<30, vgpuspec.Of(m).MemoryBytes())
	assert.Equal(t, vgpu.DevicePlugin, vgpu.Backend(vgpuspec.Of(m).Backend()))
	assert.Equal(t, "A100-SXM-80GB mig 3g.40gb", m.String())

	v := vgpu.VNPU(hardware.Ascend910B3, "vir10_3c_32g")
	assert.Equal(t, "vir10_3c_32g", vgpuspec.Of(v).Template())
	assert.Equal(t, vgpu.HuaweiStatic, vgpu.Backend(vgpuspec.Of(v).Backend()))
	assert.Equal(t, "Ascend910B3 vnpu vir10_3c_32g", v.String())

	a := vgpu.Slice(hardware.Ascend910B3).MemoryPercent(10).Backend(vgpu.HAMi)
	assert.Equal(t, "vir05_1c_16g", vgpuspec.Of(a).Template())
	assert.Equal(t, int64(16384)<<20, vgpuspec.Of(a).MemoryBytes())
	assert.Equal(t, "", vgpuspec.Of(vgpu.Slice(hardware.H100).Memory("1Gi")).Template())
	assert.Equal(t, "B200-SXM-180GB whole×2", vgpu.Whole(hardware.B200, 2).String())
	assert.Equal(t, vgpu.HuaweiStatic, vgpu.Backend(vgpuspec.Of(vgpu.Slice(hardware.Ascend910B3)).Backend()))
	assert.Equal(t, vgpu.HAMi, vgpu.Backend(vgpuspec.Of(vgpu.Slice(hardware.Ascend910B3.Plugin(hardware.HAMi))).Backend()))
}

func TestParsers(t *testing.T) {
	c, gb, me, err := vgpu.ParseMIGProfile("7g.141gb")
	require.NoError(t, err)
	assert.Equal(t, []any{7, 141, false}, []any{c, gb, me})
	_, _, me, err = vgpu.ParseMIGProfile("1g.10gb+me")
	require.NoError(t, err)
	assert.True(t, me)
	for _, bad := range []string{"", "8g.10gb", "0g.5gb", "1g.0gb", "1g.gb", "g.5gb", "1g.5", "1g.5gb+mee", "12345g.1gb"} {
		_, _, _, err := vgpu.ParseMIGProfile(bad)
		assert.Error(t, err, bad)
	}
	tp, err := vgpu.ParseTemplate("vir10_4c_16g_m")
	require.NoError(t, err)
	assert.Equal(t, hardware.VNPUTemplate{Name: "vir10_4c_16g_m", AICores: 10, AICPUs: 4, MemoryMiB: 16384, Media: "dvpp"}, tp)
	tp, err = vgpu.ParseTemplate("vir04_3c_ndvpp")
	require.NoError(t, err)
	assert.Equal(t, hardware.VNPUTemplate{Name: "vir04_3c_ndvpp", AICores: 4, AICPUs: 3, Media: "ndvpp"}, tp)
	// As the catalogue's look-ups (Profile.VNPUTemplate, MIGProfile) ignore
	// case and surrounding space, so do the parsers: a name VNPU accepts
	// parses (FuzzSlice found "vir05_1C_16g" accepted by one, refused by
	// the other). Name is the drivers' spelling.
	tp, err = vgpu.ParseTemplate(" VIR05_1C_16G ")
	require.NoError(t, err)
	assert.Equal(t, hardware.VNPUTemplate{Name: "vir05_1c_16g", AICores: 5, AICPUs: 1, MemoryMiB: 16384}, tp)
	_, err = vgpu.ParseTemplate("VIR05_X")
	assert.EqualError(t, err, `vnpu template "VIR05_X": unexpected part "x"`, "the error quotes the name as given")
	compute, gb, me, err := vgpu.ParseMIGProfile(" 3G.40GB+ME")
	require.NoError(t, err)
	assert.Equal(t, []any{3, 40, true}, []any{compute, gb, me})
	for bad, why := range map[string]string{
		"vir":             "AI cores must be a positive number",
		"vir00":           "AI cores must be a positive number",
		"abc05":           "want vir<cores>[_<n>c][_<n>g][_m|_nm]",
		"vir05_0c":        "AI CPUs must be a positive number",
		"vir05_0g":        "memory must be a positive number of GB",
		"vir05_16g_1c":    `unexpected part "1c"`,
		"vir05_1c_16g_x":  `unexpected part "x"`,
		"vir05_m_nm":      `unexpected part "nm"`,
		"vir05_1c_16g_":   `unexpected part ""`,
		"vir123456_1c_8g": "AI cores must be a positive number",
	} {
		_, err := vgpu.ParseTemplate(bad)
		require.Error(t, err, bad)
		assert.Equal(t, `vnpu template "`+bad+`": `+why, err.Error())
	}
}
