package serve

import "github.com/cubestudio/cube/models"

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
