package llm_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/contract"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/train"
	trainer "github.com/cubestudio/cube/train/trainerv1alpha1"
)

// llamaFactory is testdata/contracts/llamafactory.tsv: what LLaMA-Factory
// v0.9.5 accepts and what its images hold, read from its source.
func llamaFactory(t *testing.T) *contract.Contract {
	t.Helper()
	c, err := contract.Load("testdata/contracts/llamafactory.tsv")
	require.NoError(t, err)
	return c
}

// zeroStageKey is where the contract test puts the DeepSpeed JSON's ZeRO
// stage in the train.yaml it checks, for the exclusions that name it.
const zeroStageKey = "deepspeed.zero_optimization.stage"

// checkFineTune checks the objects of a rendered fine-tune against the
// contract: every train.yaml key and value, every dataset_info.json entry
// and the columns its format needs for the stage, the exclusions, and
// (on LLaMA-Factory's own images) what the image must contain.
func checkFineTune(t *testing.T, c *contract.Contract, objs []client.Object) error {
	t.Helper()
	cm := objs[0].(*corev1.ConfigMap)
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(cm.Data[llm.ConfigKey]), &doc))
	cfg := contract.Flatten(doc)
	var image string
	for _, o := range objs {
		switch o := o.(type) {
		case *kubeflowv1.PyTorchJob:
			image = o.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster].Template.Spec.Containers[0].Image
		case *trainer.TrainJob:
			image = *o.Spec.Trainer.Image
		case *corev1.ConfigMap:
			if js, ok := o.Data[train.DeepSpeedConfigKey]; ok {
				var ds map[string]any
				require.NoError(t, json.Unmarshal([]byte(js), &ds))
				if stage, ok := contract.Flatten(ds)["zero_optimization.stage"]; ok {
					cfg[zeroStageKey] = stage
				}
			}
		}
	}
	require.NotEmpty(t, image, "no PyTorchJob or TrainJob with an image")
	errs := []error{c.CheckKeys("train.yaml", cfg)}

	var info map[string]map[string]any
	require.NoError(t, json.Unmarshal([]byte(cm.Data[llm.DatasetsKey]), &info))
	defaultImage := image == llm.DefaultImage || image == llm.DefaultAscendImage
	for _, name := range slices.Sorted(maps.Keys(info)) {
		entry := map[string]string{}
		for k, v := range contract.Flatten(info[name]) {
			entry["dataset_info."+k] = v
		}
		what := "dataset_info.json " + name
		errs = append(errs, c.CheckKeys(what, entry))
		if cols, ok := info[name]["columns"].(map[string]any); ok {
			set := fmt.Sprintf("columns.%s.%s", entry["dataset_info.formatting"], cfg["stage"])
			errs = append(errs, c.CheckSet(what, set, slices.Collect(maps.Keys(cols))))
		}
		if defaultImage {
			withEntry := maps.Clone(cfg)
			maps.Copy(withEntry, entry)
			errs = append(errs, c.CheckImage(what, image, withEntry))
		}
	}
	if defaultImage && len(info) == 0 {
		errs = append(errs, c.CheckImage("train.yaml", image, cfg))
	}
	return errors.Join(errs...)
}

// TestRenderedConfigsKeepTheContract renders every builder on every
// hardware setup, the merge, and configurations a user plausibly writes
// that LLaMA-Factory refuses or misreads; whatever cube renders must keep
// the contract, and what it cannot render right it must refuse.
func TestRenderedConfigsKeepTheContract(t *testing.T) {
	c := llamaFactory(t)
	for _, b := range builders {
		for _, s := range setups {
			t.Run(b.name+"/"+s.name, func(t *testing.T) {
				f := b.build(b.name)
				s.on(f)
				objs, err := f.Objects()
				require.NoError(t, err)
				assert.NoError(t, checkFineTune(t, c, objs))
			})
		}
	}
	for _, b := range builders {
		t.Run(b.name+"/trainer", func(t *testing.T) {
			f := b.build(b.name).Runtime("torch-h100", train.FrameworkTorch)
			setups[0].on(f)
			objs, err := f.Objects()
			require.NoError(t, err)
			assert.NoError(t, checkFineTune(t, c, objs))
		})
	}
	for name, f := range contractCases() {
		t.Run(name, func(t *testing.T) {
			objs, err := f.Objects()
			if err != nil {
				return // refused before it reaches the engine
			}
			assert.NoError(t, checkFineTune(t, c, objs))
		})
	}
	t.Run("merge", func(t *testing.T) {
		objs, err := builders[0].build("sft-lora").Merge("merge", "pvc://models/merged").Objects()
		require.NoError(t, err)
		var doc map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(objs[0].(*corev1.ConfigMap).Data[llm.ExportKey]), &doc))
		assert.NoError(t, c.CheckKeys("export.yaml", contract.Flatten(doc)))
	})
}

