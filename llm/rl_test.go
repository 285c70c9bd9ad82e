package llm_test

import (
	"bufio"
	"os"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testenv"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/serve"
)

func grpo(name string) *llm.RL {
	r := llm.GRPO(name, "Qwen/Qwen2.5-7B-Instruct").
		TrainFiles("pvc://datasets/gsm8k/train.parquet").ValFiles("pvc://datasets/gsm8k/test.parquet").
		RewardFunction("pvc://datasets/reward/gsm8k.py", "compute_score").
		Output("pvc://models/" + name)
	r.Job().WorkerGroup("gpu", 2).On(hardware.H100).GPUs(8).Fabric(hardware.InfiniBand())
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

func verlKeys(t *testing.T) map[string]bool {
	f, err := os.Open("testdata/verl-keys.txt")
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	keys := map[string]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if l := s.Text(); l != "" && !strings.HasPrefix(l, "#") {
			keys[l] = true
		}
	}
	require.NoError(t, s.Err())
	return keys
}

func rlBuilders() map[string]*llm.RL {
	ppo := llm.VerlPPO("rm-ppo", "Qwen/Qwen2.5-7B-Instruct").
		TrainFiles("pvc://datasets/prompts.parquet").
		RewardModel("pvc://models/qwen-rm-full").LoRA(32, 64).WandB("wandb", "key").
		Output("pvc://models/rm-ppo")
	offloaded := llm.VerlPPO("offloaded-ppo", "Qwen/Qwen2.5-7B-Instruct").
		TrainFiles("pvc://datasets/prompts.parquet").RewardFunction("pvc://datasets/reward/score.py", "score").
		OffloadParams().OffloadOptimizer().Output("pvc://models/offloaded-ppo")
	offloaded.Job().WorkerGroup("gpu", 1).On(hardware.H100).GPUs(8)
	ppo.Job().WorkerGroup("gpu", 1).On(hardware.H100).GPUs(8)
	npu := grpo("npu-grpo")
	npu.Job().On(hardware.Ascend910B3).Fabric(hardware.RoCE()).Image("registry.example.com/verl:ascend")
	return map[string]*llm.RL{"grpo": grpo("math-grpo"), "ppo": ppo, "grpo-ascend": npu, "ppo-offload": offloaded}
}

func TestEveryVerlOverrideIsUpstream(t *testing.T) {
	keys := verlKeys(t)
	assert.Greater(t, len(keys), 500)
	for name, r := range rlBuilders() {
		objs, err := r.Objects()
		require.NoError(t, err, name)
		got := overrides(t, objs[0].(*rayv1.RayJob).Spec.Entrypoint)
		for k := range got {
			assert.True(t, keys[k], "%s: %s is not a key of verl v0.7.0's configuration", name, k)
		}
		switch name {
		case "ppo":
			assert.Equal(t, "gae", got["algorithm.adv_estimator"])
			assert.Equal(t, "Qwen/Qwen2.5-7B-Instruct", got["critic.model.path"])
			assert.Equal(t, "/models/models/qwen-rm-full", got["reward_model.model.path"])
			assert.Equal(t, "32", got["actor_rollout_ref.model.lora_rank"])
			assert.Equal(t, "[console,wandb]", got["trainer.logger"])
			// FSDPCriticConfig needs a critic micro batch.
			assert.Equal(t, "4", got["critic.ppo_micro_batch_size_per_gpu"])
			// The reward loop's server: its name is mandatory at v0.7.0.
			for k, v := range map[string]string{"reward_model.rollout.name": "vllm", "reward_model.rollout.tensor_model_parallel_size": "1",
				"reward_model.rollout.gpu_memory_utilization": "0.6", "reward_model.rollout.prompt_length": "1024",
				"reward_model.rollout.response_length": "1024"} {
				assert.Equal(t, v, got[k], k)
			}
			assert.NotContains(t, got, "actor_rollout_ref.actor.fsdp_config.param_offload")
		case "ppo-offload":
			for _, k := range []string{"actor_rollout_ref.actor.fsdp_config.param_offload", "actor_rollout_ref.actor.fsdp_config.optimizer_offload",
				"critic.model.fsdp_config.param_offload", "critic.model.fsdp_config.optimizer_offload"} {
				assert.Equal(t, "true", got[k], k)
			}
			assert.NotContains(t, got, "reward_model.rollout.name")
		case "grpo-ascend":
			assert.Equal(t, "npu", got["trainer.device"])
		}
	}
}

func TestHeadWithAcceleratorsCountsAsANode(t *testing.T) {
	// 24 devices: 240 × 5 responses, 48 × 5 / 24 = 10 a device in micro batches of 2.
	r := grpo("head").Batch(240, 48, 2)
	r.Job().HeadGPUs()
	objs, err := r.Objects()
	require.NoError(t, err)
	assert.Equal(t, "3", overrides(t, objs[0].(*rayv1.RayJob).Spec.Entrypoint)["trainer.nnodes"])
}

func TestRLErrors(t *testing.T) {
	r := llm.GRPO("x", "s3://b/m").Samples(1).Batch(8, 16, 0).Rollout("tgi", 3, 2).Output("hf://o/x")
	r.Job().WorkerGroup("gpu", 1).On(hardware.H100).GPUs(8)
	_, err := r.Objects()
	assert.ElementsMatch(t, []string{
		"data.train_files", "actor_rollout_ref.model.path", "actor_rollout_ref.actor.ppo_mini_batch_size",
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
	c := cube.NewFromClient(env.Client, cube.WithNamespace(ns), cube.WithClientset(env.Clientset))
	for name, r := range rlBuilders() {
		t.Run(name, func(t *testing.T) { applyAndCompare(t, c, env, ns, r) })
	}
}

func TestJudgeEndpointFromServe(t *testing.T) {
	judge := serve.VLLM("judge", "Qwen/Qwen2.5-72B-Instruct").Namespace("team-a")
	r := grpo("judged").JudgeEndpoint(judge)
	r.Job().EnvFromSecret("OPENAI_API_KEY", "judge-key", "key")
	objs, err := r.Objects()
	require.NoError(t, err)
	job := objs[0].(*rayv1.RayJob)
	for _, tmpl := range []corev1.PodTemplateSpec{job.Spec.RayClusterSpec.HeadGroupSpec.Template, job.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template} {
		assert.Contains(t, tmpl.Spec.Containers[0].Env, corev1.EnvVar{Name: "OPENAI_BASE_URL", Value: judge.Endpoint() + "/v1"})
	}
	assert.Equal(t, "http://judge-api.team-a:8000", judge.Endpoint())

	_, err = grpo("nojudge").JudgeEndpoint(nil).Objects()
	assert.Equal(t, []string{"judgeEndpoint"}, fields(t, err))
}
