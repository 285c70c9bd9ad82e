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
	"github.com/cubestudio/cube/train"
)

// Published trainable-parameter counts of LoRA rank 8 on every linear
// layer, as LLaMA-Factory's loader logs them ("trainable params:
// 20,971,520 || all params: 8,051,232,768" for Llama 3 8B; "20,185,088 ||
// all params: 7,635,801,600" for Qwen2.5-7B-Instruct, PEFT's
// print_trainable_parameters); all params include the adapter.
func TestLoRAParametersMatchPublishedCounts(t *testing.T) {
	llama := mustLookup("meta-llama/Llama-3.1-8B-Instruct")
	n, unmatched := llm.LoRAParameters(llama, 8)
	assert.Empty(t, unmatched)
	assert.Equal(t, int64(20_971_520), n)
	assert.Equal(t, int64(8_051_232_768), llama.Parameters+n)

	qwen := mustLookup("Qwen/Qwen2.5-7B-Instruct")
	n, _ = llm.LoRAParameters(qwen, 8)
	assert.Equal(t, int64(20_185_088), n)
	assert.Equal(t, int64(7_635_801_600), qwen.Parameters+n)

	// q_proj and v_proj only, rank 8, Llama 3 8B: 32 × 8 × ((4096+4096) + (4096+1024)).
	n, _ = llm.LoRAParameters(llama, 8, "q_proj", "v_proj")
	assert.Equal(t, int64(32*8*((4096+4096)+(4096+1024))), n)
	_, unmatched = llm.LoRAParameters(llama, 8, "query_key_value")
	assert.Equal(t, []string{"query_key_value"}, unmatched)

	// ChatGLM's fused projections: 40 × r × ((h + q + 2kv) + (q + h) + (h + 2i) + (i + h)).
	glm := mustLookup("THUDM/glm-4-9b-chat")
	n, _ = llm.LoRAParameters(glm, 8)
	h, q, kv, i := int64(4096), int64(32*128), int64(2*128), int64(13696)
	assert.Equal(t, 40*8*((h+q+2*kv)+(q+h)+(h+2*i)+(i+h)), n)
}

const gb = int64(1) << 30

