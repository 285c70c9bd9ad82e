package podspec_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/podspec"
)

func TestInt32(t *testing.T) {
	p := field.NewPath("spec", "replicas")
	for _, n := range []int{0, 1, -1, math.MaxInt32, math.MinInt32} {
		got, err := podspec.Int32(p, n)
		assert.Nil(t, err, n)
		assert.Equal(t, int64(n), int64(got))
	}
	got, err := podspec.Int32(p, math.MaxInt32+1)
	assert.Equal(t, int32(math.MaxInt32), got)
	assert.EqualError(t, err, "spec.replicas: Invalid value: 2147483648: must fit in 32 bits")
	got, err = podspec.Int32(p, math.MinInt32-1)
	assert.Equal(t, int32(math.MinInt32), got)
	assert.Error(t, err)
}
