package serve

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/models"
)

// Planner defaults. They follow vLLM's OpenAI server: gpu_memory_utilization
// 0.9 (the value most releases and their documentation use), 16-token KV
// blocks (128 on Ascend NPUs, vLLM-Ascend's block size), and the batch
// limits vLLM's EngineArgs._set_default_args picks by device: 8192 batched
// tokens and 1024 sequences on devices of at least 70 GiB that are not an
// A100, 2048 and 256 elsewhere.
const (
	DefaultMemoryUtilization = 0.9
	KVBlockSize              = 16
	AscendKVBlockSize        = 128
	DefaultMaxNodes          = 16

	// DefaultOverheadBytes is what a device needs outside vLLM's share
	// (1 - gpu_memory_utilization of its memory): the CUDA (or CANN)
	// context, NCCL/HCCL buffers and captured CUDA graphs. vLLM initialises
	// NCCL before it takes the memory snapshot its share is measured
	// against, and captures CUDA graphs after it has sized the KV cache, so
	// neither comes out of the share (vllm/v1/worker/gpu_worker.py,
	// init_device and determine_available_memory); a start-up with less
	// free memory than the share fails. VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1
	// (vllm/envs.py, off by default) moves the graphs' estimate into the
	// share; the planner assumes the default. vLLM-Ascend differs: its
	// NPUWorker takes the snapshot before it initialises the distributed
	// environment (vllm_ascend/worker/worker.py _init_device), so the HCCL
	// buffers of the rank's groups, 2 × HCCL_BUFFSIZE (200 MB by CANN's
	// default) per communicator, come out of the share. The planner does not
	// subtract them: on Ascend with TP or PP above 1 its KV figure is high by
	// about 400 MB per group; lower MemoryUtilization to keep the margin.
	DefaultOverheadBytes = int64(1) << 30

	activationBytes = 2 // activations run in 16-bit
	logitBytes      = 4 // the sampler upcasts logits to fp32

	largeDeviceBytes = int64(70) << 30
)

// defaultBatching is vLLM's max_num_batched_tokens and max_num_seqs for an
// OpenAI server on acc.
func defaultBatching(acc hardware.Profile) (tokens, sequences int) {
	// vLLM tests "a100" in the CUDA device name (NVIDIA A100-SXM4-80GB).
	a100 := strings.Contains(strings.ToLower(acc.Product+" "+acc.Name), "a100")
	if deviceMemory(acc) >= largeDeviceBytes && !a100 {
		return 8192, 1024
	}
	return 2048, 256
}

// blockSize is the KV-cache block of the engine on acc.
func blockSize(acc hardware.Profile) int {
	if acc.Vendor == hardware.Huawei {
		return AscendKVBlockSize
	}
	return KVBlockSize
}

// deviceMemory is the memory of one device as the engine sees it: the
// profile's MemoryBytes, which the hardware catalogue holds as the driver
// reports it (GPU Feature Discovery's nvidia.com/gpu.memory), the figure
// vLLM's share is of. A card the catalogue lacks, or one whose driver
// reports another size, is described by a copy of its profile with that
// MemoryBytes.
func deviceMemory(acc hardware.Profile) int64 { return acc.MemoryBytes }

// ErrDoesNotFit is wrapped by the *FitError Plan returns when no layout
// within its limits holds the model.
var ErrDoesNotFit = errors.New("model does not fit")

// FitError says by how much a model misses the memory of the largest layout
// Plan was allowed to try.
type FitError struct {
	Model, Accelerator string
	// TensorParallel, PipelineParallel and Nodes describe the largest layout
	// tried.
	TensorParallel, PipelineParallel, Nodes int
	// NeedBytes is what one device needs: weights, reserve and the KV cache
	// of one sequence at the planned context length.
	NeedBytes int64
	// UsableBytes is gpu_memory_utilization × device memory.
	UsableBytes int64
}

// ShortBytes is how many bytes per device are missing.
func (e *FitError) ShortBytes() int64 { return e.NeedBytes - e.UsableBytes }

