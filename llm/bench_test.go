package llm_test

import (
	"testing"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/llm"
)

// BenchmarkPlan times one plan of a fine-tune on H100s: a full fine-tune
// of Llama 3.1 70B, whose search walks device counts and ZeRO stages up
// to ZeRO-3 on several nodes, and a LoRA SFT of Qwen2.5-7B, which fits
// the first layout tried.
func BenchmarkPlan(b *testing.B) {
	for name, f := range map[string]*llm.FineTune{
		"sft-full-70b": llm.SFT("bench", "meta-llama/Llama-3.1-70B-Instruct").AddDataset(alpaca).Output("pvc://m/x").FullTuning(),
		"sft-lora-7b":  llm.SFT("bench", qwen).AddDataset(alpaca).Output("pvc://m/x"),
	} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := llm.Plan(f, hardware.H100, llm.Tokens(1e9)); err != nil {
					b.Fatal(err)
				}
			}
		})
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

// BenchmarkPlanRL times one plan of a verl GRPO run: Qwen2.5-7B, whose
// search stops at four devices of a node, and Qwen2.5-72B with TP=8
// rollouts, which walks whole nodes to four; each sizes the rollout once
// with serve.Plan.
func BenchmarkPlanRL(b *testing.B) {
	big := llm.GRPO("bench", "Qwen/Qwen2.5-72B-Instruct").TrainFiles("pvc://d/t.parquet").ValFiles("pvc://d/v.parquet").RewardFunction("pvc://d/r.py", "f").
		Output("pvc://m/o").Rollout("vllm", 8, 0.5).Batch(256, 128, 4)
	for name, r := range map[string]*llm.RL{"grpo-7b": grpo("bench"), "grpo-72b": big} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := llm.PlanRL(r, hardware.H100, llm.Tokens(1e9)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRLObjects renders the 7B GRPO run on two H100 nodes: the
// alternative PlanRL's time is quoted against.
func BenchmarkRLObjects(b *testing.B) {
	r := grpo("bench")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Objects(); err != nil {
			b.Fatal(err)
		}
	}
}
