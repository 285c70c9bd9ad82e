package llm

import (
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/urlcheck"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/train"
)

// VerlVersion is the verl release whose configuration the RL builders
// render overrides of (tag v0.7.0, commit
// f9c855f7cf04d603c9546bc01776c74806a879c1). Every key is a key of its
// verl/trainer/config/_generated_ppo_trainer.yaml, the flattened Hydra
// configuration of verl.trainer.main_ppo; testdata/contracts/verl.tsv
// lists them with the values and combinations verl accepts, and the tests
// check every rendered override and image against it.
const VerlVersion = "0.7.0"

// DefaultVerlImage is the image verl's v0.7.0 CI runs
// (.github/workflows/vllm.yml), built from docker/Dockerfile.stable.vllm
// at v0.7.0: vLLM 0.12.0, torch 2.9.0 and verl's dependencies (Ray,
// Hydra ...), but not verl: the Dockerfile installs verl v0.6.0 for its
// dependencies and uninstalls it, and docs/start/install.rst installs
// verl at run time. So does every RL run: its Ray runtime environment
// pip-installs verl from the v0.7.0 commit on every node (verlRequirement),
// which needs git (in the image) and access to GitHub from the pods.
// verl publishes no Ascend image; on Ascend set one built from its
// docker/ascend Dockerfiles.
const DefaultVerlImage = "docker.io/verlai/verl:vllm012.latest"

// DefaultVerlSGLangImage is the image of runs whose rollout is SGLang
// (Rollout("sglang", ...)), built from docker/Dockerfile.stable.sglang at
// v0.7.0 (SGLang 0.5.6.post2, the version verl's sglang extra pins in
// setup.py) and, like DefaultVerlImage, without verl.
const DefaultVerlSGLangImage = "docker.io/verlai/verl:sgl056.latest"

// verlRequirement installs verl at the v0.7.0 tag's commit, pinned by
// commit because a tag can move. Ray installs it in a virtualenv that
// inherits the image's packages (virtualenv --system-site-packages in
// ray/_private/runtime_env/virtualenv_utils.py); verl v0.7.0's
// install_requires are v0.6.0's (setup.py), which the images installed,
// so pip adds verl alone.
const verlRequirement = "verl @ git+https://github.com/volcengine/verl.git@f9c855f7cf04d603c9546bc01776c74806a879c1"

// Why verl for GRPO and large PPO, not LLaMA-Factory or OpenRLHF:
// LLaMA-Factory has no GRPO stage and runs PPO in one torchrun job with
// HF generate; verl runs GRPO (algorithm.adv_estimator grpo) and PPO (gae)
// from one Ray driver, so a KubeRay RayJob is its natural shape; its
// hybrid engine places actor, rollout (vLLM or SGLang), reference and
// reward roles on the same accelerators in turn instead of one pool each;
// and it supports Ascend NPUs upstream (docs/ascend_tutorial,
// examples/grpo_trainer/run_qwen2_5_7b_grpo_npu.sh). OpenRLHF also runs
// on Ray with vLLM, but gives each role its own GPUs and has no Ascend
// support in tree.

// Algorithm is verl's advantage estimator (algorithm.adv_estimator).
type Algorithm string

// Algorithms.
const (
	// GRPOAlgorithm is group-relative policy optimisation: no critic, the
	// advantage is each response's reward against its group's.
	GRPOAlgorithm Algorithm = "grpo"
	// PPOAlgorithm is PPO with a critic and generalised advantage
	// estimation.
	PPOAlgorithm Algorithm = "gae"
)

// Where the RL builders mount things.
const (
	RLDataRoot   = "/data"
	RLOutputRoot = "/output"
	RLRewardRoot = "/reward"
)

// RL is a verl run on a KubeRay RayJob: GRPO or PPO with vLLM rollouts.
// Create one with GRPO or VerlPPO; set pod settings on Job (On, GPUs,
// WorkerGroup for the nodes, Namespace, Gang ...).
type RL struct {
	job       *train.RayJob
	algorithm Algorithm
	model     string

	trainFiles, valFiles []string
	promptKey            string
	rewardPath           string
	rewardFunc           string
	rewardModel          string
	critic               string

	batch, miniBatch, microBatch int
	promptLen, responseLen       int
	samples                      int
	learningRate                 float64
	klCoef                       float64
	loraRank, loraAlpha          int
	engine                       string
	rolloutTP                    int
	rolloutMemory                float64
	epochs                       int
	saveEvery, testEvery         int
	output                       string
	logger                       []string
	checkpointing                bool
	offloadParams                bool
	offloadOptimizer             bool

	facts, criticFacts, rewardFacts *models.Model

	autoImage string
	problems  field.ErrorList
}

