package llm_test

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/train"
	trainer "github.com/cubestudio/cube/train/trainerv1alpha1"
	corev1 "k8s.io/api/core/v1"
)

func ExampleSFT() {
	sft := llm.SFT("support-bot", "Qwen/Qwen2.5-7B-Instruct").
		AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).
		LoRA(llm.Adapter{Rank: 16, Alpha: 32}).
		Epochs(2).
		Output("pvc://models/support-bot")
	sft.Job().On(hardware.H100).Accelerators(8)
	objs, err := sft.Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := objs[0].(*corev1.ConfigMap).Data[llm.ConfigKey] // train.yaml
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
	// per_device_train_batch_size: 1
	// plot_loss: true
	// report_to: none
	// save_steps: 500
	// stage: sft
	// template: qwen
}

func ExampleDPO_errors() {
	_, err := llm.DPO("align", "Qwen/Qwen2.5-7B-Instruct").
		AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).
		Beta(-1).
		Objects()
	fmt.Println(err)
	// Output:
	// [pref_beta: Invalid value: -1: must be positive and finite, dataset[0].kind: Invalid value: "instructions": this stage trains on preferences, output: Required value: an output is required: Output("pvc://claim/path")]
}

func ExamplePlan() {
	sft := llm.SFT("support-bot", "meta-llama/Llama-3.1-8B-Instruct").
		AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).
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
	//   per device: 78.5 GiB of 79.6 GiB
	//     frozen weights   0.0 GiB
	//     model states     74.8 GiB (trainable weights, gradients, Adam; DeepSpeed's ZeRO-1 estimate)
	//     activations      1.7 GiB (micro batch 1 × 2048 tokens, checkpointing on; Korthikanti et al. 2022)
	//     overhead         2.0 GiB
	//   compute: 8 × active parameters × 60000000 tokens = 3.85e+18 FLOPs
	//   time: FLOPs / (2 × 989.0 TFLOPS × MFU 0.35) = 1.55 h, 3.1 device-hours
	//   cost: 3.1 device-hours × 2.50 = 7.73
}

func ExamplePlanRL() {
	grpo := llm.GRPO("math", "Qwen/Qwen2.5-7B-Instruct").
		TrainFiles("pvc://datasets/gsm8k/train.parquet").
		ValFiles("pvc://datasets/gsm8k/test.parquet").
		RewardFunction("pvc://datasets/reward/gsm8k.py", "compute_score").
		Output("pvc://models/math")
	// GSM8K's 7473 prompts × 5 samples × about 400 tokens an epoch.
	plan, err := llm.PlanRL(grpo, hardware.H100, llm.Tokens(7473*5*400), llm.Prices(map[string]float64{"H100-SXM-80GB": 2.5}))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Print(plan)
	// Output:
	// verl GRPO of Qwen2.5-7B-Instruct on 4 × H100-SXM-80GB (1 node(s) × 4), one colocated worker group (hybrid engine)
	//   step: 256 prompts × 5 samples, up to 2048 tokens each, micro batch 4
	//   parameters: actor 7615616512 (7615616512 trainable)
	//   per device: 78.2 GiB of 79.6 GiB at the largest phase
	//     actor update     41.2 GiB = states 28.4 GiB (fp32 weights, gradients, Adam; FSDP over 4) + gathered 3.8 GiB + activations 7.1 GiB + overhead 2.0 GiB
	//     generation       78.2 GiB = resident 28.4 GiB + rollout share 47.8 GiB (0.6 of the device) + overhead 2.0 GiB
	//     reference        in CPU memory (FSDP CPU offload), gathered a unit at a time
	//   rollout: 4 replica(s) of TP=1; each share holds 14.2 GiB weights + 1.2 GiB reserve + 32.4 GiB KV cache; 296 of its 320 responses at once at full length
	//   CPU memory per node: 28.4 GiB (reference and offloaded states)
	//   compute: (actor update 8×7615616512 + old log-probs 2×7615616512 + reference log-probs 2×7615616512) × 224190000 tokens = 2.05e+19 FLOPs
	//   time: FLOPs / (4 × 989.0 TFLOPS × MFU 0.35) = 4.11 h training / (1 − rollout share 0.50, assumed) = 8.22 h, 32.9 device-hours
	//   cost: 32.9 device-hours × 2.50 = 82.21
}

