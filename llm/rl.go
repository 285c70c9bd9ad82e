package llm

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

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

	problems field.ErrorList
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
// OPENAI_BASE_URL=<serve.URL(svc)>/v1, the variable the openai Python
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
	endpoint, err := serve.URL(svc)
	if err != nil {
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
func (r *RL) HFToken(ref pod.SecretKeyRef) *RL {
	if r == nil {
		return nil
	}
	r.Job().EnvFromSecret("HF_TOKEN", ref)
	return r
}
