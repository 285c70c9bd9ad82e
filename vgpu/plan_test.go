package vgpu_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math/bits"
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

func inventory(p hardware.Profile, nodes, perNode int) hardware.Inventory {
	var inv hardware.Inventory
	for i := 0; i < nodes; i++ {
		inv.Add(fmt.Sprintf("%s-%d", p.Name, i), p, perNode)
	}
	return inv
}

func demands(specs ...*vgpu.Spec) []vgpu.Demand {
	out := make([]vgpu.Demand, len(specs))
	for i, s := range specs {
		out[i] = vgpu.Demand{Name: fmt.Sprintf("d%d", i), Spec: s}
	}
	return out
}

func pack(t *testing.T, inv hardware.Inventory, ds []vgpu.Demand, policy vgpu.Policy, opts ...vgpu.PackOption) *vgpu.Plan {
	t.Helper()
	plan, err := vgpu.Pack(inv, ds, policy, opts...)
	require.NoError(t, err)
	checkPlan(t, inv, ds, plan, opts...)
	return plan
}

// checkPlan verifies what every plan must hold: capacities respected, MIG
// instances on distinct memory slices within compute, multi-device demands
// on one node, every demand placed or explained exactly once.
func checkPlan(t *testing.T, inv hardware.Inventory, ds []vgpu.Demand, plan *vgpu.Plan, opts ...vgpu.PackOption) {
	t.Helper()
	seen := map[int]bool{}
	for _, a := range plan.Assignments {
		require.False(t, seen[a.Demand], "demand %d twice", a.Demand)
		seen[a.Demand] = true
		assert.Equal(t, vgpuspec.Of(ds[a.Demand].Spec).Count(), len(a.Devices), a.Name)
		distinct := map[int]bool{}
		for _, d := range a.Devices {
			assert.False(t, distinct[d], "%s twice on one device", a.Name)
			distinct[d] = true
		}
	}
	for _, u := range plan.Unplaced {
		require.False(t, seen[u.Demand], "demand %d placed and unplaced", u.Demand)
		seen[u.Demand] = true
		assert.NotEmpty(t, u.Reason)
	}
	assert.Len(t, seen, len(ds))
	used := 0
	for _, d := range plan.Devices {
		if d.Mode == "" {
			assert.Empty(t, d.Slices)
			continue
		}
		used++
		assert.LessOrEqual(t, d.MemoryReserved, d.MemoryBytes, "%s/%d", d.Node, d.Index)
		assert.LessOrEqual(t, d.ComputeReserved, vgpu.ComputeUnits, "%s/%d", d.Node, d.Index)
		var mask uint8
		compute := 0
		for _, s := range d.Slices {
			assert.Equal(t, d.Mode == vgpu.KindWhole, s.Kind == vgpu.KindWhole || plan.Policy == vgpu.WholeDevice)
			if d.Mode == vgpu.KindMIG {
				m := uint8(((1 << s.MIGSlices) - 1) << s.MIGStart)
				assert.Zero(t, mask&m, "MIG instances overlap on %s/%d", d.Node, d.Index)
				mask |= m
				compute += s.ComputeReserved
			}
		}
		if d.Mode == vgpu.KindMIG {
			assert.LessOrEqual(t, compute, vgpu.ComputeUnits)
			assert.LessOrEqual(t, bits.OnesCount8(mask), hardware.MIGMemorySlices)
		}
		if d.Mode == vgpu.KindSlice && len(opts) == 0 {
			assert.LessOrEqual(t, len(d.Slices), vgpu.DefaultMaxShares)
		}
		if d.Mode == vgpu.KindWhole {
			assert.Len(t, d.Slices, 1)
		}
	}
	assert.Equal(t, used, plan.Summary.DevicesUsed)
	assert.Equal(t, len(plan.Assignments), plan.Summary.Placed)
	assert.GreaterOrEqual(t, plan.Summary.DevicesUsed, plan.Summary.LowerBound)
}

