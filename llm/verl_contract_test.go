package llm_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/internal/testsupport/contract"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/train"
)

const verlContract = "testdata/contracts/verl.tsv"

// verlImageContract is the verl contract with what a run's Ray runtime
// environment installs added to the image's contents: the contract has no
// rule for packages installed at run time, so each requirement that pins
// verl's source commit becomes an image fact for this check.
func verlImageContract(t *testing.T, ref string, job *rayv1.RayJob) *contract.Contract {
	t.Helper()
	text, err := os.ReadFile(verlContract)
	require.NoError(t, err)
	base, err := contract.Parse(verlContract, string(text))
	require.NoError(t, err)
	var env train.RuntimeEnv
	require.NoError(t, yaml.Unmarshal([]byte(job.Spec.RuntimeEnvYAML), &env))
	extra := string(text)
	_, commit, _ := strings.Cut(base.Source, "@")
	for _, req := range env.Pip {
		// "verl @ git+https://github.com/volcengine/verl.git@<commit>"
		if name, url, ok := strings.Cut(req, " @ "); ok && strings.HasSuffix(url, "@"+commit) {
			extra += fmt.Sprintf("image\t%s\t%s=%s\trendered runtimeEnvYAML.pip\n", ref, name, strings.TrimPrefix(base.Version, "v"))
		}
	}
	c, err := contract.Parse(verlContract, extra)
	require.NoError(t, err)
	return c
}

// TestVerlRunsKeepTheContract checks every verl run llm renders (the
// golden runs and the builder cases) against verl v0.7.0's contract: every
// Hydra override a key of verl's configuration with a value it accepts,
// the combinations it refuses or ignores absent, and the default image,
// with what the runtime environment installs, holding verl and the
// rollout engine the run names.
func TestVerlRunsKeepTheContract(t *testing.T) {
	c, err := contract.Load(verlContract)
	require.NoError(t, err)
	assert.Equal(t, "v"+llm.VerlVersion, c.Version)
	assert.Equal(t, "volcengine/verl@f9c855f7cf04d603c9546bc01776c74806a879c1", c.Source)
	runs := rlBuilders()
	runs["ppo-sglang-rm"] = rlBuilders()["ppo"].Rollout("sglang", 1, 0.5)
	runs["ppo-no-kl"] = rlBuilders()["ppo-offload"].KLCoefficient(0)
	runs["grpo-lora-head"] = grpo("lora-head").LoRA(16, 32).Batch(240, 48, 2)
	runs["grpo-lora-head"].Job().HeadAccelerators(8)
	checkedImages := map[string]bool{}
	for name, r := range runs {
		t.Run(name, func(t *testing.T) {
			objs, err := r.Objects()
			require.NoError(t, err)
			job := objs[0].(*rayv1.RayJob)
			cfg := overrides(t, job.Spec.Entrypoint)
			assert.NoError(t, c.CheckKeys(name, cfg))
			image := job.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image
			if image != llm.DefaultVerlImage && image != llm.DefaultVerlSGLangImage {
				return // the caller's image: its content is the caller's to know
			}
			checkedImages[image] = true
			assert.NoError(t, verlImageContract(t, image, job).CheckImage(name, image, cfg))
		})
	}
	assert.Len(t, checkedImages, 2, "both default images are checked")
}