func (e *FitError) Error() string {
	return fmt.Sprintf("needs %s per device at %s but %s has %s usable: short by %s",
		gib(e.NeedBytes), layout(e.TensorParallel, e.PipelineParallel, e.Nodes),
		e.Accelerator, gib(e.UsableBytes), gib(e.ShortBytes()))
}

// Unwrap lets errors.Is(err, ErrDoesNotFit) match.
func (e *FitError) Unwrap() error { return ErrDoesNotFit }

func layout(tp, pp, nodes int) string {
	s := fmt.Sprintf("TP=%d", tp)
	if pp > 1 {
		s += fmt.Sprintf(", PP=%d", pp)
	}
	if nodes > 1 {
		s += fmt.Sprintf(" (%d nodes)", nodes)
	}
	return s
}

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

// PlanResult is how a model is laid out on an accelerator and what memory
// each device spends on what. serve.Plan computes it.
type PlanResult struct {
	// Model and Accelerator are the names of what was planned.
	Model, Accelerator string

	// TensorParallel is vLLM's --tensor-parallel-size: the ranks one layer
	// is split across, within a node.
	TensorParallel int
	// PipelineParallel is --pipeline-parallel-size: the stages the layers
	// are split into.
	PipelineParallel int
	// Nodes is how many nodes one replica spans; more than one means a
	// multi-node (LeaderWorkerSet) deployment.
	Nodes int
	// DevicesPerNode is how many accelerators each of those nodes gives the
	// replica.
	DevicesPerNode int

	// ContextLength is the --max-model-len the plan was made for.
	ContextLength int
	// MemoryUtilization is --gpu-memory-utilization.
	MemoryUtilization float64
	// WeightDType and KVCacheDType are the formats weights and KV cache are
	// sized in.
	WeightDType, KVCacheDType models.DType
	// BlockSize is the number of tokens in one KV-cache block.
	BlockSize int

	// DeviceMemoryBytes is the memory of one device: the profile's
	// MemoryBytes, the size the driver reports (GPU Feature Discovery's
	// nvidia.com/gpu.memory).
	DeviceMemoryBytes int64
	// HeadroomBytesPerDevice is the memory outside vLLM's share, for the
	// CUDA context, NCCL buffers and CUDA graphs.
	HeadroomBytesPerDevice int64
	// MaxBatchedTokens and MaxSequences are the batch limits the reserve is
	// sized for (vLLM's defaults for the device unless set).
	MaxBatchedTokens, MaxSequences int
	// UsableBytesPerDevice is ⌈MemoryUtilization × DeviceMemoryBytes⌉, the
	// memory vLLM claims.
	UsableBytesPerDevice int64
	// WeightBytesPerDevice is the weights one device holds.
	WeightBytesPerDevice int64
	// ReserveBytesPerDevice is held back inside the share for the
	// activations and logits of vLLM's profiling run (see the package
	// documentation).
	ReserveBytesPerDevice int64
	// KVCacheBytesPerDevice is what is left for the KV cache on one device.
	KVCacheBytesPerDevice int64
	// KVCacheBytes is the KV-cache memory of all devices of the replica.
	KVCacheBytes int64

	// KVBytesPerToken is the model's KV bytes per token over all layers,
	// before any split (models.Model.KVBytesPerToken).
	KVBytesPerToken int64
	// KVBytesPerTokenPerDevice is one device's share: its layers, its KV
	// heads (replicated when TP exceeds them, all of an MLA latent).
	KVBytesPerTokenPerDevice int64

	// KVBlocks is the number of KV-cache blocks of the replica (every rank
	// holds the same number, each for its share of heads and layers).
	KVBlocks int64
	// KVTokenCapacity is KVBlocks × BlockSize: the tokens the replica can
	// hold in flight.
	KVTokenCapacity int64
	// MaxConcurrentSequences is how many sequences of ContextLength tokens
	// fit at once (vLLM's "maximum concurrency").
	MaxConcurrentSequences int64
}

// Devices is the accelerator count of one replica.
func (p PlanResult) Devices() int { return p.TensorParallel * p.PipelineParallel }

