package ops

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/timebound"
)

// LeaseKind is the cube.dev/kind of lease objects.
const LeaseKind = "lease"

// Annotations a lease carries: what it leases and to which workload, and
// when the enforcer stopped the workload.
const (
	AnnotationWorkloadKind    = "ops.cube.dev/workload-kind"
	AnnotationWorkloadRelease = "ops.cube.dev/workload-release"
	AnnotationAccelerator     = "ops.cube.dev/accelerator"
	AnnotationDevices         = "ops.cube.dev/devices"
	AnnotationEnforcedAt      = "ops.cube.dev/enforced-at"
)

// LeaseSpec builds a lease of accelerators to a tenant for a period, as
// a coordination.k8s.io/v1 Lease: the holder is the user, acquireTime the
// start, renewTime the last renewal and leaseDurationSeconds the period, so
// the lease expires at renewTime + leaseDurationSeconds. It names the
// workload it covers (a notebook or SSH workspace release on the leased
// hardware), which Enforcer stops at expiry. Create one with Lease; it is
// a cube.Workload.
type LeaseSpec struct {
	name, tenant, holder string
	kind, release        string
	profile              hardware.Profile
	devices              int
	start                time.Time
	period               time.Duration
}

// Lease starts the lease named name in the tenant's namespace.
func Lease(name, tenant string) *LeaseSpec { return &LeaseSpec{name: name, tenant: tenant} }

// Holder sets the user the lease is for.
func (l *LeaseSpec) Holder(user string) *LeaseSpec {
	if l != nil {
		l.holder = user
	}
	return l
}

// Workload names the release the lease covers and its cube.dev/kind
// ("notebook" is stopped with notebook.Stop, anything else scaled to zero).
func (l *LeaseSpec) Workload(kind, release string) *LeaseSpec {
	if l != nil {
		l.kind, l.release = kind, release
	}
	return l
}

// Accelerators sets what is leased: n devices of profile p.
func (l *LeaseSpec) Accelerators(p hardware.Profile, n int) *LeaseSpec {
	if l != nil {
		l.profile, l.devices = p, n
	}
	return l
}

// Period sets when the lease starts and how long it runs.
func (l *LeaseSpec) Period(start time.Time, length time.Duration) *LeaseSpec {
	if l != nil {
		l.start, l.period = start, length
	}
	return l
}

// Build validates the lease and returns it.
func (l *LeaseSpec) Build() (*coordinationv1.Lease, error) {
	if l == nil {
		return nil, errors.New("lease: builder is nil; use ops.Lease")
	}
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	for _, msg := range validation.IsDNS1123Subdomain(l.name) {
		errs = append(errs, field.Invalid(meta.Child("name"), l.name, msg))
	}
	for _, msg := range validation.IsDNS1123Label(l.tenant) {
		errs = append(errs, field.Invalid(meta.Child("namespace"), l.tenant, msg))
	}
	spec := field.NewPath("spec")
	if l.holder == "" {
		errs = append(errs, field.Required(spec.Child("holderIdentity"), "set the user with Holder"))
	}
	if l.release == "" || l.kind == "" {
		errs = append(errs, field.Required(meta.Child("annotations").Key(AnnotationWorkloadRelease), "name the leased workload with Workload(kind, release)"))
	} else {
		// The enforcer selects the workload by its cube.dev labels: a value
		// no label can hold would fail only at expiry.
		for _, v := range []struct{ key, value string }{{AnnotationWorkloadRelease, l.release}, {AnnotationWorkloadKind, l.kind}} {
			for _, msg := range validation.IsValidLabelValue(v.value) {
				errs = append(errs, field.Invalid(meta.Child("annotations").Key(v.key), v.value, msg))
			}
		}
	}
	if !l.profile.Accelerated() {
		errs = append(errs, field.Required(meta.Child("annotations").Key(AnnotationAccelerator), "lease accelerators with Accelerators(profile, n)"))
	}
	if l.devices < 1 {
		errs = append(errs, field.Invalid(meta.Child("annotations").Key(AnnotationDevices), l.devices, "must be at least 1"))
	}
	if l.start.IsZero() {
		errs = append(errs, field.Required(spec.Child("acquireTime"), "set the start with Period"))
	} else if err := timebound.Check("start", l.start); err != nil {
		errs = append(errs, field.Invalid(spec.Child("acquireTime"), l.start.UTC().Format(time.RFC3339), err.Error()))
	}
	if l.period < time.Second || l.period.Seconds() > math.MaxInt32 {
		errs = append(errs, field.Invalid(spec.Child("leaseDurationSeconds"), l.period.String(), "must be between a second and 68 years"))
	} else if err := timebound.Check("expiry", l.start.Add(l.period)); err != nil && !l.start.IsZero() {
		errs = append(errs, field.Invalid(spec.Child("leaseDurationSeconds"), l.period.String(), err.Error()))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("lease %s: %w", l.name, errs.ToAggregate())
	}
	id := cube.Identity{Kind: LeaseKind, Release: l.name}
	lease := &coordinationv1.Lease{
		TypeMeta: metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
		ObjectMeta: id.ObjectMeta(l.name, l.tenant, nil, map[string]string{
			AnnotationWorkloadKind:    l.kind,
			AnnotationWorkloadRelease: l.release,
			AnnotationAccelerator:     l.profile.Name,
			AnnotationDevices:         strconv.Itoa(l.devices),
		}),
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       &l.holder,
			LeaseDurationSeconds: ptr.To(int32(l.period / time.Second)),
			AcquireTime:          &metav1.MicroTime{Time: l.start.UTC().Truncate(time.Microsecond)},
			RenewTime:            &metav1.MicroTime{Time: l.start.UTC().Truncate(time.Microsecond)},
		},
	}
	return lease, nil
}

