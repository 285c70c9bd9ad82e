package serve

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/cubestudio/cube/models"
)

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
	// AcceleratorsPerNode is how many accelerators each of those nodes
	// gives the replica.
	AcceleratorsPerNode int

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

// Accelerators is the accelerator count of one replica: TensorParallel ×
// PipelineParallel.
func (p PlanResult) Accelerators() int { return p.TensorParallel * p.PipelineParallel }

// String prints the plan for people, one fact a line.
func (p PlanResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %s: TP=%d × PP=%d, %s × %s\n",
		p.Model, p.Accelerator, p.TensorParallel, p.PipelineParallel,
		plural(p.Nodes, "node"), plural(p.AcceleratorsPerNode, "device"))
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
