package vgpu_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/golden"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/internal/vgpuspec"
	"github.com/cubestudio/cube/vgpu"
)

type resources = map[corev1.ResourceName]int64

// vendorSlices are the HAMi slices of the other vendors' cards, with the
// resources HAMi's device code (hardware.HAMiCommit) reads from them.
func vendorSlices() []struct {
	name string
	spec *vgpu.Spec
	want resources
} {
	return []struct {
		name string
		spec *vgpu.Spec
		want resources
	}{
		{"hygon-k100-memory-cores", vgpu.Slice(hardware.HygonK100).Memory("2000Mi").Cores(60),
			resources{"hygon.com/dcunum": 1, "hygon.com/dcumem": 2000, "hygon.com/dcucores": 60}},
		{"hygon-z100-percent", vgpu.Slice(hardware.HygonZ100).MemoryPercent(25),
			resources{"hygon.com/dcunum": 1, "hygon.com/dcumem": 8192}},
		{"hygon-k100-cores-only", vgpu.Slice(hardware.HygonK100).Cores(30),
			resources{"hygon.com/dcunum": 1, "hygon.com/dcucores": 30}},
		{"cambricon-mlu370", vgpu.Slice(hardware.CambriconMLU370).Memory("5Gi").Cores(10),
			resources{"cambricon.com/vmlu": 1, "cambricon.com/mlu.smlu.vmemory": 20, "cambricon.com/mlu.smlu.vcore": 10}},
		{"cambricon-mlu590-rounds-to-256mi", vgpu.Slice(hardware.CambriconMLU590).Memory("1000Mi"),
			resources{"cambricon.com/vmlu": 1, "cambricon.com/mlu.smlu.vmemory": 4}},
		{"kunlunxin-p800-quarter", vgpu.Slice(hardware.KunlunxinP800).Memory("20Gi"),
			resources{"kunlunxin.com/vxpu": 1, "kunlunxin.com/vxpu-memory": 24576}},
		{"kunlunxin-p800-halves", vgpu.Slice(hardware.KunlunxinP800).Memory("30Gi").Accelerators(2),
			resources{"kunlunxin.com/vxpu": 2, "kunlunxin.com/vxpu-memory": 49152}},
		{"metax-c500-gib", vgpu.Slice(hardware.MetaXC500).Memory("4Gi").Cores(60),
			resources{"metax-tech.com/sgpu": 1, "metax-tech.com/vmemory": 4, "metax-tech.com/vcore": 60}},
		{"metax-c500-rounds-to-gib", vgpu.Slice(hardware.MetaXC500).Memory("2500Mi"),
			resources{"metax-tech.com/sgpu": 1, "metax-tech.com/vmemory": 3}},
		{"mthreads-s4000-legal-size", vgpu.Slice(hardware.MooreThreadsS4000).Memory("5Gi").Cores(50),
			resources{"mthreads.com/vgpu": 1, "mthreads.com/sgpu-memory": 16, "mthreads.com/sgpu-core": 8}},
		{"enflame-s60", vgpu.Slice(hardware.EnflameS60).Memory("20Gi").Cores(40),
			resources{"enflame.com/gcu-memory": 20480, "enflame.com/gcu-core": 40}},
		{"iluvatar-bi-v150", vgpu.Slice(hardware.IluvatarBIV150).Memory("16Gi").Cores(50),
			resources{"iluvatar.ai/BI-V150-vgpu": 1, "iluvatar.ai/BI-V150.vMem": 64, "iluvatar.ai/BI-V150.vCore": 50}},
		{"iluvatar-mr-v100", vgpu.Slice(hardware.IluvatarMRV100).Memory("3Gi"),
			resources{"iluvatar.ai/MR-V100-vgpu": 1, "iluvatar.ai/MR-V100.vMem": 12}},
		{"whole-hygon-hami", vgpu.Whole(hardware.HygonK100, 2).Backend(vgpu.HAMi),
			resources{"hygon.com/dcunum": 2}},
		{"whole-iluvatar-hami", vgpu.Whole(hardware.IluvatarMRV100.Plugin(hardware.HAMi), 1),
			resources{"iluvatar.ai/MR-V100-vgpu": 1, "iluvatar.ai/MR-V100.vCore": 100}},
		{"whole-cambricon-plugin", vgpu.Whole(hardware.CambriconMLU370, 4),
			resources{"cambricon.com/mlu": 4}},
		{"whole-mthreads-hami", vgpu.Whole(hardware.MooreThreadsS4000.Plugin(hardware.HAMi), 1),
			resources{"mthreads.com/vgpu": 1}},
		{"whole-ascend-hami-backend", vgpu.Whole(hardware.Ascend910B3, 2).Backend(vgpu.HAMi),
			resources{"huawei.com/Ascend910B3": 2}},
	}
}

func TestVendorSliceRequests(t *testing.T) {
	for _, c := range vendorSlices() {
		t.Run(c.name, func(t *testing.T) {
			r, errs := vgpuspec.Of(c.spec).Request(specPath)
			require.Empty(t, errs)
			assert.Equal(t, c.want, r.Resources)
			assert.Nil(t, r.Annotations)
			assert.Nil(t, r.NodeSelector)
		})
	}
}

