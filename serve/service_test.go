package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"slices"
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
	"github.com/cubestudio/cube/models"
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

func catalogueModel(t testing.TB, id string) models.Model {
	t.Helper()
	m, err := models.Lookup(id)
	require.NoError(t, err)
	return m
}

// expectPlan computes a plan from hardware.md §4.4 and vLLM's worker,
// written out here independently of the planner: the device memory is the
// profile's, which holds what the driver reports; vLLM
// claims ⌈utilisation × that⌉, the runtime context, NCCL and CUDA graphs
// staying outside; weights are P × bytes split over TP × PP ranks; the
// reserve is one max_num_batched_tokens forward's gate/up activations
// (2 × FFN/TP × 2 bytes) + max_num_seqs rows of fp32 logits, with vLLM's
// defaults 8192/1024 on devices of 70 GiB or more other than the A100 and
// 2048/256 elsewhere; the KV page of a layer is 2 × KV heads per rank (at
// least 1) × head_dim × bytes, or the MLA latent (kv_lora_rank +
// qk_rope_head_dim) × bytes on every rank; blocks = KV memory ÷ (block ×
// page × layers of the fullest stage), blocks of 16 tokens on GPUs and 128
// on Ascend NPUs (vLLM-Ascend).
func expectPlan(m models.Model, acc hardware.Profile, util float64, tp, pp, nodes, perNode, ctx int, weight, kv models.DType) serve.PlanResult {
	memory := acc.MemoryBytes
	tokens, seqs := int64(2048), int64(256)
	if memory >= 70<<30 && acc.Name != "A100-SXM-80GB" && acc.Name != "A100-SXM-40GB" {
		tokens, seqs = 8192, 1024
	}
	block := int64(16)
	if acc.Vendor == hardware.Huawei {
		block = 128
	}
	usable := int64(math.Ceil(float64(memory) * util))
	allWeights := (m.Parameters*int64(weight.Bits()) + 7) / 8
	weights := (allWeights + int64(tp*pp) - 1) / int64(tp*pp)
	ffn := m.IntermediateSize
	if m.IsMoE() {
		ffn = max(ffn, (m.MoE.ExpertsPerToken+m.MoE.SharedExperts)*m.MoE.ExpertIntermediateSize)
	}
	reserve := tokens*2*int64((ffn+tp-1)/tp)*2 + seqs*int64(m.VocabSize)*4
	kvBytes := int64(kv.Bits() / 8)
	var page int64
	if m.UsesMLA() {
		page = int64(m.MLA.KVLoraRank+m.MLA.QKRopeHeadDim) * kvBytes
	} else {
		page = 2 * int64(max(1, m.KVHeads/tp)) * int64(m.HeadDim) * kvBytes
	}
	layers := int64((m.Layers + pp - 1) / pp)
	kvPerDevice := usable - weights - reserve
	if acc.Product == "310P3" {
		kvPerDevice /= 2 // vllm_ascend/_310p/worker_310p.py
	}
	blocks := kvPerDevice / (block * page * layers)
	var modelKV int64
	if m.UsesMLA() {
		modelKV = int64(m.Layers) * page
	} else {
		modelKV = int64(m.Layers) * 2 * int64(m.KVHeads*m.HeadDim) * kvBytes
	}
	return serve.PlanResult{
		Model: m.Name, Accelerator: acc.Name,
		TensorParallel: tp, PipelineParallel: pp, Nodes: nodes, AcceleratorsPerNode: perNode,
		ContextLength: ctx, MemoryUtilization: util, WeightDType: weight, KVCacheDType: kv, BlockSize: int(block),
		DeviceMemoryBytes: memory, HeadroomBytesPerDevice: memory - usable,
		MaxBatchedTokens: int(tokens), MaxSequences: int(seqs),
		UsableBytesPerDevice: usable,
		WeightBytesPerDevice: weights, ReserveBytesPerDevice: reserve,
		KVCacheBytesPerDevice: kvPerDevice, KVCacheBytes: kvPerDevice * int64(tp*pp),
		KVBytesPerToken: modelKV, KVBytesPerTokenPerDevice: page * layers,
		KVBlocks: blocks, KVTokenCapacity: blocks * block, MaxConcurrentSequences: blocks * block / int64(ctx),
	}
}

