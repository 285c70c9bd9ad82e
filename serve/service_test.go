package serve_test

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/serve"
)

// rendered splits a service's objects by kind.
type rendered struct {
	configMap  *corev1.ConfigMap
	deployment *appsv1.Deployment
	lws        *lwsv1.LeaderWorkerSet
	service    *corev1.Service
	pdb        *policyv1.PodDisruptionBudget
	hpa        *autoscalingv2.HorizontalPodAutoscaler
}

func render(t *testing.T, w cube.Workload) rendered {
	t.Helper()
	objs, err := w.Objects()
	require.NoError(t, err)
	var r rendered
	for _, o := range objs {
		require.NotEmpty(t, o.GetObjectKind().GroupVersionKind().Kind, "TypeMeta is set on %T", o)
		switch v := o.(type) {
		case *corev1.ConfigMap:
			r.configMap = v
		case *appsv1.Deployment:
			r.deployment = v
		case *lwsv1.LeaderWorkerSet:
			r.lws = v
		case *corev1.Service:
			r.service = v
		case *policyv1.PodDisruptionBudget:
			r.pdb = v
		case *autoscalingv2.HorizontalPodAutoscaler:
			r.hpa = v
		default:
			t.Fatalf("unexpected object %T", o)
		}
	}
	return r
}

func (r rendered) main(t *testing.T) corev1.Container {
	t.Helper()
	require.NotNil(t, r.deployment)
	require.NotEmpty(t, r.deployment.Spec.Template.Spec.Containers)
	return r.deployment.Spec.Template.Spec.Containers[0]
}

func envValue(t *testing.T, c corev1.Container, name string) string {
	t.Helper()
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	t.Fatalf("container %s has no env %s", c.Name, name)
	return ""
}

func hasEnv(c corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}

func TestVLLMOnH100(t *testing.T) {
	r := render(t, serve.VLLM("qwen-chat", "Qwen/Qwen2.5-7B-Instruct").
		Namespace("llm").On(hardware.H100).Accelerators(1).
		MaxModelLen(8192).PrefixCaching(true).HFToken("hf-token", "token").
		Replicas(2))

	d := r.deployment
	assert.Equal(t, "qwen-chat", d.Name)
	assert.Equal(t, "llm", d.Namespace)
	assert.Equal(t, "vllm", d.Labels[cube.LabelKind])
	assert.Equal(t, ptr.To[int32](2), d.Spec.Replicas)
	assert.Equal(t, map[string]string{cube.LabelRelease: "qwen-chat", cube.LabelManagedBy: cube.ManagedBy, serve.LabelComponent: "server"},
		d.Spec.Selector.MatchLabels)
	assert.Equal(t, ptr.To[int32](30*60+600), d.Spec.ProgressDeadlineSeconds)
	for k, v := range d.Spec.Selector.MatchLabels {
		assert.Equal(t, v, d.Spec.Template.Labels[k], "pod label %s", k)
	}

	c := r.main(t)
	assert.Equal(t, "vllm", c.Name)
	assert.Equal(t, serve.DefaultVLLMImage, c.Image)
	assert.Equal(t, []string{"vllm", "serve"}, c.Command)
	assert.Equal(t, []string{"Qwen/Qwen2.5-7B-Instruct", "--port", "8000", "--max-model-len", "8192", "--enable-prefix-caching"}, c.Args)
	assert.Equal(t, []corev1.EnvVar{{Name: "HF_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "hf-token"}, Key: "token"}}}}, c.Env)
	assert.Equal(t, []corev1.ContainerPort{{Name: "http", ContainerPort: 8000, Protocol: corev1.ProtocolTCP}}, c.Ports)
	gpus := c.Resources.Limits[hardware.ResourceNVIDIAGPU]
	assert.Equal(t, int64(1), gpus.Value())
	assert.Equal(t, &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8000)}},
		PeriodSeconds: 10, TimeoutSeconds: 5, FailureThreshold: 180,
	}, c.StartupProbe)
	assert.Equal(t, int32(3), c.ReadinessProbe.FailureThreshold)
	assert.Equal(t, "/health", c.LivenessProbe.HTTPGet.Path)
	// /dev/shm comes from hardware.Apply: 2 GiB per GPU, at least 1 GiB.
	require.Len(t, d.Spec.Template.Spec.Volumes, 1)
	assert.Equal(t, hardware.SharedMemoryVolume, d.Spec.Template.Spec.Volumes[0].Name)
	assert.Equal(t, "NVIDIA-H100-80GB-HBM3", d.Spec.Template.Spec.NodeSelector[hardware.LabelGPUProduct])

	s := r.service
	assert.Equal(t, corev1.ServiceTypeClusterIP, s.Spec.Type)
	assert.Equal(t, d.Spec.Selector.MatchLabels, s.Spec.Selector)
	assert.Equal(t, []corev1.ServicePort{{Name: "http", Port: 8000, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}}, s.Spec.Ports)
	assert.Equal(t, map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "8000", "prometheus.io/path": "/metrics"}, s.Annotations)

	require.NotNil(t, r.pdb, "two replicas get a disruption budget")
	assert.Equal(t, ptr.To(intstr.FromInt32(1)), r.pdb.Spec.MaxUnavailable)
	assert.Equal(t, d.Spec.Selector.MatchLabels, r.pdb.Spec.Selector.MatchLabels)
	assert.Nil(t, r.hpa)
	assert.Nil(t, r.configMap)
}

