package train_test

import (
	"testing"

	"github.com/cubestudio/cube/internal/testsupport/golden"
)

// TestGolden renders every builder on every hardware setup and compares
// the YAML with testdata/<builder>-<setup>.golden (go test -update
// rewrites them).
func TestGolden(t *testing.T) {
	for _, bc := range builderCases {
		for _, s := range setups {
			name := bc.name + "-" + s.name
			t.Run(name, func(t *testing.T) {
				golden.AssertRender(t, name+".golden", bc.build(bc.name, s))
			})
		}
	}
}