// String prints the plan for people, one fact a line.
func (p PlanResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %s: TP=%d × PP=%d, %s × %s\n",
		p.Model, p.Accelerator, p.TensorParallel, p.PipelineParallel,
		plural(p.Nodes, "node"), plural(p.DevicesPerNode, "device"))
	fmt.Fprintf(&b, "  per device: %s usable (%g of %s) = %s weights (%s) + %s activations + %s KV cache (%s); %s outside for runtime, NCCL and CUDA graphs\n",
		gib(p.UsableBytesPerDevice), p.MemoryUtilization, gib(p.DeviceMemoryBytes),
		gib(p.WeightBytesPerDevice), p.WeightDType, gib(p.ReserveBytesPerDevice),
		gib(p.KVCacheBytesPerDevice), p.KVCacheDType, gib(p.HeadroomBytesPerDevice))
	fmt.Fprintf(&b, "  KV cache: %s a token per device (model: %s a token), %d blocks of %d = %d tokens\n",
		kib(p.KVBytesPerTokenPerDevice), kib(p.KVBytesPerToken), p.KVBlocks, p.BlockSize, p.KVTokenCapacity)
	fmt.Fprintf(&b, "  at %d tokens a sequence: %s at once",
		p.ContextLength, plural(int(min(p.MaxConcurrentSequences, math.MaxInt32)), "sequence"))
	return b.String()
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func kib(b int64) string {
	if b%1024 == 0 {
		return fmt.Sprintf("%d KiB", b/1024)
	}
	return fmt.Sprintf("%.1f KiB", float64(b)/1024)
}

// PlanOption changes how Plan sizes a deployment.
type PlanOption interface {
	applyPlan(*planOptions)
}

type planOptions struct {
	contextLength    int
	utilization      float64
	kvDType          models.DType
	weightDType      models.DType
	maxTP            int
	tp               int
	maxNodes         int
	overhead         int64
	maxBatchedTokens int
	maxSequences     int
	// set names the options given, for messages.
	set map[string]bool
}

type planOptionFunc func(*planOptions)

func (f planOptionFunc) applyPlan(o *planOptions) { f(o) }

// ContextLength plans for sequences of n tokens (vLLM --max-model-len)
// instead of the model's full context.
func ContextLength(n int) PlanOption {
	return planOptionFunc(func(o *planOptions) { o.contextLength = n; o.mark("contextLength") })
}

// MemoryUtilization sets the fraction of each device's total memory vLLM
// may claim (--gpu-memory-utilization, default 0.9).
func MemoryUtilization(f float64) PlanOption {
	return planOptionFunc(func(o *planOptions) { o.utilization = f; o.mark("utilization") })
}

// KVCacheDType sizes the KV cache in format d (--kv-cache-dtype); models.FP8
// halves it. The default is the model's 16-bit compute format: FP16 for
// FP16 and FP32 checkpoints, BF16 otherwise.
func KVCacheDType(d models.DType) PlanOption {
	return planOptionFunc(func(o *planOptions) { o.kvDType = d; o.mark("kvCacheDType") })
}

// WeightDType sizes the weights in format d (FP8, INT8 or INT4 for a
// quantized checkpoint) instead of the format the model is published in
// (PlanResult.WeightDType). The quantization method that produced such a
// checkpoint (awq, gptq…) is Service.Quantization; Auto derives the format
// from it.
func WeightDType(d models.DType) PlanOption {
	return planOptionFunc(func(o *planOptions) { o.weightDType = d; o.mark("weightDType") })
}

// MaxTensorParallel caps the tensor-parallel size Plan may choose (it never
// exceeds the accelerator's devices per node).
func MaxTensorParallel(n int) PlanOption {
	return planOptionFunc(func(o *planOptions) { o.maxTP = n; o.mark("maxTensorParallel") })
}

// TensorParallel forces the tensor-parallel size; Plan then only adds
// pipeline stages if the model does not fit.
func TensorParallel(n int) PlanOption {
	return planOptionFunc(func(o *planOptions) { o.tp = n; o.mark("tensorParallel") })
}

// MaxNodes caps how many nodes one replica may span (default 16).
func MaxNodes(n int) PlanOption {
	return planOptionFunc(func(o *planOptions) { o.maxNodes = n; o.mark("maxNodes") })
}

