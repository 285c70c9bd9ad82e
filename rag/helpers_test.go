package rag

import (
	"os"
	"testing"
)

// requirePrerequisite skips when a machine prerequisite is missing, and
// fails instead under CI=true, where every prerequisite must be present.
func requirePrerequisite(t testing.TB, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("prerequisite missing under CI: %s", why)
	}
	t.Skip(why)
}
