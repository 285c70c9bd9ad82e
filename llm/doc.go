// Package llm fine-tunes and aligns large language models on Kubernetes
// with LLaMA-Factory (v0.9.5, the engine Cube Studio uses): supervised
// fine-tuning (full, freeze, LoRA, QLoRA), reward models, DPO and its
// relatives (ORPO, SimPO), KTO and PPO, and a planner that says how many
// accelerators a run needs, what each one holds, and how long and how much
// it takes.
//
// A FineTune is a typed LLaMA-Factory configuration rendered to the
// train.yaml `llamafactory-cli train` reads and to its dataset_info.json,
// in a ConfigMap, plus the train.DeepSpeedJob (a training-operator
// PyTorchJob and its DeepSpeed ConfigMap) that runs it. It is a
// cube.Workload: it renders, applies, waits and can be a pipeline step.
// Pod settings live on the job (Job), written once in package pod, so the
// same fine-tune runs on NVIDIA or Ascend by swapping the profile; on an
// Ascend profile the image is LLaMA-Factory's NPU build.
//
//	sft := llm.SFT("support-bot", "Qwen/Qwen2.5-7B-Instruct").
//		AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).
//		LoRA(llm.Adapter{Rank: 16, Alpha: 32}).
//		Output("pvc://models/support-bot")
//	sft.Job().Namespace("team-a").On(hardware.H100).Accelerators(8)
//	rel, err := client.Apply(ctx, sft)
//	...
//	svc := sft.Serve("support-chat").On(hardware.L4) // the base with the adapter
//
// Every pod runs llamafactory-cli with FORCE_TORCHRUN=1 and the NNODES,
// NODE_RANK and NPROC_PER_NODE its launcher reads taken from the
// operator's PET_* variables (MASTER_ADDR and MASTER_PORT the operator
// sets under those names), so a run of several nodes starts torchrun on
// every pod.
//
// Runtime runs the same fine-tune as a Kubeflow Trainer v2 TrainJob on a
// torch ClusterTrainingRuntime (train.ClusterRuntime) instead of a
// PyTorchJob: the job's pod settings and node counts become the TrainJob's,
// the ConfigMaps are mounted through its runtime patch, and the launcher's
// variables come from the Trainer's PET_* names, MASTER_ADDR and
// MASTER_PORT included (TrainerLaunchCommand). What a TrainJob cannot
// carry (the run policy, RoleResources) is refused and belongs on the
// runtime. Pick the operator the cluster runs (go doc train, "Training-
// operator v1 or Kubeflow Trainer v2").
//
// Every key rendered is a field of LLaMA-Factory's argument
// dataclasses at v0.9.5, and every template one it registers (Templates);
// testdata/contracts/llamafactory.tsv states them, with the columns each
// dataset format needs, the combinations LLaMA-Factory refuses and what its
// images contain, and the tests check every rendered configuration against
// it. What LLaMA-Factory would refuse or misread inside the pod is refused
// by Objects: among others, ValidationSplit with AddEvalDataset, 8-bit
// QLoRA under ZeRO-3, and on LLaMA-Factory's own images (which carry trl
// 0.18–0.24 and neither bitsandbytes nor s3fs) PPO, QLoRA and s3://
// datasets, which run on an image of the caller's (Job().Image). Runs
// resume from the last checkpoint in the output when the job restarts a
// pod. The batch, accumulation, precision and clipping in the DeepSpeed
// JSON are the training arguments' own, as Hugging Face's Trainer
// requires.
//
// # After training
//
// Serve returns the serve builder for the result: the base model with the
// adapter for LoRA and QLoRA, the output itself for full and freeze
// tuning. Merge returns an Export, `llamafactory-cli export` on one pod,
// that merges the adapter into the base and writes the weights to a
// claim; its Serve serves them.
//
// # Planning
//
// Plan sizes a fine-tune for a hardware profile: the smallest number of
// devices and the lowest ZeRO stage whose memory holds the model states
// (DeepSpeed's own estimators for ZeRO-2 and 3), the frozen weights
// (exact LoRA counts from market's shapes, NF4 for QLoRA) and the
// activations (Korthikanti et al. 2022), with the time from
// k·N·D / (devices × peak × MFU) and the cost from the caller's prices.
// TrainingPlan.String explains every figure; Apply puts the layout on the
// fine-tune. Check answers a pinned question instead ("ZeRO-2 on 8 ×
// H100: does it fit, what does each device hold?") by the same formulas.
//
// PlanRL sizes a verl run the same way, phase by phase of its step, as
// verl's hybrid engine places the roles on every device: the FSDP-sharded
// fp32 states of the actor (and a PPO critic) with their offloads, their
// activations, the rollout engine's gpu_memory_utilization share of the
// device sized by serve.Plan (weights, reserve, KV cache and how many
// responses run at once), a served reward model's share, and the
// reference in CPU memory. Time is the training passes over
// (devices × peak × MFU), divided by (1 − RolloutShare), an assumption
// the caller changes; RLPlan.String explains every figure.
//
//	plan, err := llm.PlanRL(grpo, hardware.H100, llm.Tokens(15_000_000))
//
// # GRPO and large PPO: verl on KubeRay
//
// GRPO and VerlPPO run verl (v0.7.0) on a train.RayJob: the Ray driver
// runs `python3 -m verl.trainer.main_ppo` with Hydra overrides rendered
// from typed settings (every key, value and combination checked against
// testdata/contracts/verl.tsv, read from verl's source), and verl's
// hybrid engine places the actor, the vLLM or SGLang rollout, the
// reference and a reward model on the worker groups' accelerators in
// turn. trainer.nnodes and
// n_gpus_per_node are read from the RayJob's own worker groups, and
// verl's batch checks are made before the run is submitted. See rl.go
// for why verl rather than OpenRLHF. verl's images hold its dependencies
// but not verl, which each run installs at run time from the v0.7.0
// commit through the RayJob's runtime environment (DefaultVerlImage). A
// reward model (RewardModel, a sequence classifier: not llm.RewardModel's
// output) is served by verl's reward loop on the same accelerators; a
// reward function can call a model served by package serve
// (JudgeEndpoint sets OPENAI_BASE_URL to its endpoint). verl builds a
// validation set on every run, so ValFiles is required.
//
//	grpo := llm.GRPO("math", "Qwen/Qwen2.5-7B-Instruct").
//		TrainFiles("pvc://datasets/gsm8k/train.parquet").
//		ValFiles("pvc://datasets/gsm8k/test.parquet").
//		RewardFunction("pvc://datasets/reward/gsm8k.py", "compute_score").
//		Output("pvc://models/math")
//	grpo.Job().WorkerGroup("gpu", 2).On(hardware.H100).Accelerators(8)
//
// # A served reward model for PPO
//
// LLaMA-Factory's PPO can score with a reward model served over HTTP
// (reward_model_type api): RewardServer, or an http(s) URL given to PPO,
// names the scoring route it posts to. It speaks LLaMA-Factory's own
// protocol ({"model", "messages"} in, {"scores"} out), which
// LLaMA-Factory's API server answers at /v1/score/evaluation and no
// engine of package serve does, and it sends no API key, so a
// serve.Service is not accepted and the URL carries no credentials.
//
// # What it does not do
//
// PlanRL does not size Megatron-backed verl runs, verl's separate reward
// resource pool or multi-turn agent rollouts; cube renders none of them.
package llm