func TestPackHAMiHandCases(t *testing.T) {
	inv := inventory(hardware.A100_80G, 1, 8)
	// Four 20 GiB / 25 % slices fill one device exactly.
	plan := pack(t, inv, demands(
		vgpu.Slice(hardware.A100_80G).Memory("20Gi").Cores(25),
		vgpu.Slice(hardware.A100_80G).Memory("20Gi").Cores(25),
		vgpu.Slice(hardware.A100_80G).Memory("20Gi").Cores(25),
		vgpu.Slice(hardware.A100_80G).Memory("20Gi").Cores(25),
	), vgpu.Planner)
	assert.Equal(t, 1, plan.Summary.DevicesUsed)
	assert.Equal(t, 1, plan.Summary.LowerBound)
	assert.InDelta(t, 1.0, plan.Summary.MemoryUtilisation, 1e-9)
	assert.InDelta(t, 1.0, plan.Summary.ComputeUtilisation, 1e-9)
	assert.Zero(t, plan.Summary.StrandedMemory)

	// Two 50 GiB slices cannot share 80 GiB.
	plan = pack(t, inv, demands(
		vgpu.Slice(hardware.A100_80G).Memory("50Gi").Cores(10),
		vgpu.Slice(hardware.A100_80G).Memory("50Gi").Cores(10),
	), vgpu.Planner)
	assert.Equal(t, 2, plan.Summary.DevicesUsed)
	assert.Equal(t, 2, plan.Summary.LowerBound)
	assert.Equal(t, int64(60)<<30, plan.Summary.StrandedMemory)
	assert.InDelta(t, 60.0/160, plan.Summary.Fragmentation, 1e-9)

	// Compute binds: three 10 GiB slices at 40 % need two devices.
	plan = pack(t, inv, demands(
		vgpu.Slice(hardware.A100_80G).Memory("10Gi").Cores(40),
		vgpu.Slice(hardware.A100_80G).Memory("10Gi").Cores(40),
		vgpu.Slice(hardware.A100_80G).Memory("10Gi").Cores(40),
	), vgpu.Planner)
	assert.Equal(t, 2, plan.Summary.DevicesUsed)
	assert.Equal(t, 2, plan.Summary.LowerBound)

	// First-fit in arrival order strands room that the planner fills:
	// 60+30 / 60+30 arrive as 60, 60, 30, 30 → best-fit pairs them.
	ds := demands(
		vgpu.Slice(hardware.A100_80G).Memory("50Gi").Cores(50),
		vgpu.Slice(hardware.A100_80G).Memory("30Gi").Cores(50),
		vgpu.Slice(hardware.A100_80G).Memory("50Gi").Cores(50),
		vgpu.Slice(hardware.A100_80G).Memory("30Gi").Cores(50),
	)
	assert.Equal(t, 2, pack(t, inv, ds, vgpu.Planner).Summary.DevicesUsed)
	assert.Equal(t, 4, pack(t, inv, ds, vgpu.WholeDevice).Summary.DevicesUsed)
	assert.Equal(t, 4, pack(t, inv, ds, vgpu.Spread).Summary.DevicesUsed)

	// HAMi's deviceSplitCount caps shares per device.
	var small []*vgpu.Spec
	for i := 0; i < 12; i++ {
		small = append(small, vgpu.Slice(hardware.A100_80G).Memory("1Gi").Cores(1))
	}
	assert.Equal(t, 2, pack(t, inv, demands(small...), vgpu.Planner).Summary.DevicesUsed)
	plan, err := vgpu.Pack(inv, demands(small...), vgpu.Planner, vgpu.MaxShares(0))
	require.NoError(t, err)
	assert.Equal(t, 1, plan.Summary.DevicesUsed)
}