// contractCases are configurations each of which the review of issue 26
// found LLaMA-Factory v0.9.5 to refuse or misread when cube rendered it.
func contractCases() map[string]*llm.FineTune {
	out := "pvc://models/x"
	alpacaKTO := datasets.KTOData("kto-alpaca", "pvc://datasets/kto.json", datasets.Alpaca)
	renamed := alpaca
	renamed.Columns = map[string]string{"system": "sys"}
	return map[string]*llm.FineTune{
		"kto on alpaca":                llm.KTO("x", qwen).AddDataset(alpacaKTO).Output(out),
		"alpaca sft with columns":      llm.SFT("x", qwen).AddDataset(renamed).Output(out),
		"dpo on alpaca":                llm.DPO("x", qwen).AddDataset(pairs).Output(out),
		"rm on alpaca":                 llm.RewardModel("x", qwen).AddDataset(pairs).Output(out),
		"eval dataset and split":       llm.SFT("x", qwen).AddDataset(alpaca).AddEvalDataset(sharegpt).ValidationSplit(0.1).Output(out),
		"qlora 8-bit on zero-3":        llm.SFT("x", qwen).AddDataset(alpaca).QLoRA(8, llm.Adapter{Rank: 8}).ZeRO(3).Output(out),
		"qlora on the default image":   llm.SFT("x", qwen).AddDataset(alpaca).QLoRA(4, llm.Adapter{Rank: 8}).Output(out),
		"ppo on the default image":     llm.PPO("x", qwen, rewardPath).AddDataset(alpaca).Output(out),
		"s3 on the default image":      llm.SFT("x", qwen).AddDataset(datasets.InstructionData("s3", "s3://bucket/data.json", datasets.Alpaca)).Output(out),
		"unregistered template":        llm.SFT("x", "pvc://models/mine").Template("no-such-template").AddDataset(alpaca).Output(out),
		"npu qlora on the default":     onAscend(llm.SFT("x", qwen).AddDataset(alpaca).QLoRA(4, llm.Adapter{Rank: 8}).Output(out)),
		"ppo with eval":                ownImage(llm.PPO("x", qwen, rewardPath).AddDataset(alpaca).AddEvalDataset(sharegpt).Output(out)),
		"full tuning with an adapter":  llm.SFT("x", qwen).AddDataset(alpaca).FullTuning().ResumeFrom("pvc://m/a").Output(out),
		"sharegpt kto":                 llm.KTO("x", qwen).AddDataset(ktoLabels).Output(out),
		"sharegpt preference":          llm.DPO("x", qwen).AddDataset(datasets.PreferenceData("p", "hf://org/p", datasets.ShareGPT)).Output(out),
		"qwen3 instruct 2507 template": llm.SFT("x", "Qwen/Qwen3-4B-Instruct-2507").AddDataset(alpaca).Output(out),
	}
}

func onAscend(f *llm.FineTune) *llm.FineTune {
	f.Job().On(hardware.Ascend910B3).Accelerators(8)
	return f
}

// ownImage runs f on an image of the caller's, which the contract's
// image facts do not cover.
func ownImage(f *llm.FineTune) *llm.FineTune {
	f.Job().Image("registry.example.com/llamafactory:0.9.5-custom")
	return f
}

// TestContractCatchesTheReviewedDefects feeds the contract the
// configurations cube rendered before issue 26, as rendered, and expects
// each finding: the contract test fails on them.
func TestContractCatchesTheReviewedDefects(t *testing.T) {
	c := llamaFactory(t)
	train := map[string]string{"model_name_or_path": "Qwen/Qwen2.5-7B-Instruct", "stage": "sft", "do_train": "true",
		"finetuning_type": "lora", "template": "qwen", "dataset": "d", "output_dir": "/output/x", "deepspeed": "/etc/deepspeed/ds_config.json"}
	with := func(kv ...string) map[string]string {
		m := maps.Clone(train)
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	assert.NoError(t, c.CheckKeys("train.yaml", train))
	assert.ErrorContains(t, c.CheckKeys("train.yaml", with("val_size", "0.1", "eval_dataset", "e")), "val_size and eval_dataset together are refused")
	assert.ErrorContains(t, c.CheckKeys("train.yaml", with("quantization_bit", "8", zeroStageKey, "3")), "quantization_bit=8 and deepspeed.zero_optimization.stage=3")
	assert.ErrorContains(t, c.CheckKeys("train.yaml", with("template", "no-such-template")), `template="no-such-template" is not one of`)
	assert.ErrorContains(t, c.CheckSet("kto", "columns.alpaca.kto", []string{"kto_tag"}), "lacks prompt, query, response")
	assert.ErrorContains(t, c.CheckSet("sft", "columns.alpaca.sft", []string{"system"}), "lacks prompt, query, response")
	assert.ErrorContains(t, c.CheckSet("dpo", "columns.alpaca.dpo", []string{"chosen", "rejected"}), "lacks prompt, query")
	assert.ErrorContains(t, c.CheckImage("ppo", llm.DefaultImage, with("stage", "ppo")), "needs trl>=0.8.6,<=0.9.6")
	assert.ErrorContains(t, c.CheckImage("qlora", llm.DefaultImage, with("quantization_bit", "4")), "needs bitsandbytes")
	assert.ErrorContains(t, c.CheckImage("qlora", llm.DefaultAscendImage, with("quantization_bit", "4")), "needs bitsandbytes")
	assert.ErrorContains(t, c.CheckImage("s3", llm.DefaultImage, with("dataset_info.cloud_file_name", "s3://b/k.json")), "needs s3fs")
	assert.NoError(t, c.CheckImage("sft", llm.DefaultImage, train))
}

// TestTemplatesAreTheContracts keeps llm.Templates and the family presets
// in step with the contract's template choices.
func TestTemplatesAreTheContracts(t *testing.T) {
	f, ok := llamaFactory(t).Fact(contract.Key, "template")
	require.True(t, ok)
	assert.Equal(t, slices.Sorted(slices.Values(strings.Split(f.Value, ","))), llm.Templates())
	assert.Len(t, llm.Templates(), 121)
}