func ExampleFineTune_RewardServer() {
	// LLaMA-Factory v0.9.5's PPO needs trl 0.8.6 to 0.9.6, and its own
	// image has 0.18 to 0.24: PPO runs on an image built with such a trl.
	const image = "registry.example.com/llamafactory:0.9.5-trl0.9.6"
	ppo := llm.PPO("support-ppo", "Qwen/Qwen2.5-7B-Instruct", "").
		RewardServer("http://support-rm.team-a.svc:8000/v1/score/evaluation").
		AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).
		Output("pvc://models/support-ppo")
	ppo.Job().Image(image)
	objs, err := ppo.Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg := objs[0].(*corev1.ConfigMap).Data[llm.ConfigKey] // train.yaml
	for _, line := range strings.Split(cfg, "\n") {
		if strings.HasPrefix(line, "reward_model") || strings.HasPrefix(line, "stage") {
			fmt.Println(line)
		}
	}
	chat := llm.PPO("support-ppo", "Qwen/Qwen2.5-7B-Instruct", "").
		RewardServer("http://support-rm.team-a.svc:8000/v1/chat/completions").
		AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).
		Output("pvc://models/support-ppo")
	chat.Job().Image(image)
	_, err = chat.Objects()
	fmt.Println(err)
	// Output:
	// reward_model: http://support-rm.team-a.svc:8000/v1/score/evaluation
	// reward_model_type: api
	// stage: ppo
	// reward_model: Invalid value: "http://support-rm.team-a.svc:8000/v1/chat/completions": must be the URL of a route that answers LLaMA-Factory's scoring request ({"model", "messages"} in, {"scores"} out), such as a LLaMA-Factory API server's /v1/score/evaluation; the serving engines of package serve answer none
}

// A fine-tune on Kubeflow Trainer v2: the same ConfigMaps, and a TrainJob
// on the platform's torch runtime in place of the PyTorchJob.
func ExampleFineTune_Runtime() {
	sft := llm.SFT("support-bot", "Qwen/Qwen2.5-7B-Instruct").
		AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).
		Output("pvc://models/support-bot").
		Runtime("torch-h100", train.FrameworkTorch)
	sft.Job().On(hardware.H100).Accelerators(8).Nodes(2)
	objs, err := sft.Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range objs {
		fmt.Println(o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
	}
	job := objs[2].(*trainer.TrainJob)
	fmt.Println(*job.Spec.Trainer.NumNodes, "nodes of", *job.Spec.Trainer.NumProcPerNode, "processes:", strings.Join(job.Spec.Trainer.Command, " "))

	// What a TrainJob cannot carry is refused.
	sft.Job().TTLAfterFinished(time.Hour)
	_, err = sft.Objects()
	fmt.Println(err)
	// Output:
	// ConfigMap support-bot-llamafactory
	// ConfigMap support-bot-deepspeed
	// TrainJob support-bot
	// 2 nodes of 8 processes: env NNODES=$(PET_NNODES) NODE_RANK=$(PET_NODE_RANK) NPROC_PER_NODE=$(PET_NPROC_PER_NODE) MASTER_ADDR=$(PET_MASTER_ADDR) MASTER_PORT=$(PET_MASTER_PORT) llamafactory-cli train /etc/llamafactory/train.yaml
	// job.spec.runPolicy.ttlSecondsAfterFinished: Forbidden: a TrainJob of Kubeflow Trainer v2.3.0 has no TTLAfterFinished: set it on the runtime (train.ClusterRuntime TTLAfterFinished)
}
