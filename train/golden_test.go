package train_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestGolden renders every builder on every hardware setup and compares
// the YAML with testdata/<builder>-<setup>.golden (go test -update
// rewrites them).
func TestGolden(t *testing.T) {
	for _, bc := range builderCases {
		for _, s := range setups {
			name := bc.name + "-" + s.name
			t.Run(name, func(t *testing.T) {
				var buf bytes.Buffer
				require.NoError(t, cube.Render(&buf, bc.build(bc.name, s)))
				path := filepath.Join("testdata", name+".golden")
				if *update {
					require.NoError(t, os.MkdirAll("testdata", 0o755))
					require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
					return
				}
				want, err := os.ReadFile(path)
				require.NoError(t, err, "run go test -update to create the golden file")
				require.Equal(t, string(want), buf.String())
			})
		}
	}
}
