package llm

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/train"
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
	Devices            int
	NeedBytes          int64
	DeviceBytes        int64
}

func (e *FitError) Error() string {
	return fmt.Sprintf("%s needs %s per device at best (on %d × %s), which have %s: short by %s",
		e.Model, gib(e.NeedBytes), e.Devices, e.Accelerator, gib(e.DeviceBytes), gib(e.NeedBytes-e.DeviceBytes))
}

// Unwrap lets errors.Is(err, ErrDoesNotFit) match.
func (e *FitError) Unwrap() error { return ErrDoesNotFit }

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

// PlanOption changes how Plan plans.
type PlanOption func(*planOptions)

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
			opt(&o)
		}
	}
	return o
}

// Tokens is the number of training tokens of one epoch (samples × their
// mean length); Plan multiplies it by the epochs. Without it Plan sizes
// memory only and reports no time or cost.
func Tokens(n int64) PlanOption {
	return func(o *planOptions) {
		if n < 0 {
			o.problems = append(o.problems, fmt.Errorf("tokens: %d must not be negative", n))
		}
		o.tokens = n
	}
}

// MFU sets the model FLOPs utilisation the time is estimated at (0, 1].
func MFU(f float64) PlanOption {
	return func(o *planOptions) {
		if !(f > 0 && f <= 1) {
			o.problems = append(o.problems, fmt.Errorf("mfu: %v must be in (0, 1]", f))
		}
		o.mfu = f
	}
}

// Prices is the price of one device-hour by hardware profile name
// (hardware.Profile.Name), in the caller's currency.
func Prices(perDeviceHour map[string]float64) PlanOption {
	return func(o *planOptions) {
		o.prices = make(map[string]float64, len(perDeviceHour))
		for k, v := range perDeviceHour {
			if !(v >= 0 && finite(v)) {
				o.problems = append(o.problems, fmt.Errorf("prices[%s]: %v must be finite and not negative", k, v))
			}
			o.prices[k] = v
		}
	}
}

// MaxNodes caps the nodes the planner tries (default 16).
func MaxNodes(n int) PlanOption {
	return func(o *planOptions) {
		if n < 1 {
			o.problems = append(o.problems, fmt.Errorf("max nodes: %d must be at least 1", n))
		}
		o.maxNodes = n
	}
}

// AllowOffload lets the planner offload optimizer state (and, at ZeRO-3,
// parameters) to CPU memory when nothing fits without.
func AllowOffload() PlanOption { return func(o *planOptions) { o.offload = true } }

// RolloutShare sets the share of a PPO run's time spent on rollouts, in
// [0, 1).
func RolloutShare(f float64) PlanOption {
	return func(o *planOptions) {
		if !(f >= 0 && f < 1) {
			o.problems = append(o.problems, fmt.Errorf("rollout share: %v must be in [0, 1)", f))
		}
		o.rolloutShare = f
	}
}

// Overhead sets the per-device memory outside model states and
// activations (default 2 GiB).
func Overhead(bytes int64) PlanOption {
	return func(o *planOptions) {
		if bytes < 0 {
			o.problems = append(o.problems, fmt.Errorf("overhead: %d must not be negative", bytes))
		}
		o.overhead = bytes
	}
}

// AttentionMaps counts the attention score and softmax activations
// (5·a·s²·b bytes per layer in Korthikanti et al.): true for eager
// attention. By default they are not counted: LLaMA-Factory's flash_attn
// "auto" leaves transformers' choice in place
// (model/model_utils/attention.py at v0.9.5), which is PyTorch's SDPA for
// these models, and SDPA's fused kernels do not keep the score matrix.
func AttentionMaps(on bool) PlanOption { return func(o *planOptions) { o.attentionMaps = on } }

// TrainingPlan is how a fine-tune is laid out on an accelerator, what
// each device holds, and how long and how much it takes. Plan makes one.
type TrainingPlan struct {
	Model, Accelerator string
	Stage              Stage
	Method             Method

	// Devices is the accelerator count; Nodes × DevicesPerNode.
	Devices, Nodes, DevicesPerNode int
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
	// Hours is wall-clock time; DeviceHours Hours × Devices; Cost
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
	return TrainingPlan{}, &FitError{Model: p.m.Name, Accelerator: acc.Name, Devices: smallest.Devices,
		NeedBytes: smallest.NeedBytesPerDevice, DeviceBytes: smallest.DeviceBytes}
}

