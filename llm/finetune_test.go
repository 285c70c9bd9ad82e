package llm_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/contract"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/retry"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/train"
	trainer "github.com/cubestudio/cube/train/trainerv1alpha1"
)

func mustLookup(name string) models.Model {
	m, err := models.Lookup(name)
	if err != nil {
		panic(err)
	}
	return m
}

// parts splits a fine-tune's objects.
func parts(t *testing.T, objs []client.Object) (cfg map[string]any, info map[string]any, ds map[string]any, job *kubeflowv1.PyTorchJob) {
	t.Helper()
	require.Len(t, objs, 3)
	cm := objs[0].(*corev1.ConfigMap)
	require.NoError(t, yaml.Unmarshal([]byte(cm.Data[llm.ConfigKey]), &cfg))
	require.NoError(t, json.Unmarshal([]byte(cm.Data[llm.DatasetsKey]), &info))
	dsCM := objs[1].(*corev1.ConfigMap)
	require.NoError(t, json.Unmarshal([]byte(dsCM.Data[train.DeepSpeedConfigKey]), &ds))
	return cfg, info, ds, objs[2].(*kubeflowv1.PyTorchJob)
}

func TestSFTLoRARendersLLaMAFactoryConfig(t *testing.T) {
	f := llm.SFT("qwen-sft", "Qwen/Qwen2.5-7B-Instruct").
		AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).
		LoRA(llm.Adapter{Rank: 16, Alpha: 32, Dropout: 0.05}).
		Batch(2, 4).LearningRate(2e-4).Epochs(2).WarmupSteps(20).ZeRO(2).
		Output("pvc://models/qwen-sft").WandB("wandb", "key")
	f.Job().Namespace("team-a").On(hardware.H100).Accelerators(8).Nodes(2)
	objs, err := f.Objects()
	require.NoError(t, err)
	cfg, info, ds, job := parts(t, objs)
	assert.Equal(t, map[string]any{
		"model_name_or_path": "Qwen/Qwen2.5-7B-Instruct",
		"stage":              "sft", "do_train": true, "finetuning_type": "lora",
		"lora_rank": 16.0, "lora_alpha": 32.0, "lora_dropout": 0.05, "lora_target": "all",
		"plot_loss": true, "dataset": "support", "dataset_dir": "/etc/llamafactory", "template": "qwen",
		"cutoff_len": 2048.0, "output_dir": "/output/qwen-sft",
		"logging_steps": 10.0, "save_steps": 500.0, "report_to": "wandb",
		"per_device_train_batch_size": 2.0, "gradient_accumulation_steps": 4.0, "learning_rate": 2e-4,
		"num_train_epochs": 2.0, "lr_scheduler_type": "cosine", "warmup_steps": 20.0, "max_grad_norm": 1.0,
		"bf16": true, "ddp_timeout": 180000000.0, "deepspeed": "/etc/deepspeed/ds_config.json",
	}, cfg)
	assert.Equal(t, map[string]any{"support": map[string]any{"file_name": "/data/datasets/support.json", "formatting": "alpaca"}}, info)
	// The DeepSpeed file repeats the training arguments, as Hugging Face's
	// Trainer requires.
	assert.Equal(t, map[string]any{
		"train_micro_batch_size_per_gpu": 2.0, "gradient_accumulation_steps": 4.0, "gradient_clipping": 1.0,
		"bf16": map[string]any{"enabled": true}, "zero_optimization": map[string]any{"stage": 2.0},
	}, ds)

	assert.Equal(t, "team-a", job.Namespace)
	for _, typ := range []kubeflowv1.ReplicaType{kubeflowv1.PyTorchJobReplicaTypeMaster, kubeflowv1.PyTorchJobReplicaTypeWorker} {
		spec := job.Spec.PyTorchReplicaSpecs[typ]
		require.NotNil(t, spec, typ)
		c := spec.Template.Spec.Containers[0]
		assert.Equal(t, llm.DefaultImage, c.Image)
		assert.Equal(t, []string{"env", "NNODES=$(PET_NNODES)", "NODE_RANK=$(PET_NODE_RANK)", "NPROC_PER_NODE=$(PET_NPROC_PER_NODE)",
			"llamafactory-cli", "train", "/etc/llamafactory/train.yaml"}, c.Command)
		assert.Contains(t, c.Env, corev1.EnvVar{Name: "FORCE_TORCHRUN", Value: "1"})
		assert.Contains(t, c.Env, corev1.EnvVar{Name: "WANDB_API_KEY", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "wandb"}, Key: "key"}}})
		assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "llamafactory-config", MountPath: "/etc/llamafactory", ReadOnly: true})
		assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "llm-claim-0", MountPath: "/data/datasets", ReadOnly: true})
		assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "llm-claim-1", MountPath: "/output"})
		assert.Contains(t, spec.Template.Spec.Volumes, corev1.Volume{Name: "llm-claim-1", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "models"}}})
	}
	assert.Equal(t, int32(1), *job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeWorker].Replicas)
	assert.Equal(t, "8", *job.Spec.NprocPerNode)

	// Objects is repeatable and returns fresh objects.
	again, err := f.Objects()
	require.NoError(t, err)
	assert.Equal(t, objs, again)
	objs[0].(*corev1.ConfigMap).Data["x"] = "y"
	_, has := again[0].(*corev1.ConfigMap).Data["x"]
	assert.False(t, has)
}

