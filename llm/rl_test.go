package llm_test

import (
	"math"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/serve"
)

func grpo(name string) *llm.RL {
	r := llm.GRPO(name, "Qwen/Qwen2.5-7B-Instruct").
		TrainFiles("pvc://datasets/gsm8k/train.parquet").ValFiles("pvc://datasets/gsm8k/test.parquet").
		RewardFunction("pvc://datasets/reward/gsm8k.py", "compute_score").
		Output("pvc://models/" + name)
	r.Job().WorkerGroup("gpu", 2).On(hardware.H100).Accelerators(8).Fabric(hardware.InfiniBand())
	return r
}

// overrides splits the entrypoint into its Hydra overrides.
func overrides(t *testing.T, entrypoint string) map[string]string {
	t.Helper()
	require.True(t, strings.HasPrefix(entrypoint, "python3 -m verl.trainer.main_ppo "), entrypoint)
	out := map[string]string{}
	for _, w := range strings.Fields(strings.TrimPrefix(entrypoint, "python3 -m verl.trainer.main_ppo ")) {
		w = strings.Trim(w, "'")
		k, v, ok := strings.Cut(w, "=")
		require.True(t, ok, w)
		out[k] = v
	}
	return out
}

func TestGRPORendersVerlOverrides(t *testing.T) {
	objs, err := grpo("math-grpo").Objects()
	require.NoError(t, err)
	require.Len(t, objs, 1)
	job := objs[0].(*rayv1.RayJob)
	got := overrides(t, job.Spec.Entrypoint)
	for k, v := range map[string]string{
		"algorithm.adv_estimator":             "grpo",
		"data.train_files":                    "[/data/datasets/gsm8k/train.parquet]",
		"data.val_files":                      "[/data/datasets/gsm8k/test.parquet]",
		"actor_rollout_ref.model.path":        "Qwen/Qwen2.5-7B-Instruct",
		"actor_rollout_ref.actor.use_kl_loss": "true",
		"actor_rollout_ref.rollout.name":      "vllm",
		"actor_rollout_ref.rollout.n":         "5",
		"custom_reward_function.path":         "/reward/datasets/reward/gsm8k.py",
		"custom_reward_function.name":         "compute_score",
		"trainer.nnodes":                      "2",
		"trainer.n_gpus_per_node":             "8",
		"trainer.default_local_dir":           "/output/models/math-grpo",
		"trainer.logger":                      "[console]",
	} {
		assert.Equal(t, v, got[k], k)
	}
	assert.NotContains(t, got, "critic.model.path")
	assert.NotContains(t, got, "trainer.device")
	worker := job.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec
	assert.Equal(t, llm.DefaultVerlImage, worker.Containers[0].Image)
	assert.Contains(t, worker.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "llm-claim-0", MountPath: "/data/datasets", ReadOnly: true})
	assert.Contains(t, worker.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "llm-claim-2", MountPath: "/output/models"})
	// The driver runs on the head: it reads the same files.
	head := job.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec
	assert.Equal(t, claimMounts(worker.Containers[0].VolumeMounts), claimMounts(head.Containers[0].VolumeMounts))
	assert.Len(t, claimMounts(head.Containers[0].VolumeMounts), 3)
	assert.Equal(t, "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo 'data.train_files=[/data/datasets/gsm8k/train.parquet]'",
		strings.Join(strings.Fields(job.Spec.Entrypoint)[:5], " "))
}

func claimMounts(ms []corev1.VolumeMount) []corev1.VolumeMount {
	var out []corev1.VolumeMount
	for _, m := range ms {
		if strings.HasPrefix(m.Name, "llm-claim") {
			out = append(out, m)
		}
	}
	return out
}

// rewardClassifier is the facts of a one-label sequence classifier on
// Qwen2.5-7B's decoder, the kind of reward model verl's reward loop serves.
func rewardClassifier() models.Model {
	m := mustLookup(qwen)
	m.Name, m.Task = "qwen-rm", models.TaskClassification
	return m
}

