package serve

import (
	"fmt"
	"math"
	"strings"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/models"
)

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
		TensorParallel: tp, PipelineParallel: pp, Nodes: nodes, AcceleratorsPerNode: tp * min(pp, stagesPerNode),
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