func TestStagesRenderTheirArguments(t *testing.T) {
	cases := map[string]map[string]any{
		"sft-qlora": {"stage": "sft", "quantization_bit": 4.0, "quantization_method": "bnb", "lora_target": "q_proj,v_proj", "template": "llama3"},
		"sft-full":  {"stage": "sft", "finetuning_type": "full", "model_name_or_path": "/models/models/qwen2.5-7b", "template": "qwen"},
		"rm":        {"stage": "rm", "finetuning_type": "lora"},
		// DPO on the SFT adapter references the base with that adapter,
		// not the base alone (create_ref_model, disable_adapter).
		"dpo": {"stage": "dpo", "pref_loss": "sigmoid", "pref_beta": 0.1, "learning_rate": 5e-6, "adapter_name_or_path": "/adapters/models/qwen-sft",
			"ref_model": "Qwen/Qwen2.5-7B-Instruct", "ref_model_adapters": "/adapters/models/qwen-sft"},
		"orpo":  {"stage": "dpo", "pref_loss": "orpo"},
		"simpo": {"stage": "dpo", "pref_loss": "simpo", "simpo_gamma": 0.5},
		"kto":   {"stage": "kto", "kto_chosen_weight": 1.0, "kto_rejected_weight": 1.0, "model_name_or_path": "Qwen/Qwen2.5-7B-Instruct"},
		"ppo":   {"stage": "ppo", "reward_model": "/reward/models/qwen-rm", "reward_model_type": "lora", "report_to": "tensorboard"},
		// train/trainer_utils.py create_reward_model: "api" takes the URL as
		// reward_model and loads nothing.
		"ppo-api": {"stage": "ppo", "reward_model": rewardServer, "reward_model_type": "api", "finetuning_type": "full"},
	}
	for _, b := range builders {
		want, ok := cases[b.name]
		if !ok {
			continue
		}
		t.Run(b.name, func(t *testing.T) {
			objs, err := b.build(b.name).Objects()
			require.NoError(t, err)
			cfg, info, ds, job := parts(t, objs)
			for k, v := range want {
				assert.Equal(t, v, cfg[k], k)
			}
			c := job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster].Template.Spec.Containers[0]
			switch b.name {
			case "rm", "dpo", "orpo", "simpo":
				// Every column the Alpaca converter reads for pairs, so
				// that the prompt is not nulled (data/parser.py join).
				assert.Equal(t, map[string]any{"file_name": "/data/datasets/pairs.json", "formatting": "alpaca", "ranking": true,
					"columns": map[string]any{"prompt": "instruction", "query": "input", "chosen": "chosen", "rejected": "rejected"}}, info["pairs"])
			case "kto":
				assert.Equal(t, map[string]any{"ms_hub_url": "org/kto", "formatting": "sharegpt",
					"columns": map[string]any{"kto_tag": "label", "messages": "conversations"}}, info["labels"])
				assert.Contains(t, c.Env, corev1.EnvVar{Name: "USE_MODELSCOPE_HUB", Value: "1"})
			case "sft-full":
				assert.Equal(t, map[string]any{"stage": 3.0, "stage3_gather_16bit_weights_on_model_save": true,
					"offload_optimizer": map[string]any{"device": "cpu", "pin_memory": true}}, ds["zero_optimization"])
				assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "llm-claim-0", MountPath: "/models/models", ReadOnly: true})
			case "ppo":
				// The reward adapter's claim is mounted read-only beside the
				// output, even when it is the same claim.
				assert.Len(t, slices.DeleteFunc(slices.Clone(c.VolumeMounts), func(m corev1.VolumeMount) bool { return !strings.HasPrefix(m.Name, "llm-claim") }), 3)
				assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "llm-claim-0", MountPath: "/reward/models", ReadOnly: true})
			case "ppo-api":
				// Nothing of the reward model is mounted: only the output.
				for _, m := range c.VolumeMounts {
					assert.NotEqual(t, "/reward/models", m.MountPath)
				}
				assert.Len(t, slices.DeleteFunc(slices.Clone(c.VolumeMounts), func(m corev1.VolumeMount) bool { return !strings.HasPrefix(m.Name, "llm-claim") }), 2)
			}
		})
	}
}

func TestAscendGetsTheNPUImage(t *testing.T) {
	f := builders[0].build("npu")
	f.Job().On(hardware.Ascend910B3).Accelerators(8)
	objs, err := f.Objects()
	require.NoError(t, err)
	c := objs[2].(*kubeflowv1.PyTorchJob).Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster].Template.Spec.Containers[0]
	assert.Equal(t, llm.DefaultAscendImage, c.Image)
	npus := c.Resources.Limits[hardware.ResourceAscend910]
	assert.Equal(t, int64(8), npus.Value())
	// Back on NVIDIA, the image follows; a caller's own image stays.
	f.Job().On(hardware.H100)
	objs, err = f.Objects()
	require.NoError(t, err)
	assert.Equal(t, llm.DefaultImage, objs[2].(*kubeflowv1.PyTorchJob).Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster].Template.Spec.Containers[0].Image)
	f.Job().Image("registry.example.com/lf:mine")
	objs, err = f.Objects()
	require.NoError(t, err)
	assert.Equal(t, "registry.example.com/lf:mine", objs[2].(*kubeflowv1.PyTorchJob).Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster].Template.Spec.Containers[0].Image)
}

// fields returns the field paths of an aggregate of field errors.
func fields(t *testing.T, err error) []string {
	t.Helper()
	var out []string
	for _, fe := range fuzzcorpus.FieldErrors(t, err) {
		out = append(out, fe.Field)
	}
	return out
}