// rlBuilders are the verl runs the golden, contract and API server tests
// render.
func rlBuilders() map[string]*llm.RL {
	ppo := llm.VerlPPO("rm-ppo", "Qwen/Qwen2.5-7B-Instruct").
		TrainFiles("pvc://datasets/prompts.parquet").ValFiles("pvc://datasets/prompts-val.parquet").
		RewardModel("pvc://models/qwen-rm").RewardModelFacts(rewardClassifier()).LoRA(32, 64).WandB("wandb", "key").
		Output("pvc://models/rm-ppo")
	offloaded := llm.VerlPPO("offloaded-ppo", "Qwen/Qwen2.5-7B-Instruct").
		TrainFiles("pvc://datasets/prompts.parquet").ValFiles("pvc://datasets/prompts-val.parquet").
		RewardFunction("pvc://datasets/reward/score.py", "score").
		OffloadParams().OffloadOptimizer().Output("pvc://models/offloaded-ppo")
	offloaded.Job().WorkerGroup("gpu", 1).On(hardware.H100).Accelerators(8)
	ppo.Job().WorkerGroup("gpu", 1).On(hardware.H100).Accelerators(8)
	npu := grpo("npu-grpo")
	npu.Job().On(hardware.Ascend910B3).Fabric(hardware.RoCE()).Image("registry.example.com/verl:ascend")
	sglang := grpo("sglang-grpo").Rollout("sglang", 2, 0.5).KLCoefficient(0)
	return map[string]*llm.RL{"grpo": grpo("math-grpo"), "ppo": ppo, "grpo-ascend": npu, "ppo-offload": offloaded, "grpo-sglang": sglang}
}

func TestVerlOverridesOfEachRun(t *testing.T) {
	for name, r := range rlBuilders() {
		objs, err := r.Objects()
		require.NoError(t, err, name)
		job := objs[0].(*rayv1.RayJob)
		got := overrides(t, job.Spec.Entrypoint)
		// verl is installed at run time on every node: the images lack it.
		assert.Contains(t, job.Spec.RuntimeEnvYAML, "verl @ git+https://github.com/volcengine/verl.git@f9c855f7cf04d603c9546bc01776c74806a879c1", name)
		switch name {
		case "ppo":
			assert.Equal(t, "gae", got["algorithm.adv_estimator"])
			assert.Equal(t, "Qwen/Qwen2.5-7B-Instruct", got["critic.model.path"])
			assert.Equal(t, "/models/models/qwen-rm", got["reward_model.model.path"])
			assert.Equal(t, "32", got["actor_rollout_ref.model.lora_rank"])
			assert.Equal(t, "[console,wandb]", got["trainer.logger"])
			assert.Equal(t, "[/data/datasets/prompts-val.parquet]", got["data.val_files"])
			// PPO's KL is in the reward, at the coefficient given.
			assert.Equal(t, "true", got["algorithm.use_kl_in_reward"])
			assert.Equal(t, "0.001", got["algorithm.kl_ctrl.kl_coef"])
			assert.Equal(t, "false", got["actor_rollout_ref.actor.use_kl_loss"])
			assert.NotContains(t, got, "actor_rollout_ref.actor.kl_loss_coef")
			// FSDPCriticConfig needs a critic micro batch.
			assert.Equal(t, "4", got["critic.ppo_micro_batch_size_per_gpu"])
			// The reward loop's server: its name is mandatory at v0.7.0.
			for k, v := range map[string]string{"reward_model.rollout.name": "vllm", "reward_model.rollout.tensor_model_parallel_size": "1",
				"reward_model.rollout.gpu_memory_utilization": "0.6", "reward_model.rollout.prompt_length": "1024",
				"reward_model.rollout.response_length": "1024"} {
				assert.Equal(t, v, got[k], k)
			}
			assert.NotContains(t, got, "actor_rollout_ref.actor.fsdp_config.param_offload")
			assert.Equal(t, llm.DefaultVerlImage, job.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Image)
		case "ppo-offload":
			for _, k := range []string{"actor_rollout_ref.actor.fsdp_config.param_offload", "actor_rollout_ref.actor.fsdp_config.optimizer_offload",
				"critic.model.fsdp_config.param_offload", "critic.model.fsdp_config.optimizer_offload"} {
				assert.Equal(t, "true", got[k], k)
			}
			assert.NotContains(t, got, "reward_model.rollout.name")
		case "grpo":
			assert.Equal(t, "true", got["actor_rollout_ref.actor.use_kl_loss"])
			assert.Equal(t, "0.001", got["actor_rollout_ref.actor.kl_loss_coef"])
			assert.Equal(t, "false", got["algorithm.use_kl_in_reward"])
			assert.NotContains(t, got, "algorithm.kl_ctrl.kl_coef")
		case "grpo-sglang":
			// No KL: neither switch, no coefficient, so verl makes no reference.
			assert.Equal(t, "false", got["actor_rollout_ref.actor.use_kl_loss"])
			assert.Equal(t, "false", got["algorithm.use_kl_in_reward"])
			assert.NotContains(t, got, "actor_rollout_ref.actor.kl_loss_coef")
			assert.Equal(t, "sglang", got["actor_rollout_ref.rollout.name"])
			assert.Equal(t, llm.DefaultVerlSGLangImage, job.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image)
		case "grpo-ascend":
			assert.Equal(t, "npu", got["trainer.device"])
		}
	}
}