// Overhead replaces what a device needs outside vLLM's share for the
// runtime context, communication buffers and CUDA graphs (default 1 GiB):
// Plan refuses a MemoryUtilization that leaves less.
func Overhead(bytes int64) PlanOption {
	return planOptionFunc(func(o *planOptions) { o.overhead = bytes; o.mark("overhead") })
}

// MaxBatchedTokens sets the tokens of one forward pass the activation
// reserve is sized for (--max-num-batched-tokens; vLLM's default is 8192
// on devices of 70 GiB or more other than the A100, 2048 elsewhere).
func MaxBatchedTokens(n int) PlanOption {
	return planOptionFunc(func(o *planOptions) { o.maxBatchedTokens = n; o.mark("maxBatchedTokens") })
}

// MaxSequences sets the sequences of one batch the logits reserve is sized
// for (--max-num-seqs; vLLM's default is 1024 where it batches 8192
// tokens, 256 elsewhere).
func MaxSequences(n int) PlanOption {
	return planOptionFunc(func(o *planOptions) { o.maxSequences = n; o.mark("maxSequences") })
}

func (o *planOptions) mark(name string) {
	if o.set == nil {
		o.set = map[string]bool{}
	}
	o.set[name] = true
}

// Plan chooses how to serve model on accelerator acc with vLLM and sizes
// its memory: the smallest power-of-two tensor-parallel size up to the
// node's devices that divides the attention heads and fits; failing that,
// the largest such size with pipeline stages added across nodes until the
// model fits. It returns a *FitError (errors.Is ErrDoesNotFit) saying by how
// much the model misses when nothing within the limits fits, and every
// invalid input at once as a field.ErrorList aggregate.
func Plan(model models.Model, acc hardware.Profile, opts ...PlanOption) (PlanResult, error) {
	tokens, sequences := defaultBatching(acc)
	o := planOptions{
		contextLength:    model.ContextLength,
		utilization:      DefaultMemoryUtilization,
		kvDType:          defaultKVDType(model.DType),
		weightDType:      model.DType,
		maxTP:            acc.MaxPerNode,
		maxNodes:         DefaultMaxNodes,
		overhead:         DefaultOverheadBytes,
		maxBatchedTokens: tokens,
		maxSequences:     sequences,
	}
	for _, opt := range opts {
		opt.applyPlan(&o)
	}
	if err := validatePlan(model, acc, o); err != nil {
		return PlanResult{}, fmt.Errorf("plan %s on %s: %w", model.Name, acc.Name, err)
	}

	p := planner{model: model, acc: acc, o: o}
	var tps []int
	if o.tp > 0 {
		tps = []int{o.tp}
	} else {
		// TP=1 always splits, so tps is never empty.
		for tp := 1; tp <= min(acc.MaxPerNode, o.maxTP); tp *= 2 {
			if p.splits(tp) {
				tps = append(tps, tp)
			}
		}
	}

	// One node, one stage, smallest TP first.
	var last PlanResult
	for _, tp := range tps {
		r := p.size(tp, 1)
		if r.fits() {
			return r, nil
		}
		last = r
	}
	// Pipeline stages on the largest TP: first on the same node, then one
	// or more whole nodes per step.
	tp := tps[len(tps)-1]
	stagesPerNode := max(1, acc.MaxPerNode/tp)
	stages := pipelineStages(stagesPerNode, model.Layers, o.maxNodes)
	// More stages never fit worse (fewer layers and weights per device,
	// the same reserve), so the first fitting candidate is found by
	// bisection: a model config with billions of layers plans in
	// logarithmic time.
	first := sort.Search(stages.count(), func(i int) bool { return p.size(tp, stages.at(i)).fits() })
	if first < stages.count() {
		return p.size(tp, stages.at(first)), nil
	}
	if n := stages.count(); n > 0 {
		last = p.size(tp, stages.at(n-1))
	}
	return PlanResult{}, fmt.Errorf("plan %s on %s: %w", model.Name, acc.Name, &FitError{
		Model: model.Name, Accelerator: acc.Name,
		TensorParallel: last.TensorParallel, PipelineParallel: last.PipelineParallel, Nodes: last.Nodes,
		NeedBytes: last.needBytes(acc), UsableBytes: last.UsableBytesPerDevice,
	})
}