func TestBadInputIsReportedWithFieldPaths(t *testing.T) {
	cases := []struct {
		name string
		f    *llm.FineTune
		want []string
	}{
		{"nothing set", llm.SFT("x", ""), []string{"model", "dataset", "output"}},
		{"unknown family", llm.SFT("x", "org/unknown-model").AddDataset(alpaca).Output("pvc://o/x"), []string{"template"}},
		{"s3 model", llm.SFT("x", "s3://bucket/model").Template("qwen").AddDataset(alpaca).Output("pvc://o/x"), []string{"model"}},
		{"bad lora", llm.SFT("x", qwen).AddDataset(alpaca).Output("pvc://o/x").LoRA(llm.Adapter{Rank: 0, Dropout: 1, Targets: []string{"a,b"}}),
			[]string{"lora.lora_rank", "lora.lora_dropout", "lora.lora_target[0]"}},
		{"qlora bits", ownImage(llm.SFT("x", qwen).AddDataset(alpaca).Output("pvc://o/x").QLoRA(3, llm.Adapter{Rank: 8})), []string{"quantization_bit"}},
		{"training numbers", llm.SFT("x", qwen).AddDataset(alpaca).Output("pvc://o/x").Batch(0, 0).LearningRate(0).Epochs(-1).
			LRScheduler("zigzag").GradientClipping(-1).CutoffLength(0).Precision("int3"),
			[]string{"cutoff_len", "per_device_train_batch_size", "gradient_accumulation_steps", "learning_rate", "lr_scheduler_type",
				"num_train_epochs", "max_grad_norm", "precision"}},
		{"wrong dataset kind", llm.DPO("x", qwen).AddDataset(alpaca).Output("pvc://o/x"), []string{"dataset[0].kind"}},
		{"bad datasets", llm.SFT("x", qwen).AddDataset(datasets.InstructionData("a b", "ftp://x", "csv"), alpaca, alpaca).Output("pvc://o/x"),
			[]string{"dataset[0].name", "dataset[0].format", "dataset[0].source", "dataset[2].name"}},
		{"eval without data", llm.SFT("x", qwen).AddDataset(alpaca).Output("pvc://o/x").EvalEvery(10), []string{"eval_dataset"}},
		{"output not a claim", llm.SFT("x", qwen).AddDataset(alpaca).Output("hf://org/out"), []string{"output"}},
		{"preference on sft", llm.SFT("x", qwen).AddDataset(alpaca).Output("pvc://o/x").Beta(0.1), []string{"pref_loss"}},
		{"bad loss", llm.DPO("x", qwen).AddDataset(pairs).Output("pvc://o/x").PreferenceLoss("kto_pair").SimPOGamma(1), []string{"pref_loss", "simpo_gamma"}},
		{"ppo eval", ownImage(llm.PPO("x", qwen, "pvc://m/rm").AddDataset(alpaca).Output("pvc://o/x").ValidationSplit(0.1)), []string{"eval_dataset"}},
		{"ppo full lora rm", ownImage(llm.PPO("x", qwen, "pvc://m/rm").AddDataset(alpaca).Output("pvc://o/x").FullTuning()), []string{"reward_model"}},
		{"reward server and full", ownImage(llm.PPO("x", qwen, rewardServer).FullRewardModel().AddDataset(alpaca).Output("pvc://o/x")), []string{"reward_model_type"}},
		{"reward server not ppo", llm.SFT("x", qwen).RewardServer(rewardServer).AddDataset(alpaca).Output("pvc://o/x"), []string{"reward_model"}},
		{"adapter on full", llm.SFT("x", qwen).AddDataset(alpaca).Output("pvc://o/x").FullTuning().ResumeFrom("pvc://m/a"), []string{"adapter_name_or_path"}},
		{"zero offload", llm.SFT("x", qwen).AddDataset(alpaca).Output("pvc://o/x").OffloadParams(), []string{"job.deepspeedConfig.zero_optimization.offload_param"}},
		{"elastic", func() *llm.FineTune {
			f := llm.SFT("x", qwen).AddDataset(alpaca).Output("pvc://o/x")
			f.Job().Elastic(1, 2)
			return f
		}(), []string{"job.spec.elasticPolicy"}},
		{"job problem", func() *llm.FineTune {
			f := llm.SFT("x", qwen).AddDataset(alpaca).Output("pvc://o/x")
			f.Job().Accelerators(-1)
			return f
		}(), []string{"job.accelerators"}},
		// Issue 26: what LLaMA-Factory v0.9.5 refuses or misreads inside
		// the pod is refused here.
		{"eval dataset and split", llm.SFT("x", qwen).AddDataset(alpaca).AddEvalDataset(sharegpt).ValidationSplit(0.1).Output("pvc://o/x"),
			[]string{"val_size"}},
		{"8-bit qlora on zero-3", ownImage(llm.SFT("x", qwen).AddDataset(alpaca).QLoRA(8, llm.Adapter{Rank: 8}).ZeRO(3).Output("pvc://o/x")),
			[]string{"quantization_bit"}},
		{"qlora on the default image", llm.SFT("x", qwen).AddDataset(alpaca).QLoRA(4, llm.Adapter{Rank: 8}).Output("pvc://o/x"),
			[]string{"quantization_bit"}},
		{"ppo on the default image", llm.PPO("x", qwen, rewardPath).AddDataset(alpaca).Output("pvc://o/x"), []string{"stage"}},
		{"ppo on the ascend image", onAscend(llm.PPO("x", qwen, rewardPath).AddDataset(alpaca).Output("pvc://o/x")), []string{"stage"}},
		{"s3 on the default image", llm.SFT("x", qwen).AddDataset(alpaca).AddEvalDataset(datasets.InstructionData("s3", "s3://bucket/eval.json", datasets.Alpaca)).Output("pvc://o/x"),
			[]string{"eval_dataset[0].source"}},
		{"s3 with credentials", ownImage(llm.SFT("x", qwen).AddDataset(datasets.InstructionData("s3", "s3://AKIAEXAMPLE:secretkey@bucket/d.json", datasets.Alpaca)).Output("pvc://o/x")),
			[]string{"dataset[0].source"}},
		{"s3 without a key", ownImage(llm.SFT("x", qwen).AddDataset(datasets.InstructionData("s3", "s3://bucket", datasets.Alpaca)).Output("pvc://o/x")),
			[]string{"dataset[0].source"}},
		{"unregistered template", llm.SFT("x", "pvc://models/mine").Template("no-such-template").AddDataset(alpaca).Output("pvc://o/x"),
			[]string{"template"}},
		{"kto with a preference loss", llm.KTO("x", qwen).AddDataset(ktoLabels).PreferenceLoss(llm.LossSimPO).SimPOGamma(0.5).Output("pvc://o/x"),
			[]string{"pref_loss", "simpo_gamma"}},
		{"freeze more layers than the model has", llm.SFT("x", qwen).AddDataset(alpaca).FreezeTuning(1000).Output("pvc://o/x"),
			[]string{"freeze_trainable_layers"}},
		{"lora target that matches no module", llm.SFT("x", qwen).AddDataset(alpaca).LoRA(llm.Adapter{Rank: 8, Targets: []string{"q_proj", "query_key_value"}}).Output("pvc://o/x"),
			[]string{"lora.lora_target[1]"}},
		{"not finite", llm.DPO("x", qwen).AddDataset(pairs).Beta(math.Inf(1)).SFTWeight(math.NaN()).LearningRate(math.Inf(1)).
			Epochs(math.NaN()).GradientClipping(math.Inf(1)).ValidationSplit(math.NaN()).Output("pvc://o/x"),
			[]string{"pref_beta", "pref_ftx", "learning_rate", "num_train_epochs", "max_grad_norm", "val_size"}},
		{"split with a newline", llm.SFT("x", qwen).AddDataset(datasets.Dataset{Name: "a", Source: "pvc://d/a.json", Format: datasets.Alpaca, Kind: datasets.Instructions,
			Split: "train[:10]\n"}).Output("pvc://o/x"), []string{"dataset[0].split"}},
		{"simpo gamma not finite", llm.SimPO("x", qwen).AddDataset(pairs).SimPOGamma(math.NaN()).Output("pvc://o/x"), []string{"simpo_gamma"}},
		{"kto weights not finite", llm.KTO("x", qwen).AddDataset(ktoLabels).KTOWeights(math.Inf(1), math.NaN()).Output("pvc://o/x"),
			[]string{"kto_chosen_weight", "kto_rejected_weight"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.f.Objects()
			assert.ElementsMatch(t, tc.want, fields(t, err), err.Error())
		})
	}
}

