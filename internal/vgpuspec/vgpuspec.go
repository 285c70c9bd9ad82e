package vgpuspec

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
)

// Reads are the reads of a *vgpu.Spec that cube's own packages need. The
// Spec is a builder and has settings only; these are its values and its
// rendering, as package vgpu computes them.
type Reads interface {
	// Profile is a copy of the card the spec is for.
	Profile() hardware.Profile
	// Kind is what the spec asks for: a vgpu.Kind ("whole", "slice",
	// "mig", "vnpu"; "" for a nil spec).
	Kind() string
	// Count is the number of devices the spec touches, as set with
	// Accelerators.
	Count() int
	// MIGProfile is the MIG profile name of a MIG spec.
	MIGProfile() string
	// Template is the vNPU template of a VNPU spec, or the one a Slice on
	// an Ascend profile rounds up to ("" when none fits).
	Template() string
	// Backend is the vgpu.Backend the spec renders for.
	Backend() string
	// MemoryBytes is the device memory per device the spec occupies (zero
	// when the spec is invalid).
	MemoryBytes() int64
	// Validate returns every problem of the spec with paths under path.
	Validate(path *field.Path) field.ErrorList
	// Request renders the spec as a device request, or returns every
	// problem with paths under path.
	Request(path *field.Path) (hardware.DeviceRequest, field.ErrorList)
	// Apply sets the spec's resources, annotations and node selectors on
	// the named container of tmpl; it leaves tmpl unchanged on error.
	Apply(tmpl *corev1.PodTemplateSpec, container string, path *field.Path) field.ErrorList
}

// of is a func(*vgpu.Spec) Reads, set by package vgpu's init: every
// package holding a *vgpu.Spec imports vgpu, so it is set before Of runs.
var of any

// Register is called once, by package vgpu's init, with the function that
// reads a *vgpu.Spec.
func Register[S any](read func(*S) Reads) { of = read }

// Of returns the reads of s, a *vgpu.Spec (nil included: its reads are
// those of a nil spec). Of of any other type is a programmer error and
// panics.
func Of[S any](s *S) Reads {
	read, ok := of.(func(*S) Reads)
	if !ok {
		panic(fmt.Sprintf("vgpuspec: Of(%T): only a *vgpu.Spec has reads", s))
	}
	return read(s)
}
