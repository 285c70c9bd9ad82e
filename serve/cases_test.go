package serve_test

import (
	"time"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/serve"
)

// goldenCase is one rendered serving setup: a golden file in testdata and
// an apply to the test API server.
type goldenCase struct {
	name string
	w    cube.Workload
}

func mustLookup(id string) models.Model {
	m, err := models.Lookup(id)
	if err != nil {
		panic(err)
	}
	return m
}

// goldenCases are the setups every engine is pinned by: NVIDIA H100 and L4,
// Ascend 910B3 with MindIE, one node and several.
func goldenCases() []goldenCase {
	return []goldenCase{
		{"vllm-h100", serve.VLLM("qwen-chat", "Qwen/Qwen2.5-7B-Instruct").
			On(hardware.H100).Accelerators(1).
			MaxModelLen(8192).PrefixCaching(true).
			HFToken("hf-token", "token").
			CPU("8").Memory("64Gi").
			Replicas(2)},
		{"vllm-l4-auto", serve.VLLM("llama-8b", "meta-llama/Llama-3.1-8B-Instruct").
			On(hardware.L4).Auto().
			LoRA("sql", "hf://org/llama-3.1-8b-sql-lora").
			LoRA("support", "pvc://adapters/support/v3").
			ServedModelName("llama").
			HFToken("hf-token", "token").HFEndpoint("https://hf-mirror.com").
			ModelCache("model-cache").
			CPU("8").Memory("48Gi").
			Autoscale(1, 4, serve.ScaleOnQueue("5"), serve.ScaleOnCPU(80)).
			StartupTimeout(time.Hour)},
		{"vllm-h100-multinode", serve.VLLM("deepseek-v3", "deepseek-ai/DeepSeek-V3").
			On(hardware.H100).Auto(serve.ContextLength(32768)).
			Fabric(hardware.InfiniBand(hardware.RDMASharedDevice("rdma/hca_shared_devices_a"))).
			TrustRemoteCode().
			ModelCache("model-cache")},
		{"sglang-h100", serve.SGLang("qwen-32b", "modelscope://Qwen/Qwen2.5-32B-Instruct").
			On(hardware.H100).Accelerators(2).
			MaxModelLen(16384).GPUMemoryUtilization(0.85).PrefixCaching(false).
			DType("bfloat16")},
		{"sglang-h100-multinode", serve.SGLang("qwen-72b", "pvc://models/Qwen2.5-72B-Instruct").
			On(hardware.H100).Accelerators(8).Nodes(2).
			TensorParallel(8).PipelineParallel(2).
			ModelFacts(mustLookup("Qwen/Qwen2.5-72B-Instruct"))},
		{"tgi-l4", serve.TGI("mistral", "mistralai/Mistral-7B-Instruct-v0.3").
			On(hardware.L4).Accelerators(1).
			MaxModelLen(8192).DType("bfloat16").PrefixCaching(true).
			LoRA("summarize", "hf://org/mistral-summarize-lora")},
		{"tei-l4", serve.TEI("bge-m3", "BAAI/bge-m3").
			Image("ghcr.io/huggingface/text-embeddings-inference:89-1.9.3").
			On(hardware.L4).Accelerators(1).
			HFToken("hf-token", "token").
			Autoscale(1, 3, serve.ScaleOnQueue("16"))},
		{"triton-l4", serve.Triton("resnet", "s3://models/triton/repository").
			On(hardware.L4).Accelerators(1).
			S3Credentials("s3-credentials").S3Endpoint("http://minio.minio:9000").S3Region("us-east-1").
			ModelControl("explicit", "resnet50").
			CPU("4").Memory("16Gi").
			Autoscale(1, 3, serve.ScaleOnQueue("10"))},
		{"ollama-l4", serve.Ollama("chat", "qwen2.5:7b").
			On(hardware.L4).Accelerators(1).
			MaxModelLen(8192).ServedModelName("chat").KeepAlive("1h").
			ModelCache("ollama-models")},
		{"mindie-910b3", serve.MindIE("qwen-npu", "pvc://models/Qwen2.5-7B-Instruct").
			On(hardware.Ascend910B3).Accelerators(2).
			ModelFacts(mustLookup("Qwen/Qwen2.5-7B-Instruct")).
			MaxModelLen(8192).GPUMemoryUtilization(0.9).PrefixCaching(true).
			ConfigureMindIE(func(c *serve.MindIEConfig) { c.BackendConfig.ScheduleConfig.MaxBatchSize = 64 })},
		{"mindie-910b3-multinode", serve.MindIE("qwen-72b-npu", "s3://models/Qwen2.5-72B-Instruct").
			On(hardware.Ascend910B3).Accelerators(8).Nodes(2).
			S3Credentials("s3-credentials").
			ModelFacts(mustLookup("Qwen/Qwen2.5-72B-Instruct")).
			RankTable("qwen-72b-npu-hccl").
			MaxModelLen(16384)},
		{"canary", serve.Canary("chat-split",
			serve.VLLM("chat-v1", "Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1),
			serve.VLLM("chat-v2", "Qwen/Qwen2.5-14B-Instruct").On(hardware.H100).Accelerators(1)).
			Weights(90, 10).
			Gateway("inference", "gateway-system").Listener("https").
			Hostnames("chat.example.com").
			RequestTimeout(10 * time.Minute)},
	}
}