func TestNilAndZeroFineTunes(t *testing.T) {
	for _, f := range []*llm.FineTune{nil, {}} {
		_, err := f.Objects()
		require.Error(t, err)
		assert.Contains(t, err.Error(), "llm.SFT")
		// Chained calls on them do not panic.
		f.Job().On(hardware.H100).Accelerators(8)
		assert.NotNil(t, f.Serve("x"))
	}
	var errs field.ErrorList
	assert.Empty(t, errs)
}

func TestFamilyPresets(t *testing.T) {
	for model, template := range map[string]string{
		"meta-llama/Llama-3.1-8B-Instruct":        "llama3",
		"Qwen/Qwen2.5-72B-Instruct":               "qwen",
		"Qwen/Qwen3-8B":                           "qwen3",
		"deepseek-ai/DeepSeek-V3":                 "deepseek3",
		"deepseek-ai/DeepSeek-R1":                 "deepseekr1",
		"deepseek-ai/DeepSeek-R1-Distill-Qwen-7B": "deepseekr1",
		"THUDM/glm-4-9b-chat":                     "glm4",
		"mistralai/Mistral-7B-Instruct-v0.3":      "mistral",
		// README.md's table and examples at v0.9.5 (issue 26).
		"Qwen/Qwen3-4B-Instruct-2507":                   "qwen3_nothink",
		"Qwen/Qwen3-30B-A3B-Instruct-2507":              "qwen3_nothink",
		"Qwen/Qwen3-30B-A3B-Thinking-2507":              "qwen3",
		"Qwen/Qwen3.5-9B":                               "qwen3_5",
		"Qwen/Qwen3.6-27B":                              "qwen3_6",
		"zai-org/GLM-4.5-Air":                           "glm4_moe",
		"zai-org/GLM-4.6":                               "glm4_moe",
		"zai-org/GLM-4.5V":                              "glm4_5v",
		"Qwen/Qwen2.5-VL-7B-Instruct":                   "qwen2_vl",
		"Qwen/Qwen2-VL-7B-Instruct":                     "qwen2_vl",
		"Qwen/Qwen3-VL-8B-Instruct":                     "qwen3_vl",
		"mistralai/Mistral-Small-3.1-24B-Instruct-2503": "mistral_small",
		"mistralai/Mixtral-8x7B-Instruct-v0.1":          "mistral",
		"meta-llama/Llama-3.2-11B-Vision-Instruct":      "mllama",
		"meta-llama/Llama-4-Scout-17B-16E-Instruct":     "llama4",
	} {
		f, ok := llm.FamilyOf(model)
		assert.True(t, ok, model)
		assert.Equal(t, template, f.Template, model)
	}
	_, ok := llm.FamilyOf("org/unknown")
	assert.False(t, ok)
	// Every preset names a template LLaMA-Factory registers.
	for _, model := range []string{"deepseek-r1", "deepseek-v3", "qwen3.6", "qwen3.5", "qwen3-vl", "qwen3-omni", "qwen3-4b-instruct-2507",
		"qwen3", "qwen2-vl", "qwen2.5-omni", "qwen2-audio", "qwen2.5", "llama-3.2-vision", "llama-4", "llama-3", "glm-4.5v", "glm-4.5",
		"glm-4", "mistral-small", "mistral"} {
		f, ok := llm.FamilyOf(model)
		require.True(t, ok, model)
		assert.Contains(t, llm.Templates(), f.Template, model)
	}
}