// Layout is a layout of a fine-tune the caller pins, to ask Check about
// it: Devices accelerators in all (up to one node's, or whole nodes),
// the DeepSpeed ZeRO stage and its offloads.
type Layout struct {
	Devices, ZeROStage              int
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
	case l.Devices < 1:
		problems = append(problems, fmt.Errorf("layout: devices %d must be at least 1", l.Devices))
	case acc.MaxPerNode >= 1 && l.Devices > acc.MaxPerNode && l.Devices%acc.MaxPerNode != 0:
		problems = append(problems, fmt.Errorf("layout: %d devices are neither part of one node nor whole nodes of %d × %s", l.Devices, acc.MaxPerNode, acc.Name))
	case err == nil && acc.MaxPerNode >= 1 && l.Devices > p.o.maxNodes*acc.MaxPerNode:
		problems = append(problems, fmt.Errorf("layout: %d devices need more than MaxNodes %d nodes", l.Devices, p.o.maxNodes))
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
	plan := p.size(l.Devices, zeroLayout{stage: l.ZeROStage, offloadOptimizer: l.OffloadOptimizer, offloadParams: l.OffloadParams})
	p.estimate(&plan)
	return plan, nil
}

// newPlanner checks the fine-tune, the profile and the options, and
// finds the model's architecture.
func newPlanner(f *FineTune, acc hardware.Profile, opts []PlanOption) (planner, error) {
	o := newPlanOptions(opts)
	if f == nil || f.job == nil {
		o.problems = append(o.problems, errors.New("fine-tune: is nil or zero"))
		return planner{}, errors.Join(o.problems...)
	}
	model, err := f.modelFacts()
	if err != nil {
		o.problems = append(o.problems, err)
	}
	if err := deviceProblem(acc); err != nil {
		o.problems = append(o.problems, err)
	}
	if acc.Accelerated() && o.tokens > 0 && peakTFLOPS(acc, f.precision) <= 0 {
		o.problems = append(o.problems, fmt.Errorf("accelerator: %s has no %s peak in the catalogue (no %s support): choose another Precision", acc.Name, precisionName(f.precision), precisionName(f.precision)))
	}
	if _, errs := f.render(); len(errs) > 0 {
		o.problems = append(o.problems, fmt.Errorf("fine-tune: %w", errs.ToAggregate()))
	}
	if len(o.problems) > 0 {
		return planner{}, errors.Join(o.problems...)
	}
	return planner{f: f, m: model, acc: acc, o: o}, nil
}

// deviceProblem says why acc cannot be planned for, or nil.
func deviceProblem(acc hardware.Profile) error {
	switch {
	case !acc.Accelerated() || acc.MemoryBytes <= 0:
		return fmt.Errorf("accelerator: %q has no device memory to plan for", acc.Name)
	case acc.MaxPerNode < 1:
		return fmt.Errorf("accelerator: %q has no devices per node", acc.Name)
	}
	return nil
}

// modelFacts finds the architecture: Facts, or market's catalogue. An
// encoder (an embedding or reranking model such as BAAI/bge-m3) is
// refused: LLaMA-Factory trains decoders, and the planner's layer shapes
// (linearLayers) are a decoder's.
func (f *FineTune) modelFacts() (models.Model, error) {
	m, err := factsOf("model", f.model, f.facts, "Facts")
	if err == nil && m.IsEncoder() {
		return models.Model{}, fmt.Errorf("model: %s is an encoder (task %s), and LLaMA-Factory fine-tunes decoders that generate text",
			m.Name, m.Task)
	}
	return m, err
}

// factsOf finds the architecture of the model ref: given, when the caller
// gave it (with the method setter), or market's catalogue entry of a Hugging
// Face or ModelScope id. The error names the field and the setter.
func factsOf(fieldName, ref string, given *models.Model, setter string) (models.Model, error) {
	if given != nil {
		if err := given.Validate(); err != nil {
			return *given, fmt.Errorf("%s: %w", fieldName, err)
		}
		return *given, nil
	}
	src, err := serve.ParseSource(ref)
	if err == nil && (src.Kind == serve.SourceHuggingFace || src.Kind == serve.SourceModelScope) {
		if m, err := models.Lookup(src.Repo); err == nil {
			return m, nil
		}
	}
	return models.Model{}, fmt.Errorf("%s: %q is not in market's catalogue: give its architecture with %s", fieldName, ref, setter)
}