func TestPackMIGGeometry(t *testing.T) {
	inv := inventory(hardware.A100_80G, 1, 4)
	mig := func(p string) *vgpu.Spec { return vgpu.MIG(hardware.A100_80G, p) }

	// 4g + 3g fill a GPU; a second 4g does not fit beside the first.
	plan := pack(t, inv, demands(mig("4g.40gb"), mig("3g.40gb"), mig("4g.40gb")), vgpu.Planner)
	assert.Equal(t, 2, plan.Summary.DevicesUsed)

	// Two 3g instances take all 8 memory slices: a 1g needs another GPU
	// although one compute slice is free.
	plan = pack(t, inv, demands(mig("3g.40gb"), mig("3g.40gb"), mig("1g.10gb")), vgpu.Planner)
	assert.Equal(t, 2, plan.Summary.DevicesUsed)
	starts := map[int]bool{}
	for _, a := range plan.Assignments[:2] {
		starts[a.MIGStart] = true
	}
	assert.Equal(t, map[int]bool{0: true, 4: true}, starts)

	// Seven 1g.10gb fit; the eighth needs a second GPU (7 compute slices).
	var ones []*vgpu.Spec
	for i := 0; i < 8; i++ {
		ones = append(ones, mig("1g.10gb"))
	}
	assert.Equal(t, 2, pack(t, inv, demands(ones...), vgpu.Planner).Summary.DevicesUsed)

	// 2g ×3 + 1g fill a GPU (2g at 0, 2, 4; 1g at 6).
	plan = pack(t, inv, demands(mig("2g.20gb"), mig("2g.20gb"), mig("2g.20gb"), mig("1g.10gb")), vgpu.Planner)
	assert.Equal(t, 1, plan.Summary.DevicesUsed)
	assert.Equal(t, 6, plan.Assignments[3].MIGStart)

	// Only one media-extension instance per GPU.
	plan = pack(t, inv, demands(mig("1g.10gb+me"), mig("1g.10gb+me")), vgpu.Planner)
	assert.Equal(t, 2, plan.Summary.DevicesUsed)

	// Arrival order matters to first-fit: a 1g placed at slice 0 blocks a
	// later 4g (which can only start at 0); the planner keeps the aligned
	// half free.
	ds := demands(mig("1g.10gb"), mig("4g.40gb"), mig("1g.10gb"), mig("1g.10gb"))
	assert.Equal(t, 2, pack(t, inv, ds, vgpu.FirstFit).Summary.DevicesUsed)
	assert.Equal(t, 1, pack(t, inv, ds, vgpu.Planner).Summary.DevicesUsed)

	// A full 7g instance is a whole GPU.
	plan = pack(t, inv, demands(mig("7g.80gb"), mig("1g.10gb")), vgpu.Planner)
	assert.Equal(t, 2, plan.Summary.DevicesUsed)
	assert.Equal(t, 2, plan.Summary.LowerBound)
}

func TestPackWholeAndMultiDevice(t *testing.T) {
	inv := inventory(hardware.H100, 2, 8)
	ds := demands(vgpu.Whole(hardware.H100, 4), vgpu.Whole(hardware.H100, 8), vgpu.Whole(hardware.H100, 4),
		vgpu.Whole(hardware.H100, 1))
	plan := pack(t, inv, ds, vgpu.Planner)
	require.Len(t, plan.Assignments, 3)
	require.Len(t, plan.Unplaced, 1)
	// Arrival order would split the 4s across nodes and strand the 8; the
	// planner places the 8 first, then both 4s on the other node.
	assert.Equal(t, []vgpu.Unplaced{{Demand: 3, Name: "d3", Reason: "no free H100-SXM-80GB device"}}, plan.Unplaced)
	byName := map[string]vgpu.Assignment{}
	for _, a := range plan.Assignments {
		byName[a.Name] = a
	}
	assert.NotEqual(t, byName["d1"].Node, byName["d0"].Node)
	assert.Equal(t, byName["d0"].Node, byName["d2"].Node)

	// Smallest first would place as many demands on fewer devices by
	// dropping the 8-GPU job; the planner keeps the larger work.
	ds = demands(vgpu.Whole(hardware.H100, 4), vgpu.Whole(hardware.H100, 2), vgpu.Whole(hardware.H100, 8),
		vgpu.Whole(hardware.H100, 4), vgpu.Whole(hardware.H100, 2))
	ff := pack(t, inv, ds, vgpu.FirstFit)
	assert.Equal(t, []vgpu.Unplaced{{Demand: 3, Name: "d3", Reason: "no H100-SXM-80GB node has 4 free devices"}}, ff.Unplaced)
	planned := pack(t, inv, ds, vgpu.Planner)
	require.Len(t, planned.Unplaced, 1)
	assert.Equal(t, 4, vgpuspec.Of(ds[planned.Unplaced[0].Demand].Spec).Count(), "16 of 20 GPUs placed; the 8-GPU job is kept")
	assert.Equal(t, 16, planned.Summary.DevicesUsed)

	// HAMi slices on two devices land on one node, on distinct devices.
	two := pack(t, inventory(hardware.H100, 1, 8), demands(vgpu.Slice(hardware.H100).Memory("30Gi").Cores(40).Accelerators(2),
		vgpu.Slice(hardware.H100).Memory("30Gi").Cores(40).Accelerators(2)), vgpu.Planner)
	assert.Equal(t, 2, two.Summary.DevicesUsed)
	assert.Equal(t, two.Assignments[0].Devices, two.Assignments[1].Devices)
}