func TestServeTheResult(t *testing.T) {
	lora := builders[0].build("qwen-sft")
	svc := lora.Serve("qwen-chat")
	svc.On(hardware.L4)
	objs, err := svc.Objects()
	require.NoError(t, err)
	out, err := yaml.Marshal(objs)
	require.NoError(t, err)
	assert.Contains(t, string(out), "qwen-sft=")
	full := builders[2].build("qwen-full")
	svc = full.Serve("qwen-full-chat").On(hardware.H100)
	objs, err = svc.Objects()
	require.NoError(t, err)
	out, err = yaml.Marshal(objs)
	require.NoError(t, err)
	assert.Contains(t, string(out), "claimName: models")
}

// Credentials reach the pods only through secretKeyRefs: a literal token
// under HF_TOKEN or WANDB_API_KEY is refused by the shared pod settings,
// and the rendered objects never carry one.
func TestSecretsOnlyThroughSecretRefs(t *testing.T) {
	f := builders[0].build("secrets")
	f.Job().Env("HF_TOKEN", "hf_abcdefghijklmnopqrstuvwxyz0123")
	_, err := f.Objects()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HF_TOKEN")
	assert.NotContains(t, err.Error(), "hf_abcdefghijklmnopqrstuvwxyz0123")

	ok := builders[0].build("secrets").WandB("wandb", "api-key")
	objs, err := ok.Objects()
	require.NoError(t, err)
	_, _, _, job := parts(t, objs)
	c := job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster].Template.Spec.Containers[0]
	for _, e := range c.Env {
		if e.Name == "HF_TOKEN" || e.Name == "WANDB_API_KEY" {
			assert.Empty(t, e.Value, e.Name)
			require.NotNil(t, e.ValueFrom, e.Name)
			assert.NotNil(t, e.ValueFrom.SecretKeyRef, e.Name)
		}
	}
}

