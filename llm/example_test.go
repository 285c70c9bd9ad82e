package llm_test

import (
	"fmt"
	"os"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/llm"
)

func ExampleSFT() {
	sft := llm.SFT("support-bot", "Qwen/Qwen2.5-7B-Instruct").
		AddDataset(llm.InstructionData("support", "pvc://datasets/support.json", llm.Alpaca)).
		LoRA(llm.Adapter{Rank: 16, Alpha: 32}).
		Epochs(2).
		Output("pvc://models/support-bot")
	sft.Job().On(hardware.H100).GPUs(8)
	cfg, err := sft.Config()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(cfg)
	// Output:
	// bf16: true
	// cutoff_len: 2048
	// dataset: support
	// dataset_dir: /etc/llamafactory
	// ddp_timeout: 180000000
	// deepspeed: /etc/deepspeed/ds_config.json
	// do_train: true
	// finetuning_type: lora
	// gradient_accumulation_steps: 8
	// learning_rate: 0.0001
	// logging_steps: 10
	// lora_alpha: 32
	// lora_rank: 16
	// lora_target: all
	// lr_scheduler_type: cosine
	// max_grad_norm: 1
	// model_name_or_path: Qwen/Qwen2.5-7B-Instruct
	// num_train_epochs: 2
	// output_dir: /output/support-bot
	// overwrite_output_dir: true
	// per_device_train_batch_size: 1
	// plot_loss: true
	// report_to: none
	// save_steps: 500
	// stage: sft
	// template: qwen
}

func ExampleDPO_errors() {
	_, err := llm.DPO("align", "Qwen/Qwen2.5-7B-Instruct").
		AddDataset(llm.InstructionData("support", "pvc://datasets/support.json", llm.Alpaca)).
		Beta(-1).
		Objects()
	fmt.Println(err)
	// Output:
	// [pref_beta: Invalid value: -1: must be positive, dataset[0].kind: Invalid value: "instructions": this stage trains on preferences, output: Required value: an output is required: Output("pvc://claim/path")]
}

func ExamplePlan() {
	sft := llm.SFT("support-bot", "meta-llama/Llama-3.1-8B-Instruct").
		AddDataset(llm.InstructionData("support", "pvc://datasets/support.json", llm.Alpaca)).
		FullTuning().
		Output("pvc://models/support-bot")
	plan, err := llm.Plan(sft, hardware.H100, llm.Tokens(20_000_000), llm.Prices(map[string]float64{"H100-SXM-80GB": 2.5}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Print(plan)
	// Output:
	// sft full of Llama-3.1-8B-Instruct on 2 × H100-SXM-80GB (1 node(s) × 2), DeepSpeed ZeRO-1
	//   parameters: 8030261248 total, 8030261248 trainable
	//   per device: 78.5 GiB of 80.0 GiB
	//     frozen weights   0.0 GiB
	//     model states     74.8 GiB (trainable weights, gradients, Adam; DeepSpeed's ZeRO-1 estimate)
	//     activations      1.7 GiB (micro batch 1 × 2048 tokens, checkpointing on; Korthikanti et al. 2022)
	//     overhead         2.0 GiB
	//   compute: 8 × active parameters × 60000000 tokens = 3.85e+18 FLOPs
	//   time: FLOPs / (2 × 989.0 TFLOPS × MFU 0.35) = 1.55 h, 3.1 device-hours
	//   cost: 3.1 device-hours × 2.50 = 7.73
}
