package serve_test

import (
	"errors"
	"fmt"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/serve"
)

func ExamplePlan() {
	model, err := models.Lookup("Qwen/Qwen2.5-7B-Instruct")
	if err != nil {
		panic(err)
	}
	plan, err := serve.Plan(model, hardware.L4, serve.ContextLength(8192))
	if err != nil {
		panic(err)
	}
	fmt.Println(plan)
	// Output:
	// Qwen2.5-7B-Instruct on L4: TP=1 × PP=1, 1 node × 1 device
	//   per device: 20.2 GiB usable (0.9 of 22.5 GiB) = 14.2 GiB weights (bf16) + 0.3 GiB activations + 5.8 GiB KV cache (bf16); 2.2 GiB outside for runtime, NCCL and CUDA graphs
	//   KV cache: 56 KiB a token per device (model: 56 KiB a token), 6752 blocks of 16 = 108032 tokens
	//   at 8192 tokens a sequence: 13 sequences at once
}

// A model larger than one node gets pipeline stages across nodes; the
// serve builders turn Nodes > 1 into a LeaderWorkerSet.
func ExamplePlan_multiNode() {
	model, err := models.Lookup("deepseek-ai/DeepSeek-R1")
	if err != nil {
		panic(err)
	}
	plan, err := serve.Plan(model, hardware.H100, serve.ContextLength(32768), serve.KVCacheDType(models.FP8))
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.TensorParallel, plan.PipelineParallel, plan.Nodes, plan.AcceleratorsPerNode)
	fmt.Println(plan)
	// Output:
	// 8 2 2 8
	// DeepSeek-R1 on H100-SXM-80GB: TP=8 × PP=2, 2 nodes × 8 devices
	//   per device: 71.7 GiB usable (0.9 of 79.6 GiB) = 39.1 GiB weights (fp8) + 0.6 GiB activations + 32.1 GiB KV cache (fp8); 8.0 GiB outside for runtime, NCCL and CUDA graphs
	//   KV cache: 17.4 KiB a token per device (model: 34.3 KiB a token), 120493 blocks of 16 = 1927888 tokens
	//   at 32768 tokens a sequence: 58 sequences at once
}

func ExamplePlan_doesNotFit() {
	model, err := models.Lookup("meta-llama/Llama-3.1-70B-Instruct")
	if err != nil {
		panic(err)
	}
	_, err = serve.Plan(model, hardware.L4, serve.MaxNodes(1)) // full 131072-token context
	fmt.Println(err)
	fmt.Println(errors.Is(err, serve.ErrDoesNotFit))

	var fit *serve.FitError
	if errors.As(err, &fit) {
		fmt.Printf("short by %d bytes per device\n", fit.ShortBytes())
	}
	// Output:
	// plan Llama-3.1-70B-Instruct on L4: needs 21.6 GiB per device at TP=8 but L4 has 20.2 GiB usable: short by 1.3 GiB
	// true
	// short by 1430220390 bytes per device
}

// A vision-language model's vision tower is part of its weights; an
// embedding model has no KV cache for Plan to size, and goes to TEI.
func ExamplePlan_tasks() {
	vl, err := models.Lookup("Qwen/Qwen2.5-VL-7B-Instruct")
	if err != nil {
		panic(err)
	}
	plan, err := serve.Plan(vl, hardware.L4, serve.ContextLength(8192))
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: %.1f GiB weights per device at TP=%d, %.1f GiB of them the vision tower\n", plan.Model,
		float64(plan.WeightBytesPerDevice)/(1<<30), plan.TensorParallel, float64(vl.VisionParameters*2)/(1<<30)/float64(plan.TensorParallel))

	embed, err := models.Lookup("BAAI/bge-m3")
	if err != nil {
		panic(err)
	}
	_, err = serve.Plan(embed, hardware.L4)
	fmt.Println(err)
	// Output:
	// Qwen2.5-VL-7B-Instruct: 15.4 GiB weights per device at TP=1, 1.3 GiB of them the vision tower
	// plan bge-m3 on L4: model: Invalid value: "bge-m3": is an embedding model, which Plan does not size (it sizes vLLM's KV cache for text generation): serve it with serve.TEI, on one device
}