// omegaConfFloat is the float resolver OmegaConf's YAML loader adds
// (omegaconf/_utils.py get_yaml_loader), which LLaMA-Factory loads
// train.yaml with: every float cube renders must match it, or the
// argument would arrive as a string.
var omegaConfFloat = regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+]?[0-9]+)?|[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)|\.[0-9_]+(?:[eE][-+][0-9]+)?)$`)

func TestFloatsReadAsFloatsByOmegaConf(t *testing.T) {
	f := builders[0].build("floats").LearningRate(5e-6).GradientClipping(0.5)
	cfg, err := trainYAML(f)
	require.NoError(t, err)
	for _, line := range strings.Split(cfg, "\n") {
		k, v, _ := strings.Cut(line, ": ")
		switch k {
		case "learning_rate", "max_grad_norm", "lora_dropout", "val_size":
			assert.Regexp(t, omegaConfFloat, v, k)
		}
	}
	assert.Contains(t, cfg, "learning_rate: 5e-06")
}

// TestRewardServerURLs checks the URLs a served reward model may have:
// LLaMA-Factory v0.9.5 posts {"model", "messages"} to the URL as given and
// reads "scores" (train/ppo/ppo_utils.py), with no API key.
func TestRewardServerURLs(t *testing.T) {
	build := func(url string) *llm.FineTune {
		return ownImage(llm.PPO("x", qwen, "pvc://m/rm").RewardServer(url).AddDataset(alpaca).Output("pvc://o/x"))
	}
	for _, ok := range []string{rewardServer, "https://rm.example.com/score/evaluation"} {
		cfg, err := trainYAML(build(ok))
		require.NoError(t, err, ok)
		assert.Contains(t, cfg, "reward_model: "+ok+"\nreward_model_type: api\n")
	}
	// PPO takes the URL in place of a reward model too, and a LoRA policy
	// does not need a LoRA reward model then.
	cfg, err := trainYAML(ownImage(llm.PPO("x", qwen, rewardServer).AddDataset(alpaca).Output("pvc://o/x")))
	require.NoError(t, err)
	assert.Contains(t, cfg, "reward_model_type: api")

	judgeURL, err := serve.URL(serve.VLLM("judge", "Qwen/Qwen2.5-72B-Instruct").Namespace("team-a"))
	require.NoError(t, err)
	for url, want := range map[string]string{
		judgeURL:                          "answers LLaMA-Factory's scoring request",
		judgeURL + "/v1":                  "answers LLaMA-Factory's scoring request",
		judgeURL + "/v1/chat/completions": "answers LLaMA-Factory's scoring request",
		"http://rm:8000/classify":         "answers LLaMA-Factory's scoring request",
		"http://user:secret@rm:8000/v1/score/evaluation": "must not carry credentials",
		"http://rm:8000/v1/score/evaluation?key=x":       "without a query",
		"http:///v1/score/evaluation":                    "with a host",
	} {
		_, err := build(url).Objects()
		assert.Equal(t, []string{"reward_model"}, fields(t, err), url)
		assert.ErrorContains(t, err, want, url)
		assert.NotContains(t, err.Error(), "secret@", "the literal credential is not echoed")
	}
}

// TestS3DatasetsOnAnImageWithS3fs: on an image of the caller's (which has
// s3fs, unlike LLaMA-Factory's) an s3:// dataset is read through
// cloud_file_name, and its credentials reach the pod only through
// secretKeyRefs: literal keys are refused by the shared pod settings.
func TestS3DatasetsOnAnImageWithS3fs(t *testing.T) {
	build := func() *llm.FineTune {
		f := ownImage(llm.SFT("s3", qwen).AddDataset(datasets.InstructionData("s3", "s3://bucket/data/train.json", datasets.Alpaca)).Output("pvc://o/x"))
		f.Job().EnvFromSecret("AWS_ACCESS_KEY_ID", pod.SecretKeyRef{Name: "s3", Key: "id"}).EnvFromSecret("AWS_SECRET_ACCESS_KEY", pod.SecretKeyRef{Name: "s3", Key: "secret"}).
			Env("AWS_ENDPOINT_URL", "http://minio.storage.svc:9000")
		return f
	}
	objs, err := build().Objects()
	require.NoError(t, err)
	_, info, _, job := parts(t, objs)
	assert.Equal(t, map[string]any{"cloud_file_name": "s3://bucket/data/train.json", "formatting": "alpaca"}, info["s3"])
	c := job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster].Template.Spec.Containers[0]
	assert.Contains(t, c.Env, corev1.EnvVar{Name: "AWS_SECRET_ACCESS_KEY", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s3"}, Key: "secret"}}})

	literal := build()
	literal.Job().Env("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY")
	_, err = literal.Objects()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "AWS_SECRET_ACCESS_KEY")
	assert.NotContains(t, err.Error(), "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY")

	// A key in the URL is refused, and not echoed.
	_, err = ownImage(llm.SFT("s3", qwen).AddDataset(datasets.InstructionData("s3", "s3://AKIAEXAMPLE:topsecret@bucket/d.json", datasets.Alpaca)).Output("pvc://o/x")).Objects()
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "topsecret")
	assert.Contains(t, err.Error(), `"s3://xxxxx@bucket/d.json": must be s3://bucket/key without credentials`)
	// An '@' in the key is no credential: S3 keys may hold one.
	_, err = ownImage(llm.SFT("s3", qwen).AddDataset(datasets.InstructionData("s3", "s3://bucket/data@v1.json", datasets.Alpaca)).Output("pvc://o/x")).Objects()
	assert.NotContains(t, fmt.Sprint(err), "without credentials")
}

func TestMergeRefusesAnUnregisteredTemplate(t *testing.T) {
	_, err := builders[0].build("sft").Template("qwen2.5").Merge("m", "pvc://models/m").Objects()
	assert.Equal(t, []string{"template"}, fields(t, err))
	assert.ErrorContains(t, err, "llm.Templates")
}

// A reward server URL with a password is refused and the password never
// shown, whether the URL parses or not (a port that is no number does not).
func TestRewardServerPasswordIsNotShown(t *testing.T) {
	for _, server := range []string{"http://rm:s3cret@support-rm:8000/v1/score/evaluation", "http://rm:s3cret@support-rm:port/v1/score/evaluation"} {
		_, err := ownImage(llm.PPO("ppo", qwen, rewardPath).RewardServer(server).AddDataset(alpaca).Output("pvc://models/ppo")).Objects()
		require.Error(t, err, server)
		assert.Contains(t, err.Error(), "reward_model: Invalid value: \"http://xxxxx@support-rm:", server)
		assert.NotContains(t, err.Error(), "s3cret", server)
	}
}

// TestInnerJobProblemsKeepTheirPaths checks that a problem of the job a
// fine-tune, a merge or an RL run renders is reported with the job's own
// field path under "job", not flattened into one string.
func TestInnerJobProblemsKeepTheirPaths(t *testing.T) {
	ft := llm.SFT("x", "Qwen/Qwen2.5-7B-Instruct").AddDataset(datasets.InstructionData("d", "pvc://d/d.json", datasets.Alpaca)).Output("pvc://o/x")
	ft.Job().Image("bad image")
	merge := ft.Merge("m", "pvc://o/merged")
	merge.Job().Image("bad image")
	rl := grpo("r")
	rl.Job().Image("bad image")
	for name, objects := range map[string]func() ([]client.Object, error){
		"FineTune": ft.Objects, "Export": merge.Objects, "RL": rl.Objects,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := objects()
			require.Error(t, err)
			var image []string
			for _, f := range fields(t, err) {
				if strings.HasPrefix(f, "job.") && strings.HasSuffix(f, ".containers[0].image") {
					image = append(image, f)
				}
			}
			assert.NotEmpty(t, image, "no job.….containers[0].image among %v", fields(t, err))
			assert.NotContains(t, fields(t, err), "job")
		})
	}
}

