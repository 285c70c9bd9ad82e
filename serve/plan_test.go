package serve_test

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/serve"
)

func catalogueModel(t testing.TB, id string) models.Model {
	t.Helper()
	m, err := models.Lookup(id)
	require.NoError(t, err)
	return m
}

// expectPlan computes a plan from hardware.md §4.4 and vLLM's worker,
// written out here independently of the planner: the device memory is the
// profile's, which holds what the driver reports; vLLM
// claims ⌈utilisation × that⌉, the runtime context, NCCL and CUDA graphs
// staying outside; weights are P × bytes split over TP × PP ranks; the
// reserve is one max_num_batched_tokens forward's gate/up activations
// (2 × FFN/TP × 2 bytes) + max_num_seqs rows of fp32 logits, with vLLM's
// defaults 8192/1024 on devices of 70 GiB or more other than the A100 and
// 2048/256 elsewhere; the KV page of a layer is 2 × KV heads per rank (at
// least 1) × head_dim × bytes, or the MLA latent (kv_lora_rank +
// qk_rope_head_dim) × bytes on every rank; blocks = KV memory ÷ (block ×
// page × layers of the fullest stage), blocks of 16 tokens on GPUs and 128
// on Ascend NPUs (vLLM-Ascend).
func expectPlan(m models.Model, acc hardware.Profile, util float64, tp, pp, nodes, perNode, ctx int, weight, kv models.DType) serve.PlanResult {
	memory := acc.MemoryBytes
	tokens, seqs := int64(2048), int64(256)
	if memory >= 70<<30 && acc.Name != "A100-SXM-80GB" && acc.Name != "A100-SXM-40GB" {
		tokens, seqs = 8192, 1024
	}
	block := int64(16)
	if acc.Vendor == hardware.Huawei {
		block = 128
	}
	usable := int64(math.Ceil(float64(memory) * util))
	allWeights := (m.Parameters*int64(weight.Bits()) + 7) / 8
	weights := (allWeights + int64(tp*pp) - 1) / int64(tp*pp)
	ffn := m.IntermediateSize
	if m.IsMoE() {
		ffn = max(ffn, (m.MoE.ExpertsPerToken+m.MoE.SharedExperts)*m.MoE.ExpertIntermediateSize)
	}
	reserve := tokens*2*int64((ffn+tp-1)/tp)*2 + seqs*int64(m.VocabSize)*4
	kvBytes := int64(kv.Bits() / 8)
	var page int64
	if m.UsesMLA() {
		page = int64(m.MLA.KVLoraRank+m.MLA.QKRopeHeadDim) * kvBytes
	} else {
		page = 2 * int64(max(1, m.KVHeads/tp)) * int64(m.HeadDim) * kvBytes
	}
	layers := int64((m.Layers + pp - 1) / pp)
	kvPerDevice := usable - weights - reserve
	if acc.Product == "310P3" {
		kvPerDevice /= 2 // vllm_ascend/_310p/worker_310p.py
	}
	blocks := kvPerDevice / (block * page * layers)
	var modelKV int64
	if m.UsesMLA() {
		modelKV = int64(m.Layers) * page
	} else {
		modelKV = int64(m.Layers) * 2 * int64(m.KVHeads*m.HeadDim) * kvBytes
	}
	return serve.PlanResult{
		Model: m.Name, Accelerator: acc.Name,
		TensorParallel: tp, PipelineParallel: pp, Nodes: nodes, AcceleratorsPerNode: perNode,
		ContextLength: ctx, MemoryUtilization: util, WeightDType: weight, KVCacheDType: kv, BlockSize: int(block),
		DeviceMemoryBytes: memory, HeadroomBytesPerDevice: memory - usable,
		MaxBatchedTokens: int(tokens), MaxSequences: int(seqs),
		UsableBytesPerDevice: usable,
		WeightBytesPerDevice: weights, ReserveBytesPerDevice: reserve,
		KVCacheBytesPerDevice: kvPerDevice, KVCacheBytes: kvPerDevice * int64(tp*pp),
		KVBytesPerToken: modelKV, KVBytesPerTokenPerDevice: page * layers,
		KVBlocks: blocks, KVTokenCapacity: blocks * block, MaxConcurrentSequences: blocks * block / int64(ctx),
	}
}

