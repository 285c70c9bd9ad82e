package llm

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/train"
)

// Stage is LLaMA-Factory's training stage (FinetuningArguments.stage).
type Stage string

// Stages cube renders. KTO is its own stage; ORPO and SimPO are
// preference losses of the dpo stage (pref_loss).
const (
	StageSFT Stage = "sft"
	StageRM  Stage = "rm"
	StageDPO Stage = "dpo"
	StageKTO Stage = "kto"
	StagePPO Stage = "ppo"
)

// Method is how much of the model trains (finetuning_type, plus
// quantization_bit for QLoRA).
type Method string

// Fine-tuning methods.
const (
	Full   Method = "full"
	Freeze Method = "freeze"
	LoRA   Method = "lora"
	// QLoRA is LoRA over base weights quantized on the fly by
	// bitsandbytes (quantization_method bnb, the default).
	QLoRA Method = "qlora"
)

// Preference losses of the dpo stage (RLHFArguments.pref_loss).
const (
	LossSigmoid = "sigmoid" // DPO
	LossHinge   = "hinge"
	LossIPO     = "ipo"
	LossORPO    = "orpo"
	LossSimPO   = "simpo"
)

// Where things are in every pod.
const (
	ConfigDir   = "/etc/llamafactory"
	ConfigKey   = "train.yaml"
	DatasetsKey = "dataset_info.json"
	ConfigFile  = ConfigDir + "/" + ConfigKey
	OutputRoot  = "/output"
	ModelRoot   = "/models"
)

// Adapter is a LoRA configuration (LoraArguments).
type Adapter struct {
	// Rank is lora_rank (LLaMA-Factory's default 8).
	Rank int
	// Alpha is lora_alpha (LLaMA-Factory's default: twice the rank).
	Alpha int
	// Dropout is lora_dropout (default 0).
	Dropout float64
	// Targets are the module names LoRA wraps; empty means "all", every
	// linear layer but the output head. Each is checked against the
	// model's modules when its architecture is known (Facts, or market's
	// catalogue, for Llama, Mistral, Qwen2/3, GLM and DeepSeek-V3 layouts).
	Targets []string
}

// FineTune is one LLaMA-Factory training run: a typed configuration
// rendered to the YAML `llamafactory-cli train` reads, its
// dataset_info.json, and the train.DeepSpeedJob (a PyTorchJob with its
// DeepSpeed ConfigMap) that runs it. Create one with SFT, RewardModel,
// DPO, KTO, ORPO, SimPO or PPO; set pod settings (namespace, hardware,
// nodes, secrets, gang scheduling) on Job.
type FineTune struct {
	job   *train.DeepSpeedJob
	stage Stage
	// runtime and framework, when runtime is set, run the job as a
	// Kubeflow Trainer v2 TrainJob (Runtime).
	runtime   string
	framework train.Framework
	model     string
	facts     *models.Model

	method      Method
	freezeLayer int
	adapter     Adapter
	quantBits   int
	resumeFrom  string

	datasets, evalDatasets []datasets.Dataset
	valSize                float64
	template               string
	trustRemote            *bool
	cutoff                 int
	maxSamples             int

	batch, accumulation int
	learningRate        float64
	scheduler           string
	epochs              float64
	steps, warmup       int
	precision           train.Precision
	clipping            float64
	checkpointing       bool
	zero                int
	offloadOptimizer    bool
	offloadParams       bool
	seed                *int

	evalSteps, saveSteps, keep int
	logSteps                   int
	output                     string
	reportTo                   string

	prefLoss             string
	beta, simpoGamma     *float64
	sftWeight            float64
	ktoChosen, ktoReject *float64
	rewardModel          string
	rewardFull           bool
	ppoEpochs            int

	problems field.ErrorList
}