// stageCandidates are the pipeline sizes Plan tries beyond one stage, in
// order: 2 … stagesPerNode on one node, then whole nodes of stagesPerNode
// stages each, up to the model's layers and maxNodes nodes.
type stageCandidates struct{ perNode, onNode, total int }

func pipelineStages(perNode, layers, maxNodes int) stageCandidates {
	maxPP := int(min(int64(layers), int64(maxNodes)*int64(perNode)))
	onNode := max(0, min(perNode, maxPP)-1) // 2 … min(perNode, maxPP)
	wholeNodes := max(0, maxPP/perNode-1)   // 2·perNode, 3·perNode …
	return stageCandidates{perNode: perNode, onNode: onNode, total: onNode + wholeNodes}
}

func (c stageCandidates) count() int { return c.total }

func (c stageCandidates) at(i int) int {
	if i < c.onNode {
		return i + 2
	}
	return (i - c.onNode + 2) * c.perNode
}

// defaultKVDType mirrors vLLM's "auto": FP16 checkpoints (and FP32 ones,
// which vLLM serves in FP16) cache in FP16, everything else in BF16.
func defaultKVDType(weights models.DType) models.DType {
	if weights == models.FP16 || weights == models.FP32 {
		return models.FP16
	}
	return models.BF16
}

func validatePlan(model models.Model, acc hardware.Profile, o planOptions) error {
	var errs field.ErrorList
	if err := model.Validate(); err != nil {
		errs = append(errs, field.Invalid(field.NewPath("model"), model.Name, err.Error()))
	}
	if !model.Generates() {
		// An encoder keeps no KV cache, and vLLM as cube renders it serves
		// generation only.
		errs = append(errs, field.Invalid(field.NewPath("model"), model.Name, fmt.Sprintf(
			"is a%s %s model, which Plan does not size (it sizes vLLM's KV cache for text generation): serve it with serve.TEI, on one device",
			article(string(model.Task)), model.Task)))
	}
	accelerated := acc.MemoryBytes > 0 && acc.MaxPerNode >= 1
	switch {
	case acc.MemoryBytes <= 0:
		errs = append(errs, field.Invalid(field.NewPath("accelerator"), acc.Name,
			"has no device memory: Plan sizes a model for GPUs or NPUs, such as hardware.L4 or hardware.Ascend910B3"))
	case acc.MaxPerNode < 1:
		errs = append(errs, field.Invalid(field.NewPath("accelerator", "maxPerNode"), acc.MaxPerNode, "must be at least 1"))
	}
	if o.contextLength <= 0 {
		errs = append(errs, field.Invalid(field.NewPath("contextLength"), o.contextLength,
			"must be positive (the model states no context length: set serve.ContextLength)"))
	}
	if !(o.utilization > 0 && o.utilization <= 1) {
		errs = append(errs, field.Invalid(field.NewPath("memoryUtilization"), o.utilization, "must be in (0, 1]"))
	}
	switch o.kvDType {
	case models.FP32, models.BF16, models.FP16, models.FP8:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("kvCacheDType"), o.kvDType,
			[]models.DType{models.BF16, models.FP16, models.FP8, models.FP32}))
	}
	if !o.weightDType.Valid() {
		errs = append(errs, field.NotSupported(field.NewPath("weightDType"), o.weightDType,
			[]models.DType{models.FP32, models.BF16, models.FP16, models.FP8, models.INT8, models.INT4}))
	}
	if o.maxTP < 1 && o.set["maxTensorParallel"] {
		errs = append(errs, field.Invalid(field.NewPath("maxTensorParallel"), o.maxTP, "must be at least 1"))
	}
	if o.tp != 0 {
		p := planner{model: model}
		switch {
		case o.tp < 1:
			errs = append(errs, field.Invalid(field.NewPath("tensorParallel"), o.tp, "must be at least 1"))
		case acc.MaxPerNode >= 1 && o.tp > acc.MaxPerNode:
			errs = append(errs, field.Invalid(field.NewPath("tensorParallel"), o.tp,
				fmt.Sprintf("%s nodes hold %d devices", acc.Name, acc.MaxPerNode)))
		case model.AttentionHeads > 0 && model.KVHeads > 0 && !p.splits(o.tp):
			errs = append(errs, field.Invalid(field.NewPath("tensorParallel"), o.tp, p.splitProblem(o.tp)))
		}
	}
	if o.maxNodes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("maxNodes"), o.maxNodes, "must be at least 1"))
	}
	if o.overhead < 0 {
		errs = append(errs, field.Invalid(field.NewPath("overhead"), o.overhead, "must not be negative"))
	}
	if o.maxBatchedTokens < 1 {
		errs = append(errs, field.Invalid(field.NewPath("maxBatchedTokens"), o.maxBatchedTokens, "must be at least 1"))
	}
	if o.maxSequences < 1 {
		errs = append(errs, field.Invalid(field.NewPath("maxSequences"), o.maxSequences, "must be at least 1"))
	}
	if mem := deviceMemory(acc); accelerated && o.utilization > 0 && o.utilization <= 1 && o.overhead >= 0 {
		if headroom := mem - usableBytes(mem, o.utilization); headroom < o.overhead {
			p := field.NewPath("memoryUtilization")
			if !o.set["utilization"] && o.set["overhead"] {
				p = field.NewPath("overhead")
			}
			errs = append(errs, field.Invalid(p, o.utilization, fmt.Sprintf(
				"leaves %s of %s's %s outside vLLM's share, less than the %s the runtime context, NCCL buffers and CUDA graphs take there: lower MemoryUtilization",
				gib(headroom), acc.Name, gib(mem), gib(o.overhead))))
		}
	}
	return errs.ToAggregate()
}