const verlEntrypoint = "python3 -m verl.trainer.main_ppo"

func newRL(alg Algorithm, name, model string) *RL {
	j := train.Ray(name).Entrypoint(verlEntrypoint).RuntimeEnv(train.RuntimeEnv{Pip: []string{verlRequirement}})
	return &RL{
		job: j, algorithm: alg, model: model, promptKey: "prompt",
		batch: 256, miniBatch: 64, microBatch: 4, promptLen: 1024, responseLen: 1024,
		samples: 5, learningRate: 1e-6, klCoef: 0.001, engine: "vllm", rolloutTP: 1, rolloutMemory: 0.6,
		epochs: 15, saveEvery: 20, testEvery: 5, logger: []string{"console"}, checkpointing: true,
	}
}

// GRPO starts a GRPO run of model (a Hugging Face id or pvc://claim/path)
// with verl's GSM8K example's settings (examples/grpo_trainer/
// run_qwen2-7b.sh at v0.7.0) scaled to one node: 5 responses per prompt,
// KL loss 0.001, learning rate 1e-6, vLLM rollouts at 60% of memory.
func GRPO(name, model string) *RL {
	r := newRL(GRPOAlgorithm, name, model)
	return r
}

// VerlPPO starts a PPO run (actor, critic, reference, and a reward model
// or function) on verl; the critic starts from the model unless Critic
// says otherwise. For PPO on one node with LoRA, LLaMA-Factory's PPO is
// simpler.
func VerlPPO(name, model string) *RL {
	r := newRL(PPOAlgorithm, name, model)
	r.critic = model
	return r
}

// Job returns the RayJob the run is submitted to, for pod settings and
// the worker groups (one group of GPU nodes: WorkerGroup("gpu", n)).
// Apply the RL, not the job. The job's runtime environment installs verl
// (see DefaultVerlImage); a RuntimeEnv set on it replaces that, so it
// must install verl too unless the image has it.
func (r *RL) Job() *train.RayJob {
	if r == nil || r.job == nil {
		return train.Ray("")
	}
	return r.job
}

func (r *RL) set(fn func()) *RL {
	if r != nil {
		fn()
	}
	return r
}

// TrainFiles sets the training prompts: parquet files as pvc://claim/path,
// with a prompt column (PromptKey) and what the reward needs; required.
func (r *RL) TrainFiles(uris ...string) *RL {
	return r.set(func() { r.trainFiles = slices.Clone(uris) })
}

// ValFiles sets the validation prompts, as TrainFiles; required:
// verl.trainer.main_ppo builds the validation dataset on every run
// (verl/trainer/main_ppo.py, TaskRunner.run), and the default path
// (~/data/rlhf/gsm8k/test.parquet) is in no pod.
func (r *RL) ValFiles(uris ...string) *RL { return r.set(func() { r.valFiles = slices.Clone(uris) }) }

// PromptKey names the prompt column (data.prompt_key, default "prompt").
func (r *RL) PromptKey(k string) *RL { return r.set(func() { r.promptKey = k }) }

// RewardFunction scores responses with a Python function: file is
// pvc://claim/path.py, name the function (custom_reward_function).
func (r *RL) RewardFunction(file, name string) *RL {
	return r.set(func() { r.rewardPath, r.rewardFunc = file, name })
}

// RewardModel scores responses with a reward model (reward_model.enable,
// reward_model.model.path), as pvc://claim/path or a Hugging Face id.
// verl v0.7.0 serves it through its reward loop
// (reward_model.use_reward_loop, on by default): a vLLM or SGLang server
// of its own on the same accelerators, asked for a score by POST
// /classify (vLLM) or /v1/embeddings (SGLang)
// (verl/experimental/reward_loop/reward_loop.py, compute_score_disrm),
// without a runner or convert option (verl/workers/rollout/
// vllm_rollout/vllm_async_server.py), so the engine picks its task from
// the checkpoint's architecture: it must be a one-label
// sequence-classification checkpoint (…ForSequenceClassification,
// num_labels 1). The output of llm.RewardModel is not one: LLaMA-Factory
// saves the causal LM with its value head apart in value_head.safetensors
// (train/callbacks.py), which vLLM serves with its generate runner,
// which answers no /classify. A reward model whose facts (market's
// catalogue or RewardModelFacts) say it generates text is refused for
// that reason; score with such a model through LLaMA-Factory's PPO
// (llm.PPO) instead. The server uses the rollout's engine, tensor
// parallelism and memory share (Rollout) and the run's lengths
// (reward_model.rollout.*); it sleeps while the policy generates and the
// policy's engine sleeps while it scores.
func (r *RL) RewardModel(model string) *RL { return r.set(func() { r.rewardModel = model }) }

