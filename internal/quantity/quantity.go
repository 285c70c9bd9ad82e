package quantity

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// MaxExponent bounds the decimal exponent of a quantity ("1e1000").
const MaxExponent = 1000

// Parse is resource.ParseQuantity for user input: an exponent beyond
// ±MaxExponent is an error, and so is a binary quantity beyond int64
// ("9Ei"), which apimachinery silently clamps to 2^63-1.
func Parse(s string) (resource.Quantity, error) {
	if exp, ok := exponent(s); ok && (exp > MaxExponent || exp < -MaxExponent) {
		return resource.Quantity{}, fmt.Errorf("the exponent of %q is beyond ±%d", s, MaxExponent)
	}
	q, err := resource.ParseQuantity(s)
	if err == nil && q.CmpInt64(math.MaxInt64) == 0 && strings.TrimSpace(s) != strconv.FormatInt(math.MaxInt64, 10) {
		return resource.Quantity{}, fmt.Errorf("%q is beyond what a quantity counts (2^63-1)", s)
	}
	return q, err
}

// exponent is the decimal exponent of s ("5" in "1e5", "-3" in "2E-3") by
// apimachinery's grammar: a signed number of digits and dots, then the
// suffix; a suffix of e or E and more is an exponent. An exponent too
// large for int64 comes back as beyond any bound.
func exponent(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	for i < len(s) && (s[i] == '.' || s[i] >= '0' && s[i] <= '9') {
		i++
	}
	suffix := s[i:]
	if len(suffix) < 2 || suffix[0] != 'e' && suffix[0] != 'E' {
		return 0, false
	}
	exp, err := strconv.ParseInt(suffix[1:], 10, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			if strings.HasPrefix(suffix[1:], "-") {
				return -MaxExponent - 1, true
			}
			return MaxExponent + 1, true
		}
		return 0, false // not an exponent: apimachinery says what is wrong
	}
	return exp, true
}
