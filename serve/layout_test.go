package serve_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/serve"
)

func TestExplicitLayouts(t *testing.T) {
	cases := map[string]struct {
		svc    *serve.Service
		tp, pp string // "" = flag absent
		gpus   int64
	}{
		"gpus only":          {serve.VLLM("a", "pvc://m/x").On(hardware.H100).Accelerators(4), "4", "", 4},
		"tp only":            {serve.VLLM("a", "pvc://m/x").On(hardware.H100).TensorParallel(2), "2", "", 2},
		"tp and pp":          {serve.VLLM("a", "pvc://m/x").On(hardware.H100).TensorParallel(2).PipelineParallel(2), "2", "2", 4},
		"pp splits the pod":  {serve.VLLM("a", "pvc://m/x").On(hardware.H100).Accelerators(8).PipelineParallel(2), "4", "2", 8},
		"tp splits the pod":  {serve.VLLM("a", "pvc://m/x").On(hardware.H100).Accelerators(8).TensorParallel(4), "4", "2", 8},
		"cpu":                {serve.VLLM("a", "pvc://m/x").CPU("16").Image("registry.local/vllm-cpu:0.18.0"), "", "", 0},
		"one GPU by default": {serve.VLLM("a", "pvc://m/x").On(hardware.L4), "", "", 1},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			m := render(t, c.svc).main(t)
			assert.Equal(t, c.tp, flagValue(m.Args, "--tensor-parallel-size"))
			assert.Equal(t, c.pp, flagValue(m.Args, "--pipeline-parallel-size"))
			gpus := m.Resources.Limits[hardware.ResourceNVIDIAGPU]
			assert.Equal(t, c.gpus, gpus.Value())
		})
	}
}

func TestAutoSizesWithThePlanner(t *testing.T) {
	t.Run("one node", func(t *testing.T) {
		c := render(t, serve.VLLM("llama", "meta-llama/Llama-3.1-8B-Instruct").On(hardware.L4).Auto()).main(t)
		// 16 GB of weights and a 128k-token sequence need two 24 GB L4s.
		assert.Equal(t, "2", flagValue(c.Args, "--tensor-parallel-size"))
		assert.Equal(t, "131072", flagValue(c.Args, "--max-model-len"))
		assert.Equal(t, "0.9", flagValue(c.Args, "--gpu-memory-utilization"))
		gpus := c.Resources.Limits[hardware.ResourceNVIDIAGPU]
		assert.Equal(t, int64(2), gpus.Value())
	})
	t.Run("a shorter context fits one GPU", func(t *testing.T) {
		c := render(t, serve.VLLM("llama", "meta-llama/Llama-3.1-8B-Instruct").On(hardware.L4).MaxModelLen(8192).Auto()).main(t)
		assert.Equal(t, "", flagValue(c.Args, "--tensor-parallel-size"))
		assert.Equal(t, "8192", flagValue(c.Args, "--max-model-len"))
	})
	t.Run("across nodes", func(t *testing.T) {
		r := render(t, serve.VLLM("ds", "deepseek-ai/DeepSeek-V3").On(hardware.H100).Auto(serve.ContextLength(32768)))
		require.NotNil(t, r.lws)
		leader := r.lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0]
		assert.Equal(t, "8", flagValue(leader.Args, "--tensor-parallel-size"))
		assert.Equal(t, "2", flagValue(leader.Args, "--pipeline-parallel-size"))
		assert.Equal(t, int32(2), *r.lws.Spec.LeaderWorkerTemplate.Size)
	})
	t.Run("MindIE across nodes is one world", func(t *testing.T) {
		r := render(t, serve.MindIE("ds", "pvc://models/deepseek-v3").On(hardware.Ascend910B3).
			ModelFacts(mustLookup("deepseek-ai/DeepSeek-V3")).RankTable("ds-hccl").Auto(serve.ContextLength(8192)))
		require.NotNil(t, r.lws)
		var cfg serve.MindIEConfig
		require.NoError(t, json.Unmarshal([]byte(r.configMap.Data["config.json"]), &cfg))
		assert.Equal(t, 16, cfg.BackendConfig.ModelDeployConfig.ModelConfig[0].WorldSize)
		assert.Equal(t, 8192, cfg.BackendConfig.ModelDeployConfig.MaxSeqLen)
	})
	t.Run("SGLang", func(t *testing.T) {
		c := render(t, serve.SGLang("q", "Qwen/Qwen2.5-72B-Instruct").On(hardware.H100).Auto(serve.ContextLength(32768))).main(t)
		// 145 GB of bf16 weights: two H100s hold 72.7 GB each, more than
		// their 72 GB usable, so four.
		assert.Equal(t, "4", flagValue(c.Args, "--tp-size"))
		assert.Equal(t, "32768", flagValue(c.Args, "--context-length"))
		// vLLM's 0.9 is not SGLang's fraction; SGLang picks its own.
		assert.NotContains(t, c.Args, "--mem-fraction-static")
	})
	t.Run("forced tensor parallelism and quantization", func(t *testing.T) {
		c := render(t, serve.VLLM("q", "Qwen/Qwen2.5-72B-Instruct").On(hardware.H100).
			TensorParallel(4).Quantization("awq").Auto(serve.ContextLength(8192))).main(t)
		assert.Equal(t, "4", flagValue(c.Args, "--tensor-parallel-size"))
		assert.Equal(t, "awq", flagValue(c.Args, "--quantization"))
	})
}

