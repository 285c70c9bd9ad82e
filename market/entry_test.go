package market_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/train"
)

func TestGetFromRegistryThenCatalogue(t *testing.T) {
	ctx := t.Context()
	reg := market.NewRegistry(newFileStore(t))
	base, err := reg.Register(ctx, market.Version{
		Model:    "qwen-base",
		Artifact: market.Artifact{URI: "pvc://models/Qwen/Qwen2.5-7B-Instruct", Format: "safetensors", DType: models.BF16},
		Lineage:  market.Lineage{BaseModel: "hf://Qwen/Qwen2.5-7B-Instruct@a09a35458c702b33eeacc393d103063234e8bc28"},
	})
	require.NoError(t, err)
	tuned := sampleVersion("support-bot")
	tuned.Lineage.BaseModel = base.Ref() // a fine-tune of a registered download
	_, err = reg.Register(ctx, tuned)
	require.NoError(t, err)

	e, err := market.Get(ctx, reg, "support-bot")
	require.NoError(t, err)
	assert.Equal(t, "support-bot@1", e.Version.Ref())
	require.True(t, e.HasFacts, "the lineage leads through qwen-base@1 to the catalogue")
	assert.Equal(t, "Qwen2.5-7B-Instruct", e.Facts.Name)

	e, err = market.Get(ctx, reg, "Qwen/Qwen2.5-7B-Instruct")
	require.NoError(t, err)
	assert.Equal(t, 0, e.Version.Number)
	assert.Equal(t, "qwen2-5-7b-instruct", e.Version.Model)
	assert.Equal(t, "hf://Qwen/Qwen2.5-7B-Instruct", e.Version.Artifact.URI)

	_, err = market.Get(ctx, reg, "no-such-model")
	assert.ErrorIs(t, err, models.ErrUnknownModel)
	assert.ErrorContains(t, err, "not in the registry")
	_, err = market.Get(ctx, nil, "gpt-4")
	assert.ErrorIs(t, err, models.ErrUnknownModel)

	orphan := sampleVersion("orphan")
	orphan.Lineage.BaseModel = "acme/secret-base"
	_, err = reg.Register(ctx, orphan)
	require.NoError(t, err)
	e, err = market.Get(ctx, reg, "orphan@1")
	require.NoError(t, err)
	assert.False(t, e.HasFacts)
}

func TestEntryDownloadAndEvaluate(t *testing.T) {
	e, err := market.Get(t.Context(), nil, "Qwen/Qwen2.5-7B-Instruct")
	require.NoError(t, err)
	job, err := e.Download("fetch-qwen", "models").Revision("a09a35458c702b33eeacc393d103063234e8bc28").Build()
	require.NoError(t, err)
	assert.Equal(t, "Qwen/Qwen2.5-7B-Instruct", job.Spec.Template.Spec.Containers[0].Args[2])
	ev, err := e.Evaluate("eval-qwen", "mmlu").On(hardware.L4).Accelerators(1).Build()
	require.NoError(t, err)
	assert.Contains(t, ev.Spec.Template.Spec.Containers[0].Args[5], "pretrained=Qwen/Qwen2.5-7B-Instruct,")
	assert.NotContains(t, ev.Annotations, market.AnnotationVersion, "a catalogue model is not a registered version")

	var nilEntry *market.Entry
	_, err = nilEntry.Download("x", "models").Build()
	assert.Error(t, err)
	_, err = nilEntry.Evaluate("x", "mmlu").Build()
	assert.Error(t, err)
	_, err = nilEntry.FineTune("x", market.Artifact{URI: "pvc://a/b"}, nil)
	assert.ErrorContains(t, err, "nil entry")
}

