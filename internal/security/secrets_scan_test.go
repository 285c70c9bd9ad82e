package security_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGoldenObjectsHoldNoLiteralCredential scans every object of every
// golden file of the module.
func TestGoldenObjectsHoldNoLiteralCredential(t *testing.T) {
	objs, files := goldenObjects(t)
	require.NotEmpty(t, objs)
	for _, g := range objs {
		for _, f := range scanObject(g.obj) {
			t.Errorf("%s: %s %s%s", g.file, g.obj.GetKind(), g.obj.GetName(), f)
		}
	}
	t.Logf("scanned %d objects of %d golden files", len(objs), files)
}
