package ci

import (
	"fmt"
	"os"
	"testing"
)

// Enforced reports whether the tests run under CI (CI=true), where every
// prerequisite must be there.
func Enforced() bool { return os.Getenv("CI") == "true" }

// Skip skips t for a missing machine prerequisite (what it is and how to
// get it), or fails it under CI.
func Skip(t testing.TB, prerequisite string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(prerequisite, args...)
	if Enforced() {
		t.Fatalf("missing prerequisite under CI=true: %s", msg)
		return
	}
	t.Skipf("missing prerequisite: %s", msg)
}