func TestPlanMatchesTheReferenceFormulas(t *testing.T) {
	llama8 := catalogueModel(t, "meta-llama/Llama-3.1-8B-Instruct")
	llama70 := catalogueModel(t, "meta-llama/Llama-3.1-70B-Instruct")
	qwen7 := catalogueModel(t, "Qwen/Qwen2.5-7B-Instruct")
	qwen7base := catalogueModel(t, "Qwen/Qwen2.5-7B")
	qwen72 := catalogueModel(t, "Qwen/Qwen2.5-72B-Instruct")
	dsv3 := catalogueModel(t, "deepseek-ai/DeepSeek-V3")
	for _, tc := range []struct {
		model              models.Model
		acc                hardware.Profile
		opts               []serve.PlanOption
		tp, pp, nodes, per int
		ctx                int
		weight, kv         models.DType
		util               float64
	}{
		// Llama-3.1-8B, full 131072-token context (16 GiB of KV per sequence).
		{llama8, hardware.H100, nil, 1, 1, 1, 1, 131072, models.BF16, models.BF16, 0.9},
		{llama8, hardware.A100_40G, nil, 1, 1, 1, 1, 131072, models.BF16, models.BF16, 0.9},
		{llama8, hardware.L4, nil, 2, 1, 1, 2, 131072, models.BF16, models.BF16, 0.9}, // 5.1 GiB left at TP=1
		{llama8, hardware.H200, nil, 1, 1, 1, 1, 131072, models.BF16, models.BF16, 0.9},
		{llama8, hardware.L4, []serve.PlanOption{serve.ContextLength(8192)}, 1, 1, 1, 1, 8192, models.BF16, models.BF16, 0.9},
		// Llama-3.1-70B: 131.4 GiB of bf16 weights.
		{llama70, hardware.H100, nil, 4, 1, 1, 4, 131072, models.BF16, models.BF16, 0.9},
		{llama70, hardware.H100, []serve.PlanOption{serve.ContextLength(8192)}, 2, 1, 1, 2, 8192, models.BF16, models.BF16, 0.9},
		{llama70, hardware.A100_40G, nil, 8, 1, 1, 8, 131072, models.BF16, models.BF16, 0.9},
		{llama70, hardware.L4, nil, 8, 2, 2, 8, 131072, models.BF16, models.BF16, 0.9}, // multi-node
		{llama70, hardware.H200, nil, 2, 1, 1, 2, 131072, models.BF16, models.BF16, 0.9},
		{llama70, hardware.H100, []serve.PlanOption{serve.WeightDType(models.FP8), serve.KVCacheDType(models.FP8)}, 2, 1, 1, 2, 131072, models.FP8, models.FP8, 0.9},
		{llama70, hardware.A100_40G, []serve.PlanOption{serve.WeightDType(models.INT4), serve.ContextLength(8192)}, 1, 1, 1, 1, 8192, models.INT4, models.BF16, 0.9},
		// Qwen2.5-7B-Instruct: 32768-token context, 28 heads (TP ∈ {1, 2, 4}).
		{qwen7, hardware.H100, nil, 1, 1, 1, 1, 32768, models.BF16, models.BF16, 0.9},
		{qwen7, hardware.A100_40G, nil, 1, 1, 1, 1, 32768, models.BF16, models.BF16, 0.9},
		{qwen7, hardware.L4, nil, 1, 1, 1, 1, 32768, models.BF16, models.BF16, 0.9},
		{qwen7, hardware.H200, nil, 1, 1, 1, 1, 32768, models.BF16, models.BF16, 0.9},
		{qwen7, hardware.L4, []serve.PlanOption{serve.TensorParallel(4)}, 4, 1, 1, 4, 32768, models.BF16, models.BF16, 0.9},
		{qwen7, hardware.L4, []serve.PlanOption{serve.MemoryUtilization(0.5), serve.ContextLength(4096)}, 2, 1, 1, 2, 4096, models.BF16, models.BF16, 0.5},
		// Qwen2.5-7B on 4.5 GB shares: TP=4 is the most its heads allow;
		// at 0.15, pipeline stages are added on the same node (2 per node of 8).
		{qwen7, hardware.L4.PerNode(8), []serve.PlanOption{serve.MemoryUtilization(0.2), serve.ContextLength(1024)}, 4, 1, 1, 4, 1024, models.BF16, models.BF16, 0.2},
		{qwen7, hardware.L4.PerNode(8), []serve.PlanOption{serve.MemoryUtilization(0.15), serve.ContextLength(1024)}, 4, 2, 1, 8, 1024, models.BF16, models.BF16, 0.15},
		// Ascend: Qwen2.5-72B on 64 GB 910B3s; Qwen2.5-7B on 24 GB 310P3s,
		// which keep half the remainder for the KV cache.
		{qwen72, hardware.Ascend910B3, nil, 4, 1, 1, 4, 32768, models.BF16, models.BF16, 0.9},
		{qwen7, hardware.Ascend310P3, nil, 1, 1, 1, 1, 32768, models.BF16, models.BF16, 0.9},
		{qwen7base, hardware.Ascend310P3, nil, 2, 1, 1, 2, 131072, models.BF16, models.BF16, 0.9}, // 53,280 tokens at TP=1
		// DeepSeek-V3: 625 GiB of FP8 weights, MLA latent on every rank.
		{dsv3, hardware.H100, nil, 8, 2, 2, 8, 163840, models.FP8, models.BF16, 0.9},
		{dsv3, hardware.A100_40G, nil, 8, 3, 3, 8, 163840, models.FP8, models.BF16, 0.9},
		{dsv3, hardware.L4, nil, 8, 5, 5, 8, 163840, models.FP8, models.BF16, 0.9},
		{dsv3, hardware.H200, nil, 8, 1, 1, 8, 163840, models.FP8, models.BF16, 0.9},
		{dsv3, hardware.H200, []serve.PlanOption{serve.KVCacheDType(models.FP8)}, 8, 1, 1, 8, 163840, models.FP8, models.FP8, 0.9},
	} {
		name := tc.model.Name + "/" + tc.acc.Name
		util := tc.util
		got, err := serve.Plan(tc.model, tc.acc, tc.opts...)
		require.NoError(t, err, name)
		assert.Equal(t, expectPlan(tc.model, tc.acc, util, tc.tp, tc.pp, tc.nodes, tc.per, tc.ctx, tc.weight, tc.kv), got, name)
		assert.Equal(t, tc.tp*tc.pp, got.Accelerators(), name)
		assert.GreaterOrEqual(t, got.KVTokenCapacity, int64(tc.ctx), name)
	}
}

