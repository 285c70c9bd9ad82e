package llm_test

import (
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/llm"
)

// setups are the hardware columns every builder is rendered and applied in.
var setups = []struct {
	name string
	on   func(f *llm.FineTune)
}{
	{"h100-ib", func(f *llm.FineTune) {
		f.Job().On(hardware.H100).Accelerators(8).Fabric(hardware.InfiniBand()).CPU("96").Memory("1600Gi").Nodes(2)
	}},
	{"ascend910b3", func(f *llm.FineTune) {
		f.Job().On(hardware.Ascend910B3).Accelerators(8).Fabric(hardware.RoCE()).CPU("96").Memory("1400Gi").Nodes(2)
	}},
	{"cpu", func(f *llm.FineTune) { f.Job().On(hardware.CPU).CPU("8").Memory("32Gi").Nodes(2) }},
}

var (
	alpaca     = llm.InstructionData("support", "pvc://datasets/support.json", llm.Alpaca)
	sharegpt   = llm.InstructionData("chats", "hf://org/chats", llm.ShareGPT)
	pairs      = llm.PreferenceData("pairs", "pvc://datasets/pairs.json", llm.Alpaca)
	ktoLabels  = llm.KTOData("labels", "modelscope://org/kto", llm.ShareGPT)
	qwen       = "Qwen/Qwen2.5-7B-Instruct"
	rewardPath = "pvc://models/qwen-rm"
)

// builders makes every builder, named name, with its datasets and output.
var builders = []struct {
	name  string
	build func(name string) *llm.FineTune
}{
	{"sft-lora", func(n string) *llm.FineTune {
		return llm.SFT(n, qwen).AddDataset(alpaca, sharegpt).ValidationSplit(0.05).EvalEvery(100).
			LoRA(llm.Adapter{Rank: 16, Alpha: 32, Dropout: 0.05}).ZeRO(2).
			HFToken("hf", "token").Output("pvc://models/" + n)
	}},
	{"sft-qlora", func(n string) *llm.FineTune {
		// LLaMA-Factory's images lack bitsandbytes: QLoRA runs on an image of the caller's.
		return ownImage(llm.SFT(n, "meta-llama/Llama-3.1-8B-Instruct").AddDataset(alpaca).
			QLoRA(4, llm.Adapter{Rank: 8, Targets: []string{"q_proj", "v_proj"}}).Output("pvc://models/" + n))
	}},
	{"sft-full", func(n string) *llm.FineTune {
		return llm.SFT(n, "pvc://models/qwen2.5-7b").Template("qwen").Facts(mustLookup(qwen)).
			AddDataset(alpaca).FullTuning().ZeRO(3).OffloadOptimizer().Output("pvc://models/" + n)
	}},
	{"rm", func(n string) *llm.FineTune {
		return llm.RewardModel(n, qwen).AddDataset(pairs).Output("pvc://models/" + n)
	}},
	{"dpo", func(n string) *llm.FineTune {
		return llm.DPO(n, qwen).AddDataset(pairs).Beta(0.1).ResumeFrom("pvc://models/qwen-sft").Output("pvc://models/" + n)
	}},
	{"orpo", func(n string) *llm.FineTune { return llm.ORPO(n, qwen).AddDataset(pairs).Output("pvc://models/" + n) }},
	{"simpo", func(n string) *llm.FineTune {
		return llm.SimPO(n, qwen).AddDataset(pairs).SimPOGamma(0.5).Output("pvc://models/" + n)
	}},
	{"kto", func(n string) *llm.FineTune {
		return llm.KTO(n, "modelscope://Qwen/Qwen2.5-7B-Instruct").AddDataset(ktoLabels).KTOWeights(1, 1).Output("pvc://models/" + n)
	}},
	{"ppo", func(n string) *llm.FineTune {
		// LLaMA-Factory's images have a trl PPO refuses: PPO runs on an image of the caller's.
		return ownImage(llm.PPO(n, qwen, rewardPath).AddDataset(alpaca).ReportTo("tensorboard").Output("pvc://models/" + n))
	}},
	{"ppo-api", func(n string) *llm.FineTune {
		return ownImage(llm.PPO(n, qwen, rewardPath).RewardServer(rewardServer).AddDataset(alpaca).FullTuning().Output("pvc://models/" + n))
	}},
}

// rewardServer is a LLaMA-Factory API server's scoring route in the cluster.
const rewardServer = "http://qwen-rm.team-a.svc:8000/v1/score/evaluation"
