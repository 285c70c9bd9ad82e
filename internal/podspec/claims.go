package podspec

import (
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/vgpuspec"
)

// SharedClaim makes the pods of the workload share one ResourceClaim
// instead of each getting a claim of its own from a ResourceClaimTemplate,
// when the profile's flavour is a DRA driver (hardware.NVIDIADRA,
// hardware.HAMiDRA): a serving group or a gang then uses one set of
// devices, on the one node that holds them.
func (b *Builder[T]) SharedClaim(on bool) *T { b.sharedClaim = on; return b.ret() }

// RendersClaims says that the workload appends the object Claims renders
// to its objects. Pods of a workload that does not refuse a DRA profile
// with a field error (applyHardware), so that no pod refers to a claim
// template nobody creates.
func (b *Builder[T]) RendersClaims() { b.rendersClaims = true }

// ClaimRef names the ResourceClaimTemplate (or, with SharedClaim, the
// ResourceClaim) the pods' DRA devices come from: the workload's name and
// "-" + hardware.ClaimName.
func (b *Builder[T]) ClaimRef() hardware.ClaimRef {
	return hardware.ClaimRef{Name: b.Name() + "-" + hardware.ClaimName, Shared: b.sharedClaim}
}

// deviceClaim is the DRA claim of the pods, and whether they have one:
// the profile's flavour is a DRA driver and the pods ask for whole devices
// or a slice.
func (b *Builder[T]) deviceClaim(path *field.Path) (hardware.DeviceClaim, bool, field.ErrorList) {
	if b.profile == nil || !b.profile.DRA() {
		return hardware.DeviceClaim{}, false, nil
	}
	if b.slice != nil {
		r, errs := vgpuspec.Of(b.slice).Request(path)
		if len(errs) > 0 || r.Claim == nil {
			return hardware.DeviceClaim{}, false, errs
		}
		c := *r.Claim
		c.ClaimRef = b.ClaimRef()
		return c, true, nil
	}
	if b.devices < 1 {
		return hardware.DeviceClaim{}, false, nil
	}
	c, ok := hardware.WholeClaim(*b.profile, int64(b.devices))
	c.ClaimRef = b.ClaimRef()
	return c, ok, nil
}

// Claims renders the object the pods' DRA claim comes from: a
// ResourceClaimTemplate, or with SharedClaim a ResourceClaim, named by
// ClaimRef, in the workload's namespace and release. Both are nil when the
// pods have no DRA claim; problems of the slice are reported by Template.
// A workload appends the one that is not nil to its objects.
func (b *Builder[T]) Claims() (*resourcev1.ResourceClaimTemplate, *resourcev1.ResourceClaim) {
	c, ok, errs := b.deviceClaim(nil)
	if !ok || len(errs) > 0 {
		return nil, nil
	}
	meta := b.ObjectMeta(c.Name)
	if c.Shared {
		return nil, &resourcev1.ResourceClaim{
			TypeMeta:   typeMeta("ResourceClaim"),
			ObjectMeta: meta,
			Spec:       c.Spec(),
		}
	}
	return &resourcev1.ResourceClaimTemplate{
		TypeMeta:   typeMeta("ResourceClaimTemplate"),
		ObjectMeta: meta,
		// The claims made from it carry no release labels: they belong to
		// their pods, and go with them.
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: c.Spec()},
	}, nil
}

func typeMeta(kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: resourcev1.SchemeGroupVersion.String(), Kind: kind}
}