func TestPlanMatchesTheReferenceFormulas(t *testing.T) {
	llama8 := catalogueModel(t, "meta-llama/Llama-3.1-8B-Instruct")
	llama70 := catalogueModel(t, "meta-llama/Llama-3.1-70B-Instruct")
	qwen7 := catalogueModel(t, "Qwen/Qwen2.5-7B-Instruct")
	qwen7base := catalogueModel(t, "Qwen/Qwen2.5-7B")
	qwen72 := catalogueModel(t, "Qwen/Qwen2.5-72B-Instruct")
	dsv3 := catalogueModel(t, "deepseek-ai/DeepSeek-V3")
	for _, tc := range []struct {
		model              models.Model
		acc                hardware.Profile
		opts               []serve.PlanOption
		tp, pp, nodes, per int
		ctx                int
		weight, kv         models.DType
		util               float64
	}{
		// Llama-3.1-8B, full 131072-token context (16 GiB of KV per sequence).
		{llama8, hardware.H100, nil, 1, 1, 1, 1, 131072, models.BF16, models.BF16, 0.9},
		{llama8, hardware.A100_40G, nil, 1, 1, 1, 1, 131072, models.BF16, models.BF16, 0.9},
		{llama8, hardware.L4, nil, 2, 1, 1, 2, 131072, models.BF16, models.BF16, 0.9}, // 5.1 GiB left at TP=1
		{llama8, hardware.H200, nil, 1, 1, 1, 1, 131072, models.BF16, models.BF16, 0.9},
		{llama8, hardware.L4, []serve.PlanOption{serve.ContextLength(8192)}, 1, 1, 1, 1, 8192, models.BF16, models.BF16, 0.9},
		// Llama-3.1-70B: 131.4 GiB of bf16 weights.
		{llama70, hardware.H100, nil, 4, 1, 1, 4, 131072, models.BF16, models.BF16, 0.9},
		{llama70, hardware.H100, []serve.PlanOption{serve.ContextLength(8192)}, 2, 1, 1, 2, 8192, models.BF16, models.BF16, 0.9},
		{llama70, hardware.A100_40G, nil, 8, 1, 1, 8, 131072, models.BF16, models.BF16, 0.9},
		{llama70, hardware.L4, nil, 8, 2, 2, 8, 131072, models.BF16, models.BF16, 0.9}, // multi-node
		{llama70, hardware.H200, nil, 2, 1, 1, 2, 131072, models.BF16, models.BF16, 0.9},
		{llama70, hardware.H100, []serve.PlanOption{serve.WeightDType(models.FP8), serve.KVCacheDType(models.FP8)}, 2, 1, 1, 2, 131072, models.FP8, models.FP8, 0.9},
		{llama70, hardware.A100_40G, []serve.PlanOption{serve.WeightDType(models.INT4), serve.ContextLength(8192)}, 1, 1, 1, 1, 8192, models.INT4, models.BF16, 0.9},
		// Qwen2.5-7B-Instruct: 32768-token context, 28 heads (TP ∈ {1, 2, 4}).
		{qwen7, hardware.H100, nil, 1, 1, 1, 1, 32768, models.BF16, models.BF16, 0.9},
		{qwen7, hardware.A100_40G, nil, 1, 1, 1, 1, 32768, models.BF16, models.BF16, 0.9},
		{qwen7, hardware.L4, nil, 1, 1, 1, 1, 32768, models.BF16, models.BF16, 0.9},
		{qwen7, hardware.H200, nil, 1, 1, 1, 1, 32768, models.BF16, models.BF16, 0.9},
		{qwen7, hardware.L4, []serve.PlanOption{serve.TensorParallel(4)}, 4, 1, 1, 4, 32768, models.BF16, models.BF16, 0.9},
		{qwen7, hardware.L4, []serve.PlanOption{serve.MemoryUtilization(0.5), serve.ContextLength(4096)}, 2, 1, 1, 2, 4096, models.BF16, models.BF16, 0.5},
		// Qwen2.5-7B on 4.5 GB shares: TP=4 is the most its heads allow;
		// at 0.15, pipeline stages are added on the same node (2 per node of 8).
		{qwen7, hardware.L4.PerNode(8), []serve.PlanOption{serve.MemoryUtilization(0.2), serve.ContextLength(1024)}, 4, 1, 1, 4, 1024, models.BF16, models.BF16, 0.2},
		{qwen7, hardware.L4.PerNode(8), []serve.PlanOption{serve.MemoryUtilization(0.15), serve.ContextLength(1024)}, 4, 2, 1, 8, 1024, models.BF16, models.BF16, 0.15},
		// Ascend: Qwen2.5-72B on 64 GB 910B3s; Qwen2.5-7B on 24 GB 310P3s,
		// which keep half the remainder for the KV cache.
		{qwen72, hardware.Ascend910B3, nil, 4, 1, 1, 4, 32768, models.BF16, models.BF16, 0.9},
		{qwen7, hardware.Ascend310P3, nil, 1, 1, 1, 1, 32768, models.BF16, models.BF16, 0.9},
		{qwen7base, hardware.Ascend310P3, nil, 2, 1, 1, 2, 131072, models.BF16, models.BF16, 0.9}, // 53,280 tokens at TP=1
		// DeepSeek-V3: 625 GiB of FP8 weights, MLA latent on every rank.
		{dsv3, hardware.H100, nil, 8, 2, 2, 8, 163840, models.FP8, models.BF16, 0.9},
		{dsv3, hardware.A100_40G, nil, 8, 3, 3, 8, 163840, models.FP8, models.BF16, 0.9},
		{dsv3, hardware.L4, nil, 8, 5, 5, 8, 163840, models.FP8, models.BF16, 0.9},
		{dsv3, hardware.H200, nil, 8, 1, 1, 8, 163840, models.FP8, models.BF16, 0.9},
		{dsv3, hardware.H200, []serve.PlanOption{serve.KVCacheDType(models.FP8)}, 8, 1, 1, 8, 163840, models.FP8, models.FP8, 0.9},
	} {
		name := tc.model.Name + "/" + tc.acc.Name
		util := tc.util
		got, err := serve.Plan(tc.model, tc.acc, tc.opts...)
		require.NoError(t, err, name)
		assert.Equal(t, expectPlan(tc.model, tc.acc, util, tc.tp, tc.pp, tc.nodes, tc.per, tc.ctx, tc.weight, tc.kv), got, name)
		assert.Equal(t, tc.tp*tc.pp, got.Accelerators(), name)
		assert.GreaterOrEqual(t, got.KVTokenCapacity, int64(tc.ctx), name)
	}
}