func newFineTune(stage Stage, name, model string) *FineTune {
	j := train.DeepSpeed(name)
	// llamafactory-cli starts torchrun itself when FORCE_TORCHRUN is set,
	// from NNODES, NODE_RANK, NPROC_PER_NODE, MASTER_ADDR and MASTER_PORT
	// (src/llamafactory/launcher.py at v0.9.5). The training-operator sets
	// MASTER_ADDR and MASTER_PORT under those names and the other three as
	// PET_NNODES, PET_NODE_RANK and PET_NPROC_PER_NODE, after the
	// container's own env, so they are passed on the command line, where
	// Kubernetes expands $(VAR) against the whole environment.
	j.Command(LaunchCommand("train", ConfigFile)...)
	j.Env("FORCE_TORCHRUN", "1")
	f := &FineTune{
		job: j, stage: stage, model: model,
		method: LoRA, adapter: Adapter{Rank: 8},
		cutoff: 2048, batch: 1, accumulation: 8, learningRate: 1e-4, scheduler: "cosine",
		epochs: 3, precision: train.BF16, clipping: 1.0, checkpointing: true,
		logSteps: 10, saveSteps: 500, reportTo: "none",
	}
	return f
}

// LaunchCommand is the command line that runs `llamafactory-cli <command>
// <config>` in a PyTorchJob replica with the torchrun environment
// LLaMA-Factory's launcher reads taken from the operator's:
//
//	env NNODES=$(PET_NNODES) NODE_RANK=$(PET_NODE_RANK) NPROC_PER_NODE=$(PET_NPROC_PER_NODE) llamafactory-cli train /etc/llamafactory/train.yaml
func LaunchCommand(command, config string) []string {
	return []string{"env", "NNODES=$(PET_NNODES)", "NODE_RANK=$(PET_NODE_RANK)", "NPROC_PER_NODE=$(PET_NPROC_PER_NODE)",
		"llamafactory-cli", command, config}
}

// SFT starts a supervised fine-tune named name of model: a Hugging Face
// id (org/model or hf://org/model), modelscope://org/model or
// pvc://claim/path. It defaults to LoRA of rank 8 on all linear layers,
// bf16, a cutoff of 2048 tokens, a micro batch of 1 with 8 accumulation
// steps, learning rate 1e-4 on a cosine schedule, 3 epochs, gradient
// checkpointing on (LLaMA-Factory's own defaults and examples).
func SFT(name, model string) *FineTune { return newFineTune(StageSFT, name, model) }

// RewardModel trains a reward model (stage rm) on preference pairs.
func RewardModel(name, model string) *FineTune {
	return newFineTune(StageRM, name, model)
}

// DPO trains with direct preference optimisation (stage dpo, pref_loss
// sigmoid) on preference pairs, learning rate 5e-6 and beta 0.1 as
// LLaMA-Factory's examples/train_lora/qwen3_lora_dpo.yaml.
func DPO(name, model string) *FineTune {
	f := newFineTune(StageDPO, name, model)
	f.prefLoss, f.learningRate = LossSigmoid, 5e-6
	return f
}

// ORPO is the dpo stage with the odds-ratio loss, which needs no
// reference model.
func ORPO(name, model string) *FineTune { return DPO(name, model).PreferenceLoss(LossORPO) }

// SimPO is the dpo stage with the reference-free SimPO loss.
func SimPO(name, model string) *FineTune { return DPO(name, model).PreferenceLoss(LossSimPO) }

// KTO trains with Kahneman-Tversky optimisation (stage kto) on responses
// labelled good or bad.
func KTO(name, model string) *FineTune {
	f := newFineTune(StageKTO, name, model)
	f.learningRate = 5e-6
	return f
}

// PPO trains with proximal policy optimisation (stage ppo) against a
// reward model: a LoRA adapter trained by RewardModel on the same base
// that LLaMA-Factory loads beside the policy (reward_model_type lora, the
// default) given as pvc://claim/path, a full reward model with
// FullRewardModel, or a served one given as the http(s) URL of its
// scoring route (reward_model_type api; see RewardServer).
func PPO(name, model, rewardModel string) *FineTune {
	f := newFineTune(StagePPO, name, model)
	f.rewardModel, f.learningRate = rewardModel, 1e-5
	return f
}

