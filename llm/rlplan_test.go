package llm_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/models"
)

// h100Reported is an H100's memory as its driver reports it (GPU Feature
// Discovery's nvidia.com/gpu.memory, 81559 MiB), of which vLLM takes its
// gpu_memory_utilization share.
const h100Reported = int64(81559) << 20

// fsdp is one device's fp32 FSDP states of total parameters of which
// trainable train, on n devices: parameters 4, gradients 4 and Adam
// moments 8 bytes a parameter, each shard rounded up.
func fsdp(total, trainable, n int64) int64 {
	ceil := func(a int64) int64 { return (a + n - 1) / n }
	return ceil(4*total) + ceil(4*trainable) + ceil(8*trainable)
}

// gatheredUnits is the bf16 root unit (embeddings, head, norm) and two
// decoder layers, and one layer's fp32 gradient.
func gatheredUnits(m models.Model, trainable int64) int64 {
	h, V, L := int64(m.HiddenSize), int64(m.VocabSize), int64(m.Layers)
	outer := V*h + h
	if !m.TiedEmbeddings {
		outer += V * h
	}
	layer := (m.Parameters - outer) / L
	return 2*(outer+2*layer) + 4*min(layer, trainable/L)
}

// TestPlanRLFollowsTheFormulas recomputes a GRPO plan's figures from the
// formulas written out from verl's workers, vLLM's share and Korthikanti.
func TestPlanRLFollowsTheFormulas(t *testing.T) {
	qwen := mustLookup("Qwen/Qwen2.5-7B-Instruct")
	psi := qwen.Parameters
	h, V, L := int64(qwen.HiddenSize), int64(qwen.VocabSize), int64(qwen.Layers)
	r := grpo("plan")
	p, err := llm.PlanRL(r, hardware.H100, llm.Tokens(10_000_000), llm.Prices(map[string]float64{hardware.H100.Name: 2}))
	require.NoError(t, err)

	n := int64(p.Accelerators)
	assert.Equal(t, 4, p.Accelerators, p.String())
	assert.Equal(t, 1, p.Nodes)
	assert.Equal(t, fsdp(psi, psi, n), p.ActorStateBytesPerDevice)
	assert.Equal(t, p.ActorStateBytesPerDevice, p.ActorResidentBytesPerDevice, "nothing offloaded")
	assert.Equal(t, gatheredUnits(qwen, psi), p.ActorGatheredBytesPerDevice)
	// Micro batch 4 of 1024 + 1024 tokens, checkpointing: 2sbh a layer,
	// one layer's 34sbh, fp32 logits 4sbV.
	s, b := int64(2048), int64(4)
	assert.Equal(t, L*2*s*b*h+34*s*b*h+4*s*b*V, p.ActorActivationBytesPerDevice)
	assert.Equal(t, p.ActorStateBytesPerDevice+p.ActorGatheredBytesPerDevice+p.ActorActivationBytesPerDevice+llm.DefaultOverheadBytes, p.ActorUpdateBytes)
	// vLLM's share: ⌈0.6 × the reported memory⌉ beside the resident actor.
	share := int64(math.Ceil(0.6 * float64(h100Reported)))
	assert.Equal(t, share, p.Rollout.UsableBytesPerDevice)
	assert.Equal(t, h100Reported, p.DeviceBytes)
	assert.Equal(t, p.ActorResidentBytesPerDevice+share+llm.DefaultOverheadBytes, p.RolloutBytes)
	assert.Equal(t, max(p.ActorUpdateBytes, p.RolloutBytes), p.NeedBytesPerDevice)
	assert.LessOrEqual(t, p.NeedBytesPerDevice, p.DeviceBytes)
	// Two devices would not hold generation.
	assert.Greater(t, fsdp(psi, psi, 2)+share+llm.DefaultOverheadBytes, h100Reported)
	// The rollout's weights in bf16 on TP=1, and its responses: 256 × 5
	// over 4 replicas.
	assert.Equal(t, 2*psi, p.Rollout.WeightBytesPerDevice)
	assert.Equal(t, 4, p.RolloutReplicas)
	assert.Equal(t, 320, p.SequencesPerReplica)
	// The reference's fp32 parameters in CPU memory, a quarter a device.
	assert.Equal(t, (4*psi+n-1)/n*n, p.CPUBytesPerNode)

	// (8 + 2 + 2)·Ψ·D: update with recompute, old and reference log-probs.
	assert.Equal(t, []llm.ComputeTerm{{Pass: "actor update", Multiple: 8, Parameters: psi},
		{Pass: "old log-probs", Multiple: 2, Parameters: psi}, {Pass: "reference log-probs", Multiple: 2, Parameters: psi}}, p.Compute)
	D := 10_000_000 * 15.0 // tokens × total_epochs
	assert.InDelta(t, 12*float64(psi)*D, p.FLOPs, 1)
	training := 12 * float64(psi) * D / (4 * 989e12 * llm.DefaultMFU) / 3600
	assert.InDelta(t, training, p.TrainingHours, 1e-9)
	assert.InDelta(t, training/(1-llm.DefaultRolloutShare), p.Hours, 1e-9)
	assert.InDelta(t, p.Hours*4*2, p.Cost, 1e-9)

	// The rollout share is the caller's assumption.
	p2, err := llm.PlanRL(r, hardware.H100, llm.Tokens(10_000_000), llm.RolloutShare(0.8))
	require.NoError(t, err)
	assert.InDelta(t, training/0.2, p2.Hours, 1e-9)

	out := p.String()
	for _, want := range []string{"verl GRPO of Qwen2.5-7B-Instruct on 4 × H100-SXM-80GB", "actor update", "generation", "rollout share 47.8 GiB (0.6 of the device)",
		"in CPU memory", "4 replica(s) of TP=1", "rollout share 0.50, assumed", "cost: "} {
		assert.Contains(t, out, want)
	}
}