// A few plans checked against numbers worked by hand.
func TestPlanHandChecked(t *testing.T) {
	// Llama-3.1-8B on H100, which reports 81,559 MiB = 85,520,809,984 B:
	// ⌈0.9 × that⌉ = 76,968,728,986 B usable, 8,552,080,998 B outside;
	// 8,030,261,248 × 2 = 16,060,522,496 B weights; an 80 GiB H100 batches
	// 8192 tokens and 1024 sequences, so the reserve is 8192·2·14336·2 +
	// 1024·128256·4 = 995,098,624 B; 59,913,107,866 B of KV at 128 KiB a
	// token = 28,568 blocks = 457,088 tokens = 3 × 131072.
	p, err := serve.Plan(catalogueModel(t, "meta-llama/Llama-3.1-8B-Instruct"), hardware.H100)
	require.NoError(t, err)
	assert.Equal(t, int64(85_520_809_984), p.DeviceMemoryBytes)
	assert.Equal(t, int64(76_968_728_986), p.UsableBytesPerDevice)
	assert.Equal(t, int64(8_552_080_998), p.HeadroomBytesPerDevice)
	assert.Equal(t, 8192, p.MaxBatchedTokens)
	assert.Equal(t, 1024, p.MaxSequences)
	assert.Equal(t, int64(16_060_522_496), p.WeightBytesPerDevice)
	assert.Equal(t, int64(995_098_624), p.ReserveBytesPerDevice)
	assert.Equal(t, int64(59_913_107_866), p.KVCacheBytesPerDevice)
	assert.Equal(t, int64(131072), p.KVBytesPerToken)
	assert.Equal(t, int64(28_568), p.KVBlocks)
	assert.Equal(t, int64(457_088), p.KVTokenCapacity)
	assert.Equal(t, int64(3), p.MaxConcurrentSequences)

	// The same model on an A100-80GB batches 2048 tokens and 256 sequences
	// (vLLM exempts the A100 from its large-device defaults): 2048·2·14336·2
	// + 256·128256·4 = 248,774,656 B.
	p, err = serve.Plan(catalogueModel(t, "meta-llama/Llama-3.1-8B-Instruct"), hardware.A100_80G)
	require.NoError(t, err)
	assert.Equal(t, 2048, p.MaxBatchedTokens)
	assert.Equal(t, 256, p.MaxSequences)
	assert.Equal(t, int64(248_774_656), p.ReserveBytesPerDevice)

	// An L4 reports 23,034 MiB, not 24 GiB: the profile holds that figure.
	p, err = serve.Plan(catalogueModel(t, "meta-llama/Llama-3.1-8B-Instruct"), hardware.L4, serve.ContextLength(8192))
	require.NoError(t, err)
	assert.Equal(t, int64(23034)<<20, p.DeviceMemoryBytes)

	// The profile is the one source of the device's memory: a copy with
	// another size (a driver that reports less, a card the catalogue
	// lacks) is planned with that size, nothing overrides it.
	a100 := hardware.A100_40G
	a100.MemoryBytes = 40536 << 20
	p, err = serve.Plan(catalogueModel(t, "meta-llama/Llama-3.1-8B-Instruct"), a100, serve.ContextLength(8192))
	require.NoError(t, err)
	assert.Equal(t, int64(40536)<<20, p.DeviceMemoryBytes)
	for _, acc := range []hardware.Profile{hardware.T4, hardware.L4, hardware.A100_40G, hardware.A100_80G, hardware.H100, hardware.L40S} {
		p, err := serve.Plan(catalogueModel(t, "meta-llama/Llama-3.2-1B-Instruct"), acc, serve.ContextLength(2048))
		require.NoError(t, err, acc.Name)
		assert.Equal(t, acc.MemoryBytes, p.DeviceMemoryBytes, acc.Name)
	}

	// Ascend NPUs: vLLM-Ascend's 128-token blocks.
	p, err = serve.Plan(catalogueModel(t, "Qwen/Qwen2.5-7B-Instruct"), hardware.Ascend910B3)
	require.NoError(t, err)
	assert.Equal(t, 128, p.BlockSize)
	assert.Equal(t, p.KVBlocks*128, p.KVTokenCapacity)

	// DeepSeek-V3 on 8 × H200: 671,026,404,352 B of FP8 over 8 ranks =
	// 83,878,300,544 B each; the 576-wide latent is not split, so every rank
	// caches 576 × 2 × 61 = 70,272 B a token: 46,048 blocks.
	p, err = serve.Plan(catalogueModel(t, "deepseek-ai/DeepSeek-V3"), hardware.H200)
	require.NoError(t, err)
	assert.Equal(t, int64(83_878_300_544), p.WeightBytesPerDevice)
	assert.Equal(t, int64(70_272), p.KVBytesPerTokenPerDevice)
	assert.Equal(t, p.KVBytesPerToken, p.KVBytesPerTokenPerDevice, "MLA KV does not shrink with TP")
	assert.Equal(t, int64(46_048), p.KVBlocks)
	assert.Equal(t, int64(4), p.MaxConcurrentSequences)

	// Llama-3.1-70B on L4 needs two nodes of 8: 40 layers per stage,
	// 1 KV head per rank (8 heads over 8 ranks): 20,480 B a token.
	p, err = serve.Plan(catalogueModel(t, "meta-llama/Llama-3.1-70B-Instruct"), hardware.L4)
	require.NoError(t, err)
	assert.Equal(t, 2, p.Nodes)
	assert.Equal(t, 8, p.AcceleratorsPerNode)
	assert.Equal(t, int64(8_819_213_312), p.WeightBytesPerDevice)
	assert.Equal(t, int64(20_480), p.KVBytesPerTokenPerDevice)
	assert.Equal(t, int64(38_933), p.KVBlocks)
}

