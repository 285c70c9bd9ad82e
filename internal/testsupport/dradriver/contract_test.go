package dradriver

import (
	"regexp"
	"slices"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/vgpuspec"
	"github.com/cubestudio/cube/vgpu"
)

// published are the names the real drivers publish, read from their
// source (cite: file and version), independently of hardware's constants.
type publishedNames struct {
	source     string
	driver     string
	classes    []string
	attributes []string
	capacities []string
}

var published = []publishedNames{{
	// github.com/NVIDIA/k8s-dra-driver-gpu v25.8.1 (fc69d98):
	// cmd/gpu-kubelet-plugin/main.go DriverName; deployments/helm/
	// nvidia-dra-driver-gpu/templates/deviceclass-gpu.yaml and
	// deviceclass-mig.yaml; cmd/gpu-kubelet-plugin/deviceinfo.go
	// GpuInfo.GetDevice and MigDeviceInfo.GetDevice.
	source:     "NVIDIA/k8s-dra-driver-gpu v25.8.1",
	driver:     "gpu.nvidia.com",
	classes:    []string{"gpu.nvidia.com", "mig.nvidia.com"},
	attributes: []string{"type", "uuid", "parentUUID", "profile", "productName", "brand", "architecture", "cudaComputeCapability", "driverVersion", "cudaDriverVersion", "pcieBusID"},
	capacities: []string{"memory", "multiprocessors", "copyEngines", "decoders", "encoders", "jpegEngines", "ofaEngines"},
}, {
	// github.com/Project-HAMi/k8s-dra-driver v0.1.0 (ebeaad9):
	// cmd/hami-kubelet-plugin/main.go DriverName; chart/hami-dra-driver/
	// templates/deviceclass-hami-gpu.yaml; cmd/hami-kubelet-plugin/
	// hami_core.go HAMiGpuInfo.GetDevice.
	source:     "Project-HAMi/k8s-dra-driver v0.1.0",
	driver:     "hami-core-gpu.project-hami.io",
	classes:    []string{"hami-core-gpu.project-hami.io"},
	attributes: []string{"type", "uuid", "minor", "productName", "brand", "architecture", "cudaComputeCapability", "driverVersion", "cudaDriverVersion", "pcieBusID"},
	capacities: []string{"cores", "memory"},
}}

var (
	attributeRef = regexp.MustCompile(`device\.attributes\['([^']+)'\]\.([A-Za-z0-9]+)`)
	capacityRef  = regexp.MustCompile(`device\.capacity\['([^']+)'\]\.([A-Za-z0-9]+)`)
)

// claimsUnderTest are cube's renderings of a whole device, a MIG instance
// and a HAMi slice under the DRA flavours.
func claimsUnderTest(t *testing.T) map[string]hardware.DeviceClaim {
	t.Helper()
	out := map[string]hardware.DeviceClaim{}
	for _, p := range []hardware.Profile{hardware.T4, hardware.A100_80G, hardware.H100} {
		for _, f := range []hardware.Flavour{hardware.NVIDIADRA, hardware.HAMiDRA} {
			c, ok := hardware.WholeClaim(p.Plugin(f), 2)
			if !ok {
				t.Fatalf("WholeClaim(%s, %s) has no claim", p.Name, f)
			}
			out["whole "+p.Name+" "+string(f)] = c
		}
	}
	out["mig"] = claimOf(t, vgpu.MIG(hardware.A100_80G.Plugin(hardware.NVIDIADRA), "1g.10gb"))
	out["slice"] = claimOf(t, vgpu.Slice(hardware.A100_80G.Plugin(hardware.HAMiDRA)).Memory("10Gi").Cores(30))
	return out
}