func TestPackVNPU(t *testing.T) {
	inv := inventory(hardware.Ascend910B3, 1, 2)
	// 20 AI cores, 64 GiB: two vir10_3c_32g fill a chip; vir05_1c_16g ×4
	// fill the other.
	ds := demands(
		vgpu.VNPU(hardware.Ascend910B3, "vir10_3c_32g"), vgpu.VNPU(hardware.Ascend910B3, "vir05_1c_16g"),
		vgpu.VNPU(hardware.Ascend910B3, "vir10_3c_32g"), vgpu.VNPU(hardware.Ascend910B3, "vir05_1c_16g"),
		vgpu.Slice(hardware.Ascend910B3).Memory("10Gi"), vgpu.Slice(hardware.Ascend910B3).Memory("12Gi"),
	)
	plan := pack(t, inv, ds, vgpu.Planner)
	assert.Empty(t, plan.Unplaced)
	assert.Equal(t, 2, plan.Summary.DevicesUsed)
	assert.Equal(t, "vir05_1c_16g", plan.Assignments[4].Template, "a slice rounds up to the template that fits")
	assert.InDelta(t, 1.0, plan.Summary.ComputeUtilisation, 1e-9)
	assert.Less(t, plan.Summary.MemoryUtilisation, 1.0, "requested 10 and 12 GiB of 16 GiB templates")

	over := pack(t, inv, append(ds, vgpu.Demand{Name: "extra", Spec: vgpu.VNPU(hardware.Ascend910B3, "vir05_1c_8g")}), vgpu.Planner)
	assert.Equal(t, []vgpu.Unplaced{{Demand: 6, Name: "extra", Reason: "no Ascend910B3 device has 8Gi memory and 25% compute free"}}, over.Unplaced)
}

func TestPackReasons(t *testing.T) {
	inv := inventory(hardware.A100_80G, 1, 1)
	ds := []vgpu.Demand{
		{Name: "nil"},
		{Name: "bad", Spec: vgpu.Slice(hardware.A100_80G).Memory("100Gi")},
		{Name: "elsewhere", Spec: vgpu.Slice(hardware.H100).Memory("1Gi")},
		{Spec: vgpu.Slice(hardware.A100_80G).Memory("70Gi").Cores(10)},
		{Name: "full", Spec: vgpu.Slice(hardware.A100_80G).Memory("20Gi").Cores(10)},
		{Name: "mig", Spec: vgpu.MIG(hardware.A100_80G, "1g.10gb")},
		{Name: "whole", Spec: vgpu.Whole(hardware.A100_80G, 1)},
		{Name: "pair", Spec: vgpu.Slice(hardware.A100_80G).Memory("1Gi").Accelerators(2)},
	}
	plan := pack(t, inv, ds, vgpu.FirstFit)
	reasons := map[string]string{}
	for _, u := range plan.Unplaced {
		reasons[u.Name] = u.Reason
	}
	assert.Equal(t, map[string]string{
		"nil":       "no accelerator spec",
		"bad":       `memory: Invalid value: "100Gi": more memory than a A100-SXM-80GB has (80Gi)`,
		"elsewhere": "no H100-SXM-80GB devices in the inventory",
		"full":      "no A100-SXM-80GB device has 20Gi memory and 10% compute free",
		"mig":       "no A100-SXM-80GB device has a free MIG placement for 1g.10gb",
		"whole":     "no free A100-SXM-80GB device",
		"pair":      "no A100-SXM-80GB node has 2 devices with 1Gi memory and 0% compute free",
	}, reasons)
	assert.Equal(t, "demand-3", plan.Assignments[0].Name)
	assert.Equal(t, 1, plan.Summary.LowerBound, "bound over placed demands")
	assert.Equal(t, 4, plan.Summary.TraceLowerBound, "bound over valid demands: 3 A100 (memory 182 GiB), 1 H100")

	_, err := vgpu.Pack(inv, ds, "magic")
	assert.EqualError(t, err, `pack: unknown policy "magic"`)

	// Cordoned nodes and nodes without a profile offer nothing.
	var odd hardware.Inventory
	odd.Add("cpu", hardware.CPU, 0)
	odd.Nodes = append(odd.Nodes, hardware.NodeInventory{Name: "cordoned", Profile: hardware.A100_80G, Accelerators: 8, Unschedulable: true})
	plan = pack(t, odd, demands(vgpu.Whole(hardware.A100_80G, 1)), vgpu.Planner)
	assert.Equal(t, 0, plan.Summary.DevicesTotal)
	assert.Equal(t, "no A100-SXM-80GB devices in the inventory", plan.Unplaced[0].Reason)
}

