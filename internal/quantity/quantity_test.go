package quantity

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParseRefusesExponentsApimachineryCannotRound(t *testing.T) {
	for _, s := range []string{"92233720E6854775807", "1e-1735158785", "1E1001", "2e-1001", "1e99999999999999999999", "1e-99999999999999999999", " 1e-5000 "} {
		start := time.Now()
		_, err := Parse(s)
		require.Error(t, err, s)
		assert.Contains(t, err.Error(), "beyond ±1000")
		assert.Less(t, time.Since(start), time.Second, s)
	}
}

// apimachinery clamps a binary quantity beyond int64 to 2^63-1 without an
// error ("9Ei" reads 9223372036854775807): found by label's hostile input.
func TestParseRefusesWhatApimachineryClamps(t *testing.T) {
	for _, s := range []string{"8Ei", "9Ei", "8192Pi", "100000Ei"} {
		_, err := Parse(s)
		assert.ErrorContains(t, err, "is beyond what a quantity counts", s)
	}
	for _, s := range []string{"9223372036854775807", "7Ei", "8191Pi"} {
		_, err := Parse(s)
		assert.NoError(t, err, s)
	}
}

func TestParseIsApimachinerysEverywhereElse(t *testing.T) {
	for _, s := range []string{"16Gi", "500m", "1e3", "1E-1000", "1e1000", "-2", "+1.5", "1.5e+2", "3E", "Gi", "", "1e", "1ee5", "0x10", "12e3Gi", " 1Gi"} {
		got, err := Parse(s)
		want, wantErr := resource.ParseQuantity(s)
		assert.Equal(t, wantErr, err, s)
		assert.True(t, want.Equal(got), s)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"16Gi", "1e3", "92233720E6854775807", "1e-1001", ".5", "-1E+2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		exp, ok := exponent(s)
		if ok && (exp > MaxExponent || exp < -MaxExponent) {
			_, err := Parse(s)
			require.Error(t, err)
			return
		}
		got, err := Parse(s)
		want, wantErr := resource.ParseQuantity(s)
		if wantErr == nil && err != nil {
			require.Contains(t, err.Error(), "is beyond what a quantity counts", s)
			require.Zero(t, want.CmpInt64(math.MaxInt64), s)
			return
		}
		require.Equal(t, wantErr == nil, err == nil, s)
		if err == nil {
			require.True(t, want.Equal(got), s)
		}
	})
}

func ExampleParse() {
	q, err := Parse("16Gi")
	fmt.Println(q.String(), err)
	_, err = Parse("92233720E6854775807")
	fmt.Println(err)
	// Output:
	// 16Gi <nil>
	// the exponent of "92233720E6854775807" is beyond ±1000
}