// Objects returns the lease, so that cube.Client.Apply applies it.
func (l *LeaseSpec) Objects() ([]client.Object, error) {
	lease, err := l.Build()
	if err != nil {
		return nil, err
	}
	return []client.Object{lease}, nil
}

// Expiry is when a lease ends: its last renewal plus its duration. It
// reports false for a lease without either.
func Expiry(l *coordinationv1.Lease) (time.Time, bool) {
	if l == nil || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return time.Time{}, false
	}
	return l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second), true
}

// Renew restarts a lease's period at at: it expires a full period later.
// A lease already enforced is renewed too, and its workload may be started
// again (notebook.Start). An at that is the zero time or outside
// 1970–2262 is refused (see internal/timebound): it would expire the lease
// at once or never.
func Renew(ctx context.Context, c client.Client, namespace, name string, at time.Time) error {
	if c == nil {
		return errors.New("renew lease: client: must not be nil")
	}
	if err := timebound.Check("at", at); err != nil {
		return fmt.Errorf("renew lease %s/%s: %w", namespace, name, err)
	}
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, lease); err != nil {
		return fmt.Errorf("renew lease %s/%s: %w", namespace, name, err)
	}
	before := lease.DeepCopy()
	lease.Spec.RenewTime = &metav1.MicroTime{Time: at.UTC().Truncate(time.Microsecond)}
	transitions := int32(1)
	if lease.Spec.LeaseTransitions != nil {
		transitions = *lease.Spec.LeaseTransitions + 1
	}
	lease.Spec.LeaseTransitions = &transitions
	delete(lease.Annotations, AnnotationEnforcedAt)
	if err := c.Patch(ctx, lease, client.MergeFrom(before), client.FieldOwner(FieldManager)); err != nil {
		return fmt.Errorf("renew lease %s/%s: %w", namespace, name, err)
	}
	return nil
}

// checkLeaseTimes refuses a lease whose renewal time or duration is
// missing or could not have been set on purpose.
func checkLeaseTimes(l *coordinationv1.Lease) error {
	var errs []error
	if l.Spec.RenewTime == nil {
		errs = append(errs, errors.New("spec.renewTime: must be set"))
	} else if err := timebound.Check("spec.renewTime", l.Spec.RenewTime.Time); err != nil {
		errs = append(errs, err)
	}
	if d := l.Spec.LeaseDurationSeconds; d == nil || *d < 1 {
		errs = append(errs, errors.New("spec.leaseDurationSeconds: must be at least 1"))
	}
	return errors.Join(errs...)
}

// Enforcer stops the workloads of expired leases.
type Enforcer struct {
	Client client.Client
	// Now is the clock; nil means time.Now. Tests inject one.
	Now func() time.Time
}

// Expired is a lease whose workload Enforce stopped.
type Expired struct {
	Tenant, Lease, Holder string
	Workload              string
	ExpiredAt             time.Time
}

// Enforce lists the cube leases in namespace (all namespaces when empty)
// and stops the workload of every lease that has expired and is not yet
// enforced, marking it with AnnotationEnforcedAt so that the next run
// leaves it alone. It returns the leases it enforced; errors of single
// leases are joined and the others still enforced.
func (e Enforcer) Enforce(ctx context.Context, namespace string) ([]Expired, error) {
	if e.Client == nil {
		return nil, errors.New("enforce leases: client: must not be nil")
	}
	now := time.Now
	if e.Now != nil {
		now = e.Now
	}
	var leases coordinationv1.LeaseList
	opts := []client.ListOption{client.MatchingLabels{cube.LabelKind: LeaseKind, cube.LabelManagedBy: cube.ManagedBy}}
	if namespace != "" {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := e.Client.List(ctx, &leases, opts...); err != nil {
		return nil, fmt.Errorf("enforce leases: list: %w", err)
	}
	at := now()
	if err := timebound.Check("now", at); err != nil {
		return nil, fmt.Errorf("enforce leases: %w", err)
	}
	var out []Expired
	var errs []error
	for i := range leases.Items {
		l := &leases.Items[i]
		if l.Annotations[AnnotationEnforcedAt] != "" {
			continue
		}
		if err := checkLeaseTimes(l); err != nil {
			// Neither stopped nor passed over in silence: a lease whose
			// times were never set or are a placeholder needs a person.
			errs = append(errs, fmt.Errorf("enforce lease %s/%s: not enforced: %w", l.Namespace, l.Name, err))
			continue
		}
		end, _ := Expiry(l)
		if at.Before(end) {
			continue
		}
		release := l.Annotations[AnnotationWorkloadRelease]
		if err := stopRelease(ctx, e.Client, l.Namespace, release, l.Annotations[AnnotationWorkloadKind], Stop); err != nil {
			errs = append(errs, fmt.Errorf("enforce lease %s/%s: %w", l.Namespace, l.Name, err))
			continue
		}
		before := l.DeepCopy()
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[AnnotationEnforcedAt] = at.UTC().Format(time.RFC3339)
		if err := e.Client.Patch(ctx, l, client.MergeFrom(before), client.FieldOwner(FieldManager)); err != nil {
			errs = append(errs, fmt.Errorf("enforce lease %s/%s: mark enforced: %w", l.Namespace, l.Name, err))
		}
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		out = append(out, Expired{Tenant: l.Namespace, Lease: l.Name, Holder: holder, Workload: release, ExpiredAt: end})
	}
	return out, errors.Join(errs...)
}