func TestCompareWholeDeviceAgainstSharing(t *testing.T) {
	profiles := []hardware.Profile{hardware.A100_80G, hardware.H100}
	inv := vgpu.SyntheticInventory(map[string]int{hardware.A100_80G.Name: 4, hardware.H100.Name: 2}, profiles...)
	ds := vgpu.SyntheticTrace(3, 200, vgpu.TraceMix{Inference: 1, Notebooks: 1}, profiles, []float64{2, 1})
	plans := vgpu.Compare(inv, ds)
	require.Len(t, plans, 5)
	got := map[vgpu.Policy]vgpu.Summary{}
	for _, p := range plans {
		checkPlan(t, inv, ds, p)
		got[p.Policy] = p.Summary
	}
	assert.Equal(t, 48, got[vgpu.WholeDevice].DevicesUsed)
	assert.Equal(t, 48, got[vgpu.WholeDevice].Placed, "one demand per device")
	assert.Equal(t, 200, got[vgpu.Planner].Placed)
	assert.Greater(t, got[vgpu.Planner].MemoryUtilisation, 2*got[vgpu.WholeDevice].MemoryUtilisation)
	assert.LessOrEqual(t, got[vgpu.Planner].DevicesUsed, got[vgpu.FirstFit].DevicesUsed)
	assert.LessOrEqual(t, got[vgpu.Planner].DevicesUsed, got[vgpu.Spread].DevicesUsed)
}

// TestPlannerAgainstLowerBound packs random traces that fit and checks the
// planner stays within 5 % (plus one device for rounding) of the bound.
func TestPlannerAgainstLowerBound(t *testing.T) {
	profiles := []hardware.Profile{hardware.A100_80G, hardware.H100, hardware.L40S}
	inv := vgpu.SyntheticInventory(map[string]int{hardware.A100_80G.Name: 20, hardware.H100.Name: 10, hardware.L40S.Name: 10}, profiles...)
	for seed := uint64(1); seed <= 8; seed++ {
		ds := vgpu.SyntheticTrace(seed, 600, vgpu.DefaultTraceMix, profiles, []float64{3, 2, 1})
		plan := pack(t, inv, ds, vgpu.Planner)
		s := plan.Summary
		require.Equal(t, s.Demands, s.Placed, "seed %d", seed)
		assert.Equal(t, s.TraceLowerBound, s.LowerBound)
		assert.Equal(t, s.LowerBound, vgpu.LowerBound(ds))
		assert.LessOrEqual(t, float64(s.DevicesUsed), 1.05*float64(s.LowerBound)+float64(len(profiles)), "seed %d: %d devices, bound %d", seed, s.DevicesUsed, s.LowerBound)
		t.Logf("seed %d: %d devices, lower bound %d", seed, s.DevicesUsed, s.LowerBound)
	}
}

// TestPlannerAgainstLowerBoundMixed adds MIG instances and Ascend vNPUs:
// MIG geometry and vNPU templates make the bound looser, so the margin is
// wider.
func TestPlannerAgainstLowerBoundMixed(t *testing.T) {
	profiles := []hardware.Profile{hardware.A100_80G, hardware.H100, hardware.Ascend910B3}
	inv := vgpu.SyntheticInventory(map[string]int{hardware.A100_80G.Name: 20, hardware.H100.Name: 10, hardware.Ascend910B3.Name: 10}, profiles...)
	mix := vgpu.TraceMix{Inference: 0.4, Notebooks: 0.3, Training: 0.05, MIG: 0.25}
	for seed := uint64(1); seed <= 8; seed++ {
		ds := vgpu.SyntheticTrace(seed, 600, mix, profiles, []float64{3, 2, 1})
		for _, policy := range vgpu.Policies() {
			plan := pack(t, inv, ds, policy)
			if policy != vgpu.Planner {
				continue
			}
			s := plan.Summary
			require.Equal(t, s.Demands, s.Placed, "seed %d", seed)
			assert.LessOrEqual(t, float64(s.DevicesUsed), 1.08*float64(s.LowerBound)+float64(len(profiles)), "seed %d: %d devices, bound %d", seed, s.DevicesUsed, s.LowerBound)
			t.Logf("seed %d: %d devices, lower bound %d", seed, s.DevicesUsed, s.LowerBound)
		}
	}
}