type planner struct {
	model models.Model
	acc   hardware.Profile
	o     planOptions
}

// splits reports whether tp ranks can share the attention layers the way
// vLLM's QKVParallelLinear requires: tp divides the attention heads, and KV
// heads are either divided evenly or replicated evenly.
func (p planner) splits(tp int) bool { return p.splitProblem(tp) == "" }

func (p planner) splitProblem(tp int) string {
	m := p.model
	if m.AttentionHeads%tp != 0 {
		return fmt.Sprintf("must divide %s's %d attention heads", m.Name, m.AttentionHeads)
	}
	// vLLM splits the vision tower's heads across the same ranks
	// (Qwen2_5_VisionAttention divides num_heads by the TP size,
	// vllm/model_executor/models/qwen2_5_vl.py).
	if m.HasVision() && m.Vision.Heads%tp != 0 {
		return fmt.Sprintf("must divide the %d attention heads of %s's vision tower", m.Vision.Heads, m.Name)
	}
	if !m.UsesMLA() && m.KVHeads%tp != 0 && tp%m.KVHeads != 0 {
		return fmt.Sprintf("must divide, or be a multiple of, %s's %d KV heads", m.Name, m.KVHeads)
	}
	return ""
}

// size lays the model out on tp × pp devices and sizes every device's
// memory the way vLLM does (see the package documentation).
func (p planner) size(tp, pp int) PlanResult {
	m, o := p.model, p.o
	stagesPerNode := max(1, p.acc.MaxPerNode/tp)
	nodes := (pp + stagesPerNode - 1) / stagesPerNode
	block := blockSize(p.acc)
	r := PlanResult{
		Model: m.Name, Accelerator: p.acc.Name,
		TensorParallel: tp, PipelineParallel: pp, Nodes: nodes, DevicesPerNode: tp * min(pp, stagesPerNode),
		ContextLength: o.contextLength, MemoryUtilization: o.utilization,
		WeightDType: o.weightDType, KVCacheDType: o.kvDType, BlockSize: block,
		DeviceMemoryBytes: deviceMemory(p.acc),
		MaxBatchedTokens:  o.maxBatchedTokens, MaxSequences: o.maxSequences,
	}
	r.UsableBytesPerDevice = usableBytes(r.DeviceMemoryBytes, o.utilization)
	r.HeadroomBytesPerDevice = r.DeviceMemoryBytes - r.UsableBytesPerDevice
	r.WeightBytesPerDevice = ceilDiv(m.WeightBytes(o.weightDType), int64(tp*pp))
	r.ReserveBytesPerDevice = p.reserve(tp)
	if held := satAdd(r.WeightBytesPerDevice, r.ReserveBytesPerDevice); held < r.UsableBytesPerDevice {
		r.KVCacheBytesPerDevice = r.UsableBytesPerDevice - held
	}
	if halvesKVCache(p.acc) {
		r.KVCacheBytesPerDevice /= 2
	}
	r.KVCacheBytes = r.KVCacheBytesPerDevice * int64(tp*pp)

	r.KVBytesPerToken = m.KVBytesPerToken(o.kvDType)
	layersPerStage := (m.Layers + pp - 1) / pp // the fullest stage bounds the pool
	r.KVBytesPerTokenPerDevice = int64(layersPerStage) * m.KVBytesPerTokenPerLayer(o.kvDType, tp)
	r.KVBlocks = r.KVCacheBytesPerDevice / (int64(block) * r.KVBytesPerTokenPerDevice)
	r.KVTokenCapacity = r.KVBlocks * int64(block)
	r.MaxConcurrentSequences = r.KVTokenCapacity / int64(o.contextLength)
	return r
}