// The contract catches what the stand-ins accept: each configuration
// below is one verl v0.7.0 refuses, ignores or cannot run.
func TestVerlContractFindsTheDefects(t *testing.T) {
	c, err := contract.Load(verlContract)
	require.NoError(t, err)
	valid := func() map[string]string {
		return map[string]string{
			"algorithm.adv_estimator": "gae", "data.train_files": "[/d/t.parquet]", "data.val_files": "[/d/v.parquet]",
			"actor_rollout_ref.rollout.name": "vllm", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": "4",
			"critic.ppo_micro_batch_size_per_gpu": "4", "algorithm.use_kl_in_reward": "true", "algorithm.kl_ctrl.kl_coef": "0.001",
			"actor_rollout_ref.model.path": "Qwen/Qwen2.5-7B-Instruct", "critic.model.path": "Qwen/Qwen2.5-7B-Instruct",
			"actor_rollout_ref.actor.use_kl_loss": "false",
		}
	}
	require.NoError(t, c.CheckKeys("valid", valid()))
	for name, tc := range map[string]struct {
		edit func(map[string]string)
		want string
	}{
		"no validation files": {func(m map[string]string) { delete(m, "data.val_files") }, "requires data.val_files"},
		"KL coefficient with the KL loss off": {func(m map[string]string) {
			m["actor_rollout_ref.actor.kl_loss_coef"] = "0.001"
			delete(m, "algorithm.kl_ctrl.kl_coef")
			m["algorithm.use_kl_in_reward"] = "false"
		}, "requires actor_rollout_ref.actor.use_kl_loss=true"},
		"KL coefficient with the reward KL off": {func(m map[string]string) { m["algorithm.use_kl_in_reward"] = "false" }, "requires algorithm.use_kl_in_reward=true"},
		"reward model without a server":         {func(m map[string]string) { m["reward_model.enable"] = "true" }, "requires reward_model.rollout.name"},
		"PPO without a critic":                  {func(m map[string]string) { delete(m, "critic.model.path") }, "requires critic.model.path"},
		"rollout without an engine":             {func(m map[string]string) { delete(m, "actor_rollout_ref.rollout.name") }, "requires actor_rollout_ref.rollout.name"},
		"PPO without a critic micro batch":      {func(m map[string]string) { delete(m, "critic.ppo_micro_batch_size_per_gpu") }, "requires critic.ppo_micro_batch_size_per_gpu"},
		"rollout engine verl has not":           {func(m map[string]string) { m["actor_rollout_ref.rollout.name"] = "hf" }, `"hf" is not one of vllm,sglang`},
		"estimator verl has not":                {func(m map[string]string) { m["algorithm.adv_estimator"] = "dapo" }, "is not one of gae,grpo"},
		"misplaced key":                         {func(m map[string]string) { m["trainer.hybrid_engine"] = "true" }, "trainer.hybrid_engine is not a key"},
	} {
		cfg := valid()
		tc.edit(cfg)
		assert.ErrorContains(t, c.CheckKeys(name, cfg), tc.want, name)
	}

	// The images verl publishes hold no verl: without the run-time install,
	// every run fails at its first import.
	cfg := valid()
	for _, image := range []string{llm.DefaultVerlImage, llm.DefaultVerlSGLangImage, "docker.io/verlai/verl:vllm011.latest"} {
		assert.ErrorContains(t, c.CheckImage(image, image, cfg), "needs verl, which "+image+" does not contain", image)
	}
	// The SGLang image has no vLLM, and the vLLM image no SGLang.
	cfg["actor_rollout_ref.rollout.name"] = "sglang"
	assert.ErrorContains(t, c.CheckImage("sglang", llm.DefaultVerlImage, cfg), "needs sglang")
	cfg["actor_rollout_ref.rollout.name"] = "vllm"
	assert.ErrorContains(t, c.CheckImage("vllm", llm.DefaultVerlSGLangImage, cfg), "needs vllm")
}

// TestFuzzedVerlRunsKeepTheContract checks every run the FuzzRL corpus
// (seeds, saved inputs and 300 fixed-seed programs) gets accepted against
// the contract: whatever combination of settings Objects lets through,
// verl accepts.
func TestFuzzedVerlRunsKeepTheContract(t *testing.T) {
	c, err := contract.Load(verlContract)
	require.NoError(t, err)
	corpus := append(append([][]byte{}, rlSeeds...), fuzzcorpus.Bytes(t, "FuzzRL")...)
	corpus = append(corpus, fuzzcorpus.Programs(10, 300, 2, 10)...)
	accepted := 0
	for i, data := range corpus {
		objs, err := runRL(data).Objects()
		if err != nil {
			continue
		}
		accepted++
		job := objs[0].(*rayv1.RayJob)
		cfg := overrides(t, job.Spec.Entrypoint)
		name := fmt.Sprintf("input %d %x", i, data)
		assert.NoError(t, c.CheckKeys(name, cfg))
		if image := job.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Image; image == llm.DefaultVerlImage || image == llm.DefaultVerlSGLangImage {
			assert.NoError(t, verlImageContract(t, image, job).CheckImage(name, image, cfg))
		}
	}
	assert.GreaterOrEqual(t, accepted, 30, "the corpus exercises accepted runs, not only refusals")
}

// A fine-tune, its merge and a GRPO run are pipeline steps: each has one
// job whose completion (from train.Kinds) the step waits on, its
// ConfigMaps applied beside.
func TestFineTuneIsAPipelineStep(t *testing.T) {
	sft := builders[0].build("sft")
	tune := pipeline.Workload("sft", sft)
	merge := pipeline.Workload("merge", sft.Merge("merge", "pvc://models/merged")).After(tune)
	rl := pipeline.Workload("grpo", grpo("grpo")).After(merge)
	wf, err := argo.Workflow(pipeline.New("tune-and-merge").Kinds(train.Kinds()...).Step(tune, merge, rl)).Build()
	require.NoError(t, err)
	created := map[string]bool{}
	for _, tmpl := range wf.Spec.Templates {
		if tmpl.Resource != nil && tmpl.Resource.Action == "create" {
			for _, kind := range []string{"kind: PyTorchJob", "kind: RayJob"} {
				if strings.Contains(tmpl.Resource.Manifest, kind) {
					created[tmpl.Name+" "+kind] = true
				}
			}
		}
	}
	assert.Len(t, created, 3, "%v", created)
}
