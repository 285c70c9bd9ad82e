package llm

import (
	"fmt"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/serve"
)

// Serve returns a vLLM service for the fine-tune's result, where the
// training wrote it: a LoRA or QLoRA run serves the base model with the
// adapter from Output (vLLM's --lora-modules, the adapter named after the
// fine-tune), a full or freeze run serves Output itself. Set the rest
// (On, GPUs, Namespace) on the returned service. A fine-tune without an
// Output returns a service that reports the problem.
func (f *FineTune) Serve(name string) *serve.Service {
	if f == nil || f.job == nil {
		return serve.VLLM(name, "")
	}
	if f.method == LoRA || f.method == QLoRA {
		svc := serve.VLLM(name, f.model).LoRA(podspec.Of(&f.job.Handle).Name(), f.output)
		if f.facts != nil {
			svc.ModelFacts(*f.facts)
		}
		return svc
	}
	svc := serve.VLLM(name, f.output)
	if f.facts != nil {
		svc.ModelFacts(*f.facts)
	}
	return svc
}

// ResultURI is where the fine-tune writes its result (Output).
func (f *FineTune) ResultURI() string {
	if f == nil {
		return ""
	}
	return f.output
}

// String names the fine-tune for logs.
func (f *FineTune) String() string {
	if f == nil || f.job == nil {
		return "llm.FineTune(nil)"
	}
	return fmt.Sprintf("%s %s of %s", f.stage, f.method, f.model)
}