// A few plans checked against numbers worked by hand.
func TestPlanHandChecked(t *testing.T) {
	// Llama-3.1-8B on H100, which reports 81,559 MiB = 85,520,809,984 B:
	// ⌈0.9 × that⌉ = 76,968,728,986 B usable, 8,552,080,998 B outside;
	// 8,030,261,248 × 2 = 16,060,522,496 B weights; an 80 GiB H100 batches
	// 8192 tokens and 1024 sequences, so the reserve is 8192·2·14336·2 +
	// 1024·128256·4 = 995,098,624 B; 59,913,107,866 B of KV at 128 KiB a
	// token = 28,568 blocks = 457,088 tokens = 3 × 131072.
	p, err := serve.Plan(catalogueModel(t, "meta-llama/Llama-3.1-8B-Instruct"), hardware.H100)
	require.NoError(t, err)
	assert.Equal(t, int64(85_520_809_984), p.DeviceMemoryBytes)
	assert.Equal(t, int64(76_968_728_986), p.UsableBytesPerDevice)
	assert.Equal(t, int64(8_552_080_998), p.HeadroomBytesPerDevice)
	assert.Equal(t, 8192, p.MaxBatchedTokens)
	assert.Equal(t, 1024, p.MaxSequences)
	assert.Equal(t, int64(16_060_522_496), p.WeightBytesPerDevice)
	assert.Equal(t, int64(995_098_624), p.ReserveBytesPerDevice)
	assert.Equal(t, int64(59_913_107_866), p.KVCacheBytesPerDevice)
	assert.Equal(t, int64(131072), p.KVBytesPerToken)
	assert.Equal(t, int64(28_568), p.KVBlocks)
	assert.Equal(t, int64(457_088), p.KVTokenCapacity)
	assert.Equal(t, int64(3), p.MaxConcurrentSequences)

	// The same model on an A100-80GB batches 2048 tokens and 256 sequences
	// (vLLM exempts the A100 from its large-device defaults): 2048·2·14336·2
	// + 256·128256·4 = 248,774,656 B.
	p, err = serve.Plan(catalogueModel(t, "meta-llama/Llama-3.1-8B-Instruct"), hardware.A100_80G)
	require.NoError(t, err)
	assert.Equal(t, 2048, p.MaxBatchedTokens)
	assert.Equal(t, 256, p.MaxSequences)
	assert.Equal(t, int64(248_774_656), p.ReserveBytesPerDevice)

	// An L4 reports 23,034 MiB, not 24 GiB: the profile holds that figure.
	p, err = serve.Plan(catalogueModel(t, "meta-llama/Llama-3.1-8B-Instruct"), hardware.L4, serve.ContextLength(8192))
	require.NoError(t, err)
	assert.Equal(t, int64(23034)<<20, p.DeviceMemoryBytes)

	// The profile is the one source of the device's memory: a copy with
	// another size (a driver that reports less, a card the catalogue
	// lacks) is planned with that size, nothing overrides it.
	a100 := hardware.A100_40G
	a100.MemoryBytes = 40536 << 20
	p, err = serve.Plan(catalogueModel(t, "meta-llama/Llama-3.1-8B-Instruct"), a100, serve.ContextLength(8192))
	require.NoError(t, err)
	assert.Equal(t, int64(40536)<<20, p.DeviceMemoryBytes)
	for _, acc := range []hardware.Profile{hardware.T4, hardware.L4, hardware.A100_40G, hardware.A100_80G, hardware.H100, hardware.L40S} {
		p, err := serve.Plan(catalogueModel(t, "meta-llama/Llama-3.2-1B-Instruct"), acc, serve.ContextLength(2048))
		require.NoError(t, err, acc.Name)
		assert.Equal(t, acc.MemoryBytes, p.DeviceMemoryBytes, acc.Name)
	}

	// Ascend NPUs: vLLM-Ascend's 128-token blocks.
	p, err = serve.Plan(catalogueModel(t, "Qwen/Qwen2.5-7B-Instruct"), hardware.Ascend910B3)
	require.NoError(t, err)
	assert.Equal(t, 128, p.BlockSize)
	assert.Equal(t, p.KVBlocks*128, p.KVTokenCapacity)

	// DeepSeek-V3 on 8 × H200: 671,026,404,352 B of FP8 over 8 ranks =
	// 83,878,300,544 B each; the 576-wide latent is not split, so every rank
	// caches 576 × 2 × 61 = 70,272 B a token: 46,048 blocks.
	p, err = serve.Plan(catalogueModel(t, "deepseek-ai/DeepSeek-V3"), hardware.H200)
	require.NoError(t, err)
	assert.Equal(t, int64(83_878_300_544), p.WeightBytesPerDevice)
	assert.Equal(t, int64(70_272), p.KVBytesPerTokenPerDevice)
	assert.Equal(t, p.KVBytesPerToken, p.KVBytesPerTokenPerDevice, "MLA KV does not shrink with TP")
	assert.Equal(t, int64(46_048), p.KVBlocks)
	assert.Equal(t, int64(4), p.MaxConcurrentSequences)

	// Llama-3.1-70B on L4 needs two nodes of 8: 40 layers per stage,
	// 1 KV head per rank (8 heads over 8 ranks): 20,480 B a token.
	p, err = serve.Plan(catalogueModel(t, "meta-llama/Llama-3.1-70B-Instruct"), hardware.L4)
	require.NoError(t, err)
	assert.Equal(t, 2, p.Nodes)
	assert.Equal(t, 8, p.AcceleratorsPerNode)
	assert.Equal(t, int64(8_819_213_312), p.WeightBytesPerDevice)
	assert.Equal(t, int64(20_480), p.KVBytesPerTokenPerDevice)
	assert.Equal(t, int64(38_933), p.KVBlocks)
}