// halvesKVCache reports the Ascend 310P, whose vLLM-Ascend worker keeps
// only half of the memory left after weights and activations for the KV
// cache, "to reserve more memory for other operators workspace"
// (vllm_ascend/_310p/worker_310p.py).
func halvesKVCache(acc hardware.Profile) bool {
	return acc.Vendor == hardware.Huawei && strings.HasPrefix(acc.Product, "310P")
}

// usableBytes is vLLM's share of a device, ⌈utilization × memory⌉.
func usableBytes(memory int64, utilization float64) int64 {
	return int64(math.Ceil(float64(memory) * utilization))
}

// reserve is the non-KV, non-weight memory of one rank inside vLLM's
// share, what its profiling run measures: the gated-MLP activation of one
// max_num_batched_tokens forward (gate and up outputs, 16-bit, this rank's
// share of the FFN width) and the fp32 logits of max_num_seqs sequences.
// The runtime context, NCCL buffers and CUDA graphs live outside the share
// (DefaultOverheadBytes).
func (p planner) reserve(tp int) int64 {
	m := p.model
	ffn := m.IntermediateSize
	if m.IsMoE() {
		ffn = max(ffn, (m.MoE.ExpertsPerToken+m.MoE.SharedExperts)*m.MoE.ExpertIntermediateSize)
	}
	perRank := (ffn + tp - 1) / tp
	activation := int64(p.o.maxBatchedTokens) * 2 * int64(perRank) * activationBytes
	logits := int64(p.o.maxSequences) * int64(m.VocabSize) * logitBytes
	return activation + logits
}

// needBytes is the memory one device needs to start: weights, reserve and
// the blocks of one sequence of ContextLength tokens (vLLM refuses to start
// with less), twice those blocks where the engine halves the KV memory.
func (r PlanResult) needBytes(acc hardware.Profile) int64 {
	block := int64(r.BlockSize)
	kv := ceilDiv(int64(r.ContextLength), block) * block * r.KVBytesPerTokenPerDevice
	if halvesKVCache(acc) {
		kv *= 2
	}
	return satAdd(satAdd(r.WeightBytesPerDevice, r.ReserveBytesPerDevice), kv)
}

// satAdd adds non-negative byte counts, stopping at math.MaxInt64 instead
// of wrapping: a model's weights saturate there (models.Model.WeightBytes),
// and a wrapped sum would be negative and fit anything.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func (r PlanResult) fits() bool { return r.KVTokenCapacity >= int64(r.ContextLength) }

// ceilDiv is ⌈a/b⌉ for a ≥ 0, b > 0, without the overflow of a+b-1 near
// math.MaxInt64.
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 {
		q++
	}
	return q
}

// article is "n" before a word that starts with a vowel, for "a"/"an".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "n"
	}
	return ""
}