// deviceCounts are the layouts tried, smallest first: 1, 2, 4 … devices
// of one node, then whole nodes.
func deviceCounts(perNode, maxNodes int) []int {
	var out []int
	for n := 1; n < perNode; n *= 2 {
		out = append(out, n)
	}
	for nodes := 1; nodes <= maxNodes; nodes++ {
		out = append(out, nodes*perNode)
	}
	return out
}

type zeroLayout struct {
	stage                           int
	offloadOptimizer, offloadParams bool
}

type planner struct {
	f   *FineTune
	m   models.Model
	acc hardware.Profile
	o   planOptions
}

// layouts are tried in order: lower stages first (less communication),
// offload last and only when allowed. 8-bit QLoRA never gets ZeRO-3,
// which LLaMA-Factory refuses for it.
func (p planner) layouts() []zeroLayout {
	out := []zeroLayout{{stage: 0}, {stage: 1}, {stage: 2}, {stage: 3}}
	if p.o.offload {
		out = append(out, zeroLayout{stage: 2, offloadOptimizer: true}, zeroLayout{stage: 3, offloadOptimizer: true},
			zeroLayout{stage: 3, offloadOptimizer: true, offloadParams: true})
	}
	if p.f.method == QLoRA && p.f.quantBits == 8 {
		out = slices.DeleteFunc(out, func(z zeroLayout) bool { return z.stage == 3 })
	}
	return out
}

// trainable is the parameter count that trains.
func (p planner) trainable() int64 {
	switch p.f.method {
	case LoRA, QLoRA:
		n, _ := LoRAParameters(p.m, p.f.adapter.Rank, p.f.adapter.Targets...)
		return n
	case Freeze:
		// The last freeze_trainable_layers decoder layers train.
		perLayer := (p.m.Parameters - p.outerParameters()) / int64(max(p.m.Layers, 1))
		return perLayer * int64(min(p.f.freezeLayer, p.m.Layers))
	}
	return p.m.Parameters
}

// outerParameters is the embedding, output head and final norm.
func (p planner) outerParameters() int64 { return outerParameters(p.m) }

// outerParameters is m's embedding, output head (unless tied) and final
// norm: the parameters outside its decoder layers.
func outerParameters(m models.Model) int64 {
	embed := int64(m.VocabSize) * int64(m.HiddenSize)
	n := embed + int64(m.HiddenSize)
	if !m.TiedEmbeddings {
		n += embed
	}
	return n
}

// frozenBytes is the frozen weights of the whole run.
func (p planner) frozenBytes() int64 {
	const bf16 = 2
	var b float64
	switch p.f.method {
	case LoRA:
		b = float64(p.m.Parameters) * bf16
	case QLoRA:
		b = p.quantizedBytes()
	case Freeze:
		b = float64(p.m.Parameters-p.trainable()) * bf16
	}
	full := p.f.method == Full || p.f.method == Freeze
	switch {
	case p.usesReference() && p.f.method == LoRA && p.f.resumeFrom != "":
		b += float64(p.m.Parameters) * bf16 // the reference: the base with the resumed adapter (ref_model)
	case p.usesReference() && p.f.method == QLoRA && p.f.resumeFrom != "":
		b += p.quantizedBytes() // the reference, quantized like the policy (ref_model_quantization_bit)
	case p.usesReference() && full:
		b += float64(p.m.Parameters) * bf16 // the reference model
	case p.f.stage == StagePPO && full && p.f.servedReward():
		b += float64(p.m.Parameters) * bf16 // the reference; the reward model is served elsewhere
	case p.f.stage == StagePPO && full:
		b += 2 * float64(p.m.Parameters) * bf16 // reference and reward models
	}
	return int64(math.Ceil(b))
}

// quantizedBytes is the base model under QLoRA: the decoder's linear
// weights at the quantization's bits (NF4 with double-quantized constants
// at 4), the rest in bf16.
func (p planner) quantizedBytes() float64 {
	quantized := layerLinearParameters(p.m)
	bits := 8.0
	if p.f.quantBits == 4 {
		bits = 4 + 0.127
	}
	return float64(quantized)*bits/8 + float64(p.m.Parameters-quantized)*2
}

