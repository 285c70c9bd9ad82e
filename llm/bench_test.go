package llm_test

import (
	"testing"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/llm"
)

// BenchmarkPlan times one plan of a full fine-tune of Llama 3.1 70B on
// H100s: the search walks device counts and ZeRO stages up to the first
// layout that fits (ZeRO-3 on several nodes).
func BenchmarkPlan(b *testing.B) {
	f := llm.SFT("bench", "meta-llama/Llama-3.1-70B-Instruct").AddDataset(alpaca).Output("pvc://m/x").FullTuning()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := llm.Plan(f, hardware.H100, llm.Tokens(1e9)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkObjects renders a LoRA SFT on two H100 nodes.
func BenchmarkObjects(b *testing.B) {
	f := builders[0].build("bench")
	setups[0].on(f)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Objects(); err != nil {
			b.Fatal(err)
		}
	}
}
