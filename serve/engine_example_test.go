package serve_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/cubestudio/cube/pod"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/serve"
)

// describe prints the objects of w and the command line of its serving
// container(s).
func describe(w cube.Workload) {
	objs, err := w.Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range objs {
		fmt.Println(o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
		switch v := o.(type) {
		case *appsv1.Deployment:
			printPod("pod", v.Spec.Template.Spec)
		case *lwsv1.LeaderWorkerSet:
			printPod("leader", v.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec)
			printPod("worker", v.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec)
		}
	}
}

func printPod(role string, spec corev1.PodSpec) {
	for _, c := range spec.InitContainers {
		fmt.Printf("  %s init %s: %s\n", role, c.Name, commandLine(c))
	}
	c := spec.Containers[0]
	fmt.Printf("  %s %s: %s\n", role, c.Name, commandLine(c))
	for _, name := range []corev1.ResourceName{hardware.ResourceNVIDIAGPU, hardware.ResourceAscend910} {
		if q, ok := c.Resources.Limits[name]; ok {
			fmt.Printf("  %s %s: %s\n", role, name, q.String())
		}
	}
}

func commandLine(c corev1.Container) string {
	words := append(append([]string{}, c.Command...), c.Args...)
	for i, w := range words {
		if strings.Contains(w, "\n") {
			words[i] = "'<script>'"
		}
	}
	return strings.Join(words, " ")
}

func ExampleVLLM() {
	describe(serve.VLLM("qwen-chat", "Qwen/Qwen2.5-7B-Instruct").
		On(hardware.H100).Accelerators(1).
		MaxModelLen(8192).PrefixCaching(true).
		HFToken(pod.SecretKeyRef{Name: "hf-token", Key: "token"}))
	// Output:
	// Deployment qwen-chat
	//   pod vllm: vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000 --max-model-len 8192 --enable-prefix-caching
	//   pod nvidia.com/gpu: 1
	// Service qwen-chat-api
}

// ExampleService_APIKey makes vLLM require a bearer token kept in
// a Secret; a literal key in the arguments is refused.
func ExampleService_APIKey() {
	objs, err := serve.VLLM("qwen-chat", "Qwen/Qwen2.5-7B-Instruct").
		On(hardware.H100).Accelerators(1).
		APIKey(pod.SecretKeyRef{Name: "qwen-chat-api-key", Key: "key"}).Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range objs[0].(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Env {
		fmt.Printf("%s from secret %s key %s\n", e.Name, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
	}

	_, err = serve.VLLM("qwen-chat", "Qwen/Qwen2.5-7B-Instruct").
		On(hardware.H100).Accelerators(1).
		AddArgs("--api-key", "sk-live-123").Objects()
	fmt.Println(err)
	// Output:
	// VLLM_API_KEY from secret qwen-chat-api-key key key
	// spec.args[0]: Forbidden: an API key in the arguments is stored in the objects in clear: use APIKey
}

func ExampleSGLang() {
	describe(serve.SGLang("qwen-32b", "modelscope://Qwen/Qwen2.5-32B-Instruct").
		On(hardware.H100).Accelerators(2).
		MaxModelLen(16384).MemoryUtilization(0.85))
	// Output:
	// Deployment qwen-32b
	//   pod sglang: python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-32B-Instruct --host 0.0.0.0 --port 30000 --tp-size 2 --context-length 16384 --mem-fraction-static 0.85 --enable-metrics
	//   pod nvidia.com/gpu: 2
	// Service qwen-32b-api
}

func ExampleTGI() {
	describe(serve.TGI("mistral", "mistralai/Mistral-7B-Instruct-v0.3").
		On(hardware.L4).Accelerators(1).
		MaxModelLen(8192).DType("bfloat16"))
	// Output:
	// Deployment mistral
	//   pod tgi: text-generation-launcher --model-id mistralai/Mistral-7B-Instruct-v0.3 --hostname 0.0.0.0 --port 8080 --max-input-tokens 8191 --max-total-tokens 8192 --dtype bfloat16
	//   pod nvidia.com/gpu: 1
	// Service mistral-api
}

func ExampleTriton() {
	describe(serve.Triton("resnet", "s3://models/triton/repository").
		On(hardware.L4).Accelerators(1).
		S3Credentials(pod.SecretKeyRef{Name: "s3-credentials", Key: "AWS_ACCESS_KEY_ID"}, pod.SecretKeyRef{Name: "s3-credentials", Key: "AWS_SECRET_ACCESS_KEY"}).
		ModelControl("explicit", "resnet50"))
	// Output:
	// Deployment resnet
	//   pod init download: aws s3 sync s3://models/triton/repository /model-cache/s3/models/triton/repository --no-progress
	//   pod triton: tritonserver --model-repository=/model-cache/s3/models/triton/repository --http-port=8000 --grpc-port=8001 --metrics-port=8002 --model-control-mode=explicit --load-model=resnet50
	//   pod nvidia.com/gpu: 1
	// Service resnet-api
}

func ExampleOllama() {
	describe(serve.Ollama("chat", "qwen2.5:7b").
		On(hardware.L4).
		MaxModelLen(8192).ModelCache("ollama-models"))
	// Output:
	// Deployment chat
	//   pod init pull: /bin/sh -c '<script>' pull qwen2.5:7b
	//   pod ollama: ollama serve
	//   pod nvidia.com/gpu: 1
	// Service chat-api
}

func ExampleMindIE() {
	svc := serve.MindIE("qwen-npu", "pvc://models/Qwen2.5-7B-Instruct").
		On(hardware.Ascend910B3).Accelerators(2).
		MaxModelLen(8192).
		ConfigureMindIE(func(c *serve.MindIEConfig) { c.BackendConfig.ScheduleConfig.MaxBatchSize = 64 })
	describe(svc)

	objs, _ := svc.Objects()
	var cfg serve.MindIEConfig
	_ = json.Unmarshal([]byte(objs[0].(*corev1.ConfigMap).Data["config.json"]), &cfg)
	model := cfg.BackendConfig.ModelDeployConfig.ModelConfig[0]
	fmt.Println("modelWeightPath:", model.ModelWeightPath)
	fmt.Println("worldSize:", model.WorldSize, "npuDeviceIds:", cfg.BackendConfig.NPUDeviceIDs)
	fmt.Println("maxSeqLen:", cfg.BackendConfig.ModelDeployConfig.MaxSeqLen, "maxBatchSize:", cfg.BackendConfig.ScheduleConfig.MaxBatchSize)
	// Output:
	// ConfigMap qwen-npu-config
	// Deployment qwen-npu
	//   pod mindie: /bin/bash -c '<script>'
	//   pod huawei.com/Ascend910: 2
	// Service qwen-npu-api
	// modelWeightPath: /mnt/models/Qwen2.5-7B-Instruct
	// worldSize: 2 npuDeviceIds: [[0 1]]
	// maxSeqLen: 8192 maxBatchSize: 64
}

// Auto sizes a service with the planner: Llama 3.1 8B at its full 128k
// context needs two L4s; DeepSeek-V3 needs two H100 nodes, so it becomes a
// LeaderWorkerSet with vLLM over Ray.
func ExampleService_Auto() {
	describe(serve.VLLM("llama", "meta-llama/Llama-3.1-8B-Instruct").On(hardware.L4).Auto())
	describe(serve.VLLM("deepseek", "deepseek-ai/DeepSeek-V3").On(hardware.H100).Auto(serve.ContextLength(32768)))
	describe(serve.VLLM("mine", "my-org/my-model").On(hardware.H100).Auto())
	// Output:
	// Deployment llama
	//   pod vllm: vllm serve meta-llama/Llama-3.1-8B-Instruct --port 8000 --tensor-parallel-size 2 --max-model-len 131072 --gpu-memory-utilization 0.9
	//   pod nvidia.com/gpu: 2
	// Service llama-api
	// LeaderWorkerSet deepseek
	//   leader vllm: /bin/sh -c '<script>' vllm-leader deepseek-ai/DeepSeek-V3 --port 8000 --tensor-parallel-size 8 --pipeline-parallel-size 2 --max-model-len 32768 --gpu-memory-utilization 0.9 --distributed-executor-backend ray
	//   leader nvidia.com/gpu: 8
	//   worker vllm: /bin/sh -c '<script>' vllm-worker 1800
	//   worker nvidia.com/gpu: 8
	// Service deepseek-api
	// spec.model: Invalid value: "my-org/my-model": Auto needs the model's architecture and my-org/my-model is not in the model catalogue (models.Lookup): give it with ModelFacts, or size the service yourself with Accelerators and TensorParallel instead of Auto
}

// Autoscale adds a HorizontalPodAutoscaler on the engine's queue length;
// the cluster serves the metric through prometheus-adapter or KEDA.
func ExampleService_Autoscale() {
	describe(serve.VLLM("qwen", "Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1).
		Autoscale(2, 8, serve.ScaleOnQueue("5")))
	// Output:
	// Deployment qwen
	//   pod vllm: vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000
	//   pod nvidia.com/gpu: 1
	// Service qwen-api
	// PodDisruptionBudget qwen
	// HorizontalPodAutoscaler qwen
}

// Objects reports every problem at once, each with its field.
func ExampleService_Objects() {
	_, err := serve.VLLM("qwen", "Qwen/Qwen2.5-7B-Instruct").
		On(hardware.H100).TensorParallel(8).
		Autoscale(4, 2, serve.ScaleOnQueue("5")).
		Objects()
	for _, line := range strings.Split(strings.Trim(err.Error(), "[]"), ", spec.") {
		fmt.Println(strings.TrimPrefix(line, "spec."))
	}
	// Output:
	// tensorParallel: Invalid value: 8: must divide Qwen2.5-7B-Instruct's 28 attention heads
	// autoscale.maxReplicas: Invalid value: 2: must be at least minReplicas (4)
}

func ExampleCanary() {
	stable := serve.VLLM("chat-v1", "Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1)
	canary := serve.VLLM("chat-v2", "Qwen/Qwen2.5-14B-Instruct").On(hardware.H100).Accelerators(1)
	split := serve.Canary("chat", stable, canary).
		Weights(90, 10).
		Gateway("inference", "gateway-system").
		Hostnames("chat.example.com").
		RequestTimeout(10 * time.Minute)
	// Apply stable and canary as their own releases, then the split.
	if err := cube.Render(os.Stdout, split); err != nil {
		fmt.Println(err)
	}
	// Output:
	// apiVersion: gateway.networking.k8s.io/v1
	// kind: HTTPRoute
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: cube
	//     app.kubernetes.io/name: chat
	//     app.kubernetes.io/part-of: chat
	//     cube.dev/kind: canary
	//     cube.dev/release: chat
	//   name: chat
	// spec:
	//   hostnames:
	//   - chat.example.com
	//   parentRefs:
	//   - name: inference
	//     namespace: gateway-system
	//   rules:
	//   - backendRefs:
	//     - name: chat-v1-api
	//       port: 8000
	//       weight: 90
	//     - name: chat-v2-api
	//       port: 8000
	//       weight: 10
	//     matches:
	//     - path:
	//         type: PathPrefix
	//         value: /
	//     timeouts:
	//       request: 10m
}

func ExampleParseSource() {
	for _, uri := range []string{"Qwen/Qwen2.5-7B-Instruct", "hf://org/model@v2", "pvc://models/qwen/7b", "s3://weights/llama", "pvc://models/../etc"} {
		src, err := serve.ParseSource(uri)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("%s: %s\n", src.Kind, src)
	}
	// Output:
	// hf: hf://Qwen/Qwen2.5-7B-Instruct
	// hf: hf://org/model@v2
	// pvc: pvc://models/qwen/7b
	// s3: s3://weights/llama
	// model: Invalid value: "pvc://models/../etc": path "../etc" must not contain '.' or '..' segments
}
