package serve

import (
	"fmt"
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

// article is "n" before a word that starts with a vowel, for "a"/"an".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "n"
	}
	return ""
}