// JudgeEndpoint points the run's reward function at a model served by
// package serve (an LLM judge, a reward model behind vLLM): every pod gets
// OPENAI_BASE_URL=<svc.Endpoint()>/v1, the variable the openai Python
// client reads its base URL from, so a RewardFunction that calls
// openai.OpenAI() reaches it. verl does not call a served model itself
// (it serves a RewardModel with its own engine on the run's
// accelerators), so the function does; the client also needs
// OPENAI_API_KEY (EnvFromSecret on Job, any value for a server without a
// key).
func (r *RL) JudgeEndpoint(svc *serve.Service) *RL {
	if r == nil {
		return nil
	}
	endpoint := ""
	if svc != nil {
		endpoint = svc.Endpoint()
	}
	if endpoint == "" {
		r.problems = append(r.problems, field.Required(field.NewPath("judgeEndpoint"), "a serve.Service made by a constructor is required"))
		return r
	}
	r.Job().Env("OPENAI_BASE_URL", endpoint+"/v1")
	return r
}

// Critic sets the critic's initial weights (PPO only).
func (r *RL) Critic(model string) *RL { return r.set(func() { r.critic = model }) }

// Facts gives PlanRL the policy's architecture when its reference is not
// in market's catalogue (a pvc:// path, a private model); it is also the
// critic's when the critic starts from the policy.
func (r *RL) Facts(m models.Model) *RL { return r.set(func() { r.facts = &m }) }

// CriticFacts gives PlanRL the critic's architecture when Critic names a
// model that is not in market's catalogue.
func (r *RL) CriticFacts(m models.Model) *RL { return r.set(func() { r.criticFacts = &m }) }

// RewardModelFacts gives PlanRL the reward model's architecture when
// RewardModel names a model that is not in market's catalogue; its Task
// must not be text generation (see RewardModel).
func (r *RL) RewardModelFacts(m models.Model) *RL { return r.set(func() { r.rewardFacts = &m }) }

// OffloadOptimizer moves the actor's (and a PPO critic's) Adam moments to
// CPU memory outside their own update (fsdp_config.optimizer_offload);
// OffloadParams moves their parameters (param_offload). verl loads them
// back for each update (verl/workers/fsdp_workers.py, update_actor), so
// offload frees memory for the rollout and the other roles, not for the
// update.
func (r *RL) OffloadOptimizer() *RL { return r.set(func() { r.offloadOptimizer = true }) }

// OffloadParams moves the actor's (and a PPO critic's) parameters to CPU
// memory outside their own update (fsdp_config.param_offload); see
// OffloadOptimizer.
func (r *RL) OffloadParams() *RL { return r.set(func() { r.offloadParams = true }) }

// Batch sets the prompts per step (data.train_batch_size), the PPO
// mini-batch and the micro batch per GPU.
func (r *RL) Batch(prompts, miniBatch, microPerGPU int) *RL {
	return r.set(func() { r.batch, r.miniBatch, r.microBatch = prompts, miniBatch, microPerGPU })
}

// Lengths sets the longest prompt and response in tokens.
func (r *RL) Lengths(prompt, response int) *RL {
	return r.set(func() { r.promptLen, r.responseLen = prompt, response })
}

// Samples sets the responses generated per prompt (rollout.n); GRPO
// needs at least 2.
func (r *RL) Samples(n int) *RL { return r.set(func() { r.samples = n }) }

// LearningRate sets the actor's learning rate.
func (r *RL) LearningRate(lr float64) *RL { return r.set(func() { r.learningRate = lr }) }

// KLCoefficient sets the weight of the KL divergence from the reference
// policy (default 0.001). GRPO puts it in the actor's loss
// (actor.use_kl_loss, actor.kl_loss_coef), as verl's GRPO examples do;
// PPO puts it in the reward (algorithm.use_kl_in_reward,
// algorithm.kl_ctrl.kl_coef, a fixed controller), as InstructGPT's PPO
// does. verl reads each coefficient only when its switch is on
// (dp_actor.py update_policy; ray_trainer.py apply_kl_penalty). 0 turns
// the KL off, and with it the reference policy, which verl creates only
// for a KL (main_ppo.py add_ref_policy_worker).
func (r *RL) KLCoefficient(c float64) *RL { return r.set(func() { r.klCoef = c }) }

