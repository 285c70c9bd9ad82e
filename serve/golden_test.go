package serve_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGolden pins the rendered YAML of every engine; run with -update after
// an intended change and read the diff.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			require.NoError(t, cube.Render(&buf, c.w))
			path := filepath.Join("testdata", c.name+".golden.yaml")
			if *update {
				require.NoError(t, os.MkdirAll("testdata", 0o755))
				require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "run go test ./serve -run TestGolden -update")
			assert.Equal(t, string(want), buf.String())
		})
	}
}
