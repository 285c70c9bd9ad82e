package llm_test

import (
	"testing"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/train"
)

// BenchmarkPlan times one plan of a fine-tune on H100s: a full fine-tune
// of Llama 3.1 70B, whose search walks device counts and ZeRO stages up
// to ZeRO-3 on several nodes, and a LoRA SFT of Qwen2.5-7B, which fits
// the first layout tried. The baseline is Check of the layout Plan
// chooses: one layout sized by the same formulas, so the difference is
// the search.
func BenchmarkPlan(b *testing.B) {
	for name, f := range map[string]*llm.FineTune{
		"sft-full-70b": llm.SFT("bench", "meta-llama/Llama-3.1-70B-Instruct").AddDataset(alpaca).Output("pvc://m/x").FullTuning(),
		"sft-lora-7b":  llm.SFT("bench", qwen).AddDataset(alpaca).Output("pvc://m/x"),
	} {
		plan, err := llm.Plan(f, hardware.H100, llm.Tokens(1e9))
		if err != nil {
			b.Fatal(err)
		}
		layout := llm.Layout{Accelerators: plan.Accelerators, ZeROStage: plan.ZeROStage,
			OffloadOptimizer: plan.OffloadOptimizer, OffloadParams: plan.OffloadParams}
		b.Run(name+"/cube", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := llm.Plan(f, hardware.H100, llm.Tokens(1e9)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/baseline", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := llm.Check(f, hardware.H100, layout, llm.Tokens(1e9)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkObjects renders a LoRA SFT on two H100 nodes. The baseline
// renders the DeepSpeed job alone with the same pod settings: what the
// LLaMA-Factory configuration, its checks and mounts add is the
// difference.
func BenchmarkObjects(b *testing.B) {
	f := builders[0].build("bench")
	setups[0].on(f)
	b.Run("cube", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := f.Objects(); err != nil {
				b.Fatal(err)
			}
		}
	})
	job := train.DeepSpeed("bench").Image(llm.DefaultImage).Command(llm.LaunchCommand("train", llm.ConfigFile)...).
		Config(train.DeepSpeedConfig{ZeROStage: 2, MicroBatchPerGPU: 1, GradientAccumulation: 8, Precision: train.BF16, GradientClipping: 1})
	job.On(hardware.H100).Accelerators(8).Fabric(hardware.InfiniBand()).CPU("96").Memory("1600Gi").Nodes(2)
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := job.Objects(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPlanRL times one plan of a verl GRPO run: Qwen2.5-7B, whose
// search stops at four devices of a node, and Qwen2.5-72B with TP=8
// rollouts, which walks whole nodes to four; each sizes the rollout once
// with serve.Plan. The baseline is rendering the same run's objects, the
// alternative PlanRL's time is quoted against.
func BenchmarkPlanRL(b *testing.B) {
	big := llm.GRPO("bench", "Qwen/Qwen2.5-72B-Instruct").TrainFiles("pvc://d/t.parquet").ValFiles("pvc://d/v.parquet").RewardFunction("pvc://d/r.py", "f").
		Output("pvc://m/o").Rollout("vllm", 8, 0.5).Batch(256, 128, 4)
	big.Job().WorkerGroup("gpu", 4).On(hardware.H100).Accelerators(8)
	for name, r := range map[string]*llm.RL{"grpo-7b": grpo("bench"), "grpo-72b": big} {
		b.Run(name+"/cube", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := llm.PlanRL(r, hardware.H100, llm.Tokens(1e9)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/baseline", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := r.Objects(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRLObjects renders the 7B GRPO run on two H100 nodes. The
// baseline renders the RayJob alone with the same settings: the verl
// overrides, their checks and the mounts are the difference.
func BenchmarkRLObjects(b *testing.B) {
	r := grpo("bench")
	b.Run("cube", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := r.Objects(); err != nil {
				b.Fatal(err)
			}
		}
	})
	job := train.Ray("bench").Entrypoint("python3 -m verl.trainer.main_ppo").Image(llm.DefaultVerlImage)
	job.WorkerGroup("gpu", 2).On(hardware.H100).Accelerators(8).Fabric(hardware.InfiniBand())
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := job.Objects(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
