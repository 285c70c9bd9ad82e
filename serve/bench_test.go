package serve_test

import (
	"fmt"
	"io"
	"testing"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/serve"
)

func thousandServices() []cube.Workload {
	ws := make([]cube.Workload, 1000)
	for i := range ws {
		ws[i] = serve.VLLM(fmt.Sprintf("qwen-%d", i), "Qwen/Qwen2.5-7B-Instruct").
			On(hardware.H100).Accelerators(1).MaxModelLen(8192).
			HFToken("hf-token", "token").ModelCache("model-cache").
			Replicas(2)
	}
	return ws
}

// BenchmarkRender1000VLLM renders 1,000 vLLM services (Deployment, Service
// and PodDisruptionBudget each) to YAML per operation.
func BenchmarkRender1000VLLM(b *testing.B) {
	ws := thousandServices()
	b.ReportAllocs()
	for b.Loop() {
		if err := cube.Render(io.Discard, ws...); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkObjects1000VLLM builds the typed objects of 1,000 vLLM services
// per operation, without YAML.
func BenchmarkObjects1000VLLM(b *testing.B) {
	ws := thousandServices()
	b.ReportAllocs()
	for b.Loop() {
		for _, w := range ws {
			if _, err := w.Objects(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkObjectsAuto1000VLLM sizes 1,000 services with the planner.
func BenchmarkObjectsAuto1000VLLM(b *testing.B) {
	ws := make([]cube.Workload, 1000)
	for i := range ws {
		ws[i] = serve.VLLM(fmt.Sprintf("llama-%d", i), "meta-llama/Llama-3.1-70B-Instruct").On(hardware.L4).Auto(serve.ContextLength(32768))
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, w := range ws {
			if _, err := w.Objects(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