func TestPlanReplicatesKVHeadsBeyondTheirCount(t *testing.T) {
	glm := catalogueModel(t, "THUDM/glm-4-9b-chat") // 2 KV heads
	for tp, perLayer := range map[int]int64{1: 2 * 2 * 128 * 2, 2: 2 * 1 * 128 * 2, 4: 2 * 1 * 128 * 2, 8: 2 * 1 * 128 * 2} {
		p, err := serve.Plan(glm, hardware.H100, serve.TensorParallel(tp), serve.ContextLength(8192))
		require.NoError(t, err)
		assert.Equal(t, perLayer*40, p.KVBytesPerTokenPerDevice, "TP=%d", tp)
	}
}

func TestPlanForcedTensorParallelMustDivideHeads(t *testing.T) {
	qwen7 := catalogueModel(t, "Qwen/Qwen2.5-7B-Instruct")
	_, err := serve.Plan(qwen7, hardware.H100, serve.TensorParallel(8))
	require.EqualError(t, err, "plan Qwen2.5-7B-Instruct on H100-SXM-80GB: tensorParallel: Invalid value: 8: "+
		"must divide Qwen2.5-7B-Instruct's 28 attention heads")

	_, err = serve.Plan(qwen7, hardware.H100, serve.TensorParallel(16))
	require.EqualError(t, err, "plan Qwen2.5-7B-Instruct on H100-SXM-80GB: tensorParallel: Invalid value: 16: "+
		"H100-SXM-80GB nodes hold 8 devices")

	odd := qwen7
	odd.Name, odd.AttentionHeads, odd.KVHeads = "odd", 24, 6 // 4 divides 24 but neither divides 6 nor is a multiple of it
	_, err = serve.Plan(odd, hardware.H100, serve.TensorParallel(4))
	require.EqualError(t, err, "plan odd on H100-SXM-80GB: tensorParallel: Invalid value: 4: "+
		"must divide, or be a multiple of, odd's 6 KV heads")

	_, err = serve.Plan(odd, hardware.H100, serve.TensorParallel(5))
	require.EqualError(t, err, "plan odd on H100-SXM-80GB: tensorParallel: Invalid value: 5: must divide odd's 24 attention heads")
	p, err := serve.Plan(odd, hardware.H100, serve.MaxTensorParallel(1), serve.TensorParallel(3), serve.ContextLength(1024))
	require.NoError(t, err, "a forced TP need not be a power of two; it overrides MaxTensorParallel")
	assert.Equal(t, 3, p.TensorParallel)

	oddHeads := qwen7
	oddHeads.Name, oddHeads.AttentionHeads, oddHeads.KVHeads = "odd-heads", 7, 7
	_, err = serve.Plan(oddHeads, hardware.H100, serve.WeightDType(models.INT4), serve.ContextLength(1024))
	require.NoError(t, err, "TP=1 divides anything")
}