func TestPlanReplicatesKVHeadsBeyondTheirCount(t *testing.T) {
	glm := catalogueModel(t, "THUDM/glm-4-9b-chat") // 2 KV heads
	for tp, perLayer := range map[int]int64{1: 2 * 2 * 128 * 2, 2: 2 * 1 * 128 * 2, 4: 2 * 1 * 128 * 2, 8: 2 * 1 * 128 * 2} {
		p, err := serve.Plan(glm, hardware.H100, serve.TensorParallel(tp), serve.ContextLength(8192))
		require.NoError(t, err)
		assert.Equal(t, perLayer*40, p.KVBytesPerTokenPerDevice, "TP=%d", tp)
	}
}

func TestPlanForcedTensorParallelMustDivideHeads(t *testing.T) {
	qwen7 := catalogueModel(t, "Qwen/Qwen2.5-7B-Instruct")
	_, err := serve.Plan(qwen7, hardware.H100, serve.TensorParallel(8))
	require.EqualError(t, err, "plan Qwen2.5-7B-Instruct on H100-SXM-80GB: tensorParallel: Invalid value: 8: "+
		"must divide Qwen2.5-7B-Instruct's 28 attention heads")

	_, err = serve.Plan(qwen7, hardware.H100, serve.TensorParallel(16))
	require.EqualError(t, err, "plan Qwen2.5-7B-Instruct on H100-SXM-80GB: tensorParallel: Invalid value: 16: "+
		"H100-SXM-80GB nodes hold 8 devices")

	odd := qwen7
	odd.Name, odd.AttentionHeads, odd.KVHeads = "odd", 24, 6 // 4 divides 24 but neither divides 6 nor is a multiple of it
	_, err = serve.Plan(odd, hardware.H100, serve.TensorParallel(4))
	require.EqualError(t, err, "plan odd on H100-SXM-80GB: tensorParallel: Invalid value: 4: "+
		"must divide, or be a multiple of, odd's 6 KV heads")

	_, err = serve.Plan(odd, hardware.H100, serve.TensorParallel(5))
	require.EqualError(t, err, "plan odd on H100-SXM-80GB: tensorParallel: Invalid value: 5: must divide odd's 24 attention heads")
	p, err := serve.Plan(odd, hardware.H100, serve.MaxTensorParallel(1), serve.TensorParallel(3), serve.ContextLength(1024))
	require.NoError(t, err, "a forced TP need not be a power of two; it overrides MaxTensorParallel")
	assert.Equal(t, 3, p.TensorParallel)

	oddHeads := qwen7
	oddHeads.Name, oddHeads.AttentionHeads, oddHeads.KVHeads = "odd-heads", 7, 7
	_, err = serve.Plan(oddHeads, hardware.H100, serve.WeightDType(models.INT4), serve.ContextLength(1024))
	require.NoError(t, err, "TP=1 divides anything")
}

