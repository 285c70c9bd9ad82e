package cube

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/cubestudio/cube/hardware"
)

// claimStatus reads a ResourceClaim: Ready once the scheduler allocated
// devices to it, InProgress before (a claim is allocated when its first
// pod is scheduled).
func claimStatus(c *resourcev1.ResourceClaim) ObjectStatus {
	if c.Status.Allocation != nil {
		return ObjectStatus{Phase: Ready, Reason: "Allocated"}
	}
	return ObjectStatus{Phase: InProgress, Reason: "Unallocated", Message: "no device allocated yet: the claim is allocated when a pod using it is scheduled"}
}

var claimKinds = []Kind{
	{GroupKind: schema.GroupKind{Group: resourcev1.GroupName, Kind: "ResourceClaim"}, Status: TypedStatus(claimStatus)},
	{GroupKind: schema.GroupKind{Group: resourcev1.GroupName, Kind: "ResourceClaimTemplate"}, Status: exists},
}

// need is one thing a device request asks for, as cube renders it
// (hardware.DeviceClaim): a product, a MIG profile, a capacity.
type need struct {
	text  string
	match func(d resourcev1.Device, driver string) bool // nil: cannot be judged here
}

var (
	productSelector = regexp.MustCompile(`^device\.attributes\['([^']+)'\]\.productName\.matches\('\^(.*)\$'\)$`)
	profileSelector = regexp.MustCompile(`^device\.attributes\['([^']+)'\]\.profile == '([^']*)'$`)
)