func TestPlanCannotFit(t *testing.T) {
	need := func(p serve.PlanResult) int64 {
		blocks := (int64(p.ContextLength) + 15) / 16
		return p.WeightBytesPerDevice + p.ReserveBytesPerDevice + blocks*16*p.KVBytesPerTokenPerDevice
	}

	// Llama-3.1-70B on a single L4.
	llama70 := catalogueModel(t, "meta-llama/Llama-3.1-70B-Instruct")
	single := hardware.L4.PerNode(1)
	_, err := serve.Plan(llama70, single, serve.MaxNodes(1), serve.ContextLength(8192))
	want := expectPlan(llama70, single, 0.9, 1, 1, 1, 1, 8192, models.BF16, models.BF16)
	require.EqualError(t, err, "plan Llama-3.1-70B-Instruct on L4: needs 134.3 GiB per device at TP=1 "+
		"but L4 has 20.2 GiB usable: short by 114.0 GiB")
	var fit *serve.FitError
	require.ErrorAs(t, err, &fit)
	assert.ErrorIs(t, err, serve.ErrDoesNotFit)
	assert.Equal(t, serve.FitError{
		Model: "Llama-3.1-70B-Instruct", Accelerator: "L4", TensorParallel: 1, PipelineParallel: 1, Nodes: 1,
		NeedBytes: need(want), UsableBytes: want.UsableBytesPerDevice,
	}, *fit)
	assert.Equal(t, need(want)-want.UsableBytesPerDevice, fit.ShortBytes())

	// DeepSeek-V3 upcast to BF16 (1.25 TiB) on at most two nodes of L4s.
	dsv3 := catalogueModel(t, "deepseek-ai/DeepSeek-V3")
	_, err = serve.Plan(dsv3, hardware.L4, serve.WeightDType(models.BF16), serve.MaxNodes(2))
	want = expectPlan(dsv3, hardware.L4, 0.9, 8, 2, 2, 8, 163840, models.BF16, models.BF16)
	require.ErrorAs(t, err, &fit)
	assert.Equal(t, 8, fit.TensorParallel)
	assert.Equal(t, 2, fit.PipelineParallel)
	assert.Equal(t, 2, fit.Nodes)
	assert.Equal(t, need(want), fit.NeedBytes)
	assert.EqualError(t, err, "plan DeepSeek-V3 on L4: needs 83.7 GiB per device at TP=8, PP=2 (2 nodes) "+
		"but L4 has 20.2 GiB usable: short by 63.5 GiB")

	// On a 310P the KV cache gets half of what is left, so one sequence
	// needs twice its blocks.
	one310P := hardware.Ascend310P3.PerNode(1)
	qwen7base := catalogueModel(t, "Qwen/Qwen2.5-7B")
	_, err = serve.Plan(qwen7base, one310P, serve.MaxNodes(1))
	want = expectPlan(qwen7base, one310P, 0.9, 1, 1, 1, 1, 131072, models.BF16, models.BF16)
	require.ErrorAs(t, err, &fit)
	assert.Equal(t, want.WeightBytesPerDevice+want.ReserveBytesPerDevice+2*131072*57344, fit.NeedBytes)
	assert.EqualError(t, err, "plan Qwen2.5-7B on Ascend310P3: needs 28.5 GiB per device at TP=1 "+
		"but Ascend310P3 has 21.6 GiB usable: short by 6.9 GiB")

	// The context alone can be too long: Llama-3.1-8B on one L4 with a
	// million-token context and no room to grow.
	_, err = serve.Plan(catalogueModel(t, "meta-llama/Llama-3.1-8B"), single, serve.MaxNodes(1), serve.ContextLength(1<<20))
	require.ErrorIs(t, err, serve.ErrDoesNotFit)
	assert.Contains(t, err.Error(), "needs 143.2 GiB per device at TP=1 but L4 has 20.2 GiB usable")
}