func TestPlanCannotFit(t *testing.T) {
	need := func(p serve.PlanResult) int64 {
		blocks := (int64(p.ContextLength) + 15) / 16
		return p.WeightBytesPerDevice + p.ReserveBytesPerDevice + blocks*16*p.KVBytesPerTokenPerDevice
	}

	// Llama-3.1-70B on a single L4.
	llama70 := catalogueModel(t, "meta-llama/Llama-3.1-70B-Instruct")
	single := hardware.L4.PerNode(1)
	_, err := serve.Plan(llama70, single, serve.MaxNodes(1), serve.ContextLength(8192))
	want := expectPlan(llama70, single, 0.9, 1, 1, 1, 1, 8192, models.BF16, models.BF16)
	require.EqualError(t, err, "plan Llama-3.1-70B-Instruct on L4: needs 134.3 GiB per device at TP=1 "+
		"but L4 has 20.2 GiB usable: short by 114.0 GiB")
	var fit *serve.FitError
	require.ErrorAs(t, err, &fit)
	assert.ErrorIs(t, err, serve.ErrDoesNotFit)
	assert.Equal(t, serve.FitError{
		Model: "Llama-3.1-70B-Instruct", Accelerator: "L4", TensorParallel: 1, PipelineParallel: 1, Nodes: 1,
		NeedBytes: need(want), UsableBytes: want.UsableBytesPerDevice,
	}, *fit)
	assert.Equal(t, need(want)-want.UsableBytesPerDevice, fit.ShortBytes())

	// DeepSeek-V3 upcast to BF16 (1.25 TiB) on at most two nodes of L4s.
	dsv3 := catalogueModel(t, "deepseek-ai/DeepSeek-V3")
	_, err = serve.Plan(dsv3, hardware.L4, serve.WeightDType(models.BF16), serve.MaxNodes(2))
	want = expectPlan(dsv3, hardware.L4, 0.9, 8, 2, 2, 8, 163840, models.BF16, models.BF16)
	require.ErrorAs(t, err, &fit)
	assert.Equal(t, 8, fit.TensorParallel)
	assert.Equal(t, 2, fit.PipelineParallel)
	assert.Equal(t, 2, fit.Nodes)
	assert.Equal(t, need(want), fit.NeedBytes)
	assert.EqualError(t, err, "plan DeepSeek-V3 on L4: needs 83.7 GiB per device at TP=8, PP=2 (2 nodes) "+
		"but L4 has 20.2 GiB usable: short by 63.5 GiB")

	// On a 310P the KV cache gets half of what is left, so one sequence
	// needs twice its blocks.
	one310P := hardware.Ascend310P3.PerNode(1)
	qwen7base := catalogueModel(t, "Qwen/Qwen2.5-7B")
	_, err = serve.Plan(qwen7base, one310P, serve.MaxNodes(1))
	want = expectPlan(qwen7base, one310P, 0.9, 1, 1, 1, 1, 131072, models.BF16, models.BF16)
	require.ErrorAs(t, err, &fit)
	assert.Equal(t, want.WeightBytesPerDevice+want.ReserveBytesPerDevice+2*131072*57344, fit.NeedBytes)
	assert.EqualError(t, err, "plan Qwen2.5-7B on Ascend310P3: needs 28.5 GiB per device at TP=1 "+
		"but Ascend310P3 has 21.6 GiB usable: short by 6.9 GiB")

	// The context alone can be too long: Llama-3.1-8B on one L4 with a
	// million-token context and no room to grow.
	_, err = serve.Plan(catalogueModel(t, "meta-llama/Llama-3.1-8B"), single, serve.MaxNodes(1), serve.ContextLength(1<<20))
	require.ErrorIs(t, err, serve.ErrDoesNotFit)
	assert.Contains(t, err.Error(), "needs 143.2 GiB per device at TP=1 but L4 has 20.2 GiB usable")
}