// TestPlanFollowsTheFormulas recomputes the plan's figures with the
// formulas written out from their sources.
func TestPlanFollowsTheFormulas(t *testing.T) {
	qwen := mustLookup("Qwen/Qwen2.5-7B-Instruct")
	psi := qwen.Parameters
	s, b, h, L, V := int64(2048), int64(1), int64(3584), int64(28), int64(152064)
	// Korthikanti et al. with checkpointing: 2sbh per layer kept, one
	// layer's 34sbh while it is recomputed, fp32 logits 4sbV.
	actCkpt := L*2*s*b*h + 34*s*b*h + 4*s*b*V

	t.Run("full on H100 needs ZeRO-1 on two", func(t *testing.T) {
		f := llm.SFT("full", qwen.HFID).AddDataset(alpaca).Output("pvc://m/x").FullTuning()
		p, err := llm.Plan(f, hardware.H100, llm.Tokens(10_000_000), llm.Prices(map[string]float64{hardware.H100.Name: 3}))
		require.NoError(t, err)
		// One device, ZeRO-0: 16Ψ = 113 GiB: too much. Two devices:
		// ZeRO-0 16Ψ still, ZeRO-1 4Ψ + 12Ψ/2 = 10Ψ = 70.9 GiB fits.
		assert.Equal(t, 2, p.Accelerators)
		assert.Equal(t, 1, p.ZeROStage)
		assert.Equal(t, 4*psi+int64(12*float64(psi)/2), p.ModelStateBytesPerDevice)
		assert.Equal(t, actCkpt, p.ActivationBytesPerDevice)
		assert.Equal(t, p.ModelStateBytesPerDevice+p.ActivationBytesPerDevice+llm.DefaultOverheadBytes, p.NeedBytesPerDevice)
		// 8ND (6ND plus a recomputed forward) over 2 × 989 TFLOPS × 0.35, 3 epochs.
		flops := 8 * float64(psi) * 30_000_000
		assert.InDelta(t, flops, p.FLOPs, 1)
		hours := flops / (2 * 989e12 * llm.DefaultMFU) / 3600
		assert.InDelta(t, hours, p.Hours, 1e-9)
		assert.InDelta(t, hours*2*3, p.Cost, 1e-9)
	})

	t.Run("ZeRO-2 and ZeRO-3 are DeepSpeed's estimators", func(t *testing.T) {
		f := llm.SFT("z", "meta-llama/Llama-3.1-70B-Instruct").AddDataset(alpaca).Output("pvc://m/x").FullTuning()
		p, err := llm.Plan(f, hardware.H100)
		require.NoError(t, err)
		m := mustLookup("meta-llama/Llama-3.1-70B-Instruct")
		P := m.Parameters
		// estimate_zero3_model_states_mem_needs(cpu_offload=False): 4·largest + 18Ψ/N.
		largest := int64(m.VocabSize) * int64(m.HiddenSize)
		assert.Equal(t, 3, p.ZeROStage)
		n := int64(p.Accelerators)
		assert.Equal(t, 4*largest+int64(18*float64(P)/float64(n)), p.ModelStateBytesPerDevice)
		// zero_init: cpu = largest × 4 × GPUs per node × 1.5.
		assert.Equal(t, int64(float64(largest)*4*8*1.5), p.CPUBytesPerNode)
		// The smallest count that fits: one node fewer would not.
		assert.Equal(t, 0, p.Accelerators%8)
		smaller := 4*largest + int64(18*float64(P)/float64(n-8)) + p.ActivationBytesPerDevice + llm.DefaultOverheadBytes
		assert.Greater(t, smaller, hardware.H100.MemoryBytes)
	})

	t.Run("offload", func(t *testing.T) {
		f := llm.SFT("o", qwen.HFID).AddDataset(alpaca).Output("pvc://m/x").FullTuning()
		p, err := llm.Plan(f, hardware.L4, llm.AllowOffload, llm.MaxNodes(1))
		require.NoError(t, err)
		assert.True(t, p.OffloadOptimizer)
		n := int64(p.Accelerators)
		switch {
		case p.OffloadParams:
			assert.Equal(t, 4*int64(V)*h, p.ModelStateBytesPerDevice)
		case p.ZeROStage == 3:
			assert.Equal(t, 4*V*h+int64(2*float64(psi)/float64(n)), p.ModelStateBytesPerDevice)
		default:
			// estimate_zero2_model_states_mem_needs(cpu_offload=True): 2Ψ.
			assert.Equal(t, 2*psi, p.ModelStateBytesPerDevice)
		}
	})

	t.Run("LoRA holds the frozen base in bf16", func(t *testing.T) {
		f := llm.SFT("l", qwen.HFID).AddDataset(alpaca).Output("pvc://m/x")
		p, err := llm.Plan(f, hardware.L4)
		require.NoError(t, err)
		assert.Equal(t, 1, p.Accelerators)
		assert.Equal(t, int64(20_185_088), p.TrainableParameters)
		assert.Equal(t, 2*psi, p.FrozenBytesPerDevice)
		assert.Equal(t, 16*int64(20_185_088), p.ModelStateBytesPerDevice)
		assert.Equal(t, 2*psi+16*20_185_088+actCkpt+llm.DefaultOverheadBytes, p.NeedBytesPerDevice)
	})

	t.Run("QLoRA quantizes the decoder's linear layers to NF4", func(t *testing.T) {
		f := llm.SFT("q", qwen.HFID).AddDataset(alpaca).Output("pvc://m/x").QLoRA(4, llm.Adapter{Rank: 8})
		p, err := llm.Plan(f, hardware.L4)
		require.NoError(t, err)
		// Linear weights per layer: q,o h×h; k,v h×512; gate,up,down h×18944.
		lin := L * (2*h*h + 2*h*512 + 3*h*18944)
		want := int64(math.Ceil(float64(lin)*(4+0.127)/8 + float64(psi-lin)*2))
		assert.Equal(t, want, p.FrozenBytesPerDevice)
	})

	t.Run("without checkpointing every layer keeps 34sbh", func(t *testing.T) {
		f := llm.SFT("a", qwen.HFID).AddDataset(alpaca).Output("pvc://m/x").GradientCheckpointing(false)
		p, err := llm.Plan(f, hardware.H100, llm.AttentionMaps(true))
		require.NoError(t, err)
		a := int64(28)
		assert.Equal(t, L*(34*s*b*h+5*a*s*s*b)+4*s*b*V, p.ActivationBytesPerDevice)
	})

	t.Run("DPO full carries a reference model, PPO a rollout share", func(t *testing.T) {
		f := llm.DPO("d", qwen.HFID).AddDataset(pairs).Output("pvc://m/x").FullTuning()
		p, err := llm.Plan(f, hardware.H100)
		require.NoError(t, err)
		if p.ZeROStage == 3 {
			assert.Equal(t, (2*psi+int64(p.Accelerators)-1)/int64(p.Accelerators), p.FrozenBytesPerDevice)
		} else {
			assert.Equal(t, 2*psi, p.FrozenBytesPerDevice)
		}
		// A pair is two sequences through the model; the reference adds a forward.
		lora := llm.DPO("dl", qwen.HFID).AddDataset(pairs).Output("pvc://m/x")
		p, err = llm.Plan(lora, hardware.H100, llm.Tokens(1000))
		require.NoError(t, err)
		assert.Equal(t, L*2*s*2*h+34*s*2*h+4*s*2*V, p.ActivationBytesPerDevice)
		assert.Equal(t, 4+2+2, p.FLOPsPerToken)
		ppo := llm.PPO("p", qwen.HFID, "pvc://m/rm").AddDataset(alpaca).Output("pvc://m/x")
		p, err = llm.Plan(ppo, hardware.H100, llm.Tokens(1_000_000), llm.RolloutShare(0.6))
		require.NoError(t, err)
		assert.InDelta(t, 6*float64(psi)*3_000_000/(989e12*llm.DefaultMFU)/0.4/3600, p.Hours, 1e-9)
	})
}

