package podspec

import (
	"math"
	"slices"

	"gopkg.in/inf.v0"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/quantity"
)

// ParseStorageSize parses the size of a volume claim a user gave ("50Gi"):
// positive, a whole number of bytes and at most 8Ei (what int64 counts). The API server only warns about a
// fractional byte count ("500m") and stores it; the claim then asks for
// less than a byte more or less than was meant, so it is refused here.
func ParseStorageSize(path *field.Path, value string) (resource.Quantity, *field.Error) {
	q, err := quantity.ParseField(path, value, quantity.Positive)
	if err != nil {
		return q, err
	}
	if exact := q.DeepCopy(); exact.AsDec().Cmp(maxBytes) > 0 {
		// Quantity.Value and CmpInt64 saturate beyond int64 ("9Ei" compares
		// equal to 2^63-1), so the exact decimal is compared.
		return resource.Quantity{}, field.Invalid(path, value, "must be at most 8Ei (int64 bytes)")
	}
	if q.MilliValue()%1000 != 0 {
		return resource.Quantity{}, field.Invalid(path, value, "must be a whole number of bytes")
	}
	return q, nil
}

// maxBytes is the largest byte count a storage size may have: int64's.
var maxBytes = inf.NewDec(math.MaxInt64, 0)

// byteResources are counted in bytes: the API server warns about, and
// stores, a fractional value ("500m" of memory), which the kubelet rounds.
var byteResources = []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourceStorage}

// wholeBytes reports the byte-counted resources of a list that are not a
// whole number of bytes, in name order.
func wholeBytes(list corev1.ResourceList, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	whole := true
	for name, q := range list {
		whole = whole && !(slices.Contains(byteResources, name) && q.MilliValue()%1000 != 0)
	}
	if whole {
		return nil
	}
	names := make([]corev1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		q := list[name]
		if slices.Contains(byteResources, name) && q.MilliValue()%1000 != 0 {
			errs = append(errs, field.Invalid(path.Key(string(name)), q.String(), "must be a whole number of bytes"))
		}
	}
	return errs
}