// LoRA trains a LoRA adapter of the actor (model.lora_rank, lora_alpha)
// on all linear layers.
func (r *RL) LoRA(rank, alpha int) *RL {
	return r.set(func() { r.loraRank, r.loraAlpha = rank, alpha })
}

// Rollout sets the generation engine ("vllm" or "sglang", verl's
// registered rollouts in verl/workers/rollout/base.py), its tensor
// parallelism and the share of device memory it takes. Each engine has
// its own default image (DefaultVerlImage, DefaultVerlSGLangImage).
func (r *RL) Rollout(engine string, tensorParallel int, memory float64) *RL {
	return r.set(func() { r.engine, r.rolloutTP, r.rolloutMemory = engine, tensorParallel, memory })
}

// Epochs sets trainer.total_epochs.
func (r *RL) Epochs(n int) *RL { return r.set(func() { r.epochs = n }) }

// SaveEvery checkpoints every n steps and validates every test steps.
func (r *RL) SaveEvery(n, test int) *RL { return r.set(func() { r.saveEvery, r.testEvery = n, test }) }

// Output sets where checkpoints go (trainer.default_local_dir), as
// pvc://claim/path; required.
func (r *RL) Output(uri string) *RL { return r.set(func() { r.output = uri }) }

// WandB logs to Weights & Biases too, with the key from a Secret.
func (r *RL) WandB(secret, key string) *RL {
	if r == nil {
		return nil
	}
	r.logger = []string{"console", "wandb"}
	r.Job().EnvFromSecret("WANDB_API_KEY", pod.SecretKeyRef{Name: secret, Key: key})
	return r
}

// HFToken gives Hugging Face downloads a token from a Secret.
func (r *RL) HFToken(secret, key string) *RL {
	if r == nil {
		return nil
	}
	r.Job().EnvFromSecret("HF_TOKEN", pod.SecretKeyRef{Name: secret, Key: key})
	return r
}

// override is one Hydra override key=value of verl's configuration.
type override struct{ key, value string }

