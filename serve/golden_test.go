package serve_test

import (
	"testing"

	"github.com/cubestudio/cube/internal/testsupport/golden"
)

// TestGolden pins the rendered YAML of every engine; run with -update after
// an intended change and read the diff.
func TestGolden(t *testing.T) {
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			golden.AssertRender(t, c.name+".golden.yaml", c.w)
		})
	}
}