func TestHeadWithAcceleratorsCountsAsANode(t *testing.T) {
	// 24 devices: 240 × 5 responses, 48 × 5 / 24 = 10 a device in micro batches of 2.
	r := grpo("head").Batch(240, 48, 2)
	r.Job().HeadAccelerators(8)
	objs, err := r.Objects()
	require.NoError(t, err)
	assert.Equal(t, "3", overrides(t, objs[0].(*rayv1.RayJob).Spec.Entrypoint)["trainer.nnodes"])
}

func TestRLErrors(t *testing.T) {
	r := llm.GRPO("x", "s3://b/m").Samples(1).Batch(8, 16, 0).Rollout("tgi", 3, 2).Output("hf://o/x")
	r.Job().WorkerGroup("gpu", 1).On(hardware.H100).Accelerators(8)
	_, err := r.Objects()
	assert.ElementsMatch(t, []string{
		"data.train_files", "data.val_files", "actor_rollout_ref.model.path", "actor_rollout_ref.actor.ppo_mini_batch_size",
		"actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "actor_rollout_ref.rollout.name", "actor_rollout_ref.rollout.n",
		"actor_rollout_ref.rollout.tensor_model_parallel_size", "actor_rollout_ref.rollout.gpu_memory_utilization",
		"custom_reward_function.path", "trainer.default_local_dir",
	}, fields(t, err), err.Error())

	// verl's batch checks on 2 × 8 devices: 6 prompts × 5 samples do not
	// divide among 16; 64 × 5 / 16 = 20 responses a device are no multiple
	// of a micro batch of 8.
	for _, b := range [][3]int{{6, 4, 4}, {256, 64, 8}} {
		_, err := grpo("batch").Batch(b[0], b[1], b[2]).Objects()
		assert.Equal(t, []string{"data.train_batch_size"}, fields(t, err), b)
	}

	npu := grpo("npu")
	npu.Job().On(hardware.Ascend910B3)
	_, err = npu.Objects()
	assert.ErrorContains(t, err, "verl publishes no Ascend image")

	for _, z := range []*llm.RL{nil, {}} {
		_, err := z.Objects()
		assert.ErrorContains(t, err, "llm.GRPO")
		z.TrainFiles("x").LoRA(1, 1).WandB("a", "b").Job().On(hardware.H100)
	}
}

func TestRLAppliedStrictly(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Clientset(env.Clientset))
	for name, r := range rlBuilders() {
		t.Run(name, func(t *testing.T) { fuzzcorpus.Stored(t, c, env, ns, r) })
	}
}

func TestJudgeEndpointFromServe(t *testing.T) {
	judge := serve.VLLM("judge", "Qwen/Qwen2.5-72B-Instruct").Namespace("team-a")
	r := grpo("judged").JudgeEndpoint(judge)
	r.Job().EnvFromSecret("OPENAI_API_KEY", pod.SecretKeyRef{Name: "judge-key", Key: "key"})
	objs, err := r.Objects()
	require.NoError(t, err)
	job := objs[0].(*rayv1.RayJob)
	for _, tmpl := range []corev1.PodTemplateSpec{job.Spec.RayClusterSpec.HeadGroupSpec.Template, job.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template} {
		assert.Contains(t, tmpl.Spec.Containers[0].Env, corev1.EnvVar{Name: "OPENAI_BASE_URL", Value: "http://judge-api.team-a:8000/v1"})
	}

	_, err = grpo("nojudge").JudgeEndpoint(nil).Objects()
	assert.Equal(t, []string{"judgeEndpoint"}, fields(t, err))
}

// verl builds the validation dataset on every run (main_ppo.py), so a run
// without ValFiles would read the default path, which no pod has.
func TestRLValidationFilesAreRequired(t *testing.T) {
	r := llm.GRPO("noval", qwen).TrainFiles("pvc://datasets/train.parquet").
		RewardFunction("pvc://datasets/reward.py", "score").Output("pvc://models/noval")
	r.Job().WorkerGroup("gpu", 1).On(hardware.H100).Accelerators(8)
	_, err := r.Objects()
	assert.Equal(t, []string{"data.val_files"}, fields(t, err))
	assert.ErrorContains(t, err, "ValFiles")
}