// TestRenderingsUseThePublishedNames checks every class, attribute and
// capacity cube's DRA renderings name against what the drivers publish.
func TestRenderingsUseThePublishedNames(t *testing.T) {
	for name, c := range claimsUnderTest(t) {
		spec := c.Spec()
		req := spec.Devices.Requests[0].Exactly
		drv := driverOfClass(req.DeviceClassName)
		if drv < 0 {
			t.Errorf("%s: device class %q is no class the drivers install", name, req.DeviceClassName)
			continue
		}
		pub := published[drv]
		for _, s := range req.Selectors {
			for _, m := range attributeRef.FindAllStringSubmatch(s.CEL.Expression, -1) {
				if m[1] != pub.driver || !slices.Contains(pub.attributes, m[2]) {
					t.Errorf("%s: selector %q reads attribute %s/%s, which %s does not publish", name, s.CEL.Expression, m[1], m[2], pub.source)
				}
			}
			for _, m := range capacityRef.FindAllStringSubmatch(s.CEL.Expression, -1) {
				if m[1] != pub.driver || !slices.Contains(pub.capacities, m[2]) {
					t.Errorf("%s: selector %q reads capacity %s/%s, which %s does not publish", name, s.CEL.Expression, m[1], m[2], pub.source)
				}
			}
		}
		if req.Capacity != nil {
			for k := range req.Capacity.Requests {
				if !slices.Contains(pub.capacities, string(k)) {
					t.Errorf("%s: capacity request %q is no capacity %s publishes", name, k, pub.source)
				}
			}
		}
	}
}

func driverOfClass(class string) int {
	return slices.IndexFunc(published, func(p publishedNames) bool {
		return slices.Contains(p.classes, class)
	})
}

// TestSelectorsSelectTheRightDevices compiles the renderings' selectors
// with the DRA CEL library the scheduler uses and evaluates them on this
// driver's devices (which carry the NVIDIA driver's attributes): a T4
// claim selects the T4s only, an A100 claim the A100 only, a 1g.10gb MIG
// claim the 1g.10gb MIG devices only, an H100 claim nothing.
func TestSelectorsSelectTheRightDevices(t *testing.T) {
	devices := Resources("node").Pools["node"].Slices[0].Devices
	classes := map[string]string{}
	for _, c := range DeviceClasses() {
		classes[c.Name] = c.Spec.Selectors[0].CEL.Expression
	}
	cases := []struct {
		claim string
		want  []string
	}{
		{"whole T4 " + string(hardware.NVIDIADRA), []string{"gpu-0", "gpu-1", "gpu-2", "gpu-3"}},
		{"whole A100-SXM-80GB " + string(hardware.NVIDIADRA), []string{"gpu-4"}},
		{"whole H100-SXM-80GB " + string(hardware.NVIDIADRA), nil},
		{"mig", []string{"gpu-4-mig-1g10gb-0", "gpu-4-mig-1g10gb-1", "gpu-4-mig-1g10gb-2", "gpu-4-mig-1g10gb-3", "gpu-4-mig-1g10gb-4", "gpu-4-mig-1g10gb-5", "gpu-4-mig-1g10gb-6"}},
	}
	claims := claimsUnderTest(t)
	compiler := cel.GetCompiler(cel.Features{})
	for _, tc := range cases {
		req := claims[tc.claim].Spec().Devices.Requests[0].Exactly
		exprs := []string{classes[req.DeviceClassName]}
		if exprs[0] == "" {
			t.Fatalf("%s: no device class %q", tc.claim, req.DeviceClassName)
		}
		for _, s := range req.Selectors {
			exprs = append(exprs, s.CEL.Expression)
		}
		var got []string
		for _, d := range devices {
			if matchesAll(t, compiler, exprs, d) {
				got = append(got, d.Name)
			}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s selects %v, want %v", tc.claim, got, tc.want)
		}
	}
}

func matchesAll(t *testing.T, compiler interface {
	CompileCELExpression(string, cel.Options) cel.CompilationResult
}, exprs []string, d resourcev1.Device) bool {
	t.Helper()
	for _, e := range exprs {
		r := compiler.CompileCELExpression(e, cel.Options{})
		if r.Error != nil {
			t.Fatalf("compile %q: %v", e, r.Error)
		}
		ok, _, err := r.DeviceMatches(t.Context(), cel.Device{Driver: hardware.DriverNVIDIAGPU, Attributes: d.Attributes, Capacity: d.Capacity})
		if err != nil {
			t.Fatalf("evaluate %q on %s: %v", e, d.Name, err)
		}
		if !ok {
			return false
		}
	}
	return true
}

func claimOf(t *testing.T, s *vgpu.Spec) hardware.DeviceClaim {
	t.Helper()
	r, errs := vgpuspec.Of(s).Request(nil)
	if len(errs) > 0 || r.Claim == nil {
		t.Fatalf("%s renders no claim: %v", s, errs)
	}
	return *r.Claim
}