// TestFineTuneSeam fine-tunes a registered version with a training-operator
// PyTorchJob adapted by TrainJob, and registers the result with its lineage.
func TestFineTuneSeam(t *testing.T) {
	ctx := t.Context()
	reg := market.NewRegistry(newFileStore(t))
	_, err := reg.Register(ctx, sampleVersion("support-bot"))
	require.NoError(t, err)
	e, err := market.Get(ctx, reg, "support-bot@1")
	require.NoError(t, err)

	var gotBase, gotOut string
	run, err := e.FineTune("support-bot", market.Artifact{URI: "pvc://models/support-bot/v2", Format: "safetensors", DType: models.BF16},
		func(base, output string) market.Trainer {
			gotBase, gotOut = base, output
			job := train.PyTorch("sft-bot-v2").Image("pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime").
				Torchrun("sft.py", "--model", strings.TrimPrefix(base, "pvc://models/"), "--output", output).
				On(hardware.H100).Accelerators(8)
			return market.TrainJob(job, market.TrainingRun{
				Job: "PyTorchJob/sft-bot-v2", Datasets: []string{"pvc://data/tickets-2025.jsonl"},
				Hyperparameters: map[string]string{"learning_rate": "1e-5", "epochs": "3"},
			})
		})
	require.NoError(t, err)
	assert.Equal(t, "pvc://models/support-bot", gotBase)
	assert.Equal(t, "pvc://models/support-bot/v2", gotOut)
	objs, err := run.Objects()
	require.NoError(t, err)
	_, ok := objs[0].(*kubeflowv1.PyTorchJob)
	assert.True(t, ok)

	v, err := run.Register(ctx, reg)
	require.NoError(t, err)
	assert.Equal(t, "support-bot@2", v.Ref())
	assert.Equal(t, market.Lineage{
		BaseModel: "support-bot@1", Datasets: []string{"pvc://data/tickets-2025.jsonl"},
		TrainingRelease: "sft-bot-v2", TrainingJob: "PyTorchJob/sft-bot-v2",
		Hyperparameters: map[string]string{"learning_rate": "1e-5", "epochs": "3"},
	}, v.Lineage)

	_, err = e.FineTune("Bad", market.Artifact{URI: "hf://a/b"}, nil)
	require.Error(t, err)
	for _, want := range []string{"model", "output.uri", "build"} {
		assert.ErrorContains(t, err, want)
	}
	_, err = e.FineTune("x", market.Artifact{URI: "pvc://a/b"}, func(string, string) market.Trainer { return nil })
	assert.ErrorContains(t, err, "no trainer")
	_, err = e.FineTune("x", market.Artifact{URI: "pvc://a/b"}, func(string, string) market.Trainer {
		return market.TrainJob(train.PyTorch("Bad_Name"), market.TrainingRun{})
	})
	assert.ErrorContains(t, err, "metadata.name")
	_, err = market.TrainJob(nil, market.TrainingRun{}).Objects()
	assert.ErrorContains(t, err, "no workload")
}

func TestPromoteRollsOut(t *testing.T) {
	ctx := t.Context()
	reg := market.NewRegistry(newFileStore(t))
	_, err := reg.Register(ctx, sampleVersion("bot"))
	require.NoError(t, err)
	var rolled []string
	_, err = reg.Promote(ctx, "bot@1", market.StageStaging, market.Promotion{Rollout: func(_ context.Context, v market.Version) error {
		rolled = append(rolled, v.Ref())
		return nil
	}})
	require.NoError(t, err)
	assert.Empty(t, rolled, "only production rolls out")
	boom := errors.New("apply failed")
	_, err = reg.Promote(ctx, "bot@1", market.StageProduction, market.Promotion{Rollout: func(_ context.Context, v market.Version) error {
		rolled = append(rolled, v.Ref())
		return boom
	}})
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, []string{"bot@1"}, rolled)
	v, err := reg.Get(ctx, "bot@production")
	require.NoError(t, err, "the promotion stands when the rollout fails")
	assert.Equal(t, 1, v.Number)
}

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Qwen2.5-7B-Instruct":      "qwen2-5-7b-instruct",
		"DeepSeek-R1-Distill-Qwen": "deepseek-r1-distill-qwen",
		"--a__b--":                 "a-b",
		"":                         "",
	} {
		assert.Equal(t, want, market.Slug(in), in)
	}
	assert.LessOrEqual(t, len(market.Slug(strings.Repeat("ab", 60))), market.MaxModelName)
}