// verl's reward loop asks the reward model's server for /classify; a
// causal LM (llm.RewardModel's output, or any generating model) is served
// without it.
func TestRLRewardModelMustBeAClassifier(t *testing.T) {
	ppo := func(rm string) *llm.RL {
		r := llm.VerlPPO("rm", qwen).TrainFiles("pvc://datasets/p.parquet").ValFiles("pvc://datasets/v.parquet").
			RewardModel(rm).Output("pvc://models/rm")
		r.Job().WorkerGroup("gpu", 1).On(hardware.H100).Accelerators(8)
		return r
	}
	for name, r := range map[string]*llm.RL{
		"catalogued generator":          ppo("Qwen/Qwen2.5-7B-Instruct"),
		"llm.RewardModel with its base": ppo("pvc://models/qwen-rm-full").RewardModelFacts(mustLookup(qwen)),
		// A path does not say what the checkpoint is.
		"a path without facts":          ppo("pvc://models/qwen-rm-full"),
		"a Hub id not in the catalogue": ppo("Skywork/Skywork-Reward-V2-Llama-3.1-8B"),
	} {
		_, err := r.Objects()
		assert.Equal(t, []string{"reward_model.model.path"}, fields(t, err), name)
		assert.ErrorContains(t, err, "/classify", name)
	}
	bad := rewardClassifier()
	bad.Layers = -1
	_, err := ppo("pvc://models/qwen-rm").RewardModelFacts(bad).Objects()
	assert.Equal(t, []string{"reward_model.model.path"}, fields(t, err))
	assert.ErrorContains(t, err, "RewardModelFacts: ")
	_, err = ppo("pvc://models/qwen-rm").RewardModelFacts(rewardClassifier()).Objects()
	assert.NoError(t, err)
}

