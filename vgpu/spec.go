package vgpu

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
)

// Backend is what shares a device between pods.
type Backend string

// Backends.
const (
	// HAMi is Project-HAMi: nvidia.com/gpu + gpumem (MiB) + gpucores for
	// NVIDIA, per-SKU huawei.com/Ascend910B3 + -memory for Ascend vNPU
	// templates.
	HAMi Backend = "hami"
	// Volcano is Volcano's vGPU device plugin: volcano.sh/vgpu-number,
	// vgpu-memory (MiB), vgpu-cores. NVIDIA only.
	Volcano Backend = "volcano"
	// HuaweiStatic is Huawei's device plugin with static vNPUs:
	// huawei.com/Ascend910-6c.1cpu.16g, one per container. Ascend only.
	HuaweiStatic Backend = "huawei-static"
	// DevicePlugin is a plain device plugin: whole devices only, it cannot
	// share a device.
	DevicePlugin Backend = "device-plugin"
)

// Strategy is the NVIDIA device plugin's MIG strategy.
type Strategy string

// MIG strategies.
const (
	Mixed  Strategy = "mixed"
	Single Strategy = "single"
)

// Resource and annotation names the slices render.
const (
	ResourceGPUMem           = corev1.ResourceName("nvidia.com/gpumem")
	ResourceGPUMemPercentage = corev1.ResourceName("nvidia.com/gpumem-percentage")
	ResourceGPUCores         = corev1.ResourceName("nvidia.com/gpucores")
	ResourceVolcanoNumber    = corev1.ResourceName("volcano.sh/vgpu-number")
	ResourceVolcanoMemory    = corev1.ResourceName("volcano.sh/vgpu-memory")
	ResourceVolcanoMemPct    = corev1.ResourceName("volcano.sh/vgpu-memory-percentage")
	ResourceVolcanoCores     = corev1.ResourceName("volcano.sh/vgpu-cores")
	AnnotationUseGPUType     = "nvidia.com/use-gputype"
)

// Kind is what a Spec asks for.
type Kind string

// Spec kinds.
const (
	KindWhole Kind = "whole"
	KindSlice Kind = "slice"
	KindMIG   Kind = "mig"
	KindVNPU  Kind = "vnpu"
)

const mib = int64(1) << 20

// ComputeUnits is one device's compute in the planner's integer units:
// divisible by 100 (HAMi percent), 7 (MIG compute slices), 20, 24 and 8
// (Ascend AI cores) and 16 (Moore Threads sGPU cores), so every kind of
// share is exact.
const ComputeUnits = 8400

// Spec is a fractional (or whole) accelerator request. Build it with Slice,
// MIG, VNPU or Whole; methods chain, never fail and copy nothing the caller
// keeps. Problems are reported all at once by the Objects of the
// builder that takes it (pod.Builder's Slice) and by Pack.
type Spec struct {
	kind     Kind
	profile  hardware.Profile
	memory   string
	memPct   int
	cores    int
	coresSet bool
	backend  Backend
	strategy Strategy
	migName  string
	template string
	devices  int
	problems []problem
}

type problem struct {
	field  string
	value  any
	detail string
}

// Slice is a share of one device of profile p: memory and compute limits
// enforced by HAMi (default), Volcano's vGPU plugin or, on Ascend, the
// vNPU template that fits.
func Slice(p hardware.Profile) *Spec {
	return &Spec{kind: KindSlice, profile: p.Plugin(p.Flavour), devices: 1}
}

// MIG is one MIG instance of profile ("1g.10gb") on a card of profile p,
// under the mixed strategy unless Strategy(Single). The card's profile is
// found ignoring case ("1G.10GB"), and renders in the card's spelling.
func MIG(p hardware.Profile, profile string) *Spec {
	if m, ok := p.MIGProfile(profile); ok {
		profile = m.Name
	}
	return &Spec{kind: KindMIG, profile: p.Plugin(p.Flavour), migName: profile, strategy: Mixed, devices: 1}
}