// Job returns the training job the fine-tune runs on, for its pod
// settings: Namespace, On, GPUs, Nodes, Fabric, EnvFromSecret, Gang,
// Queue ... Apply the FineTune, not the job: the job alone lacks the
// LLaMA-Factory configuration. Image defaults to DefaultImage, or
// DefaultAscendImage on an Ascend profile; the command, FORCE_TORCHRUN
// and the DeepSpeed configuration are the fine-tune's.
func (f *FineTune) Job() *train.DeepSpeedJob {
	if f == nil || f.job == nil {
		// A nil or zero FineTune: hand back a job nobody renders, so
		// that chained calls do not panic; Objects reports the FineTune.
		return train.DeepSpeed("")
	}
	return f.job
}

// set runs fn unless f is nil, so that setters on a nil FineTune do not
// panic (Objects reports it).
func (f *FineTune) set(fn func()) *FineTune {
	if f != nil {
		fn()
	}
	return f
}

func (f *FineTune) record(err *field.Error) {
	if f != nil {
		f.problems = append(f.problems, err)
	}
}

// Facts gives the planner the model's architecture when the reference
// is not in market's catalogue (a pvc:// path, a private model).
func (f *FineTune) Facts(m models.Model) *FineTune { return f.set(func() { f.facts = &m }) }

// FullTuning trains every weight (finetuning_type full).
func (f *FineTune) FullTuning() *FineTune { return f.set(func() { f.method = Full }) }

// FreezeTuning trains the last n layers only (finetuning_type freeze,
// freeze_trainable_layers). n is checked against the model's layer count
// when its architecture is known (Facts, or market's catalogue); for a
// pvc:// model without Facts it cannot be known before the pod loads the
// model, and LLaMA-Factory trains every layer when n exceeds it.
func (f *FineTune) FreezeTuning(n int) *FineTune {
	if f == nil {
		return nil
	}
	if n < 1 {
		f.record(field.Invalid(field.NewPath("freeze_trainable_layers"), n, "must be at least 1"))
	}
	f.method, f.freezeLayer = Freeze, n
	return f
}

// LoRA trains a low-rank adapter (finetuning_type lora).
func (f *FineTune) LoRA(a Adapter) *FineTune {
	if f == nil {
		return nil
	}
	f.method, f.adapter, f.quantBits = LoRA, cloneAdapter(a), 0
	return f
}

// QLoRA trains a LoRA adapter over base weights quantized to bits (4 or
// 8) by bitsandbytes (quantization_bit; 4-bit as NF4, LLaMA-Factory's
// default quantization_type).
func (f *FineTune) QLoRA(bits int, a Adapter) *FineTune {
	if f == nil {
		return nil
	}
	f.method, f.adapter, f.quantBits = QLoRA, cloneAdapter(a), bits
	return f
}

func cloneAdapter(a Adapter) Adapter { a.Targets = slices.Clone(a.Targets); return a }

// Template sets LLaMA-Factory's chat template, replacing the family
// preset (FamilyOf).
func (f *FineTune) Template(name string) *FineTune { return f.set(func() { f.template = name }) }

// TrustRemoteCode sets trust_remote_code, replacing the family preset.
func (f *FineTune) TrustRemoteCode(on bool) *FineTune { return f.set(func() { f.trustRemote = &on }) }

// AddDataset appends training datasets.
func (f *FineTune) AddDataset(d ...datasets.Dataset) *FineTune {
	return f.set(func() { f.datasets = appendDatasets(f.datasets, d) })
}

// AddEvalDataset appends evaluation datasets (eval_dataset) and turns
// on evaluation.
func (f *FineTune) AddEvalDataset(d ...datasets.Dataset) *FineTune {
	return f.set(func() { f.evalDatasets = appendDatasets(f.evalDatasets, d) })
}

// appendDatasets appends copies of d, their Columns maps cloned.
func appendDatasets(to []datasets.Dataset, d []datasets.Dataset) []datasets.Dataset {
	for _, x := range d {
		x.Columns = maps.Clone(x.Columns)
		to = append(to, x)
	}
	return to
}

