package podspec

import (
	"math"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Int32 converts a count the public API takes as an int (replicas, a
// budget, a percentage) to the int32 that the Kubernetes field holding it
// has. A count outside the int32 range gives an error at path and the
// nearest int32, so that rendering can go on and report every problem at
// once; the sign is the caller's to check, since some counts may be zero
// and some not.
func Int32(path *field.Path, n int) (int32, *field.Error) {
	if n > math.MaxInt32 || n < math.MinInt32 {
		return int32(min(max(n, math.MinInt32), math.MaxInt32)), field.Invalid(path, n, "must fit in 32 bits")
	}
	return int32(n), nil
}
