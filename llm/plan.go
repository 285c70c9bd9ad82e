package llm

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cubestudio/cube/hardware"
)

// Planner defaults.
const (
	// DefaultMFU is the model FLOPs utilisation time is estimated at. The
	// Llama 3 paper (Dubey et al. 2024, Table 4) reports 38–43% MFU for
	// BF16 pre-training on H100s, PaLM (Chowdhery et al. 2022, Table 3)
	// 46.2%; fine-tunes of a few nodes with LoRA, short sequences and
	// gradient checkpointing run lower, so cube assumes 0.35 and the
	// caller sets their own measured figure with MFU.
	DefaultMFU = 0.35
	// DefaultRolloutShare is the share of a PPO run's wall time spent
	// generating rollouts (and scoring them) rather than training: an
	// assumption, since it depends on the response length and the
	// generation engine; set it with RolloutShare.
	DefaultRolloutShare = 0.5
	// DefaultOverheadBytes is per-device memory outside the model states
	// and activations: the CUDA (or CANN) context, NCCL/HCCL buffers and
	// allocator fragmentation.
	DefaultOverheadBytes = int64(2) << 30
	// DefaultMaxNodes caps the nodes the planner tries.
	DefaultMaxNodes = 16
)

// ErrDoesNotFit is wrapped by the *FitError Plan returns.
var ErrDoesNotFit = errors.New("fine-tune does not fit")

// FitError says by how much the smallest per-device need, on the largest
// layout tried, misses a device's memory.
type FitError struct {
	Model, Accelerator string
	Accelerators       int
	NeedBytes          int64
	DeviceBytes        int64
}

func (e *FitError) Error() string {
	return fmt.Sprintf("%s needs %s per device at best (on %d × %s), which have %s: short by %s",
		e.Model, gib(e.NeedBytes), e.Accelerators, e.Accelerator, gib(e.DeviceBytes), gib(e.NeedBytes-e.DeviceBytes))
}

// Unwrap lets errors.Is(err, ErrDoesNotFit) match.
func (e *FitError) Unwrap() error { return ErrDoesNotFit }

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

// PlanOption changes how Plan, Check, Cheapest and PlanRL plan: the
// values Tokens, MFU, Prices, MaxNodes, RolloutShare, Overhead and
// AttentionMaps return, and AllowOffload.
type PlanOption interface{ applyToPlan(*planOptions) }

// planOptionFunc is an option with a value, checked when it is applied.
type planOptionFunc func(*planOptions)

func (f planOptionFunc) applyToPlan(o *planOptions) { f(o) }

// planFlag is an option without a value.
type planFlag int

// AllowOffload lets the planner offload optimizer state (and, at ZeRO-3,
// parameters) to CPU memory when nothing fits without.
const AllowOffload planFlag = 1

func (f planFlag) applyToPlan(o *planOptions) {
	if f == AllowOffload {
		o.offload = true
	}
}

type planOptions struct {
	tokens        int64
	mfu           float64
	prices        map[string]float64
	maxNodes      int
	offload       bool
	rolloutShare  float64
	overhead      int64
	attentionMaps bool
	problems      []error
}

// newPlanOptions is the defaults with opts applied in order.
func newPlanOptions(opts []PlanOption) planOptions {
	o := planOptions{mfu: DefaultMFU, maxNodes: DefaultMaxNodes, rolloutShare: DefaultRolloutShare, overhead: DefaultOverheadBytes}
	for _, opt := range opts {
		if opt != nil {
			opt.applyToPlan(&o)
		}
	}
	return o
}

// Tokens is the number of training tokens of one epoch (samples × their
// mean length); Plan multiplies it by the epochs. Without it Plan sizes
// memory only and reports no time or cost.
func Tokens(n int64) PlanOption {
	return planOptionFunc(func(o *planOptions) {
		if n < 0 {
			o.problems = append(o.problems, fmt.Errorf("tokens: %d must not be negative", n))
		}
		o.tokens = n
	})
}

// MFU sets the model FLOPs utilisation the time is estimated at (0, 1].
func MFU(f float64) PlanOption {
	return planOptionFunc(func(o *planOptions) {
		if !(f > 0 && f <= 1) {
			o.problems = append(o.problems, fmt.Errorf("mfu: %v must be in (0, 1]", f))
		}
		o.mfu = f
	})
}

