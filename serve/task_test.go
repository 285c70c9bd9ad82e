package serve_test

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/serve"
)

// Plan sizes vLLM's KV cache, which an encoder does not have: it says so
// and names the engine that serves one, instead of dividing by a zero KV
// page.
func TestPlanRefusesModelsThatDoNotGenerate(t *testing.T) {
	for _, tc := range []struct{ id, task string }{
		{"BAAI/bge-m3", "an embedding model"},
		{"BAAI/bge-reranker-v2-m3", "a reranking model"},
	} {
		_, err := serve.Plan(catalogueModel(t, tc.id), hardware.H100)
		require.Error(t, err, tc.id)
		assert.ErrorContains(t, err, "is "+tc.task+", which Plan does not size (it sizes vLLM's KV cache for text generation): serve it with serve.TEI")
		assert.False(t, errors.Is(err, serve.ErrDoesNotFit), tc.id)
	}
}

// A vision-language model's vision tower is counted in the weights every
// device holds: Qwen2.5-VL-7B plans as Qwen2.5-7B's decoder plus 677 M
// parameters of tower, and at its 128000-token context it needs two L4s
// where the text-only Qwen2.5-7B-Instruct (32768 tokens) fits on one.
func TestPlanCountsTheVisionTower(t *testing.T) {
	vl := catalogueModel(t, "Qwen/Qwen2.5-VL-7B-Instruct")
	text := catalogueModel(t, "Qwen/Qwen2.5-7B-Instruct")
	got, err := serve.Plan(vl, hardware.L4)
	require.NoError(t, err)
	assert.Equal(t, expectPlan(vl, hardware.L4, 0.9, 2, 1, 1, 2, 128000, models.BF16, models.BF16), got)
	assert.Equal(t, (vl.Parameters*2+1)/2, got.WeightBytesPerDevice, "8.29 B parameters in bf16 over two ranks")

	sameLength := []serve.PlanOption{serve.ContextLength(32768), serve.TensorParallel(1)}
	withTower, err := serve.Plan(vl, hardware.H100, sameLength...)
	require.NoError(t, err)
	without, err := serve.Plan(text, hardware.H100, sameLength...)
	require.NoError(t, err)
	assert.Equal(t, 2*vl.VisionParameters, withTower.WeightBytesPerDevice-without.WeightBytesPerDevice)
	assert.Equal(t, without.KVBytesPerToken, withTower.KVBytesPerToken, "the tower adds no KV cache")
	assert.Less(t, withTower.KVTokenCapacity, without.KVTokenCapacity)
}

// vLLM splits the vision tower's heads over the tensor-parallel ranks too
// (Qwen2_5_VisionAttention), so a size that splits the decoder but not the
// tower is refused.
func TestPlanSplitsTheVisionTowersHeads(t *testing.T) {
	m := catalogueModel(t, "Qwen/Qwen2.5-VL-7B-Instruct")
	m.Vision.Heads = 10 // 1280 / 10 = 128 per head; 28 decoder heads and 4 KV heads split by 4
	_, err := serve.Plan(m, hardware.H100, serve.TensorParallel(4))
	assert.ErrorContains(t, err, "tensorParallel: Invalid value: 4: must divide the 10 attention heads of Qwen2.5-VL-7B-Instruct's vision tower")
	plan, err := serve.Plan(m, hardware.H100, serve.TensorParallel(2))
	require.NoError(t, err)
	assert.Equal(t, 2, plan.TensorParallel)
}

