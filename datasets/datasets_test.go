package datasets_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/cubestudio/cube/datasets"
)

func TestConstructorsSetKind(t *testing.T) {
	for _, tc := range []struct {
		d    datasets.Dataset
		kind datasets.Kind
	}{
		{datasets.InstructionData("a", "pvc://c/a.json", datasets.Alpaca), datasets.Instructions},
		{datasets.PreferenceData("b", "hf://o/b", datasets.ShareGPT), datasets.Preferences},
		{datasets.KTOData("c", "s3://b/c.json", datasets.Alpaca), datasets.KTOLabels},
	} {
		if tc.d.Kind != tc.kind {
			t.Errorf("%s: kind %q, want %q", tc.d.Name, tc.d.Kind, tc.kind)
		}
	}
}

// TestLeaf holds the reason the package exists: describing a dataset
// pulls in nothing but the standard library.
func TestLeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/cubestudio/cube/datasets").Output()
	if err != nil {
		t.Fatalf("go list: %v", err) // go test runs with the go command at hand
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, ".") && p != "github.com/cubestudio/cube/datasets" {
			t.Errorf("datasets imports %s: it must stay a standard-library leaf", p)
		}
	}
}
