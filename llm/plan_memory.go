package llm

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/train"
)

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
		Accelerators: n, Nodes: nodes, AcceleratorsPerNode: perNode,
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
	seconds := plan.FLOPs / (float64(plan.Accelerators) * plan.PeakTFLOPS * 1e12 * plan.MFU)
	seconds /= 1 - plan.RolloutShare
	plan.Hours = seconds / 3600
	plan.DeviceHours = plan.Hours * float64(plan.Accelerators)
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