func TestSingleReplicaHasNoDisruptionBudgetUnlessAsked(t *testing.T) {
	r := render(t, serve.VLLM("one", "Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1))
	assert.Nil(t, r.pdb)
	r = render(t, serve.VLLM("one", "Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1).DisruptionBudget(0))
	require.NotNil(t, r.pdb)
	assert.Equal(t, ptr.To(intstr.FromInt32(0)), r.pdb.Spec.MaxUnavailable)
}

func TestCallerCommandEnvAndArgsWin(t *testing.T) {
	r := render(t, serve.VLLM("qwen", "Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1).
		ExtraArgs("--max-num-seqs", "64").
		Env("VLLM_USE_MODELSCOPE", "False").
		Port("http", 9000))
	c := r.main(t)
	assert.Equal(t, []string{"Qwen/Qwen2.5-7B-Instruct", "--port", "8000", "--max-num-seqs", "64"}, c.Args)
	assert.Equal(t, []corev1.ContainerPort{{Name: "http", ContainerPort: 9000, Protocol: corev1.ProtocolTCP}}, c.Ports)

	r = render(t, serve.VLLM("qwen", "modelscope://Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1).
		Env("VLLM_USE_MODELSCOPE", "1").Command("python3", "-m", "vllm.entrypoints.openai.api_server").Args("--model", "x"))
	c = r.main(t)
	assert.Equal(t, "1", envValue(t, c, "VLLM_USE_MODELSCOPE"), "the caller's env wins")
	assert.Equal(t, []string{"python3", "-m", "vllm.entrypoints.openai.api_server"}, c.Command)
	assert.Equal(t, []string{"Qwen/Qwen2.5-7B-Instruct", "--port", "8000", "--model", "x"}, c.Args)
}

func TestObjectsAreFreshAndLeaveTheBuilderAlone(t *testing.T) {
	opts := []serve.PlanOption{serve.ContextLength(8192)}
	load := []string{"a"}
	metrics := []serve.ScaleMetric{serve.ScaleOnQueue("5")}
	svc := serve.VLLM("llama", "meta-llama/Llama-3.1-8B-Instruct").On(hardware.L4).Auto(opts...).
		Autoscale(1, 3, metrics...)
	first, err := svc.Objects()
	require.NoError(t, err)
	opts[0] = serve.ContextLength(131072)
	metrics[0] = serve.ScaleOnCPU(10)
	first[0].(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Args[0] = "changed"
	first[0].SetLabels(map[string]string{"changed": "yes"})
	second, err := svc.Objects()
	require.NoError(t, err)
	d := second[0].(*appsv1.Deployment)
	assert.Equal(t, "meta-llama/Llama-3.1-8B-Instruct", d.Spec.Template.Spec.Containers[0].Args[0])
	assert.Contains(t, d.Spec.Template.Spec.Containers[0].Args, "8192", "the caller's later change of the options slice does not leak in")
	assert.Equal(t, "vllm", d.Labels[cube.LabelKind])
	hpa := second[len(second)-1].(*autoscalingv2.HorizontalPodAutoscaler)
	assert.Equal(t, autoscalingv2.PodsMetricSourceType, hpa.Spec.Metrics[0].Type)

	third, err := svc.Objects()
	require.NoError(t, err)
	for i := range second {
		assert.True(t, equality.Semantic.DeepEqual(second[i], third[i]), "call %d differs", i)
	}

	tr := serve.Triton("repo", "pvc://models/repo").ModelControl("explicit", load...)
	load[0] = "b"
	r := render(t, tr)
	assert.Contains(t, r.main(t).Args, "--load-model=a")
}

func TestSourcesWireIntoThePod(t *testing.T) {
	t.Run("hf revision, mirror and cache", func(t *testing.T) {
		r := render(t, serve.VLLM("q", "hf://Qwen/Qwen2.5-7B-Instruct@v1.1").On(hardware.H100).Accelerators(1).
			HFEndpoint("https://hf-mirror.com").ModelCache("models"))
		c := r.main(t)
		assert.Equal(t, []string{"Qwen/Qwen2.5-7B-Instruct", "--port", "8000", "--revision", "v1.1"}, c.Args)
		assert.Equal(t, "https://hf-mirror.com", envValue(t, c, "HF_ENDPOINT"))
		assert.Equal(t, serve.CachePath+"/huggingface", envValue(t, c, "HF_HOME"))
		assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "model-cache", MountPath: serve.CachePath})
		assert.Contains(t, r.deployment.Spec.Template.Spec.Volumes, corev1.Volume{Name: "model-cache", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "models"}}})
	})
	t.Run("modelscope", func(t *testing.T) {
		c := render(t, serve.VLLM("q", "modelscope://Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1).ModelCache("models")).main(t)
		assert.Equal(t, "True", envValue(t, c, "VLLM_USE_MODELSCOPE"))
		assert.Equal(t, serve.CachePath+"/modelscope", envValue(t, c, "MODELSCOPE_CACHE"))
		assert.Equal(t, "Qwen/Qwen2.5-7B-Instruct", c.Args[0])
		c = render(t, serve.SGLang("q", "modelscope://Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1)).main(t)
		assert.Equal(t, "true", envValue(t, c, "SGLANG_USE_MODELSCOPE"))
	})
	t.Run("pvc", func(t *testing.T) {
		r := render(t, serve.VLLM("q", "pvc://models/qwen/7b").On(hardware.H100).Accelerators(1))
		c := r.main(t)
		assert.Equal(t, []string{"/mnt/models/qwen/7b", "--port", "8000", "--served-model-name", "q"}, c.Args)
		assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "model", MountPath: serve.ModelPath, ReadOnly: true})
		assert.Contains(t, r.deployment.Spec.Template.Spec.Volumes, corev1.Volume{Name: "model", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "models", ReadOnly: true}}})
	})
	t.Run("s3", func(t *testing.T) {
		r := render(t, serve.TGI("m", "s3://weights/mistral/7b/").On(hardware.L4).Accelerators(1).
			S3Credentials("s3").S3Endpoint("http://minio:9000").S3Region("eu-west-1"))
		spec := r.deployment.Spec.Template.Spec
		require.Len(t, spec.InitContainers, 1)
		dl := spec.InitContainers[0]
		assert.Equal(t, "download", dl.Name)
		assert.Equal(t, serve.DefaultS3Image, dl.Image)
		assert.Equal(t, []string{"aws", "s3", "sync", "s3://weights/mistral/7b", "/model-cache/s3/weights/mistral/7b", "--no-progress"}, dl.Command)
		assert.Equal(t, []corev1.EnvVar{
			{Name: "AWS_ACCESS_KEY_ID", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "s3"}, Key: "AWS_ACCESS_KEY_ID"}}},
			{Name: "AWS_SECRET_ACCESS_KEY", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "s3"}, Key: "AWS_SECRET_ACCESS_KEY"}}},
			{Name: "AWS_ENDPOINT_URL", Value: "http://minio:9000"},
			{Name: "AWS_DEFAULT_REGION", Value: "eu-west-1"},
		}, dl.Env)
		assert.Equal(t, []corev1.VolumeMount{{Name: "model-cache", MountPath: serve.CachePath}}, dl.VolumeMounts)
		assert.Contains(t, spec.Volumes, corev1.Volume{Name: "model-cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		c := r.main(t)
		assert.Equal(t, []string{"--model-id", "/model-cache/s3/weights/mistral/7b", "--hostname", "0.0.0.0", "--port", "8080"}, c.Args)
	})
}