func TestVendorSliceMemory(t *testing.T) {
	const mi = int64(1) << 20
	cases := []struct {
		spec *vgpu.Spec
		want int64
	}{
		{vgpu.Slice(hardware.KunlunxinP800).Memory("20Gi"), 24576 * mi},
		{vgpu.Slice(hardware.KunlunxinP800).Memory("50Gi"), 98304 * mi},
		{vgpu.Slice(hardware.MooreThreadsS4000).Memory("5Gi"), 16 * 512 * mi},
		{vgpu.Slice(hardware.HygonK100).Cores(30), hardware.HygonK100.MemoryBytes},
		{vgpu.Slice(hardware.MetaXC500).Memory("2500Mi"), 3 << 30},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, vgpuspec.Of(c.spec).MemoryBytes(), c.spec.String())
	}
}

func TestVendorSliceErrors(t *testing.T) {
	cases := []struct {
		name string
		spec *vgpu.Spec
		want []string
	}{
		{"hygon slices of two devices", vgpu.Slice(hardware.HygonK100).Memory("2Gi").Accelerators(2),
			[]string{"spec.template.accelerators: Invalid value: 2: HAMi shares one DCU-K100-AI per container; ask for whole devices to use several"}},
		{"kunlunxin cores", vgpu.Slice(hardware.KunlunxinP800).Memory("20Gi").Cores(50),
			[]string{"spec.template.cores: Forbidden: HAMi derives P800 compute from memory; size the slice with Memory"}},
		{"kunlunxin R200 has no vXPU", vgpu.Slice(hardware.KunlunxinR200).Memory("8Gi"),
			[]string{`spec.template.profile: Invalid value: "R200": HAMi cannot share a R200; request whole devices`}},
		{"moore threads below 1Gi", vgpu.Slice(hardware.MooreThreadsS4000).Memory("100Mi"),
			[]string{`spec.template.memory: Invalid value: "100Mi": a MTT-S4000 slice needs at least 1Gi`}},
		{"enflame below 1Gi", vgpu.Slice(hardware.EnflameS60).Memory("512Mi"),
			[]string{`spec.template.memory: Invalid value: "512Mi": a S60 slice needs at least 1Gi`}},
		{"cambricon on volcano", vgpu.Slice(hardware.CambriconMLU370).Memory("2Gi").Backend(vgpu.Volcano),
			[]string{`spec.template.backend: Unsupported value: "volcano": supported values: "hami"`}},
		{"metax on the device plugin", vgpu.Slice(hardware.MetaXC500).Memory("2Gi").Backend(vgpu.DevicePlugin),
			[]string{`spec.template.backend: Invalid value: "device-plugin": the device plugin cannot share a device; fractions need HAMi`}},
		{"hygon more memory than the card", vgpu.Slice(hardware.HygonK100).Memory("70Gi"),
			[]string{`spec.template.memory: Invalid value: "70Gi": more memory than a DCU-K100-AI has (64Gi)`}},
		{"mig on a C500", vgpu.MIG(hardware.MetaXC500, "1g.8gb"),
			[]string{`spec.template.mig: Invalid value: "1g.8gb": C500 has no MIG`}},
		{"vnpu on a P800", vgpu.VNPU(hardware.KunlunxinP800, "vir05_1c_16g"),
			[]string{`spec.template.profile: Invalid value: "P800": vNPU templates are for Ascend NPUs`}},
		{"whole on volcano", vgpu.Whole(hardware.EnflameS60, 1).Backend(vgpu.Volcano),
			[]string{`spec.template.backend: Unsupported value: "volcano": supported values: "device-plugin", "hami"`}},
		{"whole 910B1 on HAMi", vgpu.Whole(hardware.Ascend910B1, 1).Backend(vgpu.HAMi),
			[]string{`spec.template.backend: Invalid value: "hami": HAMi has no resource name for Ascend910B1`}},
		{"nothing asked", vgpu.Slice(hardware.IluvatarBIV150),
			[]string{"spec.template.memory: Required value: a slice needs Memory, MemoryPercent or Cores"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errs := vgpuspec.Of(c.spec).Request(specPath)
			assert.Equal(t, c.want, errStrings(errs))
			assert.Zero(t, vgpuspec.Of(c.spec).MemoryBytes())
		})
	}
}