// Prices is the price of one device-hour by hardware profile name
// (hardware.Profile.Name), in the caller's currency.
func Prices(perDeviceHour map[string]float64) PlanOption {
	return planOptionFunc(func(o *planOptions) {
		o.prices = make(map[string]float64, len(perDeviceHour))
		for k, v := range perDeviceHour {
			if !(v >= 0 && finite(v)) {
				o.problems = append(o.problems, fmt.Errorf("prices[%s]: %v must be finite and not negative", k, v))
			}
			o.prices[k] = v
		}
	})
}

// MaxNodes caps the nodes the planner tries (default 16).
func MaxNodes(n int) PlanOption {
	return planOptionFunc(func(o *planOptions) {
		if n < 1 {
			o.problems = append(o.problems, fmt.Errorf("max nodes: %d must be at least 1", n))
		}
		o.maxNodes = n
	})
}

// RolloutShare sets the share of a PPO run's time spent on rollouts, in
// [0, 1).
func RolloutShare(f float64) PlanOption {
	return planOptionFunc(func(o *planOptions) {
		if !(f >= 0 && f < 1) {
			o.problems = append(o.problems, fmt.Errorf("rollout share: %v must be in [0, 1)", f))
		}
		o.rolloutShare = f
	})
}

// Overhead sets the per-device memory outside model states and
// activations (default 2 GiB).
func Overhead(bytes int64) PlanOption {
	return planOptionFunc(func(o *planOptions) {
		if bytes < 0 {
			o.problems = append(o.problems, fmt.Errorf("overhead: %d must not be negative", bytes))
		}
		o.overhead = bytes
	})
}

// AttentionMaps counts the attention score and softmax activations
// (5·a·s²·b bytes per layer in Korthikanti et al.): true for eager
// attention. By default they are not counted: LLaMA-Factory's flash_attn
// "auto" leaves transformers' choice in place
// (model/model_utils/attention.py at v0.9.5), which is PyTorch's SDPA for
// these models, and SDPA's fused kernels do not keep the score matrix.
func AttentionMaps(on bool) PlanOption {
	return planOptionFunc(func(o *planOptions) { o.attentionMaps = on })
}

// TrainingPlan is how a fine-tune is laid out on an accelerator, what
// each device holds, and how long and how much it takes. Plan makes one.
type TrainingPlan struct {
	Model, Accelerator string
	Stage              Stage
	Method             Method

	// Accelerators is the accelerator count; Nodes × AcceleratorsPerNode.
	Accelerators, Nodes, AcceleratorsPerNode int
	// ZeROStage and the offloads are the DeepSpeed settings that fit.
	ZeROStage                       int
	OffloadOptimizer, OffloadParams bool

	// Parameters is the model's total count; TrainableParameters what
	// trains (the LoRA adapter's exact count for LoRA and QLoRA).
	Parameters, TrainableParameters int64
	// FrozenBytesPerDevice is the frozen base weights one device holds
	// (LoRA, QLoRA; a DPO reference model or PPO reward/reference model).
	FrozenBytesPerDevice int64
	// ModelStateBytesPerDevice is DeepSpeed's estimate for the trainable
	// parameters, their gradients and the Adam states on one device.
	ModelStateBytesPerDevice int64
	// CPUBytesPerNode is DeepSpeed's estimate of the CPU memory a node needs.
	CPUBytesPerNode int64
	// ActivationBytesPerDevice is the activations of one micro batch.
	ActivationBytesPerDevice int64
	// OverheadBytesPerDevice is context, communication buffers, fragmentation.
	OverheadBytesPerDevice int64
	// NeedBytesPerDevice is the sum; DeviceBytes what one device has.
	NeedBytesPerDevice, DeviceBytes int64
	// Fits says NeedBytesPerDevice is within DeviceBytes: always so for
	// Plan, the answer to the question for Check.
	Fits bool

	// SequenceLength and MicroBatch are the cutoff_len and per-device
	// batch the activations are sized for; Checkpointing says whether
	// gradient checkpointing is on.
	SequenceLength, MicroBatch int
	Checkpointing              bool

	// TrainingTokens is Tokens × epochs; FLOPs the training compute;
	// FLOPsPerToken the multiple of the active parameters per token
	// (6 for full training, 4 when only adapters train, +2 when
	// activations are recomputed).
	TrainingTokens int64
	FLOPsPerToken  int
	FLOPs          float64
	// PeakTFLOPS is one device's dense peak in the run's precision; MFU
	// the assumed utilisation.
	PeakTFLOPS, MFU float64
	// RolloutShare is the assumed share of time spent on PPO rollouts.
	RolloutShare float64
	// Hours is wall-clock time; DeviceHours Hours × Accelerators; Cost
	// DeviceHours × the price (0 when the caller gave none for the profile).
	Hours, DeviceHours, Cost float64
	// PricePerDeviceHour is the price used; HasPrice whether there was one.
	PricePerDeviceHour float64
	HasPrice           bool
}