// TestPlanRLPPO plans a LoRA PPO with a critic and a served reward
// model, and lets the planner offload.
func TestPlanRLPPO(t *testing.T) {
	qwen := mustLookup("Qwen/Qwen2.5-7B-Instruct")
	psi := qwen.Parameters
	h, V, L := int64(qwen.HiddenSize), int64(qwen.VocabSize), int64(qwen.Layers)
	r := rlBuilders()["ppo"]
	lora, _ := llm.LoRAParameters(qwen, 32)

	// Without offload the critic's update needs two devices' shards beside the actor.
	p, err := llm.PlanRL(r, hardware.H100)
	require.NoError(t, err)
	assert.False(t, p.OffloadParams || p.OffloadOptimizer)
	n := int64(p.Accelerators)
	psiC := psi - V*h + h + 1 // the head replaced by a one-label score
	assert.Equal(t, psiC, p.CriticParameters)
	assert.Equal(t, lora, p.TrainableParameters)
	assert.Equal(t, fsdp(psi, lora, n), p.ActorStateBytesPerDevice)
	assert.Equal(t, fsdp(psiC, psiC, n), p.CriticStateBytesPerDevice)
	s, b := int64(2048), int64(4)
	assert.Equal(t, L*2*s*b*h+34*s*b*h, p.CriticActivationBytesPerDevice, "the critic has no vocabulary logits")
	assert.Equal(t, p.CriticStateBytesPerDevice+gatheredUnits(withoutHead(qwen), psiC)+p.CriticActivationBytesPerDevice+p.ActorResidentBytesPerDevice+llm.DefaultOverheadBytes, p.CriticUpdateBytes)
	share := int64(math.Ceil(0.6 * float64(h100Reported)))
	assert.True(t, p.HasRewardModel)
	assert.Equal(t, p.ActorResidentBytesPerDevice+p.CriticResidentBytesPerDevice+share+llm.DefaultOverheadBytes, p.RewardBytes)
	// PPO's KL is in the reward: the reference's log-probs are a pass,
	// computed by the actor without its adapter (ref_in_actor), so it
	// takes no memory of its own.
	assert.True(t, p.UsesReference)
	assert.Equal(t, []llm.ComputeTerm{{Pass: "actor update", Multiple: 6, Parameters: psi}, {Pass: "old log-probs", Multiple: 2, Parameters: psi},
		{Pass: "reference log-probs", Multiple: 2, Parameters: psi},
		{Pass: "critic values", Multiple: 2, Parameters: psiC}, {Pass: "critic update", Multiple: 8, Parameters: psiC}}, p.Compute)
	assert.Zero(t, p.CPUBytesPerNode, "the reference is the actor's base and nothing is offloaded")
	assert.Contains(t, p.String(), "reference        the actor without its adapter")
	// Without a KL, verl creates no reference.
	noKL, err := llm.PlanRL(rlBuilders()["ppo"].KLCoefficient(0), hardware.H100)
	require.NoError(t, err)
	assert.False(t, noKL.UsesReference)
	assert.NotContains(t, noKL.Compute, llm.ComputeTerm{Pass: "reference log-probs", Multiple: 2, Parameters: psi})
	assert.Contains(t, noKL.String(), "reference        none")

	// Offload lowers what stays outside each update, so fewer devices fit.
	o, err := llm.PlanRL(r, hardware.H100, llm.AllowOffload)
	require.NoError(t, err)
	assert.Less(t, o.Accelerators, p.Accelerators)
	assert.True(t, o.OffloadOptimizer)
	m := int64(o.Accelerators)
	ceil := func(a int64) int64 { return (a + m - 1) / m }
	wantResident := fsdp(psi, lora, m) - ceil(8*lora)
	if o.OffloadParams {
		wantResident -= ceil(4 * psi)
	}
	assert.Equal(t, wantResident, o.ActorResidentBytesPerDevice)
	assert.Equal(t, fsdp(psi, lora, m), o.ActorStateBytesPerDevice, "the update loads everything back")
	assert.Greater(t, o.CPUBytesPerNode, int64(0))
}