// TestPlanPPOServedReward: a full PPO holds its reference and reward
// models in bf16 beside the policy, only the reference when the reward
// model is served (train/trainer_utils.py create_reward_model loads
// nothing for "api").
func TestPlanPPOServedReward(t *testing.T) {
	psi := mustLookup(qwen).Parameters
	local := llm.PPO("p", qwen, "pvc://m/rm").FullRewardModel().FullTuning().AddDataset(alpaca).Output("pvc://m/x")
	served := llm.PPO("p", qwen, rewardServer).FullTuning().AddDataset(alpaca).Output("pvc://m/x")
	for f, want := range map[*llm.FineTune]int64{local: 2 * 2 * psi, served: 2 * psi} {
		p, err := llm.Plan(f, hardware.H100, llm.MaxNodes(1), llm.AllowOffload)
		require.NoError(t, err)
		if p.ZeROStage == 3 {
			want = (want + int64(p.Accelerators) - 1) / int64(p.Accelerators)
		}
		assert.Equal(t, want, p.FrozenBytesPerDevice)
	}
}

func TestPlanErrors(t *testing.T) {
	f := llm.SFT("z", "deepseek-ai/DeepSeek-V3").AddDataset(alpaca).Output("pvc://m/x").FullTuning()
	_, err := llm.Plan(f, hardware.L4, llm.MaxNodes(1))
	var fit *llm.FitError
	require.ErrorAs(t, err, &fit)
	assert.True(t, errors.Is(err, llm.ErrDoesNotFit))
	assert.Equal(t, 8, fit.Accelerators)
	assert.Contains(t, err.Error(), "short by")

	_, err = llm.Plan(llm.SFT("x", "pvc://m/private").Template("qwen").AddDataset(alpaca).Output("pvc://m/x"), hardware.H100,
		llm.MFU(2), llm.Tokens(-1), llm.RolloutShare(1))
	require.Error(t, err)
	for _, want := range []string{"model:", "mfu:", "tokens:", "rollout share:"} {
		assert.Contains(t, err.Error(), want)
	}
	// Prices that are not numbers or are infinite would make every cost
	// NaN or +Inf and Cheapest's comparison meaningless.
	for _, price := range []float64{math.Inf(1), math.NaN(), -1} {
		_, err = llm.Plan(builders[0].build("p"), hardware.H100, llm.Prices(map[string]float64{hardware.H100.Name: price}))
		assert.ErrorContains(t, err, "must be finite and not negative", price)
	}
	_, err = llm.Plan(nil, hardware.H100)
	assert.ErrorContains(t, err, "nil")
	_, err = llm.Plan(builders[0].build("cpu"), hardware.CPU)
	assert.ErrorContains(t, err, "accelerator")
	_, err = llm.Plan(llm.SFT("x", qwen), hardware.H100)
	assert.ErrorContains(t, err, "fine-tune:")

	// Encoders are not LLaMA-Factory's, from the catalogue or given as Facts.
	_, err = llm.Plan(llm.SFT("e", "BAAI/bge-m3").Template("qwen").AddDataset(alpaca).Output("pvc://m/x"), hardware.H100)
	assert.ErrorContains(t, err, "model: bge-m3 is an encoder (task embedding), and LLaMA-Factory fine-tunes decoders that generate text")
	_, err = llm.Plan(llm.SFT("e", "pvc://m/reranker").Template("qwen").Facts(mustLookup("BAAI/bge-reranker-v2-m3")).
		AddDataset(alpaca).Output("pvc://m/x"), hardware.H100)
	assert.ErrorContains(t, err, "model: bge-reranker-v2-m3 is an encoder (task reranking)")
}