// Plan finds the smallest number of accelerators of profile acc, and the
// lowest ZeRO stage on it, whose memory holds the fine-tune f, and
// estimates its time and cost.
//
// Memory per device is the sum of:
//
//   - model states of what trains, Ψ parameters on N devices, by ZeRO
//     stage (mixed-precision Adam, K = 12 bytes of fp32 state per
//     parameter, Rajbhandari et al. 2020, "ZeRO", §3): stage 0
//     (2+2+K)Ψ = 16Ψ; stage 1 4Ψ + 12Ψ/N; stages 2 and 3 exactly as
//     DeepSpeed's estimators compute them: stage 2
//     (estimate_zero2_model_states_mem_needs, runtime/zero/stage_1_and_2.py
//     at DeepSpeed v0.18.4) 2Ψ + ⌊18Ψ/N⌋, or 2Ψ with the optimizer offloaded; stage 3
//     (estimate_zero3_model_states_mem_needs, runtime/zero/stage3.py)
//     4·largest layer + ⌊18Ψ/N⌋, 4·largest layer + ⌊2Ψ/N⌋ with the
//     optimizer offloaded, 4·largest layer with parameters too. The CPU
//     side uses the same functions with zero_init and their buffer
//     factor 1.5 (stage 1 offload uses stage 2's, the code is shared).
//   - frozen weights: the base model under LoRA at its precision (2 bytes
//     per parameter in bf16), under QLoRA the decoder's linear weights at
//     4 bits plus 0.127 bits of double-quantized constants (Dettmers et
//     al. 2023, "QLoRA", §3) or 8 bits, the rest in bf16; a full DPO's
//     reference model and a full PPO's reference and reward models in
//     bf16 (the reference only, with a served reward model). ZeRO-3
//     partitions frozen weights too (÷N).
//   - activations of one micro batch of b sequences of s tokens, hidden
//     size h, a heads, L layers (Korthikanti et al. 2022, "Reducing
//     Activation Recomputation in Large Transformer Models", §4, no
//     tensor parallelism): s·b·h·(34 + 5·a·s/h) bytes per layer, the
//     5·a·s/h term only with AttentionMaps; with gradient checkpointing
//     only each layer's input, 2·s·b·h bytes, is kept per layer, plus one
//     layer's full activations while it is recomputed; plus the logits
//     in fp32 for the loss, 4·s·b·V bytes. The coefficient 34 is the
//     paper's, for multi-head attention and a 4h GeLU MLP, used as
//     written: grouped-query attention stores less and a SwiGLU MLP of
//     another width more, so the figure is the paper's, not a
//     measurement of these models. Reward-model, DPO and KTO
//     samples are two sequences each (chosen and rejected; KTO's KL
//     sample), so b is twice the micro batch there.
//   - Overhead.
//
// Time is FLOPs / (devices × peak × MFU), FLOPs = k·N_active·D with D the
// training tokens (Kaplan et al. 2020: 6ND for forward and backward), k
// = 6 for full and freeze tuning, 4 for LoRA and QLoRA (no weight
// gradients for the frozen base), +2 with gradient checkpointing (one
// more forward), +2 for DPO and KTO's reference forward (D counts every
// sequence, chosen and rejected alike); a PPO run's time is divided by (1 − RolloutShare).
// Cost is device-hours × the caller's price.
//
// When nothing fits on MaxNodes nodes Plan returns a *FitError.
func Plan(f *FineTune, acc hardware.Profile, opts ...PlanOption) (TrainingPlan, error) {
	p, err := newPlanner(f, acc, opts)
	if err != nil {
		return TrainingPlan{}, err
	}
	var smallest TrainingPlan
	for _, n := range deviceCounts(acc.MaxPerNode, p.o.maxNodes) {
		for _, layout := range p.layouts() {
			plan := p.size(n, layout)
			if smallest.NeedBytesPerDevice == 0 || plan.NeedBytesPerDevice < smallest.NeedBytesPerDevice {
				smallest = plan
			}
			if plan.Fits {
				p.estimate(&plan)
				return plan, nil
			}
		}
	}
	return TrainingPlan{}, &FitError{Model: p.m.Name, Accelerator: acc.Name, Accelerators: smallest.Accelerators,
		NeedBytes: smallest.NeedBytesPerDevice, DeviceBytes: smallest.DeviceBytes}
}

