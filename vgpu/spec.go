package vgpu

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/quantity"
	"github.com/cubestudio/cube/internal/vgpuspec"
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

// specReads are a Spec's reads for cube's own packages, through
// internal/vgpuspec: the Spec is a builder, whose exported methods are
// settings.
type specReads struct{ s *Spec }

func init() {
	vgpuspec.Register(func(s *Spec) vgpuspec.Reads { return specReads{s} })
}

func (r specReads) Profile() hardware.Profile {
	if r.s == nil {
		return hardware.Profile{}
	}
	return r.s.profile.Plugin(r.s.profile.Flavour)
}

func (r specReads) Kind() string {
	if r.s == nil {
		return ""
	}
	return string(r.s.kind)
}

func (r specReads) Count() int {
	if r.s == nil {
		return 0
	}
	return r.s.devices
}

func (r specReads) MIGProfile() string {
	if r.s == nil {
		return ""
	}
	return r.s.migName
}

func (r specReads) Template() string   { return r.s.templateName() }
func (r specReads) Backend() string    { return string(r.s.effectiveBackend()) }
func (r specReads) MemoryBytes() int64 { return r.s.memoryBytes() }

func (r specReads) Validate(path *field.Path) field.ErrorList { return r.s.validate(path) }

func (r specReads) Request(path *field.Path) (hardware.DeviceRequest, field.ErrorList) {
	return r.s.request(path)
}

func (r specReads) Apply(tmpl *corev1.PodTemplateSpec, container string, path *field.Path) field.ErrorList {
	return r.s.apply(tmpl, container, path)
}

// templateName is the vNPU template of a VNPU spec, or the one a Slice on
// an Ascend profile rounds up to ("" when none fits).
func (s *Spec) templateName() string {
	if s == nil {
		return ""
	}
	if s.kind == KindVNPU {
		return s.template
	}
	if s.kind == KindSlice && s.profile.Vendor == hardware.Huawei {
		if t, ok := s.fitTemplate(); ok {
			return t.Name
		}
	}
	return ""
}

// effectiveBackend is the backend the spec renders for.
func (s *Spec) effectiveBackend() Backend {
	if s == nil {
		return ""
	}
	if s.backend != "" {
		return s.backend
	}
	switch s.kind {
	case KindWhole:
		if s.profile.Flavour == hardware.HAMi {
			return HAMi
		}
		return DevicePlugin
	case KindMIG:
		return DevicePlugin
	case KindVNPU:
		if s.profile.Flavour == hardware.HAMi {
			return HAMi
		}
		return HuaweiStatic
	}
	if s.profile.Vendor == hardware.Huawei && s.profile.Flavour != hardware.HAMi {
		return HuaweiStatic
	}
	return HAMi
}

func (s *Spec) problem(f string, v any, d string) {
	s.problems = append(s.problems, problem{field: f, value: v, detail: d})
}

// memoryBytes is the device memory per device the spec occupies: the
// requested memory for slices (rounded up to the template on Ascend), the
// instance memory for MIG, the card's memory for whole devices. Zero when
// the spec is invalid.
func (s *Spec) memoryBytes() int64 {
	d, errs := s.demand(nil)
	if len(errs) > 0 {
		return 0
	}
	return d.memBytes
}

// validate returns every problem of the spec with paths under path.
func (s *Spec) validate(path *field.Path) field.ErrorList {
	_, errs := s.demand(path)
	return errs
}

// parseMemory parses the memory quantity.
func parseMemory(q string) (int64, error) {
	qty, err := quantity.Parse(strings.TrimSpace(q))
	if err != nil {
		return 0, fmt.Errorf("parse memory %q: %w", q, err)
	}
	if qty.Sign() <= 0 {
		return 0, fmt.Errorf("memory %q must be positive", q)
	}
	v, ok := qty.AsInt64()
	if !ok {
		return 0, fmt.Errorf("memory %q is too large", q)
	}
	return v, nil
}