// ValidationSplit holds out a fraction of the training data for
// evaluation (val_size) and turns on evaluation.
func (f *FineTune) ValidationSplit(fraction float64) *FineTune {
	return f.set(func() { f.valSize = fraction })
}

// EvalEvery evaluates every n optimizer steps (eval_strategy steps).
func (f *FineTune) EvalEvery(n int) *FineTune { return f.set(func() { f.evalSteps = n }) }

// CutoffLength sets the token length samples are cut to (cutoff_len).
func (f *FineTune) CutoffLength(n int) *FineTune { return f.set(func() { f.cutoff = n }) }

// MaxSamples caps the samples read from each dataset (max_samples).
func (f *FineTune) MaxSamples(n int) *FineTune { return f.set(func() { f.maxSamples = n }) }

// Batch sets the micro batch per device and the gradient accumulation
// steps; the global batch is their product times the device count.
func (f *FineTune) Batch(perDevice, accumulation int) *FineTune {
	if f == nil {
		return nil
	}
	f.batch, f.accumulation = perDevice, accumulation
	return f
}

// LearningRate sets the peak learning rate.
func (f *FineTune) LearningRate(lr float64) *FineTune { return f.set(func() { f.learningRate = lr }) }

// LRScheduler sets the learning-rate schedule (lr_scheduler_type: linear,
// cosine, cosine_with_restarts, polynomial, constant,
// constant_with_warmup, inverse_sqrt).
func (f *FineTune) LRScheduler(name string) *FineTune { return f.set(func() { f.scheduler = name }) }

// Epochs sets the training epochs (num_train_epochs); MaxSteps overrides.
func (f *FineTune) Epochs(n float64) *FineTune { return f.set(func() { f.epochs = n }) }

// MaxSteps stops after n optimizer steps (max_steps), overriding Epochs.
func (f *FineTune) MaxSteps(n int) *FineTune { return f.set(func() { f.steps = n }) }

// WarmupSteps warms the learning rate up linearly over n steps.
func (f *FineTune) WarmupSteps(n int) *FineTune { return f.set(func() { f.warmup = n }) }

// Precision sets mixed precision: train.BF16 (default), train.FP16 or
// train.FP32.
func (f *FineTune) Precision(p train.Precision) *FineTune { return f.set(func() { f.precision = p }) }

// GradientClipping clips the gradient norm (max_grad_norm, default 1; 0
// turns clipping off).
func (f *FineTune) GradientClipping(norm float64) *FineTune {
	return f.set(func() { f.clipping = norm })
}

// GradientCheckpointing turns activation recomputation on (the default)
// or off (disable_gradient_checkpointing).
func (f *FineTune) GradientCheckpointing(on bool) *FineTune {
	return f.set(func() { f.checkpointing = on })
}

// ZeRO sets the DeepSpeed ZeRO stage, 0 (default) to 3.
func (f *FineTune) ZeRO(stage int) *FineTune { return f.set(func() { f.zero = stage }) }

// OffloadOptimizer moves optimizer state to CPU memory (ZeRO 1–3).
func (f *FineTune) OffloadOptimizer() *FineTune { return f.set(func() { f.offloadOptimizer = true }) }

// OffloadParams moves parameters to CPU memory (ZeRO 3).
func (f *FineTune) OffloadParams() *FineTune { return f.set(func() { f.offloadParams = true }) }

// Seed sets the random seed.
func (f *FineTune) Seed(n int) *FineTune { return f.set(func() { f.seed = &n }) }

// SaveEvery checkpoints every n steps and keeps the last keep (0: all).
func (f *FineTune) SaveEvery(n, keep int) *FineTune {
	return f.set(func() { f.saveSteps, f.keep = n, keep })
}

// LogEvery logs every n steps (logging_steps, default 10).
func (f *FineTune) LogEvery(n int) *FineTune { return f.set(func() { f.logSteps = n }) }

// ResumeFrom starts from an existing adapter (adapter_name_or_path), as
// pvc://claim/path: DPO after SFT on the SFT adapter.
func (f *FineTune) ResumeFrom(adapter string) *FineTune {
	return f.set(func() { f.resumeFrom = adapter })
}