// Overrides returns the Hydra overrides the run passes to
// verl.trainer.main_ppo, in order, for nodes GPU nodes of gpus devices;
// problems are reported with the key as the path.
func (r *RL) overrides(nodes, gpus int, ascend bool) ([]override, []claimVolume, field.ErrorList) {
	var errs field.ErrorList
	var claims []claimVolume
	var out []override
	add := func(k, v string) { out = append(out, override{k, v}) }
	mounted := map[string]bool{}
	file := func(key, uri, root string, readOnly bool) string {
		if urlcheck.HasUserinfo(uri) {
			errs = append(errs, field.Invalid(field.NewPath(key), urlcheck.Redact(uri), "must be pvc://claim/path, without credentials"))
			return ""
		}
		src, err := serve.ParseSource(uri)
		if err != nil || src.Kind != serve.SourcePVC || src.Path == "" {
			errs = append(errs, field.Invalid(field.NewPath(key), uri, "must be pvc://claim/path"))
			return ""
		}
		if detail := hydraUnsafe(src.Path); detail != "" {
			errs = append(errs, field.Invalid(field.NewPath(key), uri, detail))
			return ""
		}
		mount := path.Join(root, src.Claim)
		if !mounted[mount] {
			mounted[mount] = true
			claims = append(claims, claimVolume{claim: src.Claim, mountPath: mount, readOnly: readOnly})
		}
		return path.Join(mount, src.Path)
	}
	model := func(key, ref string) string {
		if urlcheck.HasUserinfo(ref) {
			errs = append(errs, field.Invalid(field.NewPath(key), urlcheck.Redact(ref), "must be a Hugging Face id or pvc://claim/path, without credentials"))
			return ""
		}
		src, err := serve.ParseSource(ref)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(field.NewPath(key), ref, "must be a Hugging Face id or pvc://claim/path"))
		case src.Kind == serve.SourceHuggingFace && src.Revision == "":
			return src.Repo
		case src.Kind == serve.SourcePVC:
			return file(key, ref, ModelRoot, true)
		default:
			errs = append(errs, field.Invalid(field.NewPath(key), ref, "must be a Hugging Face id or pvc://claim/path"))
		}
		return ""
	}
	positive := func(key string, v int) string {
		switch {
		case v < 1:
			errs = append(errs, field.Invalid(field.NewPath(key), v, "must be at least 1"))
		case v > maxVerlCount:
			// Larger counts than any run has overflow the batch arithmetic.
			errs = append(errs, field.Invalid(field.NewPath(key), v, fmt.Sprintf("must be at most %d", maxVerlCount)))
		}
		return strconv.Itoa(v)
	}
	word := func(key, v string) string {
		switch {
		case v == "":
			errs = append(errs, field.Required(field.NewPath(key), "a name is required"))
		case !pythonName.MatchString(v):
			errs = append(errs, field.Invalid(field.NewPath(key), v, "must be a Python identifier (letters, digits and _, not starting with a digit)"))
		}
		return v
	}
	fraction := func(key string, v float64, lo, hi float64) string {
		if !(v >= lo && v <= hi) {
			errs = append(errs, field.Invalid(field.NewPath(key), v, fmt.Sprintf("must be in [%g, %g]", lo, hi)))
		}
		return strconv.FormatFloat(v, 'g', -1, 64)
	}

	add("algorithm.adv_estimator", string(r.algorithm))
	if len(r.trainFiles) == 0 {
		errs = append(errs, field.Required(field.NewPath("data.train_files"), "training prompts are required (TrainFiles)"))
	}
	var files []string
	for _, f := range r.trainFiles {
		files = append(files, file("data.train_files", f, RLDataRoot, true))
	}
	add("data.train_files", hydraList(files))
	// main_ppo builds the validation dataset on every run, from the
	// default path when none is given (verl/trainer/main_ppo.py).
	if len(r.valFiles) == 0 {
		errs = append(errs, field.Required(field.NewPath("data.val_files"),
			"validation prompts are required (ValFiles): verl builds the validation dataset on every run, and its default path is in no pod"))
	}
	files = nil
	for _, f := range r.valFiles {
		files = append(files, file("data.val_files", f, RLDataRoot, true))
	}
	add("data.val_files", hydraList(files))
	add("data.prompt_key", word("data.prompt_key", r.promptKey))
	add("data.train_batch_size", positive("data.train_batch_size", r.batch))
	add("data.max_prompt_length", positive("data.max_prompt_length", r.promptLen))
	add("data.max_response_length", positive("data.max_response_length", r.responseLen))

	add("actor_rollout_ref.model.path", model("actor_rollout_ref.model.path", r.model))
	add("actor_rollout_ref.model.enable_gradient_checkpointing", strconv.FormatBool(r.checkpointing))
	if r.loraRank != 0 || r.loraAlpha != 0 {
		add("actor_rollout_ref.model.lora_rank", positive("actor_rollout_ref.model.lora_rank", r.loraRank))
		add("actor_rollout_ref.model.lora_alpha", positive("actor_rollout_ref.model.lora_alpha", r.loraAlpha))
		add("actor_rollout_ref.model.target_modules", "all-linear")
	}
	if !(r.learningRate > 0) || math.IsInf(r.learningRate, 0) {
		errs = append(errs, field.Invalid(field.NewPath("actor_rollout_ref.actor.optim.lr"), r.learningRate, "must be positive"))
	}
	add("actor_rollout_ref.actor.optim.lr", strconv.FormatFloat(r.learningRate, 'g', -1, 64))
	add("actor_rollout_ref.actor.ppo_mini_batch_size", positive("actor_rollout_ref.actor.ppo_mini_batch_size", r.miniBatch))
	if r.miniBatch > r.batch {
		errs = append(errs, field.Invalid(field.NewPath("actor_rollout_ref.actor.ppo_mini_batch_size"), r.miniBatch,
			fmt.Sprintf("must not exceed data.train_batch_size (%d)", r.batch)))
	}
	micro := positive("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", r.microBatch)
	add("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", micro)
	grpo := r.algorithm == GRPOAlgorithm
	// GRPO puts the KL against the reference in the loss (verl's GRPO
	// examples: use_kl_loss True, use_kl_in_reward False), PPO in the
	// reward; verl reads a coefficient only when its switch is on, and a
	// zero coefficient turns both off (KLCoefficient).
	klKey := "algorithm.kl_ctrl.kl_coef"
	if grpo {
		klKey = "actor_rollout_ref.actor.kl_loss_coef"
	}
	klCoef := fraction(klKey, r.klCoef, 0, 10)
	klLoss, klReward := grpo && r.klCoef > 0, !grpo && r.klCoef > 0
	add("actor_rollout_ref.actor.use_kl_loss", strconv.FormatBool(klLoss))
	if klLoss {
		add("actor_rollout_ref.actor.kl_loss_coef", klCoef)
	}
	add("algorithm.use_kl_in_reward", strconv.FormatBool(klReward))
	if klReward {
		add("algorithm.kl_ctrl.kl_coef", klCoef)
	}
	if r.offloadParams {
		add("actor_rollout_ref.actor.fsdp_config.param_offload", "true")
	}
	if r.offloadOptimizer {
		add("actor_rollout_ref.actor.fsdp_config.optimizer_offload", "true")
	}
	if !slices.Contains([]string{"vllm", "sglang"}, r.engine) {
		errs = append(errs, field.NotSupported(field.NewPath("actor_rollout_ref.rollout.name"), r.engine, []string{"vllm", "sglang"}))
	}
	add("actor_rollout_ref.rollout.name", r.engine)
	if grpo && r.samples < 2 {
		errs = append(errs, field.Invalid(field.NewPath("actor_rollout_ref.rollout.n"), r.samples, "GRPO compares responses to one prompt: at least 2"))
	}
	add("actor_rollout_ref.rollout.n", positive("actor_rollout_ref.rollout.n", r.samples))
	tp := positive("actor_rollout_ref.rollout.tensor_model_parallel_size", r.rolloutTP)
	if r.rolloutTP > 0 && gpus > 0 && gpus%r.rolloutTP != 0 {
		errs = append(errs, field.Invalid(field.NewPath("actor_rollout_ref.rollout.tensor_model_parallel_size"), r.rolloutTP,
			fmt.Sprintf("must divide the devices per node (%d)", gpus)))
	}
	add("actor_rollout_ref.rollout.tensor_model_parallel_size", tp)
	add("actor_rollout_ref.rollout.gpu_memory_utilization", fraction("actor_rollout_ref.rollout.gpu_memory_utilization", r.rolloutMemory, 0.05, 0.95))
	add("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", micro)
	add("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu", micro)

	if grpo {
		if r.critic != "" {
			errs = append(errs, field.Forbidden(field.NewPath("critic.model.path"), "GRPO has no critic"))
		}
		add("trainer.critic_warmup", "0")
	} else {
		add("critic.model.path", model("critic.model.path", r.critic))
		// Ten times the actor's, as verl's examples; 15 digits drop the
		// float's last-bit noise (1e-05, not 9.999999999999999e-06).
		add("critic.optim.lr", strconv.FormatFloat(r.learningRate*10, 'g', 15, 64))
		// FSDPCriticConfig refuses a run with neither critic micro batch
		// set (verl/workers/config/critic.py, _check_mutually_exclusive).
		add("critic.ppo_micro_batch_size_per_gpu", micro)
		if r.offloadParams {
			add("critic.model.fsdp_config.param_offload", "true")
		}
		if r.offloadOptimizer {
			add("critic.model.fsdp_config.optimizer_offload", "true")
		}
	}
	switch {
	case r.rewardModel != "" && r.rewardPath != "":
		errs = append(errs, field.Forbidden(field.NewPath("reward_model.enable"), "set a reward model or a reward function, not both"))
	case r.rewardModel != "":
		add("reward_model.enable", "true")
		add("reward_model.model.path", model("reward_model.model.path", r.rewardModel))
		if problem := r.rewardModelProblem(); problem != "" {
			errs = append(errs, field.Invalid(field.NewPath("reward_model.model.path"), r.rewardModel, problem))
		}
		// The reward loop serves the model with reward_model.rollout, whose
		// name is mandatory ("???" in the generated configuration) and
		// whose other defaults (TP 2, half the memory, 2048 + 2048 tokens)
		// are not the run's; verl's own reward-model examples set them
		// (examples/ppo_trainer/run_qwen2-7b_rm.sh).
		add("reward_model.rollout.name", r.engine)
		add("reward_model.rollout.tensor_model_parallel_size", tp)
		add("reward_model.rollout.gpu_memory_utilization", strconv.FormatFloat(r.rolloutMemory, 'g', -1, 64))
		add("reward_model.rollout.prompt_length", strconv.Itoa(r.promptLen))
		add("reward_model.rollout.response_length", strconv.Itoa(r.responseLen))
	case r.rewardPath != "":
		add("custom_reward_function.path", file("custom_reward_function.path", r.rewardPath, RLRewardRoot, true))
		add("custom_reward_function.name", word("custom_reward_function.name", r.rewardFunc))
	default:
		// verl's default reward scores a few known datasets by their
		// data_source column (verl/utils/reward_score); anything else
		// needs a function or a model.
		errs = append(errs, field.Required(field.NewPath("custom_reward_function.path"), "a reward is required: RewardFunction or RewardModel"))
	}

	// verl's own batch checks (verl/utils/config.py validate_config;
	// ActorRolloutRefWorker.__init__ in verl/workers/fsdp_workers.py
	// normalises the mini batch per device), made here so that a run
	// fails before it is submitted.
	if devices := nodes * gpus; devices > 0 && r.batch > 0 && r.samples > 0 && r.miniBatch > 0 && r.microBatch > 0 {
		if problem := verlBatchProblem(r.batch, r.miniBatch, r.microBatch, r.samples, devices); problem != "" {
			errs = append(errs, field.Invalid(field.NewPath("data.train_batch_size"), r.batch, problem))
		}
	}
	add("trainer.nnodes", positive("trainer.nnodes", nodes))
	add("trainer.n_gpus_per_node", positive("trainer.n_gpus_per_node", gpus))
	if ascend {
		add("trainer.device", "npu")
	}
	add("trainer.total_epochs", positive("trainer.total_epochs", r.epochs))
	add("trainer.save_freq", positive("trainer.save_freq", r.saveEvery))
	add("trainer.test_freq", positive("trainer.test_freq", r.testEvery))
	if r.output == "" {
		errs = append(errs, field.Required(field.NewPath("trainer.default_local_dir"), "an output is required: Output(\"pvc://claim/path\")"))
	} else {
		add("trainer.default_local_dir", file("trainer.default_local_dir", r.output, RLOutputRoot, false))
	}
	add("trainer.logger", hydraList(r.logger))
	add("trainer.project_name", "cube")
	add("trainer.experiment_name", podspec.Of(&r.job.Handle).Name())
	return out, claims, errs
}