// Layout is a layout of a fine-tune the caller pins, to ask Check about
// it: Accelerators in all (up to one node's, or whole nodes),
// the DeepSpeed ZeRO stage and its offloads.
type Layout struct {
	Accelerators, ZeROStage         int
	OffloadOptimizer, OffloadParams bool
}

// Check answers a pinned question, such as "ZeRO-2 on 8 × H100: does it
// fit, and what does each device hold?": it sizes f on layout l of
// accelerators acc by the same formulas as Plan, which chooses, and
// returns the plan with Fits saying whether the need per device is
// within the device's memory, and the time and cost (with Tokens and
// Prices). Only a layout that cannot run is an error: one that
// LLaMA-Factory or DeepSpeed refuses (8-bit QLoRA under ZeRO-3,
// parameter offload below ZeRO-3), a device count that is neither part
// of one node nor whole nodes, or more nodes than MaxNodes allows.
func Check(f *FineTune, acc hardware.Profile, l Layout, opts ...PlanOption) (TrainingPlan, error) {
	var problems []error
	p, err := newPlanner(f, acc, opts)
	if err != nil {
		problems = append(problems, err)
	}
	switch {
	case l.Accelerators < 1:
		problems = append(problems, fmt.Errorf("layout: devices %d must be at least 1", l.Accelerators))
	case acc.MaxPerNode >= 1 && l.Accelerators > acc.MaxPerNode && l.Accelerators%acc.MaxPerNode != 0:
		problems = append(problems, fmt.Errorf("layout: %d devices are neither part of one node nor whole nodes of %d × %s", l.Accelerators, acc.MaxPerNode, acc.Name))
	case err == nil && acc.MaxPerNode >= 1 && l.Accelerators > p.o.maxNodes*acc.MaxPerNode:
		problems = append(problems, fmt.Errorf("layout: %d devices need more than MaxNodes %d nodes", l.Accelerators, p.o.maxNodes))
	}
	if l.ZeROStage < 0 || l.ZeROStage > 3 {
		problems = append(problems, fmt.Errorf("layout: ZeRO stage %d must be 0 to 3", l.ZeROStage))
	}
	if l.OffloadOptimizer && l.ZeROStage < 1 {
		problems = append(problems, errors.New("layout: the optimizer offloads under ZeRO 1 to 3 only"))
	}
	if l.OffloadParams && l.ZeROStage != 3 {
		problems = append(problems, errors.New("layout: parameters offload under ZeRO-3 only"))
	}
	if f != nil && f.method == QLoRA && f.quantBits == 8 && l.ZeROStage == 3 {
		problems = append(problems, errors.New("layout: 8-bit QLoRA cannot run under ZeRO-3 (LLaMA-Factory: only 4-bit quantized models can)"))
	}
	if len(problems) > 0 {
		return TrainingPlan{}, errors.Join(problems...)
	}
	plan := p.size(l.Accelerators, zeroLayout{stage: l.ZeROStage, offloadOptimizer: l.OffloadOptimizer, offloadParams: l.OffloadParams})
	p.estimate(&plan)
	return plan, nil
}

// Apply sets the plan's layout on the fine-tune: the profile, the
// accelerators per pod, the pod count, the ZeRO stage and the offloads.
func (p TrainingPlan) Apply(f *FineTune, acc hardware.Profile) *FineTune {
	f.Job().On(acc).Accelerators(p.AcceleratorsPerNode).Nodes(p.Nodes)
	f.ZeRO(p.ZeROStage)
	if f != nil {
		f.offloadOptimizer, f.offloadParams = p.OffloadOptimizer, p.OffloadParams
	}
	return f
}

