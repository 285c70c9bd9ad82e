package fuzzcorpus

import (
	"errors"
	"testing"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FieldErrors fails t unless err is how cube refuses input: an aggregate
// whose every error is a *field.Error naming its path. It returns those
// errors, in order.
func FieldErrors(t testing.TB, err error) []*field.Error {
	t.Helper()
	if err == nil {
		t.Fatal("want field errors, got none")
	}
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		t.Fatalf("%T is not an aggregate of field errors: %v", err, err)
	}
	out := make([]*field.Error, 0, len(agg.Errors()))
	for _, e := range agg.Errors() {
		var fe *field.Error
		if !errors.As(e, &fe) {
			t.Fatalf("%T is not a *field.Error: %v", e, e)
		}
		if fe.Field == "" {
			t.Fatalf("the error names no path: %v", fe)
		}
		out = append(out, fe)
	}
	return out
}
