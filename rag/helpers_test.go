package rag

import (
	"testing"

	"github.com/cubestudio/cube/internal/testsupport/ci"
	"github.com/cubestudio/cube/rag/store"
	"github.com/stretchr/testify/require"
)

// requirePrerequisite skips when a machine prerequisite is missing, and
// fails instead under CI=true, where every prerequisite must be present.
func requirePrerequisite(t testing.TB, ok bool, why string) {
	t.Helper()
	if ok {
		return
	}
	ci.Skip(t, "%s", why)
}

// openLocal opens the embedded store in dir, closed when the test ends.
func openLocal(t *testing.T, dir string, opts ...store.LocalOption) *store.Local {
	t.Helper()
	s, err := store.Open(dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// hitIDs lists the chunk IDs of hits in order.
func hitIDs(hs []Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Chunk.ID
	}
	return out
}