func TestPlanRejectsBadInput(t *testing.T) {
	qwen7 := catalogueModel(t, "Qwen/Qwen2.5-7B-Instruct")
	_, err := serve.Plan(qwen7, hardware.H100,
		serve.ContextLength(-1), serve.MemoryUtilization(1.5), serve.KVCacheDType(models.INT4),
		serve.WeightDType("fp6"), serve.MaxTensorParallel(0), serve.TensorParallel(-2), serve.MaxNodes(0),
		serve.Overhead(-1), serve.MaxBatchedTokens(0), serve.MaxSequences(0))
	require.Error(t, err)
	for _, want := range []string{
		"plan Qwen2.5-7B-Instruct on H100-SXM-80GB: [",
		"contextLength: Invalid value: -1: must be positive",
		"memoryUtilization: Invalid value: 1.5: must be in (0, 1]",
		`kvCacheDType: Unsupported value: "int4"`,
		`weightDType: Unsupported value: "fp6"`,
		"maxTensorParallel: Invalid value: 0: must be at least 1",
		"tensorParallel: Invalid value: -2: must be at least 1",
		"maxNodes: Invalid value: 0: must be at least 1",
		"overhead: Invalid value: -1: must not be negative",
		"maxBatchedTokens: Invalid value: 0: must be at least 1",
		"maxSequences: Invalid value: 0: must be at least 1",
	} {
		assert.Contains(t, err.Error(), want)
	}

	_, err = serve.Plan(models.Model{Name: "empty"}, hardware.CPU)
	require.Error(t, err)
	for _, want := range []string{
		`model: Invalid value: "empty": [num_hidden_layers: Invalid value: 0: must be positive`,
		`accelerator: Invalid value: "cpu-amd64": has no device memory: Plan sizes a model for GPUs or NPUs`,
		"contextLength: Invalid value: 0: must be positive (the model states no context length: set serve.ContextLength)",
	} {
		assert.Contains(t, err.Error(), want)
	}
	// Options never given are not blamed for the CPU's missing devices.
	assert.NotContains(t, err.Error(), "maxTensorParallel")
	assert.NotContains(t, err.Error(), "maxPerNode")

	// vLLM's share must leave room for the runtime, NCCL and CUDA graphs.
	_, err = serve.Plan(qwen7, hardware.L4, serve.MemoryUtilization(0.99))
	require.ErrorContains(t, err, "memoryUtilization: Invalid value: 0.99: leaves 0.2 GiB of L4's 22.5 GiB outside vLLM's share, less than the 1.0 GiB")
	_, err = serve.Plan(qwen7, hardware.L4, serve.Overhead(4<<30))
	require.ErrorContains(t, err, "overhead: Invalid value: 0.9: leaves 2.2 GiB of L4's 22.5 GiB outside vLLM's share, less than the 4.0 GiB")

	_, err = serve.Plan(qwen7, hardware.H100, serve.MemoryUtilization(math.NaN()))
	require.ErrorContains(t, err, "memoryUtilization: Invalid value: NaN: must be in (0, 1]")

	noPowerOfTwo := qwen7
	noPowerOfTwo.Name, noPowerOfTwo.AttentionHeads, noPowerOfTwo.KVHeads = "three-heads", 3, 3
	_, err = serve.Plan(noPowerOfTwo, hardware.H100, serve.MaxTensorParallel(1))
	require.NoError(t, err, "TP=1 always splits")
}

