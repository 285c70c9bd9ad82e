package serve_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/serve"
)

func TestMindIEAcrossNodes(t *testing.T) {
	r := render(t, serve.MindIE("qwen-72b", "pvc://models/qwen-72b").On(hardware.Ascend910B3).Accelerators(8).Nodes(2).RankTable("qwen-ranks"))
	require.NotNil(t, r.lws)
	assert.Nil(t, r.deployment)
	var cfg serve.MindIEConfig
	require.NoError(t, json.Unmarshal([]byte(r.configMap.Data["config.json"]), &cfg))
	assert.True(t, cfg.BackendConfig.MultiNodesInferEnabled)
	assert.Equal(t, 16, cfg.BackendConfig.ModelDeployConfig.ModelConfig[0].WorldSize)
	assert.Equal(t, [][]int{{0, 1, 2, 3, 4, 5, 6, 7}}, cfg.BackendConfig.NPUDeviceIDs)

	for _, tmpl := range []corev1.PodTemplateSpec{*r.lws.Spec.LeaderWorkerTemplate.LeaderTemplate, r.lws.Spec.LeaderWorkerTemplate.WorkerTemplate} {
		c := tmpl.Spec.Containers[0]
		assert.True(t, tmpl.Spec.HostNetwork)
		assert.Equal(t, corev1.DNSClusterFirstWithHostNet, tmpl.Spec.DNSPolicy)
		assert.Equal(t, serve.RankTablePath+"/hccl.json", envValue(t, c, "RANKTABLEFILE"))
		assert.Equal(t, "16", envValue(t, c, "WORLD_SIZE"))
		assert.Equal(t, "hccl", envValue(t, c, "ATB_LLM_COMM_BACKEND"))
		assert.True(t, hasEnv(c, "HCCL_IF_IP"), "HCCL over the NPUs' RoCE ports, set by hardware.Apply")
		assert.Equal(t, "600", envValue(t, c, "HCCL_CONNECT_TIMEOUT"))
		assert.Contains(t, tmpl.Spec.Volumes, corev1.Volume{Name: "rank-table", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "qwen-ranks"}}}})
		assert.Equal(t, c.Command, r.lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0].Command)
	}
	assert.Nil(t, r.lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0].ReadinessProbe, "only the leader serves")

	// Only Ascend's operator fills rings-config-<job>, and only for its
	// AscendJobs: a LeaderWorkerSet group would wait for it forever.
	_, err := serve.MindIE("qwen-72b", "pvc://models/qwen-72b").On(hardware.Ascend910B3).Accelerators(8).Nodes(2).Objects()
	errs := fieldErrors(t, err)
	require.Len(t, errs, 1)
	assert.Equal(t, field.ErrorTypeRequired, errs[0].Type)
	assert.Equal(t, "spec.rankTable", errs[0].Field)
	assert.Contains(t, errs[0].Detail, "nothing fills for a LeaderWorkerSet")
}

func TestVLLMAcrossNodesOverRay(t *testing.T) {
	r := render(t, serve.VLLM("llama", "meta-llama/Llama-3.1-70B-Instruct").On(hardware.L4).Accelerators(8).Nodes(2).MaxModelLen(131072))
	require.NotNil(t, r.lws)
	lws := r.lws
	assert.Equal(t, "leaderworkerset.x-k8s.io/v1", lws.APIVersion)
	assert.Equal(t, int32(2), *lws.Spec.LeaderWorkerTemplate.Size)
	assert.Equal(t, lwsv1.RecreateGroupOnPodRestart, lws.Spec.LeaderWorkerTemplate.RestartPolicy)
	assert.Equal(t, lwsv1.LeaderCreatedStartupPolicy, lws.Spec.StartupPolicy)
	leader := lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0]
	assert.Equal(t, []string{"/bin/sh", "-c"}, leader.Command[:2])
	assert.Contains(t, leader.Command[2], "ray start --head --port=6379")
	assert.Contains(t, leader.Command[2], `exec vllm serve "$@"`)
	assert.Equal(t, []string{"meta-llama/Llama-3.1-70B-Instruct", "--port", "8000", "--tensor-parallel-size", "8",
		"--pipeline-parallel-size", "2", "--max-model-len", "131072", "--distributed-executor-backend", "ray"}, leader.Args)
	assert.NotNil(t, leader.StartupProbe)
	worker := lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0]
	// The worker retries joining while the head starts, as vLLM's
	// multi-node-serving.sh does, for the startup timeout.
	require.Len(t, worker.Command, 4)
	assert.Equal(t, []string{"/bin/sh", "-c"}, worker.Command[:2])
	assert.Contains(t, worker.Command[2], `until ray start --address="$LWS_LEADER_ADDRESS:6379" --block; do`)
	assert.Contains(t, worker.Command[2], "sleep 5")
	assert.Equal(t, []string{"1800"}, worker.Args)
	assert.Nil(t, worker.StartupProbe)
	w := worker.Resources.Limits[hardware.ResourceNVIDIAGPU]
	assert.Equal(t, int64(8), w.Value())
	assert.Equal(t, "0", r.service.Spec.Selector[lwsv1.WorkerIndexLabelKey], "only leaders receive traffic")
	assert.Nil(t, r.pdb)

	r = render(t, serve.VLLM("llama", "meta-llama/Llama-3.1-70B-Instruct").On(hardware.L4).Accelerators(8).Nodes(2).
		MaxModelLen(131072).Replicas(3))
	// One evicted pod takes its whole group down (RecreateGroupOnPodRestart),
	// so a budget of one pod is one group; two pods could be two groups.
	assert.Equal(t, ptr.To(intstr.FromInt32(1)), r.pdb.Spec.MaxUnavailable)
}