// demandShape is what a valid spec occupies on one device.
type demandShape struct {
	memBytes  int64 // reserved on each device
	requested int64 // asked for on each device (before template rounding)
	compute   int   // ComputeUnits of each device
	mig       hardware.MIGProfile
	tmpl      hardware.VNPUTemplate
}

// demand validates s and returns what it occupies per device.
func (s *Spec) demand(path *field.Path) (demandShape, field.ErrorList) {
	var errs field.ErrorList
	if s == nil {
		return demandShape{}, field.ErrorList{field.Required(path, "accelerator spec must not be nil")}
	}
	p := s.profile
	for _, pr := range s.problems {
		errs = append(errs, field.Invalid(path.Child(pr.field), pr.value, pr.detail))
	}
	if p.IsZero() {
		return demandShape{}, append(errs, field.Required(path.Child("profile"), "a hardware profile is required"))
	}
	if !p.Accelerated() {
		return demandShape{}, append(errs, field.Invalid(path.Child("profile"), p.Name, "a CPU profile has no devices to share"))
	}
	if s.devices < 1 {
		errs = append(errs, field.Invalid(path.Child("accelerators"), s.devices, "must be at least 1"))
	} else if p.MaxPerNode > 0 && s.devices > p.MaxPerNode {
		errs = append(errs, field.Invalid(path.Child("accelerators"), s.devices,
			fmt.Sprintf("more devices per pod than a %s node holds (%d)", p.Name, p.MaxPerNode)))
	}
	b := s.effectiveBackend()
	var d demandShape
	switch s.kind {
	case KindWhole:
		if s.backend != "" && s.backend != DevicePlugin && s.backend != HAMi {
			errs = append(errs, field.NotSupported(path.Child("backend"), s.backend, []Backend{DevicePlugin, HAMi}))
		}
		if b == HAMi && hamiProfile(p).ResourceName == "" {
			errs = append(errs, field.Invalid(path.Child("backend"), b, fmt.Sprintf("HAMi has no resource name for %s", p.Name)))
		}
		d = demandShape{memBytes: p.MemoryBytes, requested: p.MemoryBytes, compute: ComputeUnits}
	case KindMIG:
		d, errs = s.migDemand(path, d, errs)
	case KindVNPU:
		d, errs = s.vnpuDemand(path, b, errs)
	case KindSlice:
		d, errs = s.sliceDemand(path, b, errs)
	}
	return d, errs
}

func (s *Spec) memoryRequest(path *field.Path, errs field.ErrorList) (int64, field.ErrorList) {
	p := s.profile
	switch {
	case s.memory != "":
		v, err := parseMemory(s.memory)
		if err != nil {
			return 0, append(errs, field.Invalid(path.Child("memory"), s.memory, err.Error()))
		}
		if v < mib {
			return 0, append(errs, field.Invalid(path.Child("memory"), s.memory, "must be at least 1Mi"))
		}
		if p.MemoryBytes > 0 && v > p.MemoryBytes {
			return 0, append(errs, field.Invalid(path.Child("memory"), s.memory,
				fmt.Sprintf("more memory than a %s has (%s)", p.Name, resource.NewQuantity(p.MemoryBytes, resource.BinarySI))))
		}
		return v, errs
	case s.memPct > 0:
		return p.MemoryBytes * int64(s.memPct) / 100, errs
	}
	return 0, errs
}

func (s *Spec) checkCores(path *field.Path, errs field.ErrorList) field.ErrorList {
	if s.coresSet && (s.cores < 1 || s.cores > 100) {
		errs = append(errs, field.Invalid(path.Child("cores"), s.cores, "must be between 1 and 100"))
	}
	return errs
}