func TestPlanDefaultsFollowTheModel(t *testing.T) {
	fp16 := catalogueModel(t, "Qwen/Qwen2.5-7B-Instruct")
	fp16.DType = models.FP16
	p, err := serve.Plan(fp16, hardware.H100)
	require.NoError(t, err)
	assert.Equal(t, models.FP16, p.KVCacheDType, "vLLM's auto KV dtype is the model's 16-bit format")
	fp16.DType = models.FP32
	p, err = serve.Plan(fp16, hardware.H100)
	require.NoError(t, err)
	assert.Equal(t, models.FP16, p.KVCacheDType)
	assert.Equal(t, models.FP32, p.WeightDType)

	p, err = serve.Plan(catalogueModel(t, "Qwen/Qwen2.5-7B-Instruct"), hardware.H100, serve.Overhead(0), serve.MaxBatchedTokens(1), serve.MaxSequences(3))
	require.NoError(t, err)
	assert.Equal(t, int64(1*2*18944*2+3*152064*4), p.ReserveBytesPerDevice)
}

func TestPlanErrorsAreDistinct(t *testing.T) {
	_, err := serve.Plan(catalogueModel(t, "Qwen/Qwen2.5-7B-Instruct"), hardware.H100, serve.TensorParallel(8))
	assert.False(t, errors.Is(err, serve.ErrDoesNotFit), "a bad option is not a capacity problem")
}

// Plan's search over pipeline stages is bounded by bisection, not by the
// model's layer count: a config claiming two billion layers and no node
// limit returns at once (the fuzzer found the linear search hanging).
func TestPlanWithAbsurdLayerCounts(t *testing.T) {
	m := catalogueModel(t, "meta-llama/Llama-3.1-70B-Instruct")
	m.Layers = math.MaxInt32
	start := time.Now()
	_, _ = serve.Plan(m, hardware.L4, serve.MaxNodes(math.MaxInt32), serve.ContextLength(1024))
	_, _ = serve.Plan(m, hardware.L4.PerNode(1), serve.MaxNodes(math.MaxInt32), serve.WeightDType(models.FP32))
	assert.Less(t, time.Since(start), 5*time.Second)

	// The same candidates as a stage-by-stage search: Llama-3.1-70B on L4
	// needs two nodes of 8 at 131072 tokens (tested above); at 8192 tokens
	// on one-device nodes it needs the first fitting stage count.
	p, err := serve.Plan(catalogueModel(t, "meta-llama/Llama-3.1-70B-Instruct"), hardware.L4.PerNode(1), serve.ContextLength(8192))
	require.NoError(t, err)
	for pp := 2; pp < p.PipelineParallel; pp++ {
		_, err := serve.Plan(catalogueModel(t, "meta-llama/Llama-3.1-70B-Instruct"), hardware.L4.PerNode(1),
			serve.ContextLength(8192), serve.MaxNodes(pp))
		require.ErrorIs(t, err, serve.ErrDoesNotFit, "%d stages", pp)
	}
}

// Plan sizes vLLM's KV cache, which an encoder does not have: it says so
// and names the engine that serves one, instead of dividing by a zero KV
// page.
func TestPlanRefusesModelsThatDoNotGenerate(t *testing.T) {
	for _, tc := range []struct{ id, task string }{
		{"BAAI/bge-m3", "an embedding model"},
		{"BAAI/bge-reranker-v2-m3", "a reranking model"},
	} {
		_, err := serve.Plan(catalogueModel(t, tc.id), hardware.H100)
		require.Error(t, err, tc.id)
		assert.ErrorContains(t, err, "is "+tc.task+", which Plan does not size (it sizes vLLM's KV cache for text generation): serve it with serve.TEI")
		assert.False(t, errors.Is(err, serve.ErrDoesNotFit), tc.id)
	}
}