// TestRLHostileInput gives every setting values a new user might: each is
// refused with an error naming the key, and no error repeats a password.
func TestRLHostileInput(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(r *llm.RL)
		field string
	}{
		{"NaN learning rate", func(r *llm.RL) { r.LearningRate(math.NaN()) }, "actor_rollout_ref.actor.optim.lr"},
		{"infinite learning rate", func(r *llm.RL) { r.LearningRate(math.Inf(1)) }, "actor_rollout_ref.actor.optim.lr"},
		{"negative learning rate", func(r *llm.RL) { r.LearningRate(-1e-6) }, "actor_rollout_ref.actor.optim.lr"},
		{"NaN KL", func(r *llm.RL) { r.KLCoefficient(math.NaN()) }, "actor_rollout_ref.actor.kl_loss_coef"},
		{"infinite KL", func(r *llm.RL) { r.KLCoefficient(math.Inf(1)) }, "actor_rollout_ref.actor.kl_loss_coef"},
		{"negative KL", func(r *llm.RL) { r.KLCoefficient(-0.1) }, "actor_rollout_ref.actor.kl_loss_coef"},
		{"NaN memory share", func(r *llm.RL) { r.Rollout("vllm", 1, math.NaN()) }, "actor_rollout_ref.rollout.gpu_memory_utilization"},
		{"negative infinite memory share", func(r *llm.RL) { r.Rollout("vllm", 1, math.Inf(-1)) }, "actor_rollout_ref.rollout.gpu_memory_utilization"},
		{"zero tensor parallelism", func(r *llm.RL) { r.Rollout("vllm", 0, 0.6) }, "actor_rollout_ref.rollout.tensor_model_parallel_size"},
		{"negative prompt length", func(r *llm.RL) { r.Lengths(-1, 1024) }, "data.max_prompt_length"},
		{"zero response length", func(r *llm.RL) { r.Lengths(1024, 0) }, "data.max_response_length"},
		{"zero epochs", func(r *llm.RL) { r.Epochs(0) }, "trainer.total_epochs"},
		{"negative save interval", func(r *llm.RL) { r.SaveEvery(-5, 5) }, "trainer.save_freq"},
		{"zero test interval", func(r *llm.RL) { r.SaveEvery(20, 0) }, "trainer.test_freq"},
		{"negative LoRA rank", func(r *llm.RL) { r.LoRA(-8, 16) }, "actor_rollout_ref.model.lora_rank"},
		{"zero LoRA alpha", func(r *llm.RL) { r.LoRA(8, 0) }, "actor_rollout_ref.model.lora_alpha"},
		{"zero samples", func(r *llm.RL) { r.Samples(0) }, "actor_rollout_ref.rollout.n"},
		{"overflowing batch", func(r *llm.RL) { r.Batch(1<<40, 64, 4) }, "data.train_batch_size"},
		{"overflowing response length", func(r *llm.RL) { r.Lengths(1024, math.MaxInt) }, "data.max_response_length"},
		{"path escaping its claim", func(r *llm.RL) { r.TrainFiles("pvc://datasets/../../etc/passwd") }, "data.train_files"},
		{"validation path escaping", func(r *llm.RL) { r.ValFiles("pvc://datasets/a/../../../root") }, "data.val_files"},
		{"output escaping", func(r *llm.RL) { r.Output("pvc://models/../x") }, "trainer.default_local_dir"},
		{"reward file escaping", func(r *llm.RL) { r.RewardFunction("pvc://datasets/../r.py", "score") }, "custom_reward_function.path"},
		{"comma splitting a Hydra list", func(r *llm.RL) { r.TrainFiles("pvc://datasets/a,b.parquet") }, "data.train_files"},
		{"Hydra interpolation", func(r *llm.RL) { r.ValFiles("pvc://datasets/${oc.env:HOME}.parquet") }, "data.val_files"},
		{"credentials in a model URL", func(r *llm.RL) { r.Critic("https://user:secret@example.com/critic") }, "critic.model.path"},
		{"credentials in an s3 model", func(r *llm.RL) { r.Critic("s3://AKIA:secret@bucket/critic") }, "critic.model.path"},
		{"credentials in a dataset", func(r *llm.RL) { r.TrainFiles("pvc://user:secret@datasets/t.parquet") }, "data.train_files"},
		{"credentials in a reward file", func(r *llm.RL) { r.RewardFunction("pvc://key@datasets/r.py", "score") }, "custom_reward_function.path"},
		{"prompt key with a space", func(r *llm.RL) { r.PromptKey("my prompt") }, "data.prompt_key"},
		{"prompt key overriding another key", func(r *llm.RL) { r.PromptKey("prompt trainer.total_epochs=1") }, "data.prompt_key"},
		{"empty prompt key", func(r *llm.RL) { r.PromptKey("") }, "data.prompt_key"},
		{"reward function name with shell", func(r *llm.RL) { r.RewardFunction("pvc://datasets/r.py", "score;rm -rf /") }, "custom_reward_function.name"},
		{"empty reward function name", func(r *llm.RL) { r.RewardFunction("pvc://datasets/r.py", "") }, "custom_reward_function.name"},
		{"unknown rollout engine", func(r *llm.RL) { r.Rollout("hf", 1, 0.6) }, "actor_rollout_ref.rollout.name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := llm.VerlPPO("hostile", qwen).TrainFiles("pvc://datasets/t.parquet").ValFiles("pvc://datasets/v.parquet").
				RewardFunction("pvc://datasets/r.py", "score").Output("pvc://models/hostile")
			if strings.HasPrefix(c.field, "actor_rollout_ref.actor.kl_loss_coef") {
				r = grpo("hostile")
			}
			r.Job().WorkerGroup("gpu", 1).On(hardware.H100).Accelerators(8)
			c.edit(r)
			_, err := r.Objects()
			assert.Contains(t, fields(t, err), c.field, err.Error())
			assert.NotContains(t, err.Error(), "secret")
		})
	}
	// PPO's KL is the reward's: a bad coefficient is named by its key.
	r := rlBuilders()["ppo"].KLCoefficient(math.NaN())
	_, err := r.Objects()
	assert.Equal(t, []string{"algorithm.kl_ctrl.kl_coef"}, fields(t, err))
}

// Hydra's override grammar lexes an unquoted value as ASCII letters,
// digits and a few punctuation characters: an @ or a non-ASCII letter in
// a path is refused by name, and an @ before the host as credentials.
func TestRLPathsHydraCannotRead(t *testing.T) {
	for _, uri := range []string{"pvc://datasets/gsm8k@v2/train.parquet", "pvc://datasets/données/train.parquet", "pvc://datasets/a~b.parquet", "pvc://datasets/a:b.parquet"} {
		_, err := grpo("at").TrainFiles(uri).Objects()
		assert.Equal(t, []string{"data.train_files"}, fields(t, err), uri)
		assert.ErrorContains(t, err, "OverrideLexer.g4", uri)
	}
	objs, err := grpo("ok").TrainFiles("pvc://datasets/gsm8k-v2/train_2024.parquet").Objects()
	require.NoError(t, err)
	assert.Equal(t, "[/data/datasets/gsm8k-v2/train_2024.parquet]", overrides(t, objs[0].(*rayv1.RayJob).Spec.Entrypoint)["data.train_files"])
}