func TestPlanRejectsBadInput(t *testing.T) {
	qwen7 := catalogueModel(t, "Qwen/Qwen2.5-7B-Instruct")
	_, err := serve.Plan(qwen7, hardware.H100,
		serve.ContextLength(-1), serve.MemoryUtilization(1.5), serve.KVCacheDType(models.INT4),
		serve.WeightDType("fp6"), serve.MaxTensorParallel(0), serve.TensorParallel(-2), serve.MaxNodes(0),
		serve.Overhead(-1), serve.MaxBatchedTokens(0), serve.MaxSequences(0))
	require.Error(t, err)
	for _, want := range []string{
		"plan Qwen2.5-7B-Instruct on H100-SXM-80GB: [",
		"contextLength: Invalid value: -1: must be positive",
		"memoryUtilization: Invalid value: 1.5: must be in (0, 1]",
		`kvCacheDType: Unsupported value: "int4"`,
		`weightDType: Unsupported value: "fp6"`,
		"maxTensorParallel: Invalid value: 0: must be at least 1",
		"tensorParallel: Invalid value: -2: must be at least 1",
		"maxNodes: Invalid value: 0: must be at least 1",
		"overhead: Invalid value: -1: must not be negative",
		"maxBatchedTokens: Invalid value: 0: must be at least 1",
		"maxSequences: Invalid value: 0: must be at least 1",
	} {
		assert.Contains(t, err.Error(), want)
	}

	_, err = serve.Plan(models.Model{Name: "empty"}, hardware.CPU)
	require.Error(t, err)
	for _, want := range []string{
		`model: Invalid value: "empty": [num_hidden_layers: Invalid value: 0: must be positive`,
		`accelerator: Invalid value: "cpu-amd64": has no device memory: Plan sizes a model for GPUs or NPUs`,
		"contextLength: Invalid value: 0: must be positive (the model states no context length: set serve.ContextLength)",
	} {
		assert.Contains(t, err.Error(), want)
	}
	// Options never given are not blamed for the CPU's missing devices.
	assert.NotContains(t, err.Error(), "maxTensorParallel")
	assert.NotContains(t, err.Error(), "maxPerNode")

	// vLLM's share must leave room for the runtime, NCCL and CUDA graphs.
	_, err = serve.Plan(qwen7, hardware.L4, serve.MemoryUtilization(0.99))
	require.ErrorContains(t, err, "memoryUtilization: Invalid value: 0.99: leaves 0.2 GiB of L4's 22.5 GiB outside vLLM's share, less than the 1.0 GiB")
	_, err = serve.Plan(qwen7, hardware.L4, serve.Overhead(4<<30))
	require.ErrorContains(t, err, "overhead: Invalid value: 0.9: leaves 2.2 GiB of L4's 22.5 GiB outside vLLM's share, less than the 4.0 GiB")

	_, err = serve.Plan(qwen7, hardware.H100, serve.MemoryUtilization(math.NaN()))
	require.ErrorContains(t, err, "memoryUtilization: Invalid value: NaN: must be in (0, 1]")

	noPowerOfTwo := qwen7
	noPowerOfTwo.Name, noPowerOfTwo.AttentionHeads, noPowerOfTwo.KVHeads = "three-heads", 3, 3
	_, err = serve.Plan(noPowerOfTwo, hardware.H100, serve.MaxTensorParallel(1))
	require.NoError(t, err, "TP=1 always splits")
}