// trainYAML is the train.yaml a fine-tune renders, or every problem.
func trainYAML(f *llm.FineTune) (string, error) {
	objs, err := f.Objects()
	if err != nil {
		return "", err
	}
	return objs[0].(*corev1.ConfigMap).Data[llm.ConfigKey], nil
}

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

// launcherEnv is what LLaMA-Factory's launcher reads to start torchrun
// itself when FORCE_TORCHRUN is set (launch(): NNODES, NODE_RANK,
// NPROC_PER_NODE, MASTER_ADDR, MASTER_PORT; src/llamafactory/launcher.py
// at v0.9.5, cli.py in later versions, which read the same names).
var launcherEnv = []string{"NNODES", "NODE_RANK", "NPROC_PER_NODE", "MASTER_ADDR", "MASTER_PORT"}

// trainerTorchEnv reads the names of the variables Kubeflow Trainer
// v2.3.0's torch plugin sets on the trainer's container from its source
// (pkg/constants/constants.go, TorchEnv*), downloaded at that version.
func trainerTorchEnv(t *testing.T) []string {
	t.Helper()
	dir, err := contract.ModuleDir("github.com/kubeflow/trainer/v2@v2.3.0")
	require.NoError(t, err)
	src, err := os.ReadFile(filepath.Join(dir, "pkg", "constants", "constants.go"))
	require.NoError(t, err)
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s*TorchEnv\w+\s+string\s*=\s*"(\w+)"`).FindAllStringSubmatch(string(src), -1) {
		names = append(names, m[1])
	}
	require.NotEmpty(t, names, "no TorchEnv constants in pkg/constants/constants.go")
	return names
}

// launchProblems checks a launch command against the launcher's and the
// Trainer's variables: every $(VAR) it expands must be one the Trainer
// sets, and `env` must give the launcher every variable it reads.
func launchProblems(cmd []string, setByTrainer []string) []string {
	var problems []string
	given := map[string]bool{}
	for _, a := range cmd[1:] {
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			break
		}
		given[name] = true
		for _, m := range regexp.MustCompile(`\$\((\w+)\)`).FindAllStringSubmatch(value, -1) {
			if !slices.Contains(setByTrainer, m[1]) {
				problems = append(problems, name+" expands $("+m[1]+"), which the Trainer does not set")
			}
		}
	}
	for _, v := range launcherEnv {
		if !given[v] {
			problems = append(problems, "the launcher reads "+v+", which the command does not set")
		}
	}
	return problems
}

// trainJobOf returns the TrainJob among a fine-tune's objects.
func trainJobOf(t *testing.T, objs []client.Object) *trainer.TrainJob {
	t.Helper()
	for _, o := range objs {
		if j, ok := o.(*trainer.TrainJob); ok {
			return j
		}
	}
	t.Fatalf("no TrainJob among %d objects", len(objs))
	return nil
}

// A fine-tune on Trainer v2 starts LLaMA-Factory's launcher with the
// torchrun variables it reads, each taken from one the Trainer's torch
// plugin sets; the training-operator's launch command would leave
// MASTER_ADDR and MASTER_PORT to the launcher's defaults (127.0.0.1 and a
// random port), and the check says so.
func TestTrainerLaunchKeepsTheContract(t *testing.T) {
	setByTrainer := trainerTorchEnv(t)
	assert.Subset(t, setByTrainer, []string{"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"})
	f := llm.SFT("sft", qwen).AddDataset(alpaca).Output("pvc://models/sft").Runtime("torch-h100", train.FrameworkTorch)
	f.Job().On(hardware.H100).Accelerators(8).Nodes(2)
	objs, err := f.Objects()
	require.NoError(t, err)
	j := trainJobOf(t, objs)
	assert.Equal(t, llm.TrainerLaunchCommand("train", llm.ConfigFile), j.Spec.Trainer.Command)
	assert.Empty(t, launchProblems(j.Spec.Trainer.Command, setByTrainer))
	assert.Equal(t, []string{
		"NNODES expands $(PET_NNODES), which the Trainer does not set",
	}, launchProblems([]string{"env", "NNODES=$(PET_NNODES)", "NODE_RANK=$(PET_NODE_RANK)", "NPROC_PER_NODE=$(PET_NPROC_PER_NODE)",
		"MASTER_ADDR=$(PET_MASTER_ADDR)", "MASTER_PORT=$(PET_MASTER_PORT)", "llamafactory-cli"}, []string{"PET_NODE_RANK", "PET_NPROC_PER_NODE", "PET_MASTER_ADDR", "PET_MASTER_PORT"}))
	assert.Equal(t, []string{
		"the launcher reads MASTER_ADDR, which the command does not set",
		"the launcher reads MASTER_PORT, which the command does not set",
	}, launchProblems(llm.LaunchCommand("train", llm.ConfigFile), setByTrainer))
}

// What the PyTorchJob and the TrainJob of the same fine-tune share: the
// two ConfigMaps, the image, the pod counts, the resources, the env; the
// TrainJob mounts the ConfigMaps and the output claim on the trainer's
// node container through cube's runtime patch.
func TestTrainerTargetMatchesThePyTorchJob(t *testing.T) {
	build := func(runtime bool) []client.Object {
		f := builders[0].build("sft")
		if runtime {
			f.Runtime("torch-h100", train.FrameworkTorch)
		}
		f.Job().On(hardware.H100).Accelerators(8).CPU("96").Memory("1600Gi").Nodes(3).Namespace("team").LocalQueue("team-a")
		objs, err := f.Objects()
		require.NoError(t, err)
		return objs
	}
	v1, v2 := build(false), build(true)
	require.Len(t, v2, 3)
	assert.Equal(t, v1[:2], v2[:2], "the LLaMA-Factory and DeepSpeed ConfigMaps")
	pj := v1[2].(*kubeflowv1.PyTorchJob)
	master := pj.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster].Template.Spec
	j := trainJobOf(t, v2)

	assert.Equal(t, "team", j.Namespace)
	assert.Equal(t, "team-a", j.Labels["kueue.x-k8s.io/queue-name"])
	assert.Equal(t, "torch-h100", j.Spec.RuntimeRef.Name)
	assert.Equal(t, master.Containers[0].Image, *j.Spec.Trainer.Image)
	assert.Equal(t, int32(3), *j.Spec.Trainer.NumNodes)
	assert.Equal(t, int32(8), *j.Spec.Trainer.NumProcPerNode)
	assert.Equal(t, master.Containers[0].Resources, *j.Spec.Trainer.ResourcesPerNode)
	for _, e := range j.Spec.Trainer.Env {
		assert.Contains(t, master.Containers[0].Env, e)
	}
	var envNames []string
	for _, e := range j.Spec.Trainer.Env {
		envNames = append(envNames, e.Name)
	}
	assert.Contains(t, envNames, "FORCE_TORCHRUN")
	assert.Contains(t, envNames, "HF_TOKEN")

	require.Len(t, j.Spec.RuntimePatches, 1)
	rjs := j.Spec.RuntimePatches[0].TrainingRuntimeSpec.Template.Spec.ReplicatedJobs
	require.Len(t, rjs, 1)
	ps := rjs[0].Template.Spec.Template.Spec
	require.Len(t, ps.Containers, 1)
	assert.Equal(t, trainer.Node, ps.Containers[0].Name)
	assert.Empty(t, ps.Containers[0].Env, "the Trainer's webhook refuses env on the node container's patch")
	mounts := map[string]string{}
	for _, m := range ps.Containers[0].VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	for _, m := range master.Containers[0].VolumeMounts {
		assert.Equal(t, m.Name, mounts[m.MountPath], "mount %s", m.MountPath)
	}
	assert.ElementsMatch(t, master.Volumes, ps.Volumes)
}

// What a TrainJob cannot carry is refused, under the job's field paths,
// all at once; nothing panics on a nil fine-tune.
func TestTrainerTargetRefusals(t *testing.T) {
	base := func() *llm.FineTune {
		return llm.SFT("sft", qwen).AddDataset(alpaca).Output("pvc://models/sft").Runtime("torch-cpu", train.FrameworkTorch)
	}
	cases := map[string]struct {
		f    func() *llm.FineTune
		want []string
	}{
		"a deepspeed runtime": {func() *llm.FineTune { return base().Runtime("ds", train.FrameworkDeepSpeed) },
			[]string{"runtime.framework: Invalid value: \"deepspeed\": LLaMA-Factory starts torchrun itself"}},
		"run policy": {func() *llm.FineTune {
			f := base()
			f.Job().CleanPodPolicy(kubeflowv1.CleanPodPolicyNone).TTLAfterFinished(time.Hour).Retry(retry.Policy{Limit: 2}).Gang()
			return f
		}, []string{
			"job.spec.runPolicy.ttlSecondsAfterFinished: Forbidden: a TrainJob of Kubeflow Trainer v2.3.0 has no TTLAfterFinished",
			"job.spec.runPolicy.backoffLimit: Forbidden: a TrainJob of Kubeflow Trainer v2.3.0 has no Retry",
			"job.spec.runPolicy.schedulingPolicy: Forbidden",
			"job.spec.runPolicy.cleanPodPolicy: Forbidden",
		}},
		"restart policy and role resources": {func() *llm.FineTune {
			f := base()
			f.Job().RestartPolicy(kubeflowv1.RestartPolicyNever).RoleResources(kubeflowv1.PyTorchJobReplicaTypeWorker, "4", "8Gi")
			return f
		}, []string{
			"job.spec.pytorchReplicaSpecs[Master].restartPolicy: Forbidden",
			"job.spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].resources: Forbidden",
		}},
		"a pod setting the TrainJob refuses": {func() *llm.FineTune {
			f := base()
			f.Job().Scheduler("volcano").PriorityClass("high")
			return f
		}, []string{"job.spec.trainer.schedulerName: Forbidden", "job.spec.trainer.priorityClassName: Forbidden"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.f().Objects()
			require.Error(t, err)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	var nilFT *llm.FineTune
	_, err := nilFT.Runtime("x", train.FrameworkTorch).Objects()
	assert.ErrorContains(t, err, "llm.FineTune: Required value")

	// ActiveDeadline and Suspend are a TrainJob's own.
	f := base()
	f.Job().ActiveDeadline(90 * time.Minute).Suspend(true)
	objs, err := f.Objects()
	require.NoError(t, err)
	j := trainJobOf(t, objs)
	assert.Equal(t, int64(5400), j.Spec.ActiveDeadlineSeconds)
	assert.True(t, *j.Spec.Suspend)
	// A command of the caller's is kept.
	f = base()
	f.Job().Command("python3", "-m", "mine")
	objs, err = f.Objects()
	require.NoError(t, err)
	assert.Equal(t, []string{"python3", "-m", "mine"}, trainJobOf(t, objs).Spec.Trainer.Command)
}