// A vision-language model's vision tower is counted in the weights every
// device holds: Qwen2.5-VL-7B plans as Qwen2.5-7B's decoder plus 677 M
// parameters of tower, and at its 128000-token context it needs two L4s
// where the text-only Qwen2.5-7B-Instruct (32768 tokens) fits on one.
func TestPlanCountsTheVisionTower(t *testing.T) {
	vl := catalogueModel(t, "Qwen/Qwen2.5-VL-7B-Instruct")
	text := catalogueModel(t, "Qwen/Qwen2.5-7B-Instruct")
	got, err := serve.Plan(vl, hardware.L4)
	require.NoError(t, err)
	assert.Equal(t, expectPlan(vl, hardware.L4, 0.9, 2, 1, 1, 2, 128000, models.BF16, models.BF16), got)
	assert.Equal(t, (vl.Parameters*2+1)/2, got.WeightBytesPerDevice, "8.29 B parameters in bf16 over two ranks")

	sameLength := []serve.PlanOption{serve.ContextLength(32768), serve.TensorParallel(1)}
	withTower, err := serve.Plan(vl, hardware.H100, sameLength...)
	require.NoError(t, err)
	without, err := serve.Plan(text, hardware.H100, sameLength...)
	require.NoError(t, err)
	assert.Equal(t, 2*vl.VisionParameters, withTower.WeightBytesPerDevice-without.WeightBytesPerDevice)
	assert.Equal(t, without.KVBytesPerToken, withTower.KVBytesPerToken, "the tower adds no KV cache")
	assert.Less(t, withTower.KVTokenCapacity, without.KVTokenCapacity)
}

// vLLM splits the vision tower's heads over the tensor-parallel ranks too
// (Qwen2_5_VisionAttention), so a size that splits the decoder but not the
// tower is refused.
func TestPlanSplitsTheVisionTowersHeads(t *testing.T) {
	m := catalogueModel(t, "Qwen/Qwen2.5-VL-7B-Instruct")
	m.Vision.Heads = 10 // 1280 / 10 = 128 per head; 28 decoder heads and 4 KV heads split by 4
	_, err := serve.Plan(m, hardware.H100, serve.TensorParallel(4))
	assert.ErrorContains(t, err, "tensorParallel: Invalid value: 4: must divide the 10 attention heads of Qwen2.5-VL-7B-Instruct's vision tower")
	plan, err := serve.Plan(m, hardware.H100, serve.TensorParallel(2))
	require.NoError(t, err)
	assert.Equal(t, 2, plan.TensorParallel)
}

// Services check the model's task against their engine when they know the
// model's facts.
func TestServiceChecksTheModelsTask(t *testing.T) {
	objs, err := serve.TEI("embed", "BAAI/bge-m3").On(hardware.L4).Objects()
	require.NoError(t, err)
	dep := objs[0].(*appsv1.Deployment)
	assert.Equal(t, serve.DefaultTEIImage, dep.Spec.Template.Spec.Containers[0].Image)

	for _, tc := range []struct {
		name string
		svc  *serve.Service
		want string
	}{
		{"TEI with a chat model", serve.TEI("x", "Qwen/Qwen2.5-7B-Instruct").On(hardware.L4),
			`spec.model: Invalid value: "Qwen/Qwen2.5-7B-Instruct": Qwen2.5-7B-Instruct is a text-generation model and TEI serves embedding, reranking and classification models: serve it with serve.VLLM`},
		{"TEI with a vision-language model", serve.TEI("x", "Qwen/Qwen2.5-VL-7B-Instruct"),
			"Qwen2.5-VL-7B-Instruct is a vision-language model and TEI serves"},
		{"vLLM with an embedding model under Auto", serve.VLLM("x", "BAAI/bge-m3").On(hardware.L4).Auto(),
			`spec.model: Invalid value: "BAAI/bge-m3": bge-m3 is an embedding model, which vLLM does not serve: serve it with serve.TEI`},
		{"vLLM with a reranker on a GPU", serve.VLLM("x", "BAAI/bge-reranker-v2-m3").On(hardware.L4).Accelerators(1),
			"bge-reranker-v2-m3 is a reranking model, which vLLM does not serve: serve it with serve.TEI"},
		{"SGLang with an embedding model", serve.SGLang("x", "hf://BAAI/bge-m3").On(hardware.L4),
			"bge-m3 is an embedding model, which SGLang does not serve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.svc.Objects()
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
			assert.NotContains(t, err.Error(), "Plan does not size", "reported once, by the task check")
		})
	}

	// A vision-language model is a vLLM model, sized with its tower.
	objs, err = serve.VLLM("vl", "Qwen/Qwen2.5-VL-7B-Instruct").On(hardware.L4).Auto().Objects()
	require.NoError(t, err)
	args := objs[0].(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Args
	assert.Equal(t, "2", args[slices.Index(args, "--tensor-parallel-size")+1])
	assert.Equal(t, "128000", args[slices.Index(args, "--max-model-len")+1])
}
