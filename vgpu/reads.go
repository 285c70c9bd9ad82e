package vgpu

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/vgpuspec"
)

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
