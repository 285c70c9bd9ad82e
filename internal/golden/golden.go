package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the current output")

// Assert compares got with testdata/name; with -update it writes got there
// first.
func Assert(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to create %s", path)
	require.Equal(t, string(want), string(got))
}

// AssertRender renders ws with cube.Render and compares the YAML with
// testdata/name.
func AssertRender(t testing.TB, name string, ws ...cube.Workload) {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, cube.Render(&buf, ws...))
	Assert(t, name, buf.Bytes())
}