// withoutHead is m as the critic loads it, for the gathered root unit: the
// embeddings without a separate output head.
func withoutHead(m models.Model) models.Model {
	m.Parameters = m.Parameters - int64(m.VocabSize)*int64(m.HiddenSize) + int64(m.HiddenSize) + 1
	m.TiedEmbeddings = true
	return m
}

func TestPlanRLErrors(t *testing.T) {
	var fit *llm.FitError
	big := llm.GRPO("big", "Qwen/Qwen2.5-72B-Instruct").TrainFiles("pvc://d/t.parquet").ValFiles("pvc://d/v.parquet").RewardFunction("pvc://d/r.py", "f").
		Output("pvc://m/o").Rollout("vllm", 8, 0.5).Batch(256, 128, 4)
	_, err := llm.PlanRL(big, hardware.H100, llm.MaxNodes(1))
	require.ErrorAs(t, err, &fit)
	assert.True(t, errors.Is(err, llm.ErrDoesNotFit))
	assert.Equal(t, 8, fit.Accelerators)
	// 16Ψ/N beside half the device: four nodes (24 devices do not divide
	// 256 × 5 responses).
	p, err := llm.PlanRL(big, hardware.H100, llm.MaxNodes(4))
	require.NoError(t, err)
	assert.Equal(t, 32, p.Accelerators)

	// A share too small for the weights is the rollout's problem, named.
	_, err = llm.PlanRL(grpo("small").Rollout("vllm", 1, 0.3), hardware.L4)
	assert.ErrorContains(t, err, "actor_rollout_ref.rollout.gpu_memory_utilization: 0.3 of L4")

	_, err = llm.PlanRL(grpo("tp").Rollout("vllm", 16, 0.6), hardware.H100)
	assert.ErrorContains(t, err, "tensor_model_parallel_size: 16 exceeds the 8 devices")
	// No device count passes verl's batch checks: 2 responses a mini batch
	// cannot be a multiple of a micro batch of 4.
	_, err = llm.PlanRL(grpo("batch").Batch(1, 1, 4).Samples(2), hardware.H100)
	assert.ErrorContains(t, err, "data.train_batch_size: no device count")

	private := llm.VerlPPO("p", "pvc://m/policy").TrainFiles("pvc://d/t.parquet").ValFiles("pvc://d/v.parquet").RewardModel("pvc://m/rm").Output("pvc://m/o")
	_, err = llm.PlanRL(private, hardware.H100, llm.MFU(0), llm.Tokens(-1))
	require.Error(t, err)
	for _, want := range []string{"actor_rollout_ref.model.path:", "critic.model.path:", "reward_model.model.path:", "mfu:", "tokens:"} {
		assert.Contains(t, err.Error(), want)
	}
	// Facts for the policy serve the critic that starts from it.
	_, err = llm.PlanRL(private.Facts(mustLookup(qwen)).RewardModelFacts(rewardClassifier()), hardware.H100)
	assert.NoError(t, err)
	// A reward model that generates text is refused (RewardModel).
	_, err = llm.PlanRL(private.RewardModelFacts(mustLookup(qwen)), hardware.H100)
	assert.ErrorContains(t, err, "reward_model.model.path: Invalid value")

	_, err = llm.PlanRL(grpo("t4"), hardware.T4, llm.Tokens(1000))
	assert.ErrorContains(t, err, "no bf16 peak")
	_, err = llm.PlanRL(grpo("cpu"), hardware.CPU)
	assert.ErrorContains(t, err, "accelerator")
	_, err = llm.PlanRL(llm.GRPO("x", qwen), hardware.H100)
	assert.ErrorContains(t, err, "rl: ")
	assert.ErrorContains(t, err, "data.train_files")
	for _, z := range []*llm.RL{nil, {}} {
		_, err := llm.PlanRL(z, hardware.H100)
		assert.ErrorContains(t, err, "llm.GRPO")
		z.Facts(models.Model{}).CriticFacts(models.Model{}).RewardModelFacts(models.Model{}).OffloadParams().OffloadOptimizer()
	}
}