// Services check the model's task against their engine when they know the
// model's facts.
func TestServiceChecksTheModelsTask(t *testing.T) {
	objs, err := serve.TEI("embed", "BAAI/bge-m3").On(hardware.L4).Objects()
	require.NoError(t, err)
	dep := objs[0].(*appsv1.Deployment)
	assert.Equal(t, serve.DefaultTEIImage, dep.Spec.Template.Spec.Containers[0].Image)

	for _, tc := range []struct {
		name string
		svc  *serve.Service
		want string
	}{
		{"TEI with a chat model", serve.TEI("x", "Qwen/Qwen2.5-7B-Instruct").On(hardware.L4),
			`spec.model: Invalid value: "Qwen/Qwen2.5-7B-Instruct": Qwen2.5-7B-Instruct is a text-generation model and TEI serves embedding, reranking and classification models: serve it with serve.VLLM`},
		{"TEI with a vision-language model", serve.TEI("x", "Qwen/Qwen2.5-VL-7B-Instruct"),
			"Qwen2.5-VL-7B-Instruct is a vision-language model and TEI serves"},
		{"vLLM with an embedding model under Auto", serve.VLLM("x", "BAAI/bge-m3").On(hardware.L4).Auto(),
			`spec.model: Invalid value: "BAAI/bge-m3": bge-m3 is an embedding model, which vLLM does not serve: serve it with serve.TEI`},
		{"vLLM with a reranker on a GPU", serve.VLLM("x", "BAAI/bge-reranker-v2-m3").On(hardware.L4).Accelerators(1),
			"bge-reranker-v2-m3 is a reranking model, which vLLM does not serve: serve it with serve.TEI"},
		{"SGLang with an embedding model", serve.SGLang("x", "hf://BAAI/bge-m3").On(hardware.L4),
			"bge-m3 is an embedding model, which SGLang does not serve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.svc.Objects()
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			assert.NotContains(t, err.Error(), "Plan does not size", "reported once, by the task check")
		})
	}

	// A vision-language model is a vLLM model, sized with its tower.
	objs, err = serve.VLLM("vl", "Qwen/Qwen2.5-VL-7B-Instruct").On(hardware.L4).Auto().Objects()
	require.NoError(t, err)
	args := objs[0].(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Args
	assert.Equal(t, "2", args[slices.Index(args, "--tensor-parallel-size")+1])
	assert.Equal(t, "128000", args[slices.Index(args, "--max-model-len")+1])
}

// FromMarket serves an embedding model the market found with TEI, not
// vLLM, and refuses plan options for it.
func TestFromMarketServesEncodersWithTEI(t *testing.T) {
	e, err := market.Get(t.Context(), nil, "BAAI/bge-m3")
	require.NoError(t, err)
	objs, err := serve.FromMarket("embed", e, hardware.L4).Objects()
	require.NoError(t, err)
	dep := objs[0].(*appsv1.Deployment)
	c := dep.Spec.Template.Spec.Containers[0]
	assert.Equal(t, serve.DefaultTEIImage, c.Image, "an image with --served-model-name (TEI 1.9)")
	assert.Equal(t, "BAAI/bge-m3", c.Args[slices.Index(c.Args, "--model-id")+1])
	assert.Equal(t, e.Version.Model, c.Args[slices.Index(c.Args, "--served-model-name")+1])
	assert.Equal(t, e.Version.Model, dep.Labels[market.LabelModel])
	assert.Equal(t, "1", c.Resources.Limits.Name("nvidia.com/gpu", "").String())

	_, err = serve.FromMarket("embed", e, hardware.L4, serve.ContextLength(512)).Objects()
	assert.ErrorContains(t, err, "spec.auto: Invalid value: 1: bge-m3 is an embedding model, served by TEI on one device without the planner: drop the plan options")

	store, err := market.OpenFileStore(filepath.Join(t.TempDir(), "registry.db"))
	require.NoError(t, err)
	reg := market.NewRegistry(store)
	_, err = reg.Register(t.Context(), market.Version{
		Model:    "legal-embed",
		Artifact: market.Artifact{URI: "pvc://models/legal-embed/v1", Format: market.FormatLoRA, DType: models.BF16},
		Lineage:  market.Lineage{BaseModel: "hf://BAAI/bge-m3"},
	})
	require.NoError(t, err)
	adapter, err := market.Get(t.Context(), reg, "legal-embed@1")
	require.NoError(t, err)
	_, err = serve.FromMarket("embed", adapter, hardware.L4).Objects()
	assert.ErrorContains(t, err, "is a LoRA adapter of an encoder, which TEI cannot load")
}