func (s *Spec) sliceDemand(path *field.Path, b Backend, errs field.ErrorList) (demandShape, field.ErrorList) {
	p := s.profile
	errs = s.checkCores(path, errs)
	memBytes, errs := s.memoryRequest(path, errs)
	d := demandShape{memBytes: memBytes, requested: memBytes, compute: s.cores * ComputeUnits / 100}
	if s.memory == "" && s.memPct == 0 && !s.coresSet {
		errs = append(errs, field.Required(path.Child("memory"), "a slice needs Memory, MemoryPercent or Cores"))
	}
	switch p.Vendor {
	case hardware.NVIDIA:
		switch b {
		case HAMi, Volcano:
		case DevicePlugin:
			return d, append(errs, field.Invalid(path.Child("backend"), b,
				"the device plugin cannot share a device; fractions need HAMi or Volcano"))
		default:
			return d, append(errs, field.NotSupported(path.Child("backend"), b, []Backend{HAMi, Volcano}))
		}
		if b == Volcano && s.memory == "" && s.memPct == 0 {
			errs = append(errs, field.Required(path.Child("memory"), "a Volcano vGPU slice needs Memory or MemoryPercent"))
		}
		if !s.coresSet {
			d.compute = 0
		}
	case hardware.NoAccelerator:
	default:
		return s.hamiSliceDemand(path, b, memBytes, errs)
	case hardware.Huawei:
		switch b {
		case HAMi:
			if p.HAMiType == "" {
				return d, append(errs, field.Invalid(path.Child("backend"), b, fmt.Sprintf("HAMi has no vNPU configuration for %s", p.Name)))
			}
		case HuaweiStatic:
			if s.devices > 1 {
				errs = append(errs, field.Invalid(path.Child("accelerators"), s.devices, "a static vNPU is requested one per container"))
			}
		case Volcano, DevicePlugin:
			return d, append(errs, field.Invalid(path.Child("backend"), b,
				fmt.Sprintf("%s cannot share an Ascend NPU; use HAMi or HuaweiStatic vNPU templates", b)))
		default:
			return d, append(errs, field.NotSupported(path.Child("backend"), b, []Backend{HAMi, HuaweiStatic}))
		}
		if len(errs) > 0 {
			return d, errs
		}
		t, ok := s.fitTemplate()
		if !ok {
			return d, append(errs, field.Invalid(path.Child("memory"), s.memoryLabel(),
				fmt.Sprintf("no %s vNPU template of %s fits %s memory and %d%% of the AI cores", b, p.Name, s.memoryLabel(), s.cores)))
		}
		d = templateDemand(p, t)
		d.requested = memBytes
	}
	return d, errs
}

func (s *Spec) memoryLabel() string {
	if s.memPct > 0 {
		return fmt.Sprintf("%d%%", s.memPct)
	}
	return s.memory
}

// fitTemplate is the smallest template of the effective backend whose
// memory and AI cores cover the slice, as HAMi's trimMemory rounds up.
func (s *Spec) fitTemplate() (hardware.VNPUTemplate, bool) {
	p := s.profile
	var memBytes int64
	switch {
	case s.memory != "":
		v, err := parseMemory(s.memory)
		if err != nil {
			return hardware.VNPUTemplate{}, false
		}
		memBytes = v
	case s.memPct > 0:
		memBytes = p.MemoryBytes * int64(s.memPct) / 100
	}
	cores := 0
	if s.coresSet && p.AICores > 0 {
		cores = (s.cores*p.AICores + 99) / 100
	}
	hami := s.effectiveBackend() == HAMi
	var best hardware.VNPUTemplate
	found := false
	for _, t := range p.VNPUTemplates() {
		if (hami && !t.HAMi) || (!hami && !t.Static) {
			continue
		}
		if t.MemoryMiB*mib < memBytes || t.AICores < cores {
			continue
		}
		if !found || t.MemoryMiB < best.MemoryMiB || (t.MemoryMiB == best.MemoryMiB && t.AICores < best.AICores) {
			best, found = t, true
		}
	}
	return best, found
}

func templateDemand(p hardware.Profile, t hardware.VNPUTemplate) demandShape {
	compute := 0
	if p.AICores > 0 {
		compute = t.AICores * ComputeUnits / p.AICores
	}
	return demandShape{memBytes: t.MemoryMiB * mib, requested: t.MemoryMiB * mib, compute: compute, tmpl: t}
}