// TestPackVendorSlices packs HAMi slices of the other vendors: Kunlunxin
// quarters fill a P800 four at a time, and Hygon slices without Cores take
// the whole compute (HAMi's default of 100), so one fits per DCU.
func TestPackVendorSlices(t *testing.T) {
	var inv hardware.Inventory
	inv.Add("xpu-0", hardware.KunlunxinP800, 2)
	inv.Add("dcu-0", hardware.HygonK100, 2)
	var ds []vgpu.Demand
	for i := 0; i < 5; i++ {
		ds = append(ds, vgpu.Demand{Name: fmt.Sprintf("xpu-%d", i), Spec: vgpu.Slice(hardware.KunlunxinP800).Memory("16Gi")})
	}
	for i := 0; i < 3; i++ {
		ds = append(ds, vgpu.Demand{Name: fmt.Sprintf("dcu-%d", i), Spec: vgpu.Slice(hardware.HygonK100).Memory("4Gi")})
	}
	plan := pack(t, inv, ds, vgpu.Planner)
	perDevice := map[string]int{}
	for _, a := range plan.Assignments {
		require.Len(t, a.Devices, 1)
		perDevice[fmt.Sprintf("%s/%d", a.Node, a.Devices[0])]++
	}
	assert.Equal(t, map[string]int{"xpu-0/0": 4, "xpu-0/1": 1, "dcu-0/0": 1, "dcu-0/1": 1}, perDevice)
	require.Len(t, plan.Unplaced, 1)
	assert.Equal(t, "dcu-2", plan.Unplaced[0].Name)

	// With Cores the DCU slices share a device.
	ds = ds[:5]
	for i := 0; i < 3; i++ {
		ds = append(ds, vgpu.Demand{Name: fmt.Sprintf("dcu-%d", i), Spec: vgpu.Slice(hardware.HygonK100).Memory("4Gi").Cores(30)})
	}
	plan = pack(t, inv, ds, vgpu.Planner)
	assert.Empty(t, plan.Unplaced)
}

// renderVendorSlice renders a slice the way the pod settings do: the
// profile through hardware.Apply with Count 0, then the slice.
func renderVendorSlice(t *testing.T, s *vgpu.Spec) corev1.PodTemplateSpec {
	t.Helper()
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{
		Containers:    []corev1.Container{{Name: "main", Image: "registry.example/serve:1"}},
		RestartPolicy: corev1.RestartPolicyNever,
	}}
	require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: vgpuspec.Of(s).Profile()}, specPath), s.String())
	require.Empty(t, vgpuspec.Of(s).Apply(&tmpl, "main", specPath), s.String())
	return tmpl
}

func TestVendorSlicesGolden(t *testing.T) {
	for _, c := range vendorSlices() {
		t.Run(c.name, func(t *testing.T) {
			out, err := yaml.Marshal(renderVendorSlice(t, c.spec))
			require.NoError(t, err)
			golden.Assert(t, "vendor-"+c.name+".golden", out)
		})
	}
}

// TestVendorSlicesOnAPIServer creates every vendor slice's pod with strict
// validation and checks the server kept the HAMi resources.
func TestVendorSlicesOnAPIServer(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	for i, c := range vendorSlices() {
		tmpl := renderVendorSlice(t, c.spec)
		pod := &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("vendor-%02d", i), Labels: tmpl.Labels, Annotations: tmpl.Annotations},
			Spec:       tmpl.Spec,
		}
		require.NoError(t, env.CreateStrict(t.Context(), pod), c.name)
		for name, n := range c.want {
			got := pod.Spec.Containers[0].Resources.Limits[name]
			assert.Equal(t, n, got.Value(), "%s %s", c.name, name)
		}
		assert.Equal(t, tmpl.Spec.NodeSelector, pod.Spec.NodeSelector, c.name)
	}
}

func TestWriteSVG(t *testing.T) {
	var inv hardware.Inventory
	inv.Add("a100", hardware.A100_80G, 3).Add("ascend", hardware.Ascend910B3, 1)
	ds := []vgpu.Demand{
		{Name: "chat", Spec: vgpu.Slice(hardware.A100_80G).Memory("20Gi").Cores(30)},
		{Name: "nb<1>", Spec: vgpu.Slice(hardware.A100_80G).Memory("8Gi").Cores(10)},
		{Name: "embed", Spec: vgpu.MIG(hardware.A100_80G, "3g.40gb")},
		{Name: "rerank", Spec: vgpu.MIG(hardware.A100_80G, "2g.20gb")},
		{Name: "tiny", Spec: vgpu.MIG(hardware.A100_80G, "1g.10gb")},
		{Name: "train", Spec: vgpu.Whole(hardware.A100_80G, 1)},
		{Name: "npu", Spec: vgpu.VNPU(hardware.Ascend910B3, "vir10_3c_32g")},
	}
	plan, err := vgpu.Pack(inv, ds, vgpu.Planner)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, plan.WriteSVG(&buf))
	golden.Assert(t, "plan.svg", buf.Bytes())

	// Well-formed XML, one row per device, one segment per slice.
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	rects, titles := 0, 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "rect":
				rects++
			case "title":
				titles++
			}
		}
	}
	assert.Equal(t, len(ds), titles)
	assert.Equal(t, 1+2*len(plan.Devices)+len(ds), rects, "background, bar and compute bar per device, a segment per slice")
	assert.Contains(t, buf.String(), "nb&lt;1&gt;")
	assert.True(t, strings.HasPrefix(buf.String(), `<svg xmlns="http://www.w3.org/2000/svg"`))

	assert.Error(t, plan.WriteSVG(failingWriter{}))
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