func TestPlanDefaultsFollowTheModel(t *testing.T) {
	fp16 := catalogueModel(t, "Qwen/Qwen2.5-7B-Instruct")
	fp16.DType = models.FP16
	p, err := serve.Plan(fp16, hardware.H100)
	require.NoError(t, err)
	assert.Equal(t, models.FP16, p.KVCacheDType, "vLLM's auto KV dtype is the model's 16-bit format")
	fp16.DType = models.FP32
	p, err = serve.Plan(fp16, hardware.H100)
	require.NoError(t, err)
	assert.Equal(t, models.FP16, p.KVCacheDType)
	assert.Equal(t, models.FP32, p.WeightDType)

	p, err = serve.Plan(catalogueModel(t, "Qwen/Qwen2.5-7B-Instruct"), hardware.H100, serve.Overhead(0), serve.MaxBatchedTokens(1), serve.MaxSequences(3))
	require.NoError(t, err)
	assert.Equal(t, int64(1*2*18944*2+3*152064*4), p.ReserveBytesPerDevice)
}

func TestPlanErrorsAreDistinct(t *testing.T) {
	_, err := serve.Plan(catalogueModel(t, "Qwen/Qwen2.5-7B-Instruct"), hardware.H100, serve.TensorParallel(8))
	assert.False(t, errors.Is(err, serve.ErrDoesNotFit), "a bad option is not a capacity problem")
}

// Plan's search over pipeline stages is bounded by bisection, not by the
// model's layer count: a config claiming two billion layers and no node
// limit returns at once (the fuzzer found the linear search hanging).
func TestPlanWithAbsurdLayerCounts(t *testing.T) {
	m := catalogueModel(t, "meta-llama/Llama-3.1-70B-Instruct")
	m.Layers = math.MaxInt32
	start := time.Now()
	_, _ = serve.Plan(m, hardware.L4, serve.MaxNodes(math.MaxInt32), serve.ContextLength(1024))
	_, _ = serve.Plan(m, hardware.L4.PerNode(1), serve.MaxNodes(math.MaxInt32), serve.WeightDType(models.FP32))
	assert.Less(t, time.Since(start), 5*time.Second)

	// The same candidates as a stage-by-stage search: Llama-3.1-70B on L4
	// needs two nodes of 8 at 131072 tokens (tested above); at 8192 tokens
	// on one-device nodes it needs the first fitting stage count.
	p, err := serve.Plan(catalogueModel(t, "meta-llama/Llama-3.1-70B-Instruct"), hardware.L4.PerNode(1), serve.ContextLength(8192))
	require.NoError(t, err)
	for pp := 2; pp < p.PipelineParallel; pp++ {
		_, err := serve.Plan(catalogueModel(t, "meta-llama/Llama-3.1-70B-Instruct"), hardware.L4.PerNode(1),
			serve.ContextLength(8192), serve.MaxNodes(pp))
		require.ErrorIs(t, err, serve.ErrDoesNotFit, "%d stages", pp)
	}
}

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
