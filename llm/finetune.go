package llm

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"path"
	"slices"
	"strings"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/urlcheck"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/serve"
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
	model string
	facts *models.Model

	method      Method
	freezeLayer int
	adapter     Adapter
	quantBits   int
	resumeFrom  string

	datasets, evalDatasets []Dataset
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

	autoImage string
	problems  field.ErrorList
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
func (f *FineTune) AddDataset(d ...Dataset) *FineTune {
	return f.set(func() { f.datasets = appendDatasets(f.datasets, d) })
}

// AddEvalDataset appends evaluation datasets (eval_dataset) and turns
// on evaluation.
func (f *FineTune) AddEvalDataset(d ...Dataset) *FineTune {
	return f.set(func() { f.evalDatasets = appendDatasets(f.evalDatasets, d) })
}

// appendDatasets appends copies of d, their Columns maps cloned.
func appendDatasets(to []Dataset, d []Dataset) []Dataset {
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

// Scheduler sets the learning-rate schedule (lr_scheduler_type: linear,
// cosine, cosine_with_restarts, polynomial, constant,
// constant_with_warmup, inverse_sqrt).
func (f *FineTune) Scheduler(name string) *FineTune { return f.set(func() { f.scheduler = name }) }

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
func (f *FineTune) HFToken(secret, key string) *FineTune {
	if f == nil {
		return nil
	}
	f.Job().EnvFromSecret("HF_TOKEN", pod.SecretKeyRef{Name: secret, Key: key})
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

// Stage returns the LLaMA-Factory stage.
func (f *FineTune) Stage() Stage {
	if f == nil {
		return ""
	}
	return f.stage
}

// resolved is what rendering found out about a reference: the path or id
// LLaMA-Factory gets, the claim to mount and the env to set.
type resolved struct {
	value      string
	claim      *claimMount
	modelScope bool
}

// resolveModel turns a model reference into model_name_or_path.
func resolveModel(ref string, p *field.Path, mountAs string) (resolved, field.ErrorList) {
	src, err := serve.ParseSource(ref)
	if err != nil {
		return resolved{}, field.ErrorList{field.Invalid(p, ref, "must be a Hugging Face id (org/model, hf://org/model), modelscope://org/model or pvc://claim/path")}
	}
	switch src.Kind {
	case serve.SourceHuggingFace:
		if src.Revision != "" {
			return resolved{value: src.Repo}, field.ErrorList{field.Invalid(p, ref, "set the revision with a pvc:// copy: LLaMA-Factory's model_revision is not rendered")}
		}
		return resolved{value: src.Repo}, nil
	case serve.SourceModelScope:
		// use_modelscope() reads USE_MODELSCOPE_HUB (extras/misc.py).
		return resolved{value: src.Repo, modelScope: true}, nil
	case serve.SourcePVC:
		m := &claimMount{claim: src.Claim, mountPath: path.Join(mountAs, src.Claim)}
		return resolved{value: path.Join(m.mountPath, src.Path), claim: m}, nil
	}
	return resolved{}, field.ErrorList{field.Invalid(p, ref, fmt.Sprintf("%s models cannot be trained from: use a Hugging Face id, modelscope:// or pvc://", src.Kind))}
}

// rendering is the outcome of render: the objects' parts.
type rendering struct {
	config   trainConfig
	datasets map[string]datasetInfo
	claims   []claimVolume
	env      []corev1.EnvVar
}

type claimVolume struct {
	claim, mountPath string
	readOnly         bool
}

var (
	preferenceLosses = []string{LossSigmoid, LossHinge, LossIPO, LossORPO, LossSimPO}
	schedulers       = []string{"linear", "cosine", "cosine_with_restarts", "polynomial", "constant", "constant_with_warmup", "inverse_sqrt"}
	reporters        = []string{"none", "tensorboard", "wandb", "mlflow"}
)

// render validates the settings and builds the configuration.
func (f *FineTune) render() (rendering, field.ErrorList) {
	errs := slices.Clone(f.problems)
	var r rendering
	c := &r.config
	c.Stage, c.DoTrain, c.PlotLoss = string(f.stage), true, true
	// overwrite_output_dir stays unset: with it LLaMA-Factory skips
	// get_last_checkpoint (hparams/parser.py:484-500 at v0.9.5), so a pod
	// the job restarts would train again from step 0 instead of resuming
	// from the last checkpoint in the output directory.
	c.DatasetDir, c.DDPTimeout = ConfigDir, 180000000

	model, mErrs := resolveModel(f.model, field.NewPath("model"), ModelRoot)
	errs = append(errs, mErrs...)
	c.ModelNameOrPath = model.value
	if model.claim != nil {
		r.claims = append(r.claims, claimVolume{claim: model.claim.claim, mountPath: model.claim.mountPath, readOnly: true})
	}
	if model.modelScope {
		r.env = append(r.env, corev1.EnvVar{Name: "USE_MODELSCOPE_HUB", Value: "1"})
	}

	family, hasFamily := FamilyOf(f.model)
	c.Template = family.Template
	c.TrustRemoteCode = family.TrustRemoteCode
	if f.template != "" {
		c.Template = f.template
	}
	if f.trustRemote != nil {
		c.TrustRemoteCode = *f.trustRemote
	}
	switch {
	case c.Template == "" && !hasFamily && len(mErrs) == 0:
		errs = append(errs, field.Required(field.NewPath("template"), fmt.Sprintf("cube has no family preset for %q: set Template", f.model)))
	case c.Template != "" && !slices.Contains(templates, c.Template):
		// get_template_and_fix_tokenizer raises "Template {name} does not
		// exist." (data/template.py at v0.9.5) only inside the pod.
		errs = append(errs, field.Invalid(field.NewPath("template"), c.Template, "is not a template LLaMA-Factory v0.9.5 registers (data/template.py; llm.Templates lists them)"))
	}

	errs = append(errs, f.renderMethod(c)...)
	errs = append(errs, f.renderStage(c, &r)...)
	errs = append(errs, f.renderData(c, &r)...)
	errs = append(errs, f.renderTraining(c, &r)...)
	return r, errs
}

func (f *FineTune) renderMethod(c *trainConfig) field.ErrorList {
	var errs field.ErrorList
	switch f.method {
	case Full:
		c.FinetuningType = "full"
	case Freeze:
		c.FinetuningType, c.FreezeTrainableLayers = "freeze", f.freezeLayer
		// More layers than the model has trains them all, silently
		// (model/adapter.py:90 at v0.9.5: range(max(0, num_layers - n), ...)).
		if m, ok := f.knownFacts(); ok && f.freezeLayer > m.Layers {
			errs = append(errs, field.Invalid(field.NewPath("freeze_trainable_layers"), f.freezeLayer,
				fmt.Sprintf("%s has %d decoder layers", m.Name, m.Layers)))
		}
	case LoRA, QLoRA:
		c.FinetuningType = "lora"
		a := f.adapter
		p := field.NewPath("lora")
		if a.Rank < 1 {
			errs = append(errs, field.Invalid(p.Child("lora_rank"), a.Rank, "must be at least 1"))
		}
		if a.Alpha < 0 {
			errs = append(errs, field.Invalid(p.Child("lora_alpha"), a.Alpha, "must not be negative (0: twice the rank)"))
		}
		if a.Dropout < 0 || a.Dropout >= 1 || math.IsNaN(a.Dropout) {
			errs = append(errs, field.Invalid(p.Child("lora_dropout"), a.Dropout, "must be in [0, 1)"))
		}
		c.LoraRank, c.LoraAlpha = a.Rank, a.Alpha
		if a.Dropout > 0 {
			d := a.Dropout
			c.LoraDropout = &d
		}
		c.LoraTarget = "all"
		if len(a.Targets) > 0 {
			for i, t := range a.Targets {
				if t == "" || strings.ContainsAny(t, ", ") || t == "all" {
					errs = append(errs, field.Invalid(p.Child("lora_target").Index(i), t, "must be a module name without commas or spaces (leave Targets empty for all)"))
				}
			}
			c.LoraTarget = strings.Join(a.Targets, ",")
			errs = append(errs, f.unmatchedTargets(p.Child("lora_target"))...)
		}
		if f.method == QLoRA {
			if f.quantBits != 4 && f.quantBits != 8 {
				errs = append(errs, field.Invalid(field.NewPath("quantization_bit"), f.quantBits, "must be 4 or 8"))
			}
			if f.quantBits == 8 && f.zero == 3 {
				errs = append(errs, field.Forbidden(field.NewPath("quantization_bit"),
					"8-bit QLoRA cannot run under ZeRO-3: LLaMA-Factory raises \"Only 4-bit quantized model can use fsdp+qlora\" (model/model_utils/quantization.py:188 at v0.9.5); use 4 bits or ZeRO 0-2"))
			}
			c.QuantizationBit, c.QuantizationMethod = f.quantBits, "bnb"
		}
	default:
		errs = append(errs, field.NotSupported(field.NewPath("finetuning_type"), f.method, []Method{Full, Freeze, LoRA, QLoRA}))
	}
	if f.resumeFrom != "" {
		if f.method != LoRA && f.method != QLoRA {
			// hparams/parser.py: "Adapter is only valid for the LoRA method."
			errs = append(errs, field.Forbidden(field.NewPath("adapter_name_or_path"), "an adapter needs LoRA or QLoRA"))
		}
		ad, aErrs := resolveModel(f.resumeFrom, field.NewPath("adapter_name_or_path"), "/adapters")
		errs = append(errs, aErrs...)
		if ad.claim == nil && len(aErrs) == 0 {
			errs = append(errs, field.Invalid(field.NewPath("adapter_name_or_path"), f.resumeFrom, "must be pvc://claim/path"))
		}
		c.AdapterNameOrPath = ad.value
		if f.usesReference() && (f.method == LoRA || f.method == QLoRA) {
			// Without ref_model a LoRA run's reference is the policy with
			// its adapter disabled (create_ref_model returns None,
			// train/trainer_utils.py:137; dpo/trainer.py:264
			// disable_adapter()): the base before the adapter resumed here.
			// The reference is the base with this adapter, loaded frozen.
			c.RefModel, c.RefModelAdapters = c.ModelNameOrPath, ad.value
			if f.method == QLoRA {
				c.RefModelQuantizationBit = f.quantBits
			}
		}
	}
	return errs
}

// usesReference says the loss runs a frozen reference model forward: DPO
// and its hinge and IPO variants (use_ref_model, hparams/finetuning_args.py:574
// at v0.9.5) and KTO (train/kto/workflow.py:60).
func (f *FineTune) usesReference() bool {
	return (f.stage == StageDPO && f.prefLoss != LossORPO && f.prefLoss != LossSimPO) || f.stage == StageKTO
}

// knownFacts is the model's architecture when Facts gave it or market's
// catalogue has it; without either, what depends on it (freeze layers,
// LoRA targets) cannot be checked before the pod runs.
func (f *FineTune) knownFacts() (models.Model, bool) {
	m, err := f.modelFacts()
	return m, err == nil
}

// moduleNamesKnown are the architectures whose linear modules
// linearLayers names exactly; other architectures' targets are not
// checked (their vision towers or fused projections have other names).
var moduleNamesKnown = []string{"llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "chatglm", "glm", "deepseek_v3"}

// unmatchedTargets reports the LoRA targets that name no module of the
// model, when its architecture is known: PEFT matches a target against
// the end of each module's name, and LLaMA-Factory fails inside the pod
// when none matches ("Target modules ... not found in the base model").
func (f *FineTune) unmatchedTargets(p *field.Path) field.ErrorList {
	m, ok := f.knownFacts()
	if !ok || !slices.Contains(moduleNamesKnown, m.Architecture) {
		return nil
	}
	names := []string{"lm_head", "embed_tokens"}
	if m.Architecture == "qwen3_moe" {
		names = append(names, "gate") // the router is an nn.Linear
	}
	for _, l := range linearLayers(m) {
		names = append(names, l.name)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var errs field.ErrorList
	for i, t := range f.adapter.Targets {
		if t == "" || strings.ContainsAny(t, ", ") || t == "all" {
			continue // reported as malformed
		}
		if last := t[strings.LastIndex(t, ".")+1:]; !slices.Contains(names, last) {
			errs = append(errs, field.NotSupported(p.Index(i), t, names))
		}
	}
	return errs
}

func (f *FineTune) renderStage(c *trainConfig, r *rendering) field.ErrorList {
	var errs field.ErrorList
	dpo := f.stage == StageDPO
	if f.prefLoss != "" || f.beta != nil || f.simpoGamma != nil || f.sftWeight != 0 {
		if !dpo && f.stage != StageKTO {
			errs = append(errs, field.Forbidden(field.NewPath("pref_loss"), "preference settings need DPO, ORPO, SimPO or KTO"))
		}
	}
	if dpo {
		if !slices.Contains(preferenceLosses, f.prefLoss) {
			errs = append(errs, field.NotSupported(field.NewPath("pref_loss"), f.prefLoss, preferenceLosses))
		}
		c.PrefLoss = f.prefLoss
		if f.simpoGamma != nil && f.prefLoss != LossSimPO {
			errs = append(errs, field.Forbidden(field.NewPath("simpo_gamma"), "only for the SimPO loss"))
		}
		c.SimpoGamma = f.simpoGamma
	}
	if f.stage == StageKTO {
		// KTO reads pref_beta and pref_ftx; its trainer ignores pref_loss
		// and simpo_gamma (train/kto/trainer.py at v0.9.5), so setting them
		// would silently change nothing.
		if f.prefLoss != "" {
			errs = append(errs, field.Forbidden(field.NewPath("pref_loss"), "KTO has its own loss: PreferenceLoss is for DPO, ORPO and SimPO"))
		}
		if f.simpoGamma != nil {
			errs = append(errs, field.Forbidden(field.NewPath("simpo_gamma"), "only for the SimPO loss"))
		}
	}
	if f.simpoGamma != nil && !finite(*f.simpoGamma) {
		errs = append(errs, field.Invalid(field.NewPath("simpo_gamma"), *f.simpoGamma, "must be a finite number"))
	}
	if f.beta != nil && !(*f.beta > 0 && finite(*f.beta)) {
		errs = append(errs, field.Invalid(field.NewPath("pref_beta"), *f.beta, "must be positive and finite"))
	}
	c.PrefBeta = f.beta
	if !(f.sftWeight >= 0 && finite(f.sftWeight)) {
		errs = append(errs, field.Invalid(field.NewPath("pref_ftx"), f.sftWeight, "must be finite and not negative"))
	}
	c.PrefFtx = f.sftWeight
	if (f.ktoChosen != nil) && f.stage != StageKTO {
		errs = append(errs, field.Forbidden(field.NewPath("kto_chosen_weight"), "only for KTO"))
	}
	for name, w := range map[string]*float64{"kto_chosen_weight": f.ktoChosen, "kto_rejected_weight": f.ktoReject} {
		if w != nil && !(*w >= 0 && finite(*w)) {
			errs = append(errs, field.Invalid(field.NewPath(name), *w, "must be finite and not negative"))
		}
	}
	c.KTOChosenWeight, c.KTORejectedWeight = f.ktoChosen, f.ktoReject
	if f.stage == StagePPO && f.servedReward() {
		p := field.NewPath("reward_model")
		if problem := rewardServerProblem(f.rewardModel); problem != "" {
			// A password given in the URL is not echoed, parsed or not.
			errs = append(errs, field.Invalid(p, urlcheck.Redact(f.rewardModel), problem))
		}
		if f.rewardFull {
			errs = append(errs, field.Forbidden(field.NewPath("reward_model_type"), "a served reward model is neither LoRA nor full: drop FullRewardModel"))
		}
		c.RewardModel, c.RewardModelType = f.rewardModel, "api"
	}
	if f.stage == StagePPO && !f.servedReward() {
		p := field.NewPath("reward_model")
		rm, rErrs := resolveModel(f.rewardModel, p, "/reward")
		errs = append(errs, rErrs...)
		c.RewardModel = rm.value
		if rm.claim != nil {
			r.claims = append(r.claims, claimVolume{claim: rm.claim.claim, mountPath: rm.claim.mountPath, readOnly: true})
		}
		c.RewardModelType = "lora"
		if f.rewardFull {
			c.RewardModelType = "full"
		} else if f.method != LoRA && f.method != QLoRA {
			errs = append(errs, field.Forbidden(p, "a LoRA reward model needs a LoRA policy: use FullRewardModel"))
		}
	}
	if f.stage == StagePPO {
		if f.ppoEpochs < 0 {
			errs = append(errs, field.Invalid(field.NewPath("ppo_epochs"), f.ppoEpochs, "must not be negative"))
		}
		c.PPOEpochs = f.ppoEpochs
		// hparams/parser.py: PPO does not support evaluation.
		if len(f.evalDatasets) > 0 || f.valSize > 0 || f.evalSteps > 0 {
			errs = append(errs, field.Forbidden(field.NewPath("eval_dataset"), "PPO training does not support evaluation (LLaMA-Factory): evaluate with an SFT run"))
		}
	} else if f.rewardModel != "" || f.rewardFull || f.ppoEpochs != 0 {
		errs = append(errs, field.Forbidden(field.NewPath("reward_model"), "only for PPO"))
	}
	return errs
}

// finite reports whether v is neither NaN nor an infinity.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// servedReward says PPO's reward model is an HTTP scoring server.
func (f *FineTune) servedReward() bool {
	return strings.HasPrefix(f.rewardModel, "http://") || strings.HasPrefix(f.rewardModel, "https://")
}

// servingRoutes are the routes of the serving engines package serve runs
// (vLLM's OpenAI server and its pooling routes, TEI's, Ollama's), none of
// which takes LLaMA-Factory's scoring body.
var servingRoutes = []string{"", "/", "/v1", "/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/models",
	"/score", "/v1/score", "/classify", "/pooling", "/rerank", "/v1/rerank", "/predict", "/embed", "/api/generate", "/api/chat"}

// rewardServerProblem says what is wrong with a reward server URL, or "".
func rewardServerProblem(raw string) string {
	u, err := url.Parse(raw)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https"):
		return "must be an http(s) URL with a host"
	case u.User != nil:
		return "must not carry credentials: LLaMA-Factory sends no API key, so the server must take requests without one"
	case u.RawQuery != "" || u.Fragment != "":
		return "must be the scoring route's URL without a query or fragment"
	case slices.Contains(servingRoutes, strings.TrimSuffix(u.Path, "/")) || slices.Contains(servingRoutes, u.Path):
		return "must be the URL of a route that answers LLaMA-Factory's scoring request ({\"model\", \"messages\"} in, {\"scores\"} out), such as a LLaMA-Factory API server's /v1/score/evaluation; the serving engines of package serve answer none"
	}
	return ""
}

// kindFor is the dataset kind a stage trains on.
func kindFor(s Stage) Kind {
	switch s {
	case StageRM, StageDPO:
		return Preferences
	case StageKTO:
		return KTOLabels
	}
	return Instructions
}

func (f *FineTune) renderData(c *trainConfig, r *rendering) field.ErrorList {
	var errs field.ErrorList
	r.datasets = map[string]datasetInfo{}
	mounted := map[string]bool{}
	add := func(list []Dataset, p *field.Path) []string {
		var names []string
		for i, d := range list {
			info, claim, dErrs := d.render(p.Index(i), kindFor(f.stage))
			errs = append(errs, dErrs...)
			if _, dup := r.datasets[d.Name]; dup && d.Name != "" {
				errs = append(errs, field.Duplicate(p.Index(i).Child("name"), d.Name))
			}
			r.datasets[d.Name] = info
			names = append(names, d.Name)
			if claim != nil && !mounted[claim.claim] {
				mounted[claim.claim] = true
				r.claims = append(r.claims, claimVolume{claim: claim.claim, mountPath: claim.mountPath, readOnly: true})
			}
		}
		return names
	}
	if len(f.datasets) == 0 {
		errs = append(errs, field.Required(field.NewPath("dataset"), "at least one dataset is required (AddDataset)"))
	}
	c.Dataset = strings.Join(add(f.datasets, field.NewPath("dataset")), ",")
	c.EvalDataset = strings.Join(add(f.evalDatasets, field.NewPath("eval_dataset")), ",")
	if !(f.valSize >= 0 && f.valSize < 1) {
		errs = append(errs, field.Invalid(field.NewPath("val_size"), f.valSize, "must be a fraction in [0, 1)"))
	}
	if f.valSize > 0 && len(f.evalDatasets) > 0 {
		// hparams/data_args.py:162 at v0.9.5.
		errs = append(errs, field.Forbidden(field.NewPath("val_size"), "LLaMA-Factory refuses val_size with eval_dataset: use ValidationSplit or AddEvalDataset, not both"))
	}
	c.ValSize = f.valSize
	if f.cutoff < 1 {
		errs = append(errs, field.Invalid(field.NewPath("cutoff_len"), f.cutoff, "must be at least 1"))
	}
	c.CutoffLen = f.cutoff
	if f.maxSamples < 0 {
		errs = append(errs, field.Invalid(field.NewPath("max_samples"), f.maxSamples, "must not be negative"))
	}
	c.MaxSamples = f.maxSamples
	evaluating := len(f.evalDatasets) > 0 || f.valSize > 0
	if f.evalSteps < 0 {
		errs = append(errs, field.Invalid(field.NewPath("eval_steps"), f.evalSteps, "must not be negative"))
	}
	if evaluating {
		c.EvalStrategy, c.EvalSteps, c.PerDeviceEvalBatchSize = "steps", f.evalSteps, f.batch
		if c.EvalSteps == 0 {
			c.EvalSteps = f.saveSteps
		}
	} else if f.evalSteps > 0 {
		// hparams/parser.py: evaluation needs eval_dataset or val_size.
		errs = append(errs, field.Required(field.NewPath("eval_dataset"), "EvalEvery needs AddEvalDataset or ValidationSplit"))
	}
	return errs
}

func (f *FineTune) renderTraining(c *trainConfig, r *rendering) field.ErrorList {
	var errs field.ErrorList
	positive := func(name string, v int) {
		if v < 1 {
			errs = append(errs, field.Invalid(field.NewPath(name), v, "must be at least 1"))
		}
	}
	positive("per_device_train_batch_size", f.batch)
	positive("gradient_accumulation_steps", f.accumulation)
	positive("logging_steps", f.logSteps)
	c.PerDeviceTrainBatchSize, c.GradientAccumulationSteps, c.LoggingSteps = f.batch, f.accumulation, f.logSteps
	if !(f.learningRate > 0 && finite(f.learningRate)) {
		errs = append(errs, field.Invalid(field.NewPath("learning_rate"), f.learningRate, "must be positive"))
	}
	c.LearningRate = f.learningRate
	if !slices.Contains(schedulers, f.scheduler) {
		errs = append(errs, field.NotSupported(field.NewPath("lr_scheduler_type"), f.scheduler, schedulers))
	}
	c.LRSchedulerType = f.scheduler
	switch {
	case f.steps < 0:
		errs = append(errs, field.Invalid(field.NewPath("max_steps"), f.steps, "must not be negative"))
	case f.steps > 0:
		c.MaxSteps = f.steps
	case !(f.epochs > 0 && finite(f.epochs)):
		errs = append(errs, field.Invalid(field.NewPath("num_train_epochs"), f.epochs, "must be positive"))
	default:
		c.NumTrainEpochs = f.epochs
	}
	if f.warmup < 0 {
		errs = append(errs, field.Invalid(field.NewPath("warmup_steps"), f.warmup, "must not be negative"))
	}
	c.WarmupSteps = f.warmup
	if !(f.clipping >= 0 && finite(f.clipping)) {
		errs = append(errs, field.Invalid(field.NewPath("max_grad_norm"), f.clipping, "must not be negative"))
	}
	c.MaxGradNorm = f.clipping
	switch f.precision {
	case train.BF16:
		c.BF16 = true
	case train.FP16:
		c.FP16 = true
	case train.FP32:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("precision"), f.precision, []train.Precision{train.BF16, train.FP16, train.FP32}))
	}
	c.DisableGradientCheckpointing = !f.checkpointing
	c.Seed = f.seed
	if f.saveSteps < 0 || f.keep < 0 {
		errs = append(errs, field.Invalid(field.NewPath("save_steps"), f.saveSteps, "save steps and the checkpoints kept must not be negative"))
	}
	c.SaveSteps, c.SaveTotalLimit = f.saveSteps, f.keep
	if f.saveSteps == 0 {
		c.SaveStrategy = "no"
	}
	if !slices.Contains(reporters, f.reportTo) {
		errs = append(errs, field.NotSupported(field.NewPath("report_to"), f.reportTo, reporters))
	}
	if f.stage == StagePPO && f.reportTo == "mlflow" {
		errs = append(errs, field.Forbidden(field.NewPath("report_to"), "PPO reports to wandb or tensorboard only (LLaMA-Factory)"))
	}
	c.ReportTo = f.reportTo
	c.DeepSpeed = train.DeepSpeedConfigFile

	op := field.NewPath("output")
	if f.output == "" {
		errs = append(errs, field.Required(op, "an output is required: Output(\"pvc://claim/path\")"))
	} else if src, err := serve.ParseSource(f.output); err != nil || src.Kind != serve.SourcePVC || src.Path == "" {
		errs = append(errs, field.Invalid(op, f.output, "must be pvc://claim/path"))
	} else {
		c.OutputDir = path.Join(OutputRoot, src.Path)
		r.claims = append(r.claims, claimVolume{claim: src.Claim, mountPath: OutputRoot})
	}
	return errs
}

// deepSpeed is the DeepSpeed configuration of the run. Its batch,
// accumulation, precision and clipping are the training arguments' own:
// Hugging Face's Trainer refuses a DeepSpeed file whose values differ
// from its arguments (integrations/deepspeed.py, trainer_config_finalize).
//
// Values the fine-tune's own checks refuse are replaced by harmless ones
// here, so that a bad batch is reported once, under its training
// argument, and not again by the DeepSpeed configuration.
func (f *FineTune) deepSpeed() train.DeepSpeedConfig {
	cfg := train.DeepSpeedConfig{
		ZeROStage: f.zero, Precision: f.precision,
		MicroBatchPerGPU: max(f.batch, 1), GradientAccumulation: max(f.accumulation, 1), GradientClipping: f.clipping,
		GatherWeightsOnSave: f.zero == 3,
	}
	if !(f.clipping >= 0) || math.IsInf(f.clipping, 0) {
		cfg.GradientClipping = 0
	}
	if !slices.Contains([]train.Precision{train.BF16, train.FP16, train.FP32}, f.precision) {
		cfg.Precision = train.BF16
	}
	if f.offloadOptimizer {
		cfg.OffloadOptimizer = train.Offload{Device: train.OffloadCPU, PinMemory: true}
	}
	if f.offloadParams {
		cfg.OffloadParams = train.Offload{Device: train.OffloadCPU, PinMemory: true}
	}
	return cfg
}

// imageProblems says what the run needs that LLaMA-Factory's own images
// lack, when the job runs one of them. Both are built from v0.9.5's
// pyproject.toml, which pins trl to 0.18-0.24, plus only the metrics and
// deepspeed extras (docker/docker-cuda/Dockerfile,
// docker/docker-npu/Dockerfile): no bitsandbytes, no s3fs. An image the
// caller sets is theirs to vouch for.
func (f *FineTune) imageProblems() field.ErrorList {
	if image := podspec.Of(&f.job.Handle).ImageName(); image != DefaultImage && image != DefaultAscendImage {
		return nil
	}
	const set = ": set an image that has it with Job().Image"
	var errs field.ErrorList
	if f.stage == StagePPO {
		errs = append(errs, field.Forbidden(field.NewPath("stage"), "PPO needs trl>=0.8.6,<=0.9.6 (train/ppo/trainer.py:90 at v0.9.5), and LLaMA-Factory's image has trl 0.18-0.24 (pyproject.toml)"+set))
	}
	if f.method == QLoRA {
		errs = append(errs, field.Forbidden(field.NewPath("quantization_bit"), "QLoRA needs bitsandbytes (model/model_utils/quantization.py:169 at v0.9.5), which LLaMA-Factory's image does not install"+set))
	}
	for i, d := range append(slices.Clone(f.datasets), f.evalDatasets...) {
		if !strings.HasPrefix(d.Source, "s3://") {
			continue
		}
		p := field.NewPath("dataset").Index(i)
		if i >= len(f.datasets) {
			p = field.NewPath("eval_dataset").Index(i - len(f.datasets))
		}
		errs = append(errs, field.Forbidden(p.Child("source"), "s3:// needs s3fs (fsspec.filesystem(\"s3\"), data/data_utils.py:162 at v0.9.5), which LLaMA-Factory's image does not install"+set+
			", and the credentials with Job().EnvFromSecret (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)"))
	}
	return errs
}

// configMapName names the ConfigMap with train.yaml and dataset_info.json.
func (f *FineTune) configMapName() string { return podspec.Of(&f.job.Handle).Name() + "-llamafactory" }

func (f *FineTune) build() ([]client.Object, field.ErrorList) {
	if f == nil || f.job == nil {
		return nil, field.ErrorList{field.Required(field.NewPath("llm.FineTune"), "is nil or zero: create it with llm.SFT, RewardModel, DPO, KTO, ORPO, SimPO or PPO")}
	}
	r, errs := f.render()
	f.autoImage = pickImage(f.job, podspec.Of(&f.job.Handle), f.autoImage)
	errs = append(errs, f.imageProblems()...)
	f.job.Config(f.deepSpeed())
	objs, jobErr := f.job.Objects()
	if jobErr != nil {
		errs = append(errs, field.Invalid(field.NewPath("job"), podspec.Of(&f.job.Handle).Name(), jobErr.Error()))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	trainYAML, err := yaml.Marshal(r.config)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(field.NewPath("config"), err)}
	}
	infoJSON, err := json.MarshalIndent(r.datasets, "", "  ")
	if err != nil {
		return nil, field.ErrorList{field.InternalError(field.NewPath("dataset_info"), err)}
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: podspec.Of(&f.job.Handle).ObjectMeta(f.configMapName()),
		Data:       map[string]string{ConfigKey: string(trainYAML), DatasetsKey: string(infoJSON)},
	}
	var job *kubeflowv1.PyTorchJob
	for _, o := range objs {
		if j, ok := o.(*kubeflowv1.PyTorchJob); ok {
			job = j
		}
	}
	if job.Spec.ElasticPolicy != nil {
		// Without a Master the operator sets no PET_NODE_RANK, and
		// LLaMA-Factory's launcher goes elastic only from RDZV_ID,
		// MIN_NNODES and MAX_NNODES, which cube does not render.
		return nil, field.ErrorList{field.Forbidden(field.NewPath("job", "spec", "elasticPolicy"), "LLaMA-Factory runs are not elastic here: use Nodes, not Elastic")}
	}
	volumes, mounts := configAndClaims(cm.Name, r.claims)
	errs = append(errs, addToReplicas(job, volumes, mounts, r.env)...)
	if len(errs) > 0 {
		return nil, errs
	}
	return append([]client.Object{cm}, objs...), nil
}