func TestPlanApplyAndString(t *testing.T) {
	f := llm.SFT("full", "Qwen/Qwen2.5-72B-Instruct").AddDataset(alpaca).Output("pvc://m/x").FullTuning()
	p, err := llm.Plan(f, hardware.H100, llm.Tokens(1e8))
	require.NoError(t, err)
	p.Apply(f, hardware.H100)
	objs, err := f.Objects()
	require.NoError(t, err)
	_, _, ds, job := parts(t, objs)
	assert.Equal(t, float64(p.ZeROStage), ds["zero_optimization"].(map[string]any)["stage"])
	assert.Equal(t, "8", *job.Spec.NprocPerNode)
	total := 0
	for _, r := range job.Spec.PyTorchReplicaSpecs {
		total += int(*r.Replicas)
	}
	assert.Equal(t, p.Nodes, total)
	out := p.String()
	for _, want := range []string{"ZeRO-3", "frozen weights", "model states", "activations", "time:", "no price"} {
		assert.Contains(t, out, want)
	}
}

func TestCheapestProfile(t *testing.T) {
	f := llm.SFT("c", "Qwen/Qwen2.5-7B-Instruct").AddDataset(alpaca).Output("pvc://m/x")
	prices := llm.Prices(map[string]float64{hardware.H100.Name: 3, hardware.L4.Name: 0.5, hardware.A100_80G.Name: 1.8})
	best, err := llm.Cheapest(f, []hardware.Profile{hardware.H100, hardware.L4, hardware.A100_80G, hardware.T4}, llm.Tokens(1e7), prices)
	require.NoError(t, err)
	// Cost = 6·N·D / (peak × MFU) / 3600 × price: the lowest price per
	// peak TFLOPS wins when the run fits on one device of each.
	var want string
	lowest := math.Inf(1)
	for _, acc := range []hardware.Profile{hardware.H100, hardware.L4, hardware.A100_80G} {
		p, err := llm.Plan(f, acc, llm.Tokens(1e7), prices)
		require.NoError(t, err)
		if p.Cost < lowest {
			lowest, want = p.Cost, acc.Name
		}
	}
	assert.Equal(t, want, best.Accelerator)
	assert.InDelta(t, lowest, best.Cost, 1e-12)

	_, err = llm.Cheapest(f, []hardware.Profile{hardware.T4}, llm.Tokens(1e7), prices)
	assert.ErrorContains(t, err, "T4 has no bf16 peak")
	_, err = llm.Cheapest(f, []hardware.Profile{hardware.T4}, llm.Tokens(1e7))
	assert.ErrorContains(t, err, "T4 has no bf16 peak")
	f16 := llm.SFT("c", "Qwen/Qwen2.5-7B-Instruct").AddDataset(alpaca).Output("pvc://m/x").Precision(train.FP16)
	_, err = llm.Cheapest(f16, []hardware.Profile{hardware.T4}, llm.Tokens(1e7), prices)
	// In fp16 the T4 has a peak and the run fits (ZeRO-3 shards the
	// frozen base), but the table has no T4 price.
	assert.ErrorContains(t, err, "T4: no price in Prices")
	_, err = llm.Cheapest(f, []hardware.Profile{hardware.H200}, llm.Tokens(1e7), prices)
	assert.ErrorContains(t, err, "no price")
	_, err = llm.Cheapest(f, nil)
	assert.ErrorContains(t, err, "profiles")
}

