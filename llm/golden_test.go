package llm_test

import (
	"testing"

	"github.com/cubestudio/cube/internal/testsupport/golden"
	"github.com/cubestudio/cube/train"
)

// TestGolden renders every fine-tune on every hardware setup, and the
// verl runs, and compares the YAML with testdata/<name>.golden (go test
// -update rewrites them).
func TestGolden(t *testing.T) {
	for _, b := range builders {
		for _, s := range setups {
			name := b.name + "-" + s.name
			t.Run(name, func(t *testing.T) {
				f := b.build(b.name)
				s.on(f)
				golden.AssertRender(t, name+".golden", f)
			})
		}
	}
	// The same fine-tune as a Kubeflow Trainer v2 TrainJob.
	for _, s := range setups {
		name := "sft-lora-trainer-" + s.name
		t.Run(name, func(t *testing.T) {
			f := builders[0].build("sft-lora").Runtime("torch-"+s.name, train.FrameworkTorch)
			s.on(f)
			golden.AssertRender(t, name+".golden", f)
		})
	}
	for name, r := range rlBuilders() {
		t.Run(name, func(t *testing.T) { golden.AssertRender(t, "verl-"+name+".golden", r) })
	}
	t.Run("merge", func(t *testing.T) {
		golden.AssertRender(t, "merge.golden", builders[0].build("sft-lora").Merge("merge", "pvc://models/merged"))
	})
}