// configAndClaims returns the volumes and read-only mounts of the
// LLaMA-Factory ConfigMap (at ConfigDir, when configMap is not empty) and
// of each claim, named llm-claim-<i>.
func configAndClaims(configMap string, claims []claimVolume) ([]corev1.Volume, []corev1.VolumeMount) {
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	if configMap != "" {
		volumes = append(volumes, corev1.Volume{Name: "llamafactory-config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}},
		}})
		mounts = append(mounts, corev1.VolumeMount{Name: "llamafactory-config", MountPath: ConfigDir, ReadOnly: true})
	}
	for i, c := range claims {
		name := fmt.Sprintf("llm-claim-%d", i)
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.claim, ReadOnly: c.readOnly},
		}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: c.mountPath, ReadOnly: c.readOnly})
	}
	return volumes, mounts
}

// addToReplicas adds the fine-tune's volumes, mounts and env to every
// replica's training container.
func addToReplicas(job *kubeflowv1.PyTorchJob, volumes []corev1.Volume, mounts []corev1.VolumeMount, env []corev1.EnvVar) field.ErrorList {
	var templates []*corev1.PodTemplateSpec
	var paths []*field.Path
	for _, typ := range []kubeflowv1.ReplicaType{kubeflowv1.PyTorchJobReplicaTypeMaster, kubeflowv1.PyTorchJobReplicaTypeWorker} {
		if spec := job.Spec.PyTorchReplicaSpecs[typ]; spec != nil {
			templates = append(templates, &spec.Template)
			paths = append(paths, field.NewPath("spec", "pytorchReplicaSpecs").Key(string(typ)).Child("template", "spec"))
		}
	}
	return addToTemplates(templates, paths, volumes, mounts, env)
}

