package serve_test

import (
	"context"
	"encoding/json"
	"errors"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/serve/servetest"
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
		MaxModelLen(8192).PrefixCaching(true).HFToken(pod.SecretKeyRef{Name: "hf-token", Key: "token"}).
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
		AddArgs("--max-num-seqs", "64").
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
			S3Credentials(pod.SecretKeyRef{Name: "s3", Key: "AWS_ACCESS_KEY_ID"}, pod.SecretKeyRef{Name: "s3", Key: "AWS_SECRET_ACCESS_KEY"}).S3Endpoint("http://minio:9000").S3Region("eu-west-1"))
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
		MaxModelLen(16384).MemoryUtilization(0.85).PrefixCaching(false).DType("bfloat16").
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
		MaxModelLen(8192).MemoryUtilization(0.9).DType("bfloat16").PrefixCaching(false).
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
		APIKey(pod.SecretKeyRef{Name: "tei-key", Key: "key"}).HFToken(pod.SecretKeyRef{Name: "hf-token", Key: "token"}).ModelCache("hub"))
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
	r := render(t, serve.Ollama("chat", "qwen2.5:7b").On(hardware.L4).Accelerators(1).MaxModelLen(8192).ServedModelName("chat").KeepAlive(time.Hour))
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
		MaxModelLen(8192).MemoryUtilization(0.85).PrefixCaching(true).TrustRemoteCode().
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

func flagValue(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
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

func TestURLFeedsTheClient(t *testing.T) {
	url := func(s *serve.Service) string {
		t.Helper()
		u, err := serve.URL(s)
		require.NoError(t, err)
		return u
	}
	svc := serve.VLLM("qwen", qwen).Namespace("team-a")
	assert.Equal(t, "http://qwen-api.team-a:8000", url(svc))
	assert.Equal(t, "http://chat-api:11434", url(serve.Ollama("chat", "qwen2.5:7b")))
	assert.Equal(t, "http://npu-api:1025", url(serve.MindIE("npu", "pvc://m/x")))
	c, err := inference.NewClient(url(svc))
	require.NoError(t, err)
	assert.Equal(t, "http://qwen-api.team-a:8000/v1", c.BaseURL())
	r := render(t, svc.On(hardware.H100).Accelerators(1))
	assert.Equal(t, "http://"+r.service.Name+"."+r.service.Namespace+":8000", url(svc), "the URL names the rendered Service")
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

// TestClientWaitsUntilReady: Client returns only once the release is
// Ready, names the model the engine serves and passes the caller's
// options; cubetest has no network, so the client is pointed at a
// servetest server with ClientAt.
func TestClientWaitsUntilReady(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	svc := serve.VLLM("qwen-chat", qwen).Namespace("team-a").On(hardware.H100).Accelerators(1)
	rel, err := cluster.Client.Apply(ctx, svc)
	require.NoError(t, err)
	engine := servetest.New(qwen, servetest.APIKey("sk-a"), servetest.Answer(func(p string) string { return "hello " + p }))
	t.Cleanup(engine.Close)

	type result struct {
		c   *inference.Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := serve.ClientAt(ctx, rel, svc, engine.URL, inference.APIKey("sk-a"))
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("returned before the release was Ready: %v", r.err)
	case <-time.After(200 * time.Millisecond):
	}
	require.NoError(t, cluster.MarkReady(ctx, rel))
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("did not return once the release was Ready")
	}
	require.NoError(t, r.err)
	assert.Equal(t, qwen, r.c.Model(), "the served name vLLM gives a Hugging Face model")
	assert.Equal(t, engine.URL+"/v1", r.c.BaseURL())
	resp, err := r.c.Chat(ctx, inference.UserMessage("team"))
	require.NoError(t, err)
	assert.Equal(t, "hello team", resp.Choices[0].Message.Content)
	require.Len(t, engine.Requests(), 1, "no /v1/models lookup: the model name came from the service")
	assert.True(t, engine.Requests()[0].Authorized)

	// Without an endpoint: the in-cluster URL and an explicit served name.
	named := serve.VLLM("qwen-chat", qwen).Namespace("team-a").On(hardware.H100).Accelerators(1).ServedModelName("chat")
	c, err := serve.Client(ctx, rel, named)
	require.NoError(t, err, "the release is Ready already")
	assert.Equal(t, "http://qwen-chat-api.team-a:8000/v1", c.BaseURL())
	assert.Equal(t, "chat", c.Model())
}

func TestClientRefusals(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	svc := serve.VLLM("qwen-chat", qwen).Namespace("team-a").On(hardware.H100).Accelerators(1)
	rel, err := cluster.Client.Apply(ctx, svc)
	require.NoError(t, err)

	_, err = serve.Client(ctx, nil, svc)
	assert.ErrorContains(t, err, "serve client for qwen-chat: no release")
	_, err = serve.Client(ctx, rel, nil)
	require.Error(t, err)
	other := serve.VLLM("other", qwen).Namespace("team-a").On(hardware.H100).Accelerators(1)
	_, err = serve.Client(ctx, rel, other)
	assert.ErrorContains(t, err, `release team-a/qwen-chat is not this service's`)
	_, err = serve.Client(ctx, rel, serve.VLLM("qwen-chat", qwen).Namespace("team-b").On(hardware.H100).Accelerators(1))
	assert.ErrorContains(t, err, "release team-a/qwen-chat is in another namespace than the service (team-b)")
	_, err = serve.Client(ctx, rel, serve.VLLM("qwen-chat", qwen).Namespace("team-a").On(hardware.H100).Accelerators(-1))
	assert.ErrorContains(t, err, "accelerators", "the service's own problems")
	_, err = serve.Client(ctx, rel, serve.Triton("qwen-chat", "pvc://models/repo").Namespace("team-a").On(hardware.L4).Accelerators(1))
	assert.ErrorContains(t, err, "Triton serves the KServe v2 protocol")
	_, err = serve.Client(ctx, rel, svc, inference.APIKey(" "))
	assert.ErrorContains(t, err, "apiKey", "a bad option fails before the wait")

	require.NoError(t, cluster.MarkFailed(ctx, rel, "ProgressDeadlineExceeded", "image pull"))
	_, err = serve.Client(ctx, rel, svc)
	assert.True(t, errors.Is(err, cube.ErrFailed), "%v", err)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	fresh := serve.VLLM("slow", qwen).Namespace("team-a").On(hardware.H100).Accelerators(1)
	slow, err := cluster.Client.Apply(ctx, fresh)
	require.NoError(t, err)
	_, err = serve.Client(short, slow, fresh)
	require.Error(t, err, "never Ready: the context ends the wait")
}

func leaderWorkerSet(replicas int32, ready int32, conds ...metav1.Condition) *unstructured.Unstructured {
	l := &lwsv1.LeaderWorkerSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: "ns", Generation: 2},
		Spec:       lwsv1.LeaderWorkerSetSpec{Replicas: ptr.To(replicas)},
		Status:     lwsv1.LeaderWorkerSetStatus{ReadyReplicas: ready, UpdatedReplicas: ready, Conditions: conds},
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(l)
	if err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: content}
}