func TestSGLang(t *testing.T) {
	r := render(t, serve.SGLang("qwen", "Qwen/Qwen2.5-32B-Instruct").On(hardware.H100).Accelerators(2).
		MaxModelLen(16384).GPUMemoryUtilization(0.85).PrefixCaching(false).DType("bfloat16").
		Quantization("fp8").KVCacheDType("fp8_e5m2").TrustRemoteCode().ServedModelName("qwen").
		LoRA("sql", "org/sql-lora"))
	c := r.main(t)
	assert.Equal(t, []string{"python3", "-m", "sglang.launch_server"}, c.Command)
	assert.Equal(t, []string{
		"--model-path", "Qwen/Qwen2.5-32B-Instruct", "--host", "0.0.0.0", "--port", "30000",
		"--tp-size", "2", "--context-length", "16384", "--mem-fraction-static", "0.85",
		"--dtype", "bfloat16", "--quantization", "fp8", "--kv-cache-dtype", "fp8_e5m2",
		"--served-model-name", "qwen", "--trust-remote-code", "--disable-radix-cache",
		"--lora-paths", "sql=org/sql-lora", "--enable-metrics",
	}, c.Args)
	assert.Equal(t, "/health", c.ReadinessProbe.HTTPGet.Path)
}

func TestTGI(t *testing.T) {
	r := render(t, serve.TGI("mistral", "mistralai/Mistral-7B-Instruct-v0.3").On(hardware.L4).Accelerators(2).
		MaxModelLen(8192).GPUMemoryUtilization(0.9).DType("bfloat16").PrefixCaching(false).
		LoRA("a", "org/a").LoRA("b", "pvc://adapters/b").ModelCache("hub"))
	c := r.main(t)
	assert.Equal(t, []string{"text-generation-launcher"}, c.Command)
	assert.Equal(t, []string{
		"--model-id", "mistralai/Mistral-7B-Instruct-v0.3", "--hostname", "0.0.0.0", "--port", "8080",
		"--num-shard", "2", "--max-input-tokens", "8191", "--max-total-tokens", "8192",
		"--cuda-memory-fraction", "0.9", "--dtype", "bfloat16",
		// The launcher downloads only bare hub ids; name=path is for
		// adapters on disk (launcher/src/main.rs skips entries with '=').
		"--lora-adapters", "org/a,b=/mnt/lora/b",
	}, c.Args)
	assert.Equal(t, "0", envValue(t, c, "PREFIX_CACHING"))
	assert.Equal(t, serve.CachePath+"/huggingface/hub", envValue(t, c, "HUGGINGFACE_HUB_CACHE"))
}

