package serve_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/serve"
)

// TestFromMarket serves a registered fine-tune (weights on a claim, base
// model in the catalogue) and a catalogue model, each sized by the planner.
func TestFromMarket(t *testing.T) {
	ctx := t.Context()
	store, err := market.OpenFileStore(filepath.Join(t.TempDir(), "registry.db"))
	require.NoError(t, err)
	reg := market.NewRegistry(store)
	_, err = reg.Register(ctx, market.Version{
		Model:    "support-bot",
		Artifact: market.Artifact{URI: "pvc://models/support-bot/v1", Format: "safetensors", DType: models.BF16},
		Lineage:  market.Lineage{BaseModel: "hf://Qwen/Qwen2.5-7B-Instruct@main"},
	})
	require.NoError(t, err)
	_, err = reg.Promote(ctx, "support-bot@1", market.StageProduction, market.Promotion{By: "ci"})
	require.NoError(t, err)

	e, err := market.Get(ctx, reg, "support-bot@production")
	require.NoError(t, err)
	require.True(t, e.HasFacts)
	objs, err := serve.FromMarket("support-bot", e, hardware.L4).Objects()
	require.NoError(t, err)
	dep := objs[0].(*appsv1.Deployment)
	assert.Equal(t, "support-bot", dep.Labels[market.LabelModel])
	assert.Equal(t, "1", dep.Labels[market.LabelVersion])
	args := dep.Spec.Template.Spec.Containers[0].Args
	assert.Contains(t, args, "--served-model-name")
	assert.Equal(t, "support-bot", args[slices.Index(args, "--served-model-name")+1])
	// The planner fitted Qwen2.5-7B's full 32k context on one L4.
	assert.Equal(t, "32768", args[slices.Index(args, "--max-model-len")+1])
	assert.Equal(t, "1", dep.Spec.Template.Spec.Containers[0].Resources.Limits.Name("nvidia.com/gpu", "").String())
	assert.Equal(t, "/mnt/models/support-bot/v1", args[0])

	e, err = market.Get(ctx, nil, "Qwen/Qwen2.5-7B-Instruct")
	require.NoError(t, err)
	objs, err = serve.FromMarket("qwen", e, hardware.L4).Objects()
	require.NoError(t, err)
	dep = objs[0].(*appsv1.Deployment)
	assert.Equal(t, "qwen2-5-7b-instruct", dep.Labels[market.LabelModel])
	assert.NotContains(t, dep.Labels, market.LabelVersion)

	_, err = serve.FromMarket("x", nil, hardware.L4).Objects()
	assert.ErrorContains(t, err, "spec.model: Required")
}

// TestFromMarketServesAnAdapterOnItsBase registers a LoRA adapter whose
// lineage names a downloaded base version, and serves the base with it.
func TestFromMarketServesAnAdapterOnItsBase(t *testing.T) {
	ctx := t.Context()
	store, err := market.OpenFileStore(filepath.Join(t.TempDir(), "registry.db"))
	require.NoError(t, err)
	reg := market.NewRegistry(store)
	_, err = reg.Register(ctx, market.Version{
		Model:    "qwen",
		Artifact: market.Artifact{URI: "pvc://models/Qwen/Qwen2.5-7B-Instruct", Format: "safetensors", DType: models.BF16},
		Lineage:  market.Lineage{BaseModel: "hf://Qwen/Qwen2.5-7B-Instruct@main"},
	})
	require.NoError(t, err)
	_, err = reg.Register(ctx, market.Version{
		Model:    "support-lora",
		Artifact: market.Artifact{URI: "pvc://models/adapters/support-lora", Format: market.FormatLoRA},
		Lineage:  market.Lineage{BaseModel: "qwen@1"},
	})
	require.NoError(t, err)
	e, err := market.Get(ctx, reg, "support-lora")
	require.NoError(t, err)
	assert.Equal(t, "pvc://models/Qwen/Qwen2.5-7B-Instruct", e.Base)
	objs, err := serve.FromMarket("support", e, hardware.L4).Objects()
	require.NoError(t, err)
	args := objs[0].(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Args
	assert.Equal(t, "/mnt/models/Qwen/Qwen2.5-7B-Instruct", args[0])
	assert.Contains(t, args, "--enable-lora")
	assert.Contains(t, strings.Join(args, " "), "support-lora=")

	orphan := &market.Entry{Version: market.Version{Model: "x", Number: 1, Artifact: market.Artifact{URI: "pvc://a/b", Format: market.FormatLoRA}}}
	_, err = serve.FromMarket("x", orphan, hardware.L4).Objects()
	assert.ErrorContains(t, err, "LoRA adapter whose base weights")
}