func TestSGLangAcrossNodes(t *testing.T) {
	r := render(t, serve.SGLang("qwen", "pvc://models/qwen-72b").On(hardware.H100).Accelerators(8).Nodes(2))
	leader := r.lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0]
	worker := r.lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0]
	assert.Equal(t, []string{
		"--model-path", "/mnt/models/qwen-72b", "--host", "0.0.0.0", "--port", "30000",
		"--tp-size", "8", "--pp-size", "2", "--served-model-name", "qwen", "--enable-metrics",
		"--nnodes", "2", "--node-rank", "$(LWS_WORKER_INDEX)", "--dist-init-addr", "$(LWS_LEADER_ADDRESS):20000",
	}, leader.Args)
	assert.Equal(t, leader.Command, worker.Command)
	assert.Equal(t, leader.Args, worker.Args)
	assert.Contains(t, r.lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Volumes, corev1.Volume{Name: "model", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "models", ReadOnly: true}}}, "workers load their shards too")
}

// A multi-node replica's LeaderWorkerSet is named after the release; the
// LWS controller creates the headless Service of that name behind
// LWS_LEADER_ADDRESS (<name>-0.<name>.<namespace>) only when no Service of
// that name exists (CreateHeadlessServiceIfNotExists in sigs.k8s.io/lws
// v0.8.0 pkg/utils/controller/controller_utils.go), so the client Service
// must be named otherwise.
func TestClientServiceLeavesTheLeaderWorkerSetItsName(t *testing.T) {
	for _, svc := range []*serve.Service{
		serve.VLLM("llama", "meta-llama/Llama-3.1-70B-Instruct").On(hardware.L4).Accelerators(8).Nodes(2).MaxModelLen(131072),
		serve.SGLang("qwen", "pvc://models/qwen-72b").On(hardware.H100).Accelerators(8).Nodes(2),
		serve.MindIE("npu", "pvc://models/qwen-72b").On(hardware.Ascend910B3).Accelerators(8).Nodes(2).RankTable("npu-hccl"),
	} {
		r := render(t, svc)
		require.NotNil(t, r.lws)
		engine := r.lws.Labels[cube.LabelKind]
		assert.NotEqual(t, r.lws.Name, r.service.Name, engine)
		assert.Equal(t, r.lws.Name+"-api", r.service.Name, engine)
	}
}

func TestAscendAcrossNodesTalksRoCE(t *testing.T) {
	r := render(t, serve.VLLM("q", "pvc://models/qwen-72b").On(hardware.Ascend910B3).Accelerators(8).Nodes(2))
	for _, tmpl := range []corev1.PodTemplateSpec{*r.lws.Spec.LeaderWorkerTemplate.LeaderTemplate, r.lws.Spec.LeaderWorkerTemplate.WorkerTemplate} {
		c := tmpl.Spec.Containers[0]
		assert.True(t, hasEnv(c, "HCCL_IF_IP"))
		assert.Equal(t, serve.DefaultVLLMAscendImage, c.Image)
		assert.False(t, tmpl.Spec.HostNetwork, "only MindIE's rank table needs the host network")
	}
	c := render(t, serve.VLLM("q", "pvc://models/qwen-72b").On(hardware.H100).Accelerators(8).Nodes(2)).lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0]
	assert.False(t, hasEnv(c, "NCCL_DEBUG"), "NVIDIA nodes get a fabric only when asked")
}

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