// addToTemplates adds volumes, mounts and env to the first container of
// each pod template, reporting a volume name or mount path already taken
// under the template's path.
func addToTemplates(templates []*corev1.PodTemplateSpec, paths []*field.Path, volumes []corev1.Volume, mounts []corev1.VolumeMount, env []corev1.EnvVar) field.ErrorList {
	var errs field.ErrorList
	for i, t := range templates {
		p, pod := paths[i], &t.Spec
		for _, v := range volumes {
			if slices.ContainsFunc(pod.Volumes, func(x corev1.Volume) bool { return x.Name == v.Name }) {
				errs = append(errs, field.Duplicate(p.Child("volumes"), v.Name))
			}
		}
		pod.Volumes = append(pod.Volumes, volumes...)
		c := &pod.Containers[0]
		for _, m := range mounts {
			if slices.ContainsFunc(c.VolumeMounts, func(x corev1.VolumeMount) bool { return path.Clean(x.MountPath) == m.MountPath }) {
				errs = append(errs, field.Duplicate(p.Child("containers").Index(0).Child("volumeMounts"), m.MountPath))
			}
		}
		c.VolumeMounts = append(c.VolumeMounts, mounts...)
		c.Env = append(c.Env, env...)
	}
	return errs
}

// imageSetter is the image part of a pod builder.
type imageSetter[T any] interface {
	Image(string) *T
}

// pickImage gives a job LLaMA-Factory's image for its profile unless the
// caller set one (an image other than last, the one picked before), and
// returns the image it picked.
func pickImage[T any](job imageSetter[T], settings *podspec.Builder[T], last string) string {
	if current := settings.ImageName(); current != "" && current != last {
		return last
	}
	image := DefaultImage
	if p, ok := settings.Profile(); ok && p.Vendor == hardware.Huawei {
		image = DefaultAscendImage
	}
	job.Image(image)
	return image
}

// Objects validates the fine-tune and returns the ConfigMap with
// train.yaml and dataset_info.json, the DeepSpeed ConfigMap and the
// PyTorchJob; it implements cube.Workload.
func (f *FineTune) Objects() ([]client.Object, error) {
	objs, errs := f.build()
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return objs, nil
}

// Config returns the train.yaml the fine-tune renders, or every problem.
func (f *FineTune) Config() (string, error) {
	objs, err := f.Objects()
	if err != nil {
		return "", err
	}
	return objs[0].(*corev1.ConfigMap).Data[ConfigKey], nil
}
