package llm

import (
	"fmt"
	"math"
	"net/url"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/internal/urlcheck"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/train"
)

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
func kindFor(s Stage) datasets.Kind {
	switch s {
	case StageRM, StageDPO:
		return datasets.Preferences
	case StageKTO:
		return datasets.KTOLabels
	}
	return datasets.Instructions
}

func (f *FineTune) renderData(c *trainConfig, r *rendering) field.ErrorList {
	var errs field.ErrorList
	r.datasets = map[string]datasetInfo{}
	mounted := map[string]bool{}
	add := func(list []datasets.Dataset, p *field.Path) []string {
		var names []string
		for i, d := range list {
			info, claim, dErrs := renderDataset(d, p.Index(i), kindFor(f.stage))
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