// VNPU is an Ascend vNPU of the named template ("vir05_1c_16g"). It renders
// as a Huawei static vNPU (huawei.com/Ascend910-5c.1cpu.16g) unless the
// profile's flavour is HAMi or Backend(HAMi) is chosen. The chip's
// template is found ignoring case, and renders in the chip's spelling.
func VNPU(p hardware.Profile, template string) *Spec {
	if t, ok := p.VNPUTemplate(template); ok {
		template = t.Name
	}
	return &Spec{kind: KindVNPU, profile: p.Plugin(p.Flavour), template: template, devices: 1}
}

// Whole is n whole devices of profile p, for the planner; a pod given it
// with Slice gets what hardware.Apply would give it.
func Whole(p hardware.Profile, n int) *Spec {
	return &Spec{kind: KindWhole, profile: p.Plugin(p.Flavour), devices: n}
}

// Memory sets device memory per device, as a quantity ("10Gi", "3000Mi").
// An empty quantity is refused: leave Memory out for a slice of compute
// only (Cores alone).
func (s *Spec) Memory(q string) *Spec {
	if s == nil {
		return nil
	}
	s.memory = q
	s.memPct = 0
	if strings.TrimSpace(q) == "" {
		s.memory = ""
		s.problem("memory", q, `an empty quantity: give one ("10Gi"), or leave Memory out for a slice of compute only`)
	}
	return s
}

// MemoryPercent sets device memory as a percentage of the card (1–100),
// replacing Memory.
func (s *Spec) MemoryPercent(pct int) *Spec {
	if s == nil {
		return nil
	}
	s.memPct = pct
	s.memory = ""
	if pct < 1 || pct > 100 {
		s.problem("memoryPercent", pct, "must be between 1 and 100")
	}
	return s
}

// Cores sets the percentage of compute per device (1–100).
func (s *Spec) Cores(pct int) *Spec {
	if s == nil {
		return nil
	}
	s.cores = pct
	s.coresSet = true
	return s
}

// Backend chooses what shares the device.
func (s *Spec) Backend(b Backend) *Spec {
	if s == nil {
		return nil
	}
	s.backend = b
	return s
}

// Strategy chooses the MIG strategy (Mixed by default).
func (s *Spec) Strategy(st Strategy) *Spec {
	if s == nil {
		return nil
	}
	s.strategy = st
	return s
}

// Accelerators sets how many devices get a slice (HAMi nvidia.com/gpu: n, n MIG
// instances); default 1. It is the word the workload builders use for
// whole devices (pod.Builder.GPUs).
func (s *Spec) Accelerators(n int) *Spec {
	if s == nil {
		return nil
	}
	s.devices = n
	return s
}

func (s *Spec) problem(f string, v any, d string) {
	s.problems = append(s.problems, problem{field: f, value: v, detail: d})
}

// String describes the spec briefly ("A100-SXM-80GB slice 10Gi 30%"). It
// is the spec's fmt.Stringer, for messages and logs; it is not a read for
// code to parse.
func (s *Spec) String() string {
	if s == nil {
		return "<nil>"
	}
	parts := []string{s.profile.Name}
	switch s.kind {
	case KindWhole:
		parts = append(parts, fmt.Sprintf("whole×%d", s.devices))
	case KindMIG:
		parts = append(parts, "mig "+s.migName)
	case KindVNPU:
		parts = append(parts, "vnpu "+s.template)
	case KindSlice:
		parts = append(parts, "slice")
		if l := s.memoryLabel(); l != "" {
			parts = append(parts, l)
		}
		if s.coresSet {
			parts = append(parts, fmt.Sprintf("%d%%", s.cores))
		}
	}
	if s.kind != KindWhole && s.devices > 1 {
		parts = append(parts, fmt.Sprintf("×%d", s.devices))
	}
	return strings.Join(parts, " ")
}