func TestAutoscaling(t *testing.T) {
	r := render(t, serve.VLLM("q", "Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1).CPU("8").Memory("32Gi").
		Autoscale(2, 6, serve.ScaleOnQueue("5"), serve.ScaleOnCPU(75), serve.ScaleOnMemory(80), serve.ScaleOnPodMetric("gpu_cache_usage", "800m")))
	assert.Nil(t, r.deployment.Spec.Replicas, "the autoscaler owns the replica count")
	h := r.hpa
	require.NotNil(t, h)
	assert.Equal(t, autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "q"}, h.Spec.ScaleTargetRef)
	assert.Equal(t, ptr.To[int32](2), h.Spec.MinReplicas)
	assert.Equal(t, int32(6), h.Spec.MaxReplicas)
	require.Len(t, h.Spec.Metrics, 4)
	assert.Equal(t, "vllm:num_requests_waiting", h.Spec.Metrics[0].Pods.Metric.Name)
	assert.Equal(t, "5", h.Spec.Metrics[0].Pods.Target.AverageValue.String())
	assert.Equal(t, corev1.ResourceCPU, h.Spec.Metrics[1].Resource.Name)
	assert.Equal(t, ptr.To[int32](75), h.Spec.Metrics[1].Resource.Target.AverageUtilization)
	assert.Equal(t, corev1.ResourceMemory, h.Spec.Metrics[2].Resource.Name)
	assert.Equal(t, "gpu_cache_usage", h.Spec.Metrics[3].Pods.Metric.Name)
	assert.Equal(t, "800m", h.Spec.Metrics[3].Pods.Target.AverageValue.String())
	require.NotNil(t, r.pdb, "at least two replicas")

	for engine, metric := range map[*serve.Service]string{
		serve.SGLang("s", "pvc://m/x").On(hardware.H100): "sglang:num_queue_reqs",
		serve.TGI("s", "pvc://m/x").On(hardware.L4):      "tgi_queue_size",
		serve.Triton("s", "pvc://m/x"):                   "nv_inference_pending_request_count",
		serve.VLLM("s", "pvc://m/x").On(hardware.H100):   "vllm:num_requests_waiting",
	} {
		h := render(t, engine.Autoscale(1, 2, serve.ScaleOnQueue("3"))).hpa
		assert.Equal(t, metric, h.Spec.Metrics[0].Pods.Metric.Name, metric)
	}

	r = render(t, serve.VLLM("ds", "deepseek-ai/DeepSeek-V3").On(hardware.H100).Auto(serve.ContextLength(8192)).Autoscale(1, 2, serve.ScaleOnQueue("3")))
	assert.Equal(t, autoscalingv2.CrossVersionObjectReference{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet", Name: "ds"}, r.hpa.Spec.ScaleTargetRef)
	assert.Nil(t, r.lws.Spec.Replicas)
}

func TestAutoPlan(t *testing.T) {
	plan, err := serve.AutoPlan(serve.VLLM("llama", "meta-llama/Llama-3.1-8B-Instruct").On(hardware.L4).Auto())
	require.NoError(t, err)
	assert.Equal(t, "L4", plan.Accelerator)
	assert.Equal(t, 2, plan.TensorParallel)
	assert.Equal(t, 1, plan.PipelineParallel)
	assert.Equal(t, 1, plan.Nodes)
	assert.Equal(t, 131072, plan.ContextLength)

	_, err = serve.AutoPlan(serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1))
	errs := fieldErrors(t, err)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.auto", errs[0].Field)
	assert.Equal(t, field.ErrorTypeRequired, errs[0].Type)

	_, err = serve.AutoPlan(serve.VLLM("q", "my-org/my-model").On(hardware.H100).Auto())
	errs = fieldErrors(t, err)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.model", errs[0].Field)
}