// TEI takes its flags from router/src/main.rs (text-embeddings-inference
// v1.9.3): the image's entrypoint runs the router; the model as --model-id, its own --hostname and --port, metrics on
// --prometheus-port; the API key and hub token only through the
// environment (API_KEY, HF_TOKEN), never as literals or arguments.
func TestTEI(t *testing.T) {
	r := render(t, serve.TEI("bge", "BAAI/bge-m3").Image("ghcr.io/huggingface/text-embeddings-inference:cpu-1.9.3").
		CPU("2").Memory("4Gi").DType("float32").ServedModelName("bge").
		APIKeyFromSecret("tei-key", "key").HFToken("hf-token", "token").ModelCache("hub"))
	c := r.main(t)
	assert.Empty(t, c.Command, "the image's entrypoint starts the router")
	assert.Equal(t, []string{
		"--model-id", "BAAI/bge-m3", "--hostname", "0.0.0.0", "--port", "8080",
		"--dtype", "float32", "--served-model-name", "bge", "--prometheus-port", "9000",
	}, c.Args)
	for _, name := range []string{"API_KEY", "HF_TOKEN"} {
		var found bool
		for _, e := range c.Env {
			if e.Name == name {
				found = true
				require.NotNil(t, e.ValueFrom, name)
				require.NotNil(t, e.ValueFrom.SecretKeyRef, name)
				assert.Empty(t, e.Value, name)
			}
		}
		assert.True(t, found, "%s in %v", name, c.Env)
	}
	assert.Equal(t, serve.CachePath+"/huggingface/hub", envValue(t, c, "HUGGINGFACE_HUB_CACHE"))
	assert.Equal(t, "/health", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, "9000", r.service.Annotations["prometheus.io/port"])
	h := render(t, serve.TEI("bge", "BAAI/bge-m3").Image("x").CPU("1").Autoscale(1, 3, serve.ScaleOnQueue("8"))).hpa
	assert.Equal(t, "te_queue_size", h.Spec.Metrics[0].Pods.Metric.Name)

	_, err := serve.TEI("bge", "BAAI/bge-m3").On(hardware.H100).Accelerators(2).MaxModelLen(512).Objects()
	require.Error(t, err, "TEI serves on one device and has no context setting")
	assert.Contains(t, err.Error(), "maxModelLen")
	_, err = serve.TEI("bge", "BAAI/bge-m3").CPU("1").Objects()
	require.Error(t, err, "the default image is a GPU build")
}