// rewardModelProblem says why verl's reward loop cannot score with the
// reward model, or "". The loop asks the model's server for /classify,
// which only a sequence classifier answers, and a path does not tell one
// from a causal LM such as llm.RewardModel's output, so the model's facts
// must be known (market's catalogue or RewardModelFacts) and say it does
// not generate text.
func (r *RL) rewardModelProblem() string {
	const why = "verl's reward loop asks the reward model's server for a score (POST /classify, verl/experimental/reward_loop/reward_loop.py), " +
		"which only a sequence-classification checkpoint (…ForSequenceClassification, one label) answers"
	m, err := factsOf("reward_model.model.path", r.rewardModel, r.rewardFacts, "RewardModelFacts")
	switch {
	case r.rewardFacts == nil && err != nil:
		return why + "; a reference does not say whether it is one or a causal LM such as llm.RewardModel's output: give its architecture with RewardModelFacts (Task classification)"
	case err != nil:
		return fmt.Sprintf("RewardModelFacts: %v", errors.Unwrap(err))
	case m.Generates():
		return why + "; this one generates text (a causal LM, such as llm.RewardModel's output, whose value head LLaMA-Factory saves apart), " +
			"which vLLM serves without /classify: score with a sequence-classification reward model, or train with llm.PPO"
	}
	return ""
}