// String explains every figure of the plan, one a line.
func (p TrainingPlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s of %s on %d × %s (%d node(s) × %d), DeepSpeed ZeRO-%d", p.Stage, p.Method, p.Model, p.Accelerators, p.Accelerator, p.Nodes, p.AcceleratorsPerNode, p.ZeROStage)
	if p.OffloadOptimizer {
		b.WriteString(", optimizer offloaded to CPU")
	}
	if p.OffloadParams {
		b.WriteString(", parameters offloaded to CPU")
	}
	fmt.Fprintf(&b, "\n  parameters: %d total, %d trainable\n", p.Parameters, p.TrainableParameters)
	fmt.Fprintf(&b, "  per device: %s of %s", gib(p.NeedBytesPerDevice), gib(p.DeviceBytes))
	if !p.Fits {
		fmt.Fprintf(&b, ": does not fit, short by %s", gib(p.NeedBytesPerDevice-p.DeviceBytes))
	}
	b.WriteString("\n")
	fmt.Fprintf(&b, "    frozen weights   %s\n", gib(p.FrozenBytesPerDevice))
	fmt.Fprintf(&b, "    model states     %s (trainable weights, gradients, Adam; DeepSpeed's ZeRO-%d estimate)\n", gib(p.ModelStateBytesPerDevice), p.ZeROStage)
	ckpt := "off"
	if p.Checkpointing {
		ckpt = "on"
	}
	fmt.Fprintf(&b, "    activations      %s (micro batch %d × %d tokens, checkpointing %s; Korthikanti et al. 2022)\n", gib(p.ActivationBytesPerDevice), p.MicroBatch, p.SequenceLength, ckpt)
	fmt.Fprintf(&b, "    overhead         %s\n", gib(p.OverheadBytesPerDevice))
	if p.CPUBytesPerNode > 0 {
		fmt.Fprintf(&b, "  CPU memory per node: %s (DeepSpeed's estimate, buffer factor 1.5)\n", gib(p.CPUBytesPerNode))
	}
	if p.FLOPs == 0 {
		b.WriteString("  time: not estimated (give Tokens)\n")
		return b.String()
	}
	fmt.Fprintf(&b, "  compute: %d × active parameters × %d tokens = %.3g FLOPs\n", p.FLOPsPerToken, p.TrainingTokens, p.FLOPs)
	fmt.Fprintf(&b, "  time: FLOPs / (%d × %.1f TFLOPS × MFU %.2f)", p.Accelerators, p.PeakTFLOPS, p.MFU)
	if p.RolloutShare > 0 {
		fmt.Fprintf(&b, " / (1 − rollout share %.2f)", p.RolloutShare)
	}
	fmt.Fprintf(&b, " = %.2f h, %.1f device-hours\n", p.Hours, p.DeviceHours)
	if p.HasPrice {
		fmt.Fprintf(&b, "  cost: %.1f device-hours × %.2f = %.2f\n", p.DeviceHours, p.PricePerDeviceHour, p.Cost)
	} else {
		fmt.Fprintf(&b, "  cost: no price for %s\n", p.Accelerator)
	}
	return b.String()
}

// Cheapest plans f on every profile of profiles and returns the plan of
// least cost (Tokens and Prices are required; a profile without a price is
// left out and said so), ties broken by fewer device-hours. It fails when
// no profile fits, with each profile's reason.
func Cheapest(f *FineTune, profiles []hardware.Profile, opts ...PlanOption) (TrainingPlan, error) {
	var best TrainingPlan
	found := false
	var reasons []error
	if len(profiles) == 0 {
		return TrainingPlan{}, errors.New("profiles: at least one profile is required")
	}
	for _, acc := range profiles {
		p, err := Plan(f, acc, opts...)
		switch {
		case err != nil:
			reasons = append(reasons, fmt.Errorf("%s: %w", acc.Name, err))
			continue
		case p.FLOPs == 0:
			reasons = append(reasons, fmt.Errorf("%s: no time estimate: give Tokens", acc.Name))
			continue
		case !p.HasPrice:
			reasons = append(reasons, fmt.Errorf("%s: no price in Prices", acc.Name))
			continue
		}
		if !found || p.Cost < best.Cost || (p.Cost == best.Cost && p.DeviceHours < best.DeviceHours) {
			best, found = p, true
		}
	}
	if !found {
		return TrainingPlan{}, fmt.Errorf("no profile can run %s: %w", f.describe(), errors.Join(reasons...))
	}
	return best, nil
}