func TestTriton(t *testing.T) {
	r := render(t, serve.Triton("resnet", "pvc://models/triton").On(hardware.L4).Accelerators(1).ModelControl("explicit", "resnet50", "bert"))
	c := r.main(t)
	assert.Equal(t, []string{"tritonserver"}, c.Command)
	assert.Equal(t, []string{"--model-repository=/mnt/models/triton", "--http-port=8000", "--grpc-port=8001", "--metrics-port=8002",
		"--model-control-mode=explicit", "--load-model=resnet50", "--load-model=bert"}, c.Args)
	assert.Equal(t, "/v2/health/ready", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, "/v2/health/live", c.LivenessProbe.HTTPGet.Path)
	assert.Equal(t, []string{"http", "grpc", "metrics"}, []string{r.service.Spec.Ports[0].Name, r.service.Spec.Ports[1].Name, r.service.Spec.Ports[2].Name})
	assert.Equal(t, "8002", r.service.Annotations["prometheus.io/port"])
}

func TestOllama(t *testing.T) {
	r := render(t, serve.Ollama("chat", "qwen2.5:7b").On(hardware.L4).Accelerators(1).MaxModelLen(8192).ServedModelName("chat").KeepAlive("1h"))
	spec := r.deployment.Spec.Template.Spec
	c := r.main(t)
	assert.Equal(t, []string{"ollama", "serve"}, c.Command)
	assert.Nil(t, c.Args)
	assert.Equal(t, "0.0.0.0:11434", envValue(t, c, "OLLAMA_HOST"))
	assert.Equal(t, serve.CachePath+"/ollama", envValue(t, c, "OLLAMA_MODELS"))
	assert.Equal(t, "1h", envValue(t, c, "OLLAMA_KEEP_ALIVE"))
	assert.Equal(t, "8192", envValue(t, c, "OLLAMA_CONTEXT_LENGTH"))
	require.Len(t, spec.InitContainers, 1)
	pull := spec.InitContainers[0]
	assert.Equal(t, serve.DefaultOllamaImage, pull.Image)
	assert.Equal(t, []string{"pull", "qwen2.5:7b", "chat"}, pull.Command[3:])
	assert.Equal(t, "127.0.0.1:11434", envValue(t, pull, "OLLAMA_HOST"))
	assert.Contains(t, spec.Volumes, corev1.Volume{Name: "model-cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	assert.Equal(t, "/v1/models", c.ReadinessProbe.HTTPGet.Path)

	pull = render(t, serve.Ollama("gguf", "hf://bartowski/Qwen2.5-7B-Instruct-GGUF").Image("registry.local/ollama:1")).
		deployment.Spec.Template.Spec.InitContainers[0]
	assert.Equal(t, []string{"pull", "hf.co/bartowski/Qwen2.5-7B-Instruct-GGUF"}, pull.Command[3:])
	assert.Equal(t, "registry.local/ollama:1", pull.Image, "the pull uses the server's image")
	pull = render(t, serve.Ollama("ms", "modelscope://Qwen/Qwen2.5-3B-Instruct-GGUF")).deployment.Spec.Template.Spec.InitContainers[0]
	assert.Equal(t, []string{"pull", "modelscope.cn/Qwen/Qwen2.5-3B-Instruct-GGUF"}, pull.Command[3:])
}

func TestMindIE(t *testing.T) {
	r := render(t, serve.MindIE("qwen-npu", "pvc://models/Qwen2.5-7B-Instruct").On(hardware.Ascend910B3).Accelerators(2).
		MaxModelLen(8192).GPUMemoryUtilization(0.85).PrefixCaching(true).TrustRemoteCode().
		ConfigureMindIE(func(c *serve.MindIEConfig) { c.BackendConfig.ScheduleConfig.MaxBatchSize = 64 }))
	require.NotNil(t, r.configMap)
	assert.Equal(t, "qwen-npu-config", r.configMap.Name)
	var cfg serve.MindIEConfig
	require.NoError(t, json.Unmarshal([]byte(r.configMap.Data["config.json"]), &cfg))
	model := cfg.BackendConfig.ModelDeployConfig.ModelConfig[0]
	assert.Equal(t, "qwen-npu", model.ModelName)
	assert.Equal(t, "/mnt/models/Qwen2.5-7B-Instruct", model.ModelWeightPath)
	assert.Equal(t, 2, model.WorldSize)
	assert.True(t, model.TrustRemoteCode)
	assert.Equal(t, `{"plugin_type":"prefix_cache"}`, model.PluginParams)
	assert.Equal(t, [][]int{{0, 1}}, cfg.BackendConfig.NPUDeviceIDs)
	assert.False(t, cfg.BackendConfig.MultiNodesInferEnabled)
	assert.Equal(t, 8192, cfg.BackendConfig.ModelDeployConfig.MaxSeqLen)
	assert.Equal(t, 8191, cfg.BackendConfig.ModelDeployConfig.MaxInputTokenLen)
	assert.Equal(t, 8192, cfg.BackendConfig.ScheduleConfig.MaxIterTimes)
	assert.True(t, cfg.BackendConfig.ScheduleConfig.EnablePrefixCache)
	assert.Equal(t, 64, cfg.BackendConfig.ScheduleConfig.MaxBatchSize, "ConfigureMindIE edits last")
	assert.False(t, cfg.ServerConfig.HTTPSEnabled)
	assert.Equal(t, int32(1025), cfg.ServerConfig.Port)

	tmpl := r.deployment.Spec.Template
	c := r.main(t)
	assert.Equal(t, serve.DefaultMindIEImage, c.Image)
	assert.Equal(t, "/bin/bash", c.Command[0])
	assert.Contains(t, c.Command[2], "exec ./bin/mindieservice_daemon")
	assert.Equal(t, "/etc/mindie/config.json", envValue(t, c, "MIES_CONFIG_JSON_PATH"))
	assert.Equal(t, "0.85", envValue(t, c, "NPU_MEMORY_FRACTION"))
	assert.True(t, hasEnv(c, "MIES_CONTAINER_IP"))
	assert.False(t, hasEnv(c, "ASCEND_VISIBLE_DEVICES"), "only Volcano writes the annotation it would come from; the device plugin sets it")
	assert.False(t, hasEnv(c, "RANKTABLEFILE"))
	npus := c.Resources.Limits[hardware.ResourceAscend910]
	assert.Equal(t, int64(2), npus.Value())
	assert.Equal(t, "ascend-910b", tmpl.Labels[hardware.LabelRingController])
	assert.Equal(t, "/health/timed-3", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, intstr.FromInt32(serve.MindIEManagementPort), c.ReadinessProbe.HTTPGet.Port)
	assert.Equal(t, intstr.FromInt32(serve.MindIEPort), c.LivenessProbe.TCPSocket.Port)
	assert.Len(t, tmpl.Annotations[serve.AnnotationConfigHash], 16)
	assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "config", MountPath: serve.MindIEConfigPath, ReadOnly: true})
	assert.Contains(t, tmpl.Spec.Volumes, corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: "qwen-npu-config"}, DefaultMode: ptr.To[int32](0o640)}}})

	// A different config rolls the pods.
	other := render(t, serve.MindIE("qwen-npu", "pvc://models/Qwen2.5-7B-Instruct").On(hardware.Ascend910B3).Accelerators(2))
	assert.NotEqual(t, tmpl.Annotations[serve.AnnotationConfigHash], other.deployment.Spec.Template.Annotations[serve.AnnotationConfigHash])
	var defaults serve.MindIEConfig
	require.NoError(t, json.Unmarshal([]byte(other.configMap.Data["config.json"]), &defaults))
	assert.Equal(t, 4096, defaults.BackendConfig.ModelDeployConfig.MaxSeqLen, "cube's default context")
	assert.False(t, hasEnv(other.main(t), "NPU_MEMORY_FRACTION"))
}

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

func flagValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
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
		assert.Equal(t, metric, h.Spec.Metrics[0].Pods.Metric.Name, engine.EngineName())
	}

	r = render(t, serve.VLLM("ds", "deepseek-ai/DeepSeek-V3").On(hardware.H100).Auto(serve.ContextLength(8192)).Autoscale(1, 2, serve.ScaleOnQueue("3")))
	assert.Equal(t, autoscalingv2.CrossVersionObjectReference{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet", Name: "ds"}, r.hpa.Spec.ScaleTargetRef)
	assert.Nil(t, r.lws.Spec.Replicas)
}

func TestStartupTimeout(t *testing.T) {
	r := render(t, serve.VLLM("q", "Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1).StartupTimeout(2*time.Hour))
	c := r.main(t)
	assert.Equal(t, int32(720), c.StartupProbe.FailureThreshold)
	assert.Equal(t, ptr.To[int32](7200+600), r.deployment.Spec.ProgressDeadlineSeconds)

	week := render(t, serve.VLLM("q", "Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1).StartupTimeout(7*24*time.Hour)).main(t)
	assert.Equal(t, int32(7*24*3600/10), week.StartupProbe.FailureThreshold)
	_, err := serve.VLLM("q", "Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1).StartupTimeout(math.MaxInt64).Objects()
	assert.ErrorContains(t, err, "spec.startupTimeout: Invalid value: \"2562047h47m16.854775807s\": must be at most 168h0m0s")
}

func TestHardwareDefaults(t *testing.T) {
	c := render(t, serve.VLLM("q", "pvc://m/x").On(hardware.Ascend910B3).Accelerators(2)).main(t)
	assert.Equal(t, serve.DefaultVLLMAscendImage, c.Image)
	npus := c.Resources.Limits[hardware.ResourceAscend910]
	assert.Equal(t, int64(2), npus.Value())
	c = render(t, serve.SGLang("q", "pvc://m/x").On(hardware.Ascend910B3).Accelerators(2).Image("registry.local/sglang-npu:1")).main(t)
	assert.Equal(t, "registry.local/sglang-npu:1", c.Image)
	c = render(t, serve.Ollama("q", "qwen2.5:0.5b").CPU("4")).main(t)
	assert.Empty(t, c.Resources.Limits[hardware.ResourceNVIDIAGPU])
}

var _ client.Object = (*lwsv1.LeaderWorkerSet)(nil)

func TestAutoPlan(t *testing.T) {
	plan, err := serve.VLLM("llama", "meta-llama/Llama-3.1-8B-Instruct").On(hardware.L4).Auto().AutoPlan()
	require.NoError(t, err)
	assert.Equal(t, "L4", plan.Accelerator)
	assert.Equal(t, 2, plan.TensorParallel)
	assert.Equal(t, 1, plan.PipelineParallel)
	assert.Equal(t, 1, plan.Nodes)
	assert.Equal(t, 131072, plan.ContextLength)

	_, err = serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).AutoPlan()
	errs := fieldErrors(t, err)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.auto", errs[0].Field)
	assert.Equal(t, field.ErrorTypeRequired, errs[0].Type)

	_, err = serve.VLLM("q", "my-org/my-model").On(hardware.H100).Auto().AutoPlan()
	errs = fieldErrors(t, err)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.model", errs[0].Field)
}

func TestEndpointFeedsTheClient(t *testing.T) {
	svc := serve.VLLM("qwen", qwen).Namespace("team-a")
	assert.Equal(t, "http://qwen-api.team-a:8000", svc.Endpoint())
	assert.Equal(t, "http://chat-api:11434", serve.Ollama("chat", "qwen2.5:7b").Endpoint())
	assert.Equal(t, "http://npu-api:1025", serve.MindIE("npu", "pvc://m/x").Endpoint())
	c, err := inference.NewClient(svc.Endpoint())
	require.NoError(t, err)
	assert.Equal(t, "http://qwen-api.team-a:8000/v1", c.BaseURL())
	r := render(t, svc.On(hardware.H100).Accelerators(1))
	assert.Equal(t, svc.ServiceName(), r.service.Name, "the endpoint names the rendered Service")
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
		assert.NotEqual(t, r.lws.Name, r.service.Name, svc.EngineName())
		assert.Equal(t, r.lws.Name+"-api", r.service.Name, svc.EngineName())
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

// TestObjectsConcurrently: Objects only reads the builder, so callers may
// render one service from many goroutines (run with -race).
func TestObjectsConcurrently(t *testing.T) {
	svcs := []*serve.Service{
		serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).Autoscale(2, 4, serve.ScaleOnQueue("5")),
		serve.SGLang("s", "pvc://models/x").On(hardware.H100).Accelerators(8).Nodes(2),
		serve.MindIE("m", "pvc://models/x").On(hardware.Ascend910B3).Accelerators(8).Nodes(2).RankTable("m-hccl"),
	}
	done := make(chan error, 8*len(svcs))
	for range 8 {
		for _, svc := range svcs {
			go func() {
				_, err := svc.Objects()
				done <- err
			}()
		}
	}
	for range 8 * len(svcs) {
		require.NoError(t, <-done)
	}
}

// TEI before 1.9 has no --served-model-name (router/src/main.rs at
// v1.8.3): a caller's 1.8 image with a served name (set, or implied by a
// model on a volume) is refused at Objects with the reason; a 1.9 image or
// one whose tag names no version renders.
func TestTEIServedModelNameNeeds19(t *testing.T) {
	for _, img := range []string{
		"ghcr.io/huggingface/text-embeddings-inference:1.8",
		"ghcr.io/huggingface/text-embeddings-inference:89-1.8",
		"ghcr.io/huggingface/text-embeddings-inference:cpu-1.7.4",
		"ghcr.io/huggingface/text-embeddings-inference:turing-1.8.3-grpc",
	} {
		_, err := serve.TEI("bge", "BAAI/bge-m3").Image(img).CPU("1").ServedModelName("bge").Objects()
		require.Error(t, err, img)
		assert.Contains(t, err.Error(), "spec.servedModelName")
		assert.Contains(t, err.Error(), "has no --served-model-name, added in 1.9")
		_, err = serve.TEI("bge", "pvc://models/bge-m3").Image(img).CPU("1").Objects()
		require.Error(t, err, "a volume's model is served under a name: %s", img)
		_, err = serve.TEI("bge", "BAAI/bge-m3").Image(img).CPU("1").Objects()
		require.NoError(t, err, "no served name: %s", img)
	}
	for _, img := range []string{
		"ghcr.io/huggingface/text-embeddings-inference:cpu-1.9.3",
		"ghcr.io/huggingface/text-embeddings-inference:latest",
		"registry.example/tei:1.8",
		"ghcr.io/huggingface/text-embeddings-inference@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	} {
		_, err := serve.TEI("bge", "BAAI/bge-m3").Image(img).CPU("1").ServedModelName("bge").Objects()
		require.NoError(t, err, img)
	}
}
