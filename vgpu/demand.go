package vgpu

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/quantity"
)

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