// Output sets where the result is written, as pvc://claim/path; it is
// required, because a pod's own disk goes with it. Serve reads it from
// there.
func (f *FineTune) Output(uri string) *FineTune { return f.set(func() { f.output = uri }) }

// ReportTo sends metrics to "tensorboard", "wandb" (with WandB), "mlflow"
// or "none" (default).
func (f *FineTune) ReportTo(to string) *FineTune { return f.set(func() { f.reportTo = to }) }

// WandB reports to Weights & Biases with the API key from a Secret
// (WANDB_API_KEY through a secretKeyRef; never a literal).
func (f *FineTune) WandB(secret, key string) *FineTune {
	if f == nil {
		return nil
	}
	f.reportTo = "wandb"
	f.Job().EnvFromSecret("WANDB_API_KEY", pod.SecretKeyRef{Name: secret, Key: key})
	return f
}

// HFToken gives Hugging Face downloads a token from a Secret (HF_TOKEN,
// which huggingface_hub reads, through a secretKeyRef) for gated models
// such as Llama 3.
func (f *FineTune) HFToken(ref pod.SecretKeyRef) *FineTune {
	if f == nil {
		return nil
	}
	f.Job().EnvFromSecret("HF_TOKEN", ref)
	return f
}

// PreferenceLoss sets the dpo stage's loss: LossSigmoid (DPO), LossHinge,
// LossIPO, LossORPO or LossSimPO.
func (f *FineTune) PreferenceLoss(loss string) *FineTune { return f.set(func() { f.prefLoss = loss }) }

// Beta sets the preference temperature (pref_beta, default 0.1).
func (f *FineTune) Beta(b float64) *FineTune { return f.set(func() { f.beta = &b }) }

// SimPOGamma sets SimPO's target reward margin (simpo_gamma).
func (f *FineTune) SimPOGamma(g float64) *FineTune { return f.set(func() { f.simpoGamma = &g }) }

// SFTWeight adds the SFT loss to a preference loss with this weight
// (pref_ftx).
func (f *FineTune) SFTWeight(w float64) *FineTune { return f.set(func() { f.sftWeight = w }) }

// KTOWeights sets KTO's weights of desirable and undesirable examples.
func (f *FineTune) KTOWeights(chosen, rejected float64) *FineTune {
	if f == nil {
		return nil
	}
	f.ktoChosen, f.ktoReject = &chosen, &rejected
	return f
}

// FullRewardModel says PPO's reward model is a full model, not a LoRA
// adapter on the policy's base.
func (f *FineTune) FullRewardModel() *FineTune { return f.set(func() { f.rewardFull = true }) }

// RewardServer scores PPO's responses with a reward model served over
// HTTP (reward_model_type api, reward_model the URL), replacing the
// reward model PPO was given. url is the full URL of the scoring route,
// which LLaMA-Factory v0.9.5 posts to as given
// (train/ppo/ppo_utils.py get_rewards_from_server): a JSON body
// {"model": "model", "messages": [prompt + response, ...]}, the answer's
// "scores" one number a text. LLaMA-Factory's own API server answers it
// at /v1/score/evaluation (api/app.py) when it runs a reward model
// (`llamafactory-cli api` with stage rm, a value-head checkpoint, the
// Hugging Face backend); no engine of package serve does (vLLM's /score
// and /classify, TEI's /predict take other bodies), so neither a
// serve.Service nor its OpenAI endpoint is accepted.
//
// The request carries only a Content-Type header: LLaMA-Factory sends no
// API key, so the server must run without one (the API server checks a
// bearer token only when API_KEY is set) and stay reachable only inside
// the cluster; a URL with credentials in it is refused.
func (f *FineTune) RewardServer(url string) *FineTune {
	return f.set(func() { f.rewardModel, f.rewardFull = url, false })
}

// PPOEpochs sets the optimisation epochs per PPO batch (ppo_epochs).
func (f *FineTune) PPOEpochs(n int) *FineTune { return f.set(func() { f.ppoEpochs = n }) }