// needsOf describes a request's selectors and capacity requests, and the
// driver whose attributes they read ("" when none says).
func needsOf(req *resourcev1.ExactDeviceRequest) ([]need, string) {
	var out []need
	driver := ""
	for _, s := range req.Selectors {
		if s.CEL == nil {
			continue
		}
		e := s.CEL.Expression
		if m := productSelector.FindStringSubmatch(e); m != nil {
			driver = m[1]
			re, err := regexp.Compile("^" + m[2] + "$")
			if err != nil {
				out = append(out, need{text: "a device matching " + e})
				continue
			}
			name := strings.ReplaceAll(strings.ReplaceAll(m[2], "[- ]", " "), `\`, "")
			out = append(out, need{text: "productName " + name, match: func(d resourcev1.Device, drv string) bool {
				v := attribute(d, drv, hardware.AttributeProductName)
				return v != nil && re.MatchString(*v)
			}})
			continue
		}
		if m := profileSelector.FindStringSubmatch(e); m != nil {
			driver = m[1]
			want := m[2]
			out = append(out, need{text: "MIG profile " + want, match: func(d resourcev1.Device, drv string) bool {
				v := attribute(d, drv, hardware.AttributeMIGProfile)
				return v != nil && *v == want
			}})
			continue
		}
		out = append(out, need{text: "a device matching " + e})
	}
	if req.Capacity != nil {
		for _, k := range slices.Sorted(maps.Keys(req.Capacity.Requests)) {
			q := req.Capacity.Requests[k]
			out = append(out, need{text: fmt.Sprintf("%s ≥ %s", k, q.String()), match: func(d resourcev1.Device, _ string) bool {
				c, ok := d.Capacity[k]
				return ok && c.Value.Cmp(q) >= 0
			}})
		}
	}
	return out, driver
}

func attribute(d resourcev1.Device, driver, name string) *string {
	for _, key := range []string{driver + "/" + name, name} {
		if a, ok := d.Attributes[resourcev1.QualifiedName(key)]; ok && a.StringValue != nil {
			return a.StringValue
		}
	}
	return nil
}

// describeDevice names a device for a message: its product (and MIG
// profile) and memory.
func describeDevice(d resourcev1.Device, driver string) string {
	name := d.Name
	if p := attribute(d, driver, hardware.AttributeProductName); p != nil {
		name = *p
	}
	if p := attribute(d, driver, hardware.AttributeMIGProfile); p != nil {
		name += " MIG " + *p
	}
	if m, ok := d.Capacity[hardware.CapacityMemory]; ok {
		name += " (memory " + m.Value.String() + ")"
	}
	return name
}

// claimProblems explains, for a pod the scheduler found unschedulable,
// each of its claims that has no allocation: what the claim's requests
// need and what devices the cluster's ResourceSlices offer. It returns
// nothing for a pod without claims, and leaves out what it may not read.
func (r *Release) claimProblems(ctx context.Context, p *corev1.Pod) ([]string, error) {
	var names []string
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			names = append(names, *s.ResourceClaimName)
		}
	}
	for _, pc := range p.Spec.ResourceClaims {
		if pc.ResourceClaimName != nil {
			names = append(names, *pc.ResourceClaimName)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	var published *resourcev1.ResourceSliceList
	var out []string
	for _, name := range names {
		claim := &resourcev1.ResourceClaim{}
		err := r.client.c.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: name}, claim)
		switch {
		case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("read claim %s of pod %s: %w", name, p.Name, err)
		case claim.Status.Allocation != nil:
			continue
		}
		if published == nil {
			published = &resourcev1.ResourceSliceList{}
			if err := r.client.c.List(ctx, published); err != nil && !apierrors.IsForbidden(err) {
				return nil, fmt.Errorf("list resource slices: %w", err)
			}
		}
		for _, req := range claim.Spec.Devices.Requests {
			if req.Exactly == nil {
				continue
			}
			out = append(out, explainRequest(name, req.Exactly, published.Items))
		}
	}
	return out, nil
}

// explainRequest says why request of claim has no device: none of the
// driver's devices has what it needs, or those that have it are taken.
func explainRequest(claim string, req *resourcev1.ExactDeviceRequest, rs []resourcev1.ResourceSlice) string {
	needs, driver := needsOf(req)
	texts := make([]string, len(needs))
	for i, n := range needs {
		texts[i] = n.text
	}
	if len(texts) == 0 {
		texts = []string{"a device of class " + req.DeviceClassName}
	}
	counts := map[string]int{}
	var order []string
	matching := 0
	for _, s := range rs {
		if driver != "" && s.Spec.Driver != driver {
			continue
		}
		for _, d := range s.Spec.Devices {
			if !sameKind(d, s.Spec.Driver, req.DeviceClassName) {
				continue
			}
			desc := describeDevice(d, s.Spec.Driver)
			if counts[desc] == 0 {
				order = append(order, desc)
			}
			counts[desc]++
			if slices.ContainsFunc(needs, func(n need) bool { return n.match != nil && !n.match(d, s.Spec.Driver) }) {
				continue
			}
			matching++
		}
	}
	have := make([]string, len(order))
	for i, d := range order {
		have[i] = d
		if counts[d] > 1 {
			have[i] = fmt.Sprintf("%d× %s", counts[d], d)
		}
	}
	switch {
	case len(order) == 0:
		return fmt.Sprintf("no device satisfies claim %s: needs %s; the cluster publishes no such devices", claim, strings.Join(texts, ", "))
	case matching == 0:
		return fmt.Sprintf("no device satisfies claim %s: needs %s; the node's devices have %s", claim, strings.Join(texts, ", "), strings.Join(have, ", "))
	}
	return fmt.Sprintf("no free device satisfies claim %s: needs %s; the %d devices that do are allocated to other claims (or share counters with allocated partitions)", claim, strings.Join(texts, ", "), matching)
}

// sameKind keeps the devices of the kind a class selects, where the class
// is one of the drivers cube renders for (a GPU class lists GPUs, a MIG
// class MIG devices); other classes keep every device.
func sameKind(d resourcev1.Device, driver, class string) bool {
	want := map[string]string{
		hardware.DeviceClassNVIDIAGPU: "gpu", hardware.DeviceClassNVIDIAMIG: "mig", hardware.DeviceClassHAMi: "hami-gpu",
	}[class]
	if want == "" {
		return true
	}
	t := attribute(d, driver, hardware.AttributeType)
	return t != nil && *t == want
}