func cond(typ lwsv1.LeaderWorkerSetConditionType, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: string(typ), Status: status, Reason: reason, Message: msg}
}

// TestLeaderWorkerSetStatus reads the statuses the LWS controller (v0.8.0)
// writes: it sets one of Available, Progressing and UpdateInProgress true
// and flips the others false, without observedGeneration.
func TestLeaderWorkerSetStatus(t *testing.T) {
	cases := map[string]struct {
		obj  *unstructured.Unstructured
		want cube.ObjectStatus
	}{
		"new": {leaderWorkerSet(2, 0),
			cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: "0/2 groups ready, 0/2 updated"}},
		"progressing": {leaderWorkerSet(2, 1,
			cond(lwsv1.LeaderWorkerSetProgressing, metav1.ConditionTrue, "GroupsProgressing", "Replicas are progressing")),
			cube.ObjectStatus{Phase: cube.InProgress, Reason: "GroupsProgressing", Message: "Replicas are progressing: 1/2 groups ready, 1/2 updated"}},
		"available": {leaderWorkerSet(2, 2,
			cond(lwsv1.LeaderWorkerSetProgressing, metav1.ConditionFalse, "GroupsProgressing", "Replicas are progressing"),
			cond(lwsv1.LeaderWorkerSetAvailable, metav1.ConditionTrue, "AllGroupsReady", "All replicas are ready")),
			cube.ObjectStatus{Phase: cube.Ready, Reason: "AllGroupsReady", Message: "2/2 groups ready, 2/2 updated"}},
		"rolling update after available": {leaderWorkerSet(2, 2,
			cond(lwsv1.LeaderWorkerSetAvailable, metav1.ConditionFalse, "AllGroupsReady", "All replicas are ready"),
			cond(lwsv1.LeaderWorkerSetUpdateInProgress, metav1.ConditionTrue, "GroupsUpdating", "Rolling Upgrade is in progress"),
			cond(lwsv1.LeaderWorkerSetProgressing, metav1.ConditionTrue, "GroupsProgressing", "Replicas are progressing")),
			cube.ObjectStatus{Phase: cube.InProgress, Reason: "GroupsProgressing", Message: "Replicas are progressing: 2/2 groups ready, 2/2 updated"}},
		"scaled up while available": {leaderWorkerSet(3, 2,
			cond(lwsv1.LeaderWorkerSetAvailable, metav1.ConditionTrue, "AllGroupsReady", "All replicas are ready")),
			cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: "2/3 groups ready, 2/3 updated"}},
		"failed (cubetest)": {leaderWorkerSet(1, 0,
			cond(lwsv1.LeaderWorkerSetAvailable, metav1.ConditionFalse, "GroupCrashed", "leader exited")),
			cube.ObjectStatus{Phase: cube.Failed, Reason: "GroupCrashed", Message: "leader exited: 0/1 groups ready, 0/1 updated"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := cube.ReadStatus(c.obj, serve.Kinds()...)
			got.Ref = cube.ObjectRef{}
			assert.Equal(t, c.want, got)
		})
	}

	stale := leaderWorkerSet(1, 1, metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "AllGroupsReady", ObservedGeneration: 1})
	assert.Equal(t, cube.InProgress, cube.ReadStatus(stale, serve.Kinds()...).Phase, "a condition of an older generation")
}

// TestReaderReadsWhatCubetestWrites checks the reader against cubetest's
// writer for every phase.
func TestReaderReadsWhatCubetestWrites(t *testing.T) {
	for _, phase := range []cube.Phase{cube.InProgress, cube.Ready, cube.Failed} {
		u := leaderWorkerSet(2, 0)
		require.NoError(t, cubetest.SetStatus(u, phase, "", ""))
		assert.Equal(t, phase, cube.ReadStatus(u, serve.Kinds()...).Phase, "phase %s", phase)
		assert.Equal(t, cube.Unknown, cube.ReadStatus(u).Phase, "without serve.Kinds, phase %s", phase)
	}
}
