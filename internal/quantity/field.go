package quantity

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Sign says what a quantity given by a user may be.
type Sign int

// Signs for ParseField.
const (
	NonNegative Sign = iota // zero or more, e.g. a request
	Positive                // more than zero, e.g. a volume size
)

// ParseField parses a quantity a user gave ("16Gi", "500m") and reports a
// problem under path instead of panicking: not a quantity, negative, or
// zero when sign is Positive. Every builder parses user quantities with it.
func ParseField(path *field.Path, value string, sign Sign) (resource.Quantity, *field.Error) {
	q, err := Parse(value)
	switch {
	case err != nil:
		return resource.Quantity{}, field.Invalid(path, value, err.Error())
	case sign == Positive && q.Sign() <= 0:
		return resource.Quantity{}, field.Invalid(path, value, "must be positive")
	case q.Sign() < 0:
		return resource.Quantity{}, field.Invalid(path, value, "must not be negative")
	}
	return q, nil
}

// ParseResourceList parses a map of non-negative quantities by resource
// name, reporting each bad one under path[name], in name order.
func ParseResourceList(in map[corev1.ResourceName]string, path *field.Path) (corev1.ResourceList, field.ErrorList) {
	out := make(corev1.ResourceList, len(in))
	bad := false
	for name, v := range in {
		q, err := Parse(v)
		if err != nil || q.Sign() < 0 {
			bad = true
			continue
		}
		out[name] = q
	}
	if !bad {
		return out, nil // the usual case: no sort, no paths
	}
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(in)) {
		if _, err := ParseField(path.Key(string(name)), in[name], NonNegative); err != nil {
			errs = append(errs, err)
		}
	}
	return out, errs
}