// verlBatchProblem says why verl refuses a batch on devices devices, or
// "": the responses of a step (prompts × samples) must divide among the
// devices, and the mini batch's responses per device (miniBatch × samples
// / devices) must be a positive multiple of the micro batch.
func verlBatchProblem(prompts, miniBatch, micro, samples, devices int) string {
	if prompts*samples%devices != 0 {
		return fmt.Sprintf("%d prompts × %d samples must divide among the %d devices (verl's validate_config)", prompts, samples, devices)
	}
	perDevice := miniBatch * samples / devices
	if perDevice < 1 || perDevice%micro != 0 {
		return fmt.Sprintf("the mini batch's %d × %d responses over %d devices (%d each) must be a positive multiple of the micro batch %d (verl's ActorRolloutRefWorker)",
			miniBatch, samples, devices, perDevice, micro)
	}
	return ""
}

// maxVerlCount bounds the counts and lengths a run is given, far above
// any real run's, so that prompts × samples cannot overflow.
const maxVerlCount = 1 << 24

// pythonName is what a column or function name must be: verl looks the
// column up in the parquet files and the function in the module by name.
var pythonName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// hydraUnsafe says why a path cannot be an unquoted Hydra override
// value, or "". Hydra's override grammar (hydra/grammar/OverrideLexer.g4,
// VALUE_MODE) reads an unquoted value as ASCII letters, digits and _
// (ID, INT, FLOAT) and the characters / - \ + . $ % * (UNQUOTED_CHAR),
// with , [ ] { } ( ) : = and quotes as syntax and ${…} as an
// interpolation; any other character, such as @, ~ or a non-ASCII
// letter, is a lexer error. A data path keeps to letters, digits and
// _ / - + . of those.
func hydraUnsafe(p string) string {
	if i := strings.IndexFunc(p, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_/-+.", c))
	}); i >= 0 {
		c, _ := utf8.DecodeRuneInString(p[i:])
		return fmt.Sprintf("path must not contain %q: an unquoted Hydra override value takes ASCII letters, digits and _ / - + . (hydra/grammar/OverrideLexer.g4)", c)
	}
	return ""
}