func (s *Spec) migDemand(path *field.Path, d demandShape, errs field.ErrorList) (demandShape, field.ErrorList) {
	p := s.profile
	if s.backend != "" && s.backend != DevicePlugin {
		errs = append(errs, field.NotSupported(path.Child("backend"), s.backend, []Backend{DevicePlugin}))
	}
	if s.strategy != Mixed && s.strategy != Single {
		errs = append(errs, field.NotSupported(path.Child("strategy"), s.strategy, []Strategy{Mixed, Single}))
	}
	if _, _, _, err := ParseMIGProfile(s.migName); err != nil {
		return d, append(errs, field.Invalid(path.Child("mig"), s.migName, err.Error()))
	}
	if !p.HasMIG() {
		return d, append(errs, field.Invalid(path.Child("mig"), s.migName, fmt.Sprintf("%s has no MIG", p.Name)))
	}
	m, ok := p.MIGProfile(s.migName)
	if !ok {
		names := make([]string, len(p.MIGProfiles()))
		for i, mp := range p.MIGProfiles() {
			names[i] = mp.Name
		}
		return d, append(errs, field.NotSupported(path.Child("mig"), s.migName, names))
	}
	if s.strategy == Single && strings.Contains(m.Name, "+") {
		errs = append(errs, field.Invalid(path.Child("mig"), s.migName, "media-extension profiles are not exposed under the single strategy"))
	}
	return demandShape{
		memBytes:  p.MemoryBytes * int64(m.MemorySlices) / hardware.MIGMemorySlices,
		requested: p.MemoryBytes * int64(m.MemorySlices) / hardware.MIGMemorySlices,
		compute:   m.ComputeSlices * ComputeUnits / hardware.MIGComputeSlices,
		mig:       m,
	}, errs
}

func (s *Spec) vnpuDemand(path *field.Path, b Backend, errs field.ErrorList) (demandShape, field.ErrorList) {
	p := s.profile
	if p.Vendor != hardware.Huawei {
		return demandShape{}, append(errs, field.Invalid(path.Child("profile"), p.Name, "vNPU templates are for Ascend NPUs"))
	}
	if _, err := ParseTemplate(s.template); err != nil {
		return demandShape{}, append(errs, field.Invalid(path.Child("template"), s.template, err.Error()))
	}
	t, ok := p.VNPUTemplate(s.template)
	if !ok {
		return demandShape{}, append(errs, field.NotSupported(path.Child("template"), s.template, templateNames(p, func(hardware.VNPUTemplate) bool { return true })))
	}
	switch b {
	case HAMi:
		if p.HAMiType == "" {
			return demandShape{}, append(errs, field.Invalid(path.Child("backend"), b, fmt.Sprintf("HAMi has no vNPU configuration for %s", p.Name)))
		}
		if !t.HAMi {
			return demandShape{}, append(errs, field.NotSupported(path.Child("template"), s.template,
				templateNames(p, func(t hardware.VNPUTemplate) bool { return t.HAMi })))
		}
	case HuaweiStatic:
		if !t.Static {
			return demandShape{}, append(errs, field.NotSupported(path.Child("template"), s.template,
				templateNames(p, func(t hardware.VNPUTemplate) bool { return t.Static })))
		}
		if s.devices > 1 {
			errs = append(errs, field.Invalid(path.Child("accelerators"), s.devices, "a static vNPU is requested one per container"))
		}
	default:
		return demandShape{}, append(errs, field.Invalid(path.Child("backend"), b,
			fmt.Sprintf("%s cannot share an Ascend NPU; use HAMi or HuaweiStatic", b)))
	}
	if s.memory != "" || s.memPct > 0 || s.coresSet {
		errs = append(errs, field.Forbidden(path.Child("memory"), "a vNPU template fixes memory and AI cores; use Slice to size by memory"))
	}
	return templateDemand(p, t), errs
}

func templateNames(p hardware.Profile, keep func(hardware.VNPUTemplate) bool) []string {
	var out []string
	for _, t := range p.VNPUTemplates() {
		if keep(t) {
			out = append(out, t.Name)
		}
	}
	return out
}

