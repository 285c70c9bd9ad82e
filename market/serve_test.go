package market_test

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

// openRegistry is a registry on a bbolt file of the test.
func openRegistry(t *testing.T) *market.Registry {
	t.Helper()
	store, err := market.OpenFileStore(filepath.Join(t.TempDir(), "registry.db"))
	require.NoError(t, err)
	return market.NewRegistry(store)
}

// TestEntryServe serves a registered fine-tune (weights on a claim, base
// model in the catalogue) and a catalogue model, each sized by the planner.
func TestEntryServe(t *testing.T) {
	ctx := t.Context()
	reg := openRegistry(t)
	_, err := reg.Register(ctx, market.Version{
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
	svc, err := e.Serve("support-bot", hardware.L4)
	require.NoError(t, err)
	objs, err := svc.Objects()
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
	svc, err = e.Serve("qwen", hardware.L4)
	require.NoError(t, err)
	objs, err = svc.Replicas(2).Objects()
	require.NoError(t, err, "the Service takes serve settings after it")
	dep = objs[0].(*appsv1.Deployment)
	assert.Equal(t, "qwen2-5-7b-instruct", dep.Labels[market.LabelModel])
	assert.NotContains(t, dep.Labels, market.LabelVersion)
	assert.Equal(t, int32(2), *dep.Spec.Replicas)

	var nilEntry *market.Entry
	_, err = nilEntry.Serve("x", hardware.L4)
	assert.EqualError(t, err, "market: Entry is nil: use market.Get")
}

// TestEntryServeServesAnAdapterOnItsBase registers a LoRA adapter whose
// lineage names a downloaded base version, and serves the base with it.
func TestEntryServeServesAnAdapterOnItsBase(t *testing.T) {
	ctx := t.Context()
	reg := openRegistry(t)
	_, err := reg.Register(ctx, market.Version{
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
	svc, err := e.Serve("support", hardware.L4)
	require.NoError(t, err)
	objs, err := svc.Objects()
	require.NoError(t, err)
	args := objs[0].(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Args
	assert.Equal(t, "/mnt/models/Qwen/Qwen2.5-7B-Instruct", args[0])
	assert.Contains(t, args, "--enable-lora")
	assert.Contains(t, strings.Join(args, " "), "support-lora=")

	orphan := &market.Entry{Version: market.Version{Model: "x", Number: 1, Artifact: market.Artifact{URI: "pvc://a/b", Format: market.FormatLoRA}}}
	_, err = orphan.Serve("x", hardware.L4)
	assert.EqualError(t, err, "spec.model: Required value: x@1 is a LoRA adapter whose base weights its lineage does not name")
}

// TestEntryServeServesEncodersWithTEI serves an embedding model the market
// found with TEI, not vLLM, and refuses plan options and adapters for it.
func TestEntryServeServesEncodersWithTEI(t *testing.T) {
	e, err := market.Get(t.Context(), nil, "BAAI/bge-m3")
	require.NoError(t, err)
	svc, err := e.Serve("embed", hardware.L4)
	require.NoError(t, err)
	objs, err := svc.Objects()
	require.NoError(t, err)
	dep := objs[0].(*appsv1.Deployment)
	c := dep.Spec.Template.Spec.Containers[0]
	assert.Equal(t, serve.DefaultTEIImage, c.Image, "an image with --served-model-name (TEI 1.9)")
	assert.Equal(t, "BAAI/bge-m3", c.Args[slices.Index(c.Args, "--model-id")+1])
	assert.Equal(t, e.Version.Model, c.Args[slices.Index(c.Args, "--served-model-name")+1])
	assert.Equal(t, e.Version.Model, dep.Labels[market.LabelModel])
	assert.Equal(t, "1", c.Resources.Limits.Name("nvidia.com/gpu", "").String())

	_, err = e.Serve("embed", hardware.L4, serve.ContextLength(512))
	assert.EqualError(t, err, "spec.auto: Invalid value: 1: bge-m3 is an embedding model, served by TEI on one device without the planner: drop the plan options")

	reg := openRegistry(t)
	_, err = reg.Register(t.Context(), market.Version{
		Model:    "legal-embed",
		Artifact: market.Artifact{URI: "pvc://models/legal-embed/v1", Format: market.FormatLoRA, DType: models.BF16},
		Lineage:  market.Lineage{BaseModel: "hf://BAAI/bge-m3"},
	})
	require.NoError(t, err)
	adapter, err := market.Get(t.Context(), reg, "legal-embed@1")
	require.NoError(t, err)
	_, err = adapter.Serve("embed", hardware.L4, serve.ContextLength(512))
	require.Error(t, err)
	assert.ErrorContains(t, err, "spec.auto: Invalid value: 1:")
	assert.ErrorContains(t, err, `spec.model: Invalid value: "legal-embed@1": is a LoRA adapter of an encoder, which TEI cannot load`)
}