// DeepSeek-V3's LoRA count, from its config: 61 layers, MLA projections in
// each, routed experts in the 58 MoE layers, one shared MLP there, dense
// MLPs in the first 3.
func TestLoRAParametersDeepSeekV3(t *testing.T) {
	m := mustLookup("deepseek-ai/DeepSeek-V3")
	r := int64(16)
	h, heads := int64(7168), int64(128)
	attn := (h + 1536) + (1536 + heads*(128+64)) + (h + 512 + 64) + (512 + heads*(128+128)) + (heads*128 + h)
	expert := 3 * (h + 2048)
	dense := 3 * (h + 18432)
	want := r * (61*attn + 58*256*expert + 58*expert + 3*dense)
	n, unmatched := llm.LoRAParameters(m, int(r))
	assert.Empty(t, unmatched)
	assert.Equal(t, want, n)
}

// TestCheckAnswersAPinnedLayout asks the planner about a layout the
// caller chose, with DeepSpeed v0.18.4's ZeRO-2 estimate
// (estimate_zero2_model_states_mem_needs: 2Ψ + 18Ψ/N), which is also
// what lets Plan choose ZeRO-2.
func TestCheckAnswersAPinnedLayout(t *testing.T) {
	qwen := mustLookup("Qwen/Qwen2.5-7B-Instruct")
	psi := qwen.Parameters
	full := llm.SFT("full", qwen.HFID).AddDataset(alpaca).Output("pvc://m/x").FullTuning()

	t.Run("ZeRO-2 on 8 × H100", func(t *testing.T) {
		p, err := llm.Check(full, hardware.H100, llm.Layout{Accelerators: 8, ZeROStage: 2}, llm.Tokens(10_000_000))
		require.NoError(t, err)
		assert.True(t, p.Fits)
		assert.Equal(t, 8, p.Accelerators)
		assert.Equal(t, 1, p.Nodes)
		assert.Equal(t, 2, p.ZeROStage)
		assert.Equal(t, 2*psi+int64(18*float64(psi)/8), p.ModelStateBytesPerDevice)
		assert.Equal(t, int64(float64(psi)*4*8*1.5), p.CPUBytesPerNode)
		assert.Equal(t, p.FrozenBytesPerDevice+p.ModelStateBytesPerDevice+p.ActivationBytesPerDevice+p.OverheadBytesPerDevice, p.NeedBytesPerDevice)
		assert.Positive(t, p.Hours)
		assert.Contains(t, p.String(), "ZeRO-2")
		assert.NotContains(t, p.String(), "does not fit")
	})

	t.Run("a layout that does not fit says by how much", func(t *testing.T) {
		f := llm.SFT("z", "meta-llama/Llama-3.1-70B-Instruct").AddDataset(alpaca).Output("pvc://m/x").FullTuning()
		p, err := llm.Check(f, hardware.H100, llm.Layout{Accelerators: 8, ZeROStage: 2})
		require.NoError(t, err)
		assert.False(t, p.Fits)
		P := mustLookup("meta-llama/Llama-3.1-70B-Instruct").Parameters
		assert.Equal(t, 2*P+int64(18*float64(P)/8), p.ModelStateBytesPerDevice)
		assert.Greater(t, p.NeedBytesPerDevice, p.DeviceBytes)
		assert.Contains(t, p.String(), "does not fit, short by")
	})

	t.Run("Plan chooses ZeRO-2 where it is the lowest stage that fits", func(t *testing.T) {
		pinned, err := llm.Check(full, hardware.H100, llm.Layout{Accelerators: 8, ZeROStage: 2})
		require.NoError(t, err)
		// A device exactly as large as ZeRO-2 on eight needs: ZeRO-3 on
		// four (4·largest + 18Ψ/4) and ZeRO-1 on eight (4Ψ + 12Ψ/8) need
		// more.
		acc := hardware.H100
		acc.MemoryBytes = pinned.NeedBytesPerDevice
		p, err := llm.Plan(full, acc)
		require.NoError(t, err)
		assert.Equal(t, 8, p.Accelerators)
		assert.Equal(t, 2, p.ZeROStage)
		assert.True(t, p.Fits)
	})

	t.Run("8-bit QLoRA is never planned on ZeRO-3", func(t *testing.T) {
		f := ownImage(llm.SFT("q", "meta-llama/Llama-3.1-70B-Instruct").AddDataset(alpaca).Output("pvc://m/x").QLoRA(8, llm.Adapter{Rank: 8}))
		_, err := llm.Plan(f, hardware.L4, llm.MaxNodes(1))
		require.ErrorIs(t, err, llm.ErrDoesNotFit)
		f.QLoRA(4, llm.Adapter{Rank: 8})
		p, err := llm.Plan(f, hardware.L4, llm.MaxNodes(1))
		require.NoError(t, err)
		assert.Equal(t, 3, p.ZeROStage)
	})

	t.Run("DPO on an SFT adapter holds the reference too", func(t *testing.T) {
		base := llm.DPO("d", qwen.HFID).AddDataset(pairs).Output("pvc://m/x")
		p, err := llm.Check(base, hardware.H100, llm.Layout{Accelerators: 1})
		require.NoError(t, err)
		assert.Equal(t, 2*psi, p.FrozenBytesPerDevice)
		resumed, err := llm.Check(base.ResumeFrom("pvc://m/sft"), hardware.H100, llm.Layout{Accelerators: 1})
		require.NoError(t, err)
		assert.Equal(t, 4*psi, resumed.FrozenBytesPerDevice)
	})

	t.Run("layouts that cannot run", func(t *testing.T) {
		q8 := ownImage(llm.SFT("q", qwen.HFID).AddDataset(alpaca).Output("pvc://m/x").QLoRA(8, llm.Adapter{Rank: 8}))
		for name, tc := range map[string]struct {
			f    *llm.FineTune
			l    llm.Layout
			want string
		}{
			"no devices":              {full, llm.Layout{}, "devices 0 must be at least 1"},
			"part of two nodes":       {full, llm.Layout{Accelerators: 12, ZeROStage: 2}, "neither part of one node nor whole nodes"},
			"more than MaxNodes":      {full, llm.Layout{Accelerators: 8 * 17, ZeROStage: 3}, "more than MaxNodes"},
			"stage 4":                 {full, llm.Layout{Accelerators: 8, ZeROStage: 4}, "ZeRO stage 4 must be 0 to 3"},
			"offload at stage 0":      {full, llm.Layout{Accelerators: 8, OffloadOptimizer: true}, "optimizer offloads under ZeRO 1 to 3"},
			"params offload below 3":  {full, llm.Layout{Accelerators: 8, ZeROStage: 2, OffloadParams: true}, "parameters offload under ZeRO-3 only"},
			"8-bit QLoRA on ZeRO-3":   {q8, llm.Layout{Accelerators: 8, ZeROStage: 3}, "8-bit QLoRA cannot run under ZeRO-3"},
			"a nil fine-tune":         {nil, llm.Layout{Accelerators: 8}, "fine-tune: is nil or zero"},
			"a fine-tune that is bad": {llm.SFT("x", qwen.HFID).Output("pvc://m/x"), llm.Layout{Accelerators: 1}, "dataset"},
		} {
			t.Run(name, func(t *testing.T) {
				_, err := llm.Check(tc.f, hardware.H100, tc.l)
				assert.ErrorContains(t, err, tc.want)
			})
		}
	})
}

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