// request renders the spec as a device request. It returns every problem
// with paths under path.
func (s *Spec) request(path *field.Path) (hardware.DeviceRequest, field.ErrorList) {
	d, errs := s.demand(path)
	if len(errs) > 0 {
		return hardware.DeviceRequest{}, errs
	}
	p := s.profile
	n := int64(s.devices)
	r := hardware.DeviceRequest{Resources: map[corev1.ResourceName]int64{}}
	switch s.kind {
	case KindWhole:
		if s.effectiveBackend() == HAMi {
			hami := hamiProfile(p)
			r.Resources[hami.ResourceName] = n
			for name, v := range hardware.HAMiWholeResources(hami, n) {
				r.Resources[name] = v
			}
		} else {
			r.Resources[p.ResourceName] = n
		}
	case KindMIG:
		if s.strategy == Single {
			r.Resources[hardware.ResourceNVIDIAGPU] = n
			r.NodeSelector = map[string]string{
				hardware.LabelGPUProduct:  p.Product + "-MIG-" + d.mig.Name,
				hardware.LabelMIGStrategy: string(Single),
			}
		} else {
			r.Resources[d.mig.ResourceName()] = n
		}
	case KindSlice, KindVNPU:
		switch {
		case p.Vendor != hardware.NVIDIA && p.Vendor != hardware.Huawei:
			s.hamiSliceRequest(r.Resources, d)
		case p.Vendor == hardware.Huawei && s.effectiveBackend() == HAMi:
			base := "huawei.com/" + p.HAMiType
			r.Resources[corev1.ResourceName(base)] = n
			r.Resources[corev1.ResourceName(base+"-memory")] = d.tmpl.MemoryMiB
		case p.Vendor == hardware.Huawei:
			r.Resources[corev1.ResourceName("huawei.com/"+p.HuaweiType+"-"+d.tmpl.StaticType())] = 1
		case s.effectiveBackend() == Volcano:
			r.Resources[ResourceVolcanoNumber] = n
			if s.memPct > 0 {
				r.Resources[ResourceVolcanoMemPct] = int64(s.memPct)
			} else {
				r.Resources[ResourceVolcanoMemory] = ceilMiB(d.memBytes)
			}
			if s.coresSet {
				r.Resources[ResourceVolcanoCores] = int64(s.cores)
			}
			if p.HAMiType != "" {
				r.Annotations = map[string]string{AnnotationUseGPUType: p.HAMiType}
			}
		default:
			r.Resources[hardware.ResourceNVIDIAGPU] = n
			switch {
			case s.memPct > 0:
				r.Resources[ResourceGPUMemPercentage] = int64(s.memPct)
			case s.memory != "":
				r.Resources[ResourceGPUMem] = ceilMiB(d.memBytes)
			}
			if s.coresSet {
				r.Resources[ResourceGPUCores] = int64(s.cores)
			}
			if p.HAMiType != "" {
				r.Annotations = map[string]string{AnnotationUseGPUType: p.HAMiType}
			}
		}
	}
	return r, nil
}