// hydraList renders a Hydra list value: [a,b].
func hydraList(items []string) string { return "[" + strings.Join(items, ",") + "]" }

// shellQuote quotes a word for the shell KubeRay runs the entrypoint in.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_./=:@+,", c))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (r *RL) build() ([]client.Object, field.ErrorList) {
	if r == nil || r.job == nil {
		return nil, field.ErrorList{field.Required(field.NewPath("llm.RL"), "is nil or zero: create it with llm.GRPO or llm.VerlPPO")}
	}
	errs := slices.Clone(r.problems)
	profile, _ := podspec.Of(&r.job.Handle).Profile()
	ascend := profile.Vendor == hardware.Huawei
	if current := podspec.Of(&r.job.Handle).ImageName(); current == "" || current == r.autoImage {
		if ascend {
			r.job.Image("")
			r.autoImage = ""
			errs = append(errs, field.Required(field.NewPath("image"), "verl publishes no Ascend image: set one built from its docker/ascend Dockerfiles"))
		} else {
			// The images hold one engine each (docker/Dockerfile.stable.*).
			r.autoImage = DefaultVerlImage
			if r.engine == "sglang" {
				r.autoImage = DefaultVerlSGLangImage
			}
			r.job.Image(r.autoImage)
		}
	}
	objs, jobErr := r.job.Objects()
	if jobErr != nil {
		errs = append(errs, field.Invalid(field.NewPath("job"), podspec.Of(&r.job.Handle).Name(), jobErr.Error()))
		_, _, oErrs := r.overrides(1, max(podspec.Of(&r.job.Handle).GPUCount(), 1), ascend)
		return nil, append(errs, oErrs...)
	}
	ray := objs[0].(*rayv1.RayJob)
	nodes := 0
	for _, g := range ray.Spec.RayClusterSpec.WorkerGroupSpecs {
		if g.Replicas != nil {
			nodes += int(*g.Replicas)
		}
	}
	// A head given accelerators (HeadAccelerators) is a GPU node too.
	if head := ray.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0]; profile.Accelerated() {
		if q, ok := head.Resources.Limits[profile.ResourceName]; ok && !q.IsZero() {
			nodes++
		}
	}
	if !profile.Accelerated() {
		errs = append(errs, field.Required(field.NewPath("job", "on"), "verl trains on accelerators: set On with a GPU or NPU profile"))
	}
	ovs, claims, oErrs := r.overrides(nodes, podspec.Of(&r.job.Handle).GPUCount(), ascend)
	errs = append(errs, oErrs...)
	if len(errs) > 0 {
		return nil, errs
	}
	words := strings.Fields(verlEntrypoint)
	for _, o := range ovs {
		words = append(words, shellQuote(o.key+"="+o.value))
	}
	ray.Spec.Entrypoint = strings.Join(words, " ")
	volumes, mounts := configAndClaims("", claims)
	cluster := field.NewPath("spec", "rayClusterSpec")
	templates := []*corev1.PodTemplateSpec{&ray.Spec.RayClusterSpec.HeadGroupSpec.Template}
	paths := []*field.Path{cluster.Child("headGroupSpec", "template", "spec")}
	for i := range ray.Spec.RayClusterSpec.WorkerGroupSpecs {
		templates = append(templates, &ray.Spec.RayClusterSpec.WorkerGroupSpecs[i].Template)
		paths = append(paths, cluster.Child("workerGroupSpecs").Index(i).Child("template", "spec"))
	}
	if errs := addToTemplates(templates, paths, volumes, mounts, nil); len(errs) > 0 {
		return nil, errs
	}
	return objs, nil
}

// Objects validates the run and returns the RayJob; it implements
// cube.Workload.
func (r *RL) Objects() ([]client.Object, error) {
	objs, errs := r.build()
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return objs, nil
}