// largestLayer is DeepSpeed's model_to_params largest_layer_params: the
// largest module's own parameters, the embedding for these models.
func (p planner) largestLayer() int64 {
	n := int64(p.m.VocabSize) * int64(p.m.HiddenSize)
	for _, l := range linearLayers(p.m) {
		n = max(n, l.in*l.out)
	}
	return n
}

// modelStates returns DeepSpeed's GPU and CPU estimates for psi trainable
// parameters on n devices of nodes nodes.
func (p planner) modelStates(psi int64, n, nodes int, z zeroLayout) (gpu, cpu int64) {
	const buffer = 1.5
	perNode := n / nodes
	P := float64(psi)
	switch {
	case z.stage == 0:
		return 16 * psi, 0
	case z.stage == 1 && !z.offloadOptimizer:
		return 4*psi + int64(12*P/float64(n)), 0
	case z.stage <= 2:
		if z.offloadOptimizer {
			return 2 * psi, int64(P * float64(max(4*n, 16)) * buffer)
		}
		// 2 bytes of fp16 parameters whole, and 18 bytes sharded: fp16
		// and fp32 gradients, fp32 master weights, Adam's two moments
		// (estimate_zero2_model_states_mem_needs, runtime/zero/stage_1_and_2.py
		// at DeepSpeed v0.18.4, the newest LLaMA-Factory v0.9.5 allows).
		return 2*psi + int64(18*P/float64(n)), int64(P * 4 * float64(perNode) * buffer)
	}
	// The largest layer is gathered whole, whether it trains or not.
	largest := 4 * p.largestLayer()
	nodesFactor := 1 / float64(nodes)
	switch {
	case z.offloadParams:
		return largest, int64(P * 18 * nodesFactor * buffer)
	case z.offloadOptimizer:
		return largest + int64(2*P/float64(n)), int64(P * 16 * nodesFactor * buffer)
	}
	return largest + int64(18*P/float64(n)), int64(float64(largest/4) * 4 * float64(perNode) * buffer)
}

// sequencesPerSample is how many sequences one sample puts through the
// model: a preference pair's chosen and rejected responses go together
// (LLaMA-Factory's pairwise data collator concatenates them), and KTO
// adds a mismatched KL sample to each.
func (p planner) sequencesPerSample() int {
	switch p.f.stage {
	case StageRM, StageDPO, StageKTO:
		return 2
	}
	return 1
}

// usesReference says the loss runs a frozen reference model forward.
func (p planner) usesReference() bool { return p.f.usesReference() }

// activations is one micro batch's activation memory on one device.
func (p planner) activations() int64 {
	return activationBytes(p.m, int64(p.f.cutoff), int64(p.f.batch)*int64(p.sequencesPerSample()), p.f.checkpointing, p.o.attentionMaps, true)
}

// activationBytes is the activation memory of b sequences of s tokens
// through model m (Korthikanti et al. 2022, §4, no tensor parallelism; see
// Plan): 34·s·b·h bytes a layer (+5·a·s²·b with attention maps), only the
// 2·s·b·h input of each layer and one layer's full activations with
// checkpointing, and the fp32 logits 4·s·b·V when logits is set.
func activationBytes(m models.Model, s, b int64, checkpointing, attentionMaps, logits bool) int64 {
	h, a, L := int64(m.HiddenSize), int64(m.AttentionHeads), int64(m.Layers)
	perLayer := s * b * h * 34
	if attentionMaps {
		perLayer += 5 * a * s * s * b
	}
	var out int64
	if logits {
		out = 4 * s * b * int64(m.VocabSize)
	}
	if checkpointing {
		return L*2*s*b*h + perLayer + out
	}
	return L*perLayer + out
}