// apply sets the spec's resources, annotations and node selectors on the
// named container of tmpl (through hardware.ApplyDevices). Call it after
// hardware.Apply with a Placement whose Count is 0, which supplies the
// profile's node selectors, environment and mounts. It never panics,
// reports every problem under path and leaves tmpl unchanged on error.
func (s *Spec) apply(tmpl *corev1.PodTemplateSpec, container string, path *field.Path) field.ErrorList {
	r, errs := s.request(path)
	if len(errs) > 0 {
		return errs
	}
	return hardware.ApplyDevices(tmpl, container, r, path)
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

func ceilMiB(b int64) int64 { return (b + mib - 1) / mib }

// hamiProfile is p as HAMi advertises it, keeping a resource name set on a
// profile that already has the HAMi flavour.
func hamiProfile(p hardware.Profile) hardware.Profile {
	if p.Flavour == hardware.HAMi {
		return p
	}
	return p.Plugin(hardware.HAMi)
}

// hamiSliceDemand validates a slice of a vendor HAMi shares by its own
// names (Hygon, Cambricon, Kunlunxin, MetaX, Moore Threads, Enflame,
// Iluvatar; hardware.HAMiSlicing) and returns what it occupies, as HAMi's
// device code at hardware.HAMiCommit accounts it: memory rounded up to the
// resource's unit (and to Kunlunxin's vXPU sizes or Moore Threads' legal
// sizes), the whole memory when only Cores is given, and the vendor's
// default compute when Cores is not given.
func (s *Spec) hamiSliceDemand(path *field.Path, b Backend, memBytes int64, errs field.ErrorList) (demandShape, field.ErrorList) {
	p := s.profile
	switch b {
	case HAMi:
	case DevicePlugin:
		return demandShape{}, append(errs, field.Invalid(path.Child("backend"), b,
			"the device plugin cannot share a device; fractions need HAMi"))
	default:
		return demandShape{}, append(errs, field.NotSupported(path.Child("backend"), b, []Backend{HAMi}))
	}
	sl, ok := p.HAMiSlicing()
	if !ok {
		return demandShape{}, append(errs, field.Invalid(path.Child("profile"), p.Name,
			fmt.Sprintf("HAMi cannot share a %s; request whole devices", p.Name)))
	}
	if s.devices > 1 && !sl.MultiDevice {
		errs = append(errs, field.Invalid(path.Child("accelerators"), s.devices,
			fmt.Sprintf("HAMi shares one %s per container; ask for whole devices to use several", p.Name)))
	}
	if s.coresSet && sl.Cores == "" {
		errs = append(errs, field.Forbidden(path.Child("cores"),
			fmt.Sprintf("HAMi derives %s compute from memory; size the slice with Memory", p.Name)))
	}
	if len(errs) > 0 {
		return demandShape{}, errs
	}
	requested := memBytes
	if s.memory == "" && s.memPct == 0 {
		requested = p.MemoryBytes // HAMi: no memory request takes all of it
	}
	unit := sl.MemoryUnitMiB * mib
	units := (requested + unit - 1) / unit
	if units*sl.MemoryUnitMiB < sl.MinMemoryMiB {
		return demandShape{}, append(errs, field.Invalid(path.Child("memory"), s.memoryLabel(),
			fmt.Sprintf("a %s slice needs at least %s", p.Name, resource.NewQuantity(sl.MinMemoryMiB*mib, resource.BinarySI))))
	}
	if len(sl.MemorySteps) > 0 {
		i := slices.IndexFunc(sl.MemorySteps, func(step int64) bool { return step >= units })
		if i < 0 {
			return demandShape{}, append(errs, field.Invalid(path.Child("memory"), s.memoryLabel(),
				fmt.Sprintf("more than the largest %s slice", p.Name)))
		}
		units = sl.MemorySteps[i]
	}
	reserved := units * unit
	if p.MemoryBytes > 0 && reserved > p.MemoryBytes {
		return demandShape{}, append(errs, field.Invalid(path.Child("memory"), s.memoryLabel(),
			fmt.Sprintf("more memory than a %s has (%s)", p.Name, resource.NewQuantity(p.MemoryBytes, resource.BinarySI))))
	}
	var compute int
	switch {
	case sl.Cores == "":
		compute = int(reserved * ComputeUnits / p.MemoryBytes)
	case s.coresSet:
		coreUnits := (s.cores*sl.CoreUnits + 99) / 100
		compute = coreUnits * ComputeUnits / sl.CoreUnits
	default:
		compute = sl.DefaultCorePercent * ComputeUnits / 100
	}
	return demandShape{memBytes: reserved, requested: requested, compute: compute}, nil
}

// hamiSliceRequest writes a valid HAMi slice of a vendor other than NVIDIA
// and Ascend into res.
func (s *Spec) hamiSliceRequest(res map[corev1.ResourceName]int64, d demandShape) {
	sl, _ := s.profile.HAMiSlicing()
	if sl.Count != "" {
		res[sl.Count] = int64(s.devices)
	}
	if s.memory != "" || s.memPct > 0 {
		res[sl.Memory] = d.memBytes / (sl.MemoryUnitMiB * mib)
	}
	if s.coresSet && sl.Cores != "" {
		res[sl.Cores] = int64((s.cores*sl.CoreUnits + 99) / 100)
	}
}