func (p planner) size(n int, z zeroLayout) TrainingPlan {
	perNode := min(n, p.acc.MaxPerNode)
	nodes := n / perNode
	psi := p.trainable()
	gpu, cpu := p.modelStates(psi, n, nodes, z)
	frozen := p.frozenBytes()
	if z.stage == 3 {
		frozen = ceilDiv(frozen, int64(n))
	}
	plan := TrainingPlan{
		Model: p.m.Name, Accelerator: p.acc.Name, Stage: p.f.stage, Method: p.f.method,
		Devices: n, Nodes: nodes, DevicesPerNode: perNode,
		ZeROStage: z.stage, OffloadOptimizer: z.offloadOptimizer, OffloadParams: z.offloadParams,
		Parameters: p.m.Parameters, TrainableParameters: psi,
		FrozenBytesPerDevice: frozen, ModelStateBytesPerDevice: gpu, CPUBytesPerNode: cpu,
		ActivationBytesPerDevice: p.activations(), OverheadBytesPerDevice: p.o.overhead,
		DeviceBytes:    p.acc.MemoryBytes,
		SequenceLength: p.f.cutoff, MicroBatch: p.f.batch, Checkpointing: p.f.checkpointing,
	}
	plan.NeedBytesPerDevice = plan.FrozenBytesPerDevice + plan.ModelStateBytesPerDevice + plan.ActivationBytesPerDevice + plan.OverheadBytesPerDevice
	plan.Fits = plan.NeedBytesPerDevice <= plan.DeviceBytes
	return plan
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// estimate fills in time and cost.
func (p planner) estimate(plan *TrainingPlan) {
	plan.MFU = p.o.mfu
	plan.PeakTFLOPS = peakTFLOPS(p.acc, p.f.precision)
	plan.FLOPsPerToken = 6
	if p.f.method == LoRA || p.f.method == QLoRA {
		plan.FLOPsPerToken = 4
	}
	if p.f.checkpointing {
		plan.FLOPsPerToken += 2
	}
	if p.usesReference() {
		plan.FLOPsPerToken += 2 // the reference model's forward pass
	}
	if price, ok := p.o.prices[p.acc.Name]; ok {
		plan.PricePerDeviceHour, plan.HasPrice = price, true
	}
	if p.f.stage == StagePPO {
		plan.RolloutShare = p.o.rolloutShare
	}
	if p.o.tokens == 0 || plan.PeakTFLOPS <= 0 {
		return
	}
	epochs := p.f.epochs
	if p.f.steps > 0 {
		epochs = 1 // MaxSteps: Tokens is taken as the run's tokens
	}
	plan.TrainingTokens = int64(float64(p.o.tokens) * epochs)
	active := p.m.ActiveParameters
	if active == 0 {
		active = p.m.Parameters
	}
	plan.FLOPs = float64(plan.FLOPsPerToken) * float64(active) * float64(plan.TrainingTokens)
	seconds := plan.FLOPs / (float64(plan.Devices) * plan.PeakTFLOPS * 1e12 * plan.MFU)
	seconds /= 1 - plan.RolloutShare
	plan.Hours = seconds / 3600
	plan.DeviceHours = plan.Hours * float64(plan.Devices)
	plan.Cost = plan.DeviceHours * plan.PricePerDeviceHour
}

// peakTFLOPS is one device's dense peak in the run's precision: the
// catalogue's BF16 or FP16 figure. The catalogue has no FP32 figure, so
// fp32 runs get no time estimate.
func peakTFLOPS(acc hardware.Profile, p train.Precision) float64 {
	switch p {
	case train.BF16:
		return acc.BF16TFLOPS
	case train.FP16:
		return acc.FP16TFLOPS
	}
	return 0
}

func precisionName(p train.Precision) string {
	if p == train.FP32 {
		return "fp32"
	}
	return string(p)
}

// Apply sets the plan's layout on the fine-tune: the profile, the
// accelerators per pod, the pod count, the ZeRO stage and the offloads.
func (p TrainingPlan) Apply(f *FineTune, acc hardware.Profile) *FineTune {
	f.Job().On(acc).Accelerators(p.DevicesPerNode).Nodes(p.Nodes)
	f.ZeRO(p.ZeROStage)
	if f != nil {
		f.offloadOptimizer, f.offloadParams = p.OffloadOptimizer, p.OffloadParams
	}
	return f
}

// String explains every figure of the plan, one a line.
func (p TrainingPlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s of %s on %d × %s (%d node(s) × %d), DeepSpeed ZeRO-%d", p.Stage, p.Method, p.Model, p.Devices, p.Accelerator, p.Nodes, p.DevicesPerNode, p.ZeROStage)
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
	fmt.Fprintf(&b, "  time: FLOPs / (%d × %.1f TFLOPS × MFU %.2f)", p.Devices, p.PeakTFLOPS, p.MFU)
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
		return TrainingPlan{}, fmt.Errorf("no profile can run %s: %w", f, errors.Join(reasons...))
	}
	return best, nil
}
