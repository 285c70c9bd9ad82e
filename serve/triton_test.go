package serve_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/golden"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/serve"
)

// resnetConfig is an ONNX classifier with every field ConfigPbtxt writes.
func resnetConfig() serve.TritonModelConfig {
	return serve.TritonModelConfig{
		Name:         "resnet50",
		Platform:     serve.TritonPlatformONNX,
		MaxBatchSize: 32,
		Inputs: []serve.TritonInput{
			{Name: "input", DataType: serve.TritonFP32, Dims: []int64{3, 224, 224}},
			{Name: "scale", DataType: serve.TritonFP32, Dims: []int64{1}, Optional: true},
		},
		Outputs: []serve.TritonOutput{
			{Name: "probabilities", DataType: serve.TritonFP32, Dims: []int64{1000}},
			{Name: "labels", DataType: serve.TritonString, Dims: []int64{-1}},
		},
		InstanceGroups: []serve.TritonInstanceGroup{
			{Count: 2, Kind: serve.TritonKindGPU, DeviceIndices: []int32{0, 1}},
			{Count: 1, Kind: serve.TritonKindCPU},
		},
		DynamicBatching: &serve.TritonDynamicBatching{PreferredBatchSizes: []int32{8, 16}, MaxQueueDelay: 100 * time.Microsecond},
		Parameters:      map[string]string{"b_path": `C:\models "prod"`, "a_note": "line1\nline2\ttab\x01"},
	}
}

// tritonVLLMService serves Qwen through Triton's vLLM backend with the
// engine settings model.json carries.
func tritonVLLMService() *serve.Service {
	return serve.Triton("qwen-triton", "hf://Qwen/Qwen2.5-7B-Instruct@main").
		AddTritonModel(serve.TritonVLLMModel("qwen")).
		On(hardware.L4).Accelerators(2).
		MaxModelLen(8192).MemoryUtilization(0.85).DType("bfloat16").
		Quantization("fp8").KVCacheDType("fp8").PrefixCaching(true).TrustRemoteCode().
		HFToken(pod.SecretKeyRef{Name: "hf-token", Key: "token"}).ModelCache("model-cache").
		ModelControl("explicit", "qwen").
		CPU("8").Memory("32Gi")
}

// tritonPythonService generates a repository with a Python-backend model
// whose model.py comes from the ConfigMap and whose files are on a claim.
func tritonPythonService() *serve.Service {
	return serve.Triton("tokenizer", "pvc://models/tokenizers").
		AddTritonModel(serve.TritonModelConfig{
			Name:           "tokenize",
			Backend:        serve.TritonBackendPython,
			Inputs:         []serve.TritonInput{{Name: "TEXT", DataType: serve.TritonString, Dims: []int64{1}}},
			Outputs:        []serve.TritonOutput{{Name: "IDS", DataType: serve.TritonInt64, Dims: []int64{-1}}},
			InstanceGroups: []serve.TritonInstanceGroup{{Count: 2, Kind: serve.TritonKindCPU}},
			VersionFiles:   map[string]string{"model.py": "import triton_python_backend_utils as pb_utils\n"},
		}).
		CPU("2").Memory("4Gi")
}

func TestTritonConfigPbtxtGolden(t *testing.T) {
	text, err := resnetConfig().ConfigPbtxt()
	require.NoError(t, err)
	golden.Assert(t, "triton-resnet50.config.pbtxt.golden", []byte(text))

	text, err = serve.TritonVLLMModel("qwen").ConfigPbtxt()
	require.NoError(t, err)
	golden.Assert(t, "triton-vllm.config.pbtxt.golden", []byte(text))
}

func TestTritonConfigPbtxtEscapesStrings(t *testing.T) {
	cfg := serve.TritonModelConfig{
		Name: "m", Backend: "python",
		Parameters: map[string]string{"k": "quote\" backslash\\ nl\n cr\r tab\t bell\x07 del\x7f ünï"},
	}
	text, err := cfg.ConfigPbtxt()
	require.NoError(t, err)
	assert.Contains(t, text, `string_value: "quote\" backslash\\ nl\n cr\r tab\t bell\007 del\177 ünï"`+"\n")
}

func TestTritonConfigValidation(t *testing.T) {
	base := func(edit func(*serve.TritonModelConfig)) serve.TritonModelConfig {
		c := resnetConfig()
		edit(&c)
		return c
	}
	cases := map[string]struct {
		cfg  serve.TritonModelConfig
		want []wantErr
	}{
		"empty name": {base(func(c *serve.TritonModelConfig) { c.Name = "" }),
			[]wantErr{{field.ErrorTypeRequired, "name", "a model name is required"}}},
		"name that is no directory": {base(func(c *serve.TritonModelConfig) { c.Name = "../etc" }),
			[]wantErr{{field.ErrorTypeInvalid, "name", "it names the model's directory"}}},
		"name with two dots": {base(func(c *serve.TritonModelConfig) { c.Name = "a..b" }),
			[]wantErr{{field.ErrorTypeInvalid, "name", "without '..'"}}},
		"neither backend nor platform": {base(func(c *serve.TritonModelConfig) { c.Platform = "" }),
			[]wantErr{{field.ErrorTypeRequired, "backend", "set backend (python, vllm, onnxruntime…) or platform"}}},
		"both backend and platform": {base(func(c *serve.TritonModelConfig) { c.Backend = "onnxruntime" }),
			[]wantErr{{field.ErrorTypeInvalid, "platform", `set platform or backend, not both (backend is "onnxruntime")`}}},
		"unknown platform": {base(func(c *serve.TritonModelConfig) { c.Platform = "onnx" }),
			[]wantErr{{field.ErrorTypeNotSupported, "platform", `"tensorrt_plan"`}}},
		"bad backend name": {base(func(c *serve.TritonModelConfig) { c.Platform, c.Backend = "", "my backend" }),
			[]wantErr{{field.ErrorTypeInvalid, "backend", "must be a backend name"}}},
		"negative max_batch_size": {base(func(c *serve.TritonModelConfig) { c.MaxBatchSize, c.DynamicBatching = -1, nil }),
			[]wantErr{{field.ErrorTypeInvalid, "max_batch_size", "must not be negative"}}},
		"tensor problems": {base(func(c *serve.TritonModelConfig) {
			c.Inputs = []serve.TritonInput{
				{Name: "", DataType: "", Dims: nil},
				{Name: "x", DataType: "FP32", Dims: []int64{0, -2, -1, 5}},
				{Name: "x", DataType: serve.TritonInt64, Dims: []int64{1}},
				{Name: "bad\xff", DataType: serve.TritonBool, Dims: []int64{1}},
			}
			c.Outputs = []serve.TritonOutput{
				{Name: "y", DataType: "TYPE_INVALID", Dims: []int64{1}},
				{Name: "y", DataType: serve.TritonFP16, Dims: []int64{}},
			}
		}), []wantErr{
			{field.ErrorTypeRequired, "input[0].name", "a tensor name is required"},
			{field.ErrorTypeRequired, "input[0].data_type", "TYPE_FP32"},
			{field.ErrorTypeRequired, "input[0].dims", "the shape without the batch dimension"},
			{field.ErrorTypeNotSupported, "input[1].data_type", `"TYPE_FP32"`},
			{field.ErrorTypeInvalid, "input[1].dims[0]", "must be 1 or more, or -1"},
			{field.ErrorTypeInvalid, "input[1].dims[1]", "must be 1 or more, or -1"},
			{field.ErrorTypeDuplicate, "input[2].name", ""},
			{field.ErrorTypeInvalid, "input[3].name", "must be UTF-8 text"},
			{field.ErrorTypeNotSupported, "output[0].data_type", `"TYPE_BF16"`},
			{field.ErrorTypeDuplicate, "output[1].name", ""},
			{field.ErrorTypeRequired, "output[1].dims", ""},
		}},
		"instance group problems": {base(func(c *serve.TritonModelConfig) {
			c.InstanceGroups = []serve.TritonInstanceGroup{
				{Count: -1, Kind: "KIND_TPU"},
				{Kind: serve.TritonKindCPU, DeviceIndices: []int32{0}},
				{Kind: serve.TritonKindModel, DeviceIndices: []int32{1}},
				{Kind: serve.TritonKindGPU, DeviceIndices: []int32{0, -1, 0}},
			}
		}), []wantErr{
			{field.ErrorTypeInvalid, "instance_group[0].count", "must not be negative"},
			{field.ErrorTypeNotSupported, "instance_group[0].kind", `"KIND_MODEL"`},
			{field.ErrorTypeForbidden, "instance_group[1].gpus", "a KIND_CPU group takes no gpus"},
			{field.ErrorTypeForbidden, "instance_group[2].gpus", "a KIND_MODEL group takes no gpus"},
			{field.ErrorTypeInvalid, "instance_group[3].gpus[1]", "must be a device index"},
			{field.ErrorTypeDuplicate, "instance_group[3].gpus[2]", ""},
		}},
		"dynamic batching problems": {base(func(c *serve.TritonModelConfig) {
			c.DynamicBatching = &serve.TritonDynamicBatching{PreferredBatchSizes: []int32{0, 64, 8}, MaxQueueDelay: 1500 * time.Nanosecond}
		}), []wantErr{
			{field.ErrorTypeInvalid, "dynamic_batching.preferred_batch_size[0]", "must be between 1 and max_batch_size (32)"},
			{field.ErrorTypeInvalid, "dynamic_batching.preferred_batch_size[1]", "must be between 1 and max_batch_size (32)"},
			{field.ErrorTypeInvalid, "dynamic_batching.max_queue_delay_microseconds", "whole microseconds"},
		}},
		"negative queue delay": {base(func(c *serve.TritonModelConfig) {
			c.DynamicBatching = &serve.TritonDynamicBatching{MaxQueueDelay: -time.Millisecond}
		}), []wantErr{{field.ErrorTypeInvalid, "dynamic_batching.max_queue_delay_microseconds", "must be zero or more"}}},
		"parameter problems": {base(func(c *serve.TritonModelConfig) {
			c.Parameters = map[string]string{"": "x", "k": "\xff"}
		}), []wantErr{
			{field.ErrorTypeInvalid, "parameters[]", "parameter names must not be empty"},
			{field.ErrorTypeInvalid, "parameters[k]", "must be UTF-8 text"},
		}},
		"vLLM backend without what it needs": {serve.TritonModelConfig{
			Name: "llm", Backend: serve.TritonBackendVLLM, MaxBatchSize: 8,
			DynamicBatching: &serve.TritonDynamicBatching{},
		}, []wantErr{
			{field.ErrorTypeRequired, "model_transaction_policy.decoupled", "needs a decoupled transaction policy"},
			{field.ErrorTypeInvalid, "max_batch_size", "vLLM batches requests itself"},
			{field.ErrorTypeForbidden, "dynamic_batching", "batches requests itself"},
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			assertErrors(t, configOnly{c.cfg}, c.want...)
		})
	}
}

// configOnly lets assertErrors check a config's validation: its Objects
// fails as ConfigPbtxt does.
type configOnly struct{ serve.TritonModelConfig }

func (c configOnly) Objects() ([]client.Object, error) {
	if _, err := c.ConfigPbtxt(); err != nil {
		return nil, err
	}
	return []client.Object{}, nil
}

func TestTritonGeneratedGolden(t *testing.T) {
	golden.AssertRender(t, "triton-vllm-l4.golden.yaml", tritonVLLMService())
	golden.AssertRender(t, "triton-python-generated.golden.yaml", tritonPythonService())
}

func TestTritonVLLMBackend(t *testing.T) {
	r := render(t, tritonVLLMService())
	require.NotNil(t, r.configMap)
	assert.Equal(t, "qwen-triton-config", r.configMap.Name)
	assert.Equal(t, map[string]string{
		"qwen.config.pbtxt": `name: "qwen"
backend: "vllm"
max_batch_size: 0
instance_group [
  {
    count: 1
    kind: KIND_MODEL
  }
]
model_transaction_policy {
  decoupled: true
}
`,
		// The values `vllm serve` would get as flags, as EngineArgs fields.
		"qwen.1.model.json": `{
  "dtype": "bfloat16",
  "enable_prefix_caching": true,
  "gpu_memory_utilization": 0.85,
  "kv_cache_dtype": "fp8",
  "max_model_len": 8192,
  "model": "Qwen/Qwen2.5-7B-Instruct",
  "quantization": "fp8",
  "revision": "main",
  "tensor_parallel_size": 2,
  "trust_remote_code": true
}
`,
	}, r.configMap.Data)

	c := r.main(t)
	assert.Equal(t, serve.DefaultTritonVLLMImage, c.Image)
	assert.Equal(t, []string{"tritonserver"}, c.Command)
	assert.Equal(t, []string{"--model-repository=/models", "--http-port=8000", "--grpc-port=8001", "--metrics-port=8002",
		"--model-control-mode=explicit", "--load-model=qwen"}, c.Args)
	assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "config", MountPath: serve.TritonRepositoryPath, ReadOnly: true})

	spec := r.deployment.Spec.Template.Spec
	i := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "config" })
	require.GreaterOrEqual(t, i, 0)
	config := spec.Volumes[i]
	require.NotNil(t, config.ConfigMap)
	assert.Equal(t, "qwen-triton-config", config.ConfigMap.Name)
	assert.Equal(t, []corev1.KeyToPath{
		{Key: "qwen.config.pbtxt", Path: "qwen/config.pbtxt"},
		{Key: "qwen.1.model.json", Path: "qwen/1/model.json"},
	}, config.ConfigMap.Items)
	assert.NotEmpty(t, r.deployment.Spec.Template.Annotations[serve.AnnotationConfigHash])

	// The hub token is a secretKeyRef; the hub cache is on the claim.
	i = slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "HF_TOKEN" })
	require.GreaterOrEqual(t, i, 0)
	token := c.Env[i]
	assert.Empty(t, token.Value)
	require.NotNil(t, token.ValueFrom)
	assert.Equal(t, &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hf-token"}, Key: "token"}, token.ValueFrom.SecretKeyRef)
	assert.Equal(t, serve.CachePath+"/huggingface", envValue(t, c, "HF_HOME"))
	assert.Equal(t, "2", func() string { q := c.Resources.Limits[hardware.ResourceNVIDIAGPU]; return q.String() }())
}

func TestTritonVLLMWeightSources(t *testing.T) {
	cases := map[string]struct {
		source string
		model  string
		check  func(t *testing.T, r rendered)
	}{
		"claim": {"pvc://models/qwen-7b", "/mnt/models/qwen-7b", func(t *testing.T, r rendered) {
			assert.Contains(t, r.main(t).VolumeMounts, corev1.VolumeMount{Name: "model", MountPath: serve.ModelPath, ReadOnly: true})
		}},
		"s3": {"s3://weights/qwen-7b", "/model-cache/s3/weights/qwen-7b", func(t *testing.T, r rendered) {
			inits := r.deployment.Spec.Template.Spec.InitContainers
			require.Len(t, inits, 1)
			assert.Equal(t, []string{"aws", "s3", "sync", "s3://weights/qwen-7b", "/model-cache/s3/weights/qwen-7b", "--no-progress"}, inits[0].Command)
		}},
		"modelscope": {"modelscope://Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B-Instruct", func(t *testing.T, r rendered) {
			assert.Equal(t, "True", envValue(t, r.main(t), "VLLM_USE_MODELSCOPE"))
		}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			r := render(t, serve.Triton("llm", c.source).AddTritonModel(serve.TritonVLLMModel("llm")).On(hardware.L4).Accelerators(1))
			assert.Equal(t, "{\n  \"model\": \""+c.model+"\"\n}\n", r.configMap.Data["llm.1.model.json"])
			c.check(t, r)
		})
	}
}

func TestTritonVLLMAuto(t *testing.T) {
	svc := serve.Triton("llama", "meta-llama/Llama-3.1-8B-Instruct").AddTritonModel(serve.TritonVLLMModel("llama")).On(hardware.L4).Auto()
	plan, err := serve.AutoPlan(svc)
	require.NoError(t, err)
	r := render(t, svc)
	assert.Contains(t, r.configMap.Data["llama.1.model.json"], `"max_model_len": `)
	q := r.main(t).Resources.Limits[hardware.ResourceNVIDIAGPU]
	assert.Equal(t, int64(plan.TensorParallel*plan.PipelineParallel), q.Value())
}

func TestTritonPythonRepository(t *testing.T) {
	r := render(t, tritonPythonService())
	require.Len(t, r.configMap.Data, 2)
	assert.Contains(t, r.configMap.Data["tokenize.config.pbtxt"], `backend: "python"`)
	assert.Equal(t, "import triton_python_backend_utils as pb_utils\n", r.configMap.Data["tokenize.1.model.py"])
	c := r.main(t)
	assert.Equal(t, serve.DefaultTritonImage, c.Image)
	assert.Equal(t, "--model-repository=/models", c.Args[0])
	// The claim is still mounted for the models to read.
	assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "model", MountPath: serve.ModelPath, ReadOnly: true})
}

func TestAddTritonModelCopiesAndRendersFresh(t *testing.T) {
	cfg := resnetConfig()
	cfg.Platform, cfg.Backend = "", serve.TritonBackendPython
	svc := serve.Triton("r", "pvc://models/r").AddTritonModel(cfg)
	cfg.Inputs[0].Dims[0] = 99
	cfg.Parameters["a_note"] = "changed"
	cfg.InstanceGroups[0].DeviceIndices[0] = 7
	cfg.DynamicBatching.PreferredBatchSizes[0] = 3

	first, err := svc.Objects()
	require.NoError(t, err)
	cm := first[0].(*corev1.ConfigMap)
	text := cm.Data["resnet50.config.pbtxt"]
	assert.Contains(t, text, "dims: [ 3, 224, 224 ]")
	assert.Contains(t, text, "gpus: [ 0, 1 ]")
	assert.Contains(t, text, "preferred_batch_size: [ 8, 16 ]")
	assert.NotContains(t, text, "changed")

	cm.Data["resnet50.config.pbtxt"] = "edited"
	second, err := svc.Objects()
	require.NoError(t, err)
	assert.Equal(t, text, second[0].(*corev1.ConfigMap).Data["resnet50.config.pbtxt"])
}

func TestTritonRepositoryErrors(t *testing.T) {
	vllm := serve.TritonVLLMModel
	python := func(name string) serve.TritonModelConfig {
		return serve.TritonModelConfig{Name: name, Backend: serve.TritonBackendPython}
	}
	cases := map[string]struct {
		w    cube.Workload
		want []wantErr
	}{
		"invalid config, under its model's path": {
			serve.Triton("t", "pvc://models/m").AddTritonModel(python("a")).AddTritonModel(serve.TritonModelConfig{Name: "b", MaxBatchSize: -1}),
			[]wantErr{
				{field.ErrorTypeRequired, "spec.tritonModels[1].backend", "set backend"},
				{field.ErrorTypeInvalid, "spec.tritonModels[1].max_batch_size", "must not be negative"},
			},
		},
		"duplicate model names": {
			serve.Triton("t", "pvc://models/m").AddTritonModel(python("a")).AddTritonModel(python("a")),
			[]wantErr{{field.ErrorTypeDuplicate, "spec.tritonModels[1].name", ""}},
		},
		"two vLLM models": {
			serve.Triton("t", "Qwen/Qwen2.5-7B-Instruct").On(hardware.L4).AddTritonModel(vllm("a")).AddTritonModel(vllm("b")),
			[]wantErr{{field.ErrorTypeInvalid, "spec.tritonModels[1].backend", "a Service serves one vLLM-backend model, whose weights are its source (tritonModels[0] is one)"}},
		},
		"KIND_GPU for a model across GPUs": {
			serve.Triton("t", "Qwen/Qwen2.5-7B-Instruct").On(hardware.L4).Accelerators(2).AddTritonModel(serve.TritonModelConfig{
				Name: "a", Backend: serve.TritonBackendVLLM, Decoupled: true,
				InstanceGroups: []serve.TritonInstanceGroup{{Kind: serve.TritonKindGPU}},
			}),
			[]wantErr{{field.ErrorTypeInvalid, "spec.tritonModels[0].instance_group[0].kind", "the vLLM backend runs a model across 2 GPUs only as KIND_MODEL"}},
		},
		"version files": {
			serve.Triton("t", "Qwen/Qwen2.5-7B-Instruct").On(hardware.L4).AddTritonModel(func() serve.TritonModelConfig {
				c := vllm("a")
				c.VersionFiles = map[string]string{"model.json": "{}", "sub/dir.py": "", "..": ""}
				return c
			}()),
			[]wantErr{
				{field.ErrorTypeInvalid, "spec.tritonModels[0].versionFiles[..]", "must be a file name"},
				{field.ErrorTypeForbidden, "spec.tritonModels[0].versionFiles[model.json]", "cube writes the vLLM backend's model.json"},
				{field.ErrorTypeInvalid, "spec.tritonModels[0].versionFiles[sub/dir.py]", "must be a file name"},
			},
		},
		"ConfigMap keys that collide": {
			serve.Triton("t", "pvc://models/m").AddTritonModel(func() serve.TritonModelConfig {
				c := python("a")
				c.VersionFiles = map[string]string{"config.pbtxt": ""}
				return c
			}()).AddTritonModel(python("a.1")),
			[]wantErr{{field.ErrorTypeDuplicate, "spec.tritonModels[1].name", ""}},
		},
		"more than a ConfigMap holds": {
			serve.Triton("t", "pvc://models/m").AddTritonModel(func() serve.TritonModelConfig {
				c := python("a")
				c.VersionFiles = map[string]string{"model.py": strings.Repeat("#", 1<<20)}
				return c
			}()),
			[]wantErr{{field.ErrorTypeTooLong, "spec.tritonModels", "may not be more than 1048576"}},
		},
		"explicit load of a model not in the repository": {
			serve.Triton("t", "pvc://models/m").AddTritonModel(python("a")).ModelControl("explicit", "a", "b"),
			[]wantErr{{field.ErrorTypeNotSupported, "spec.modelControl.load[1]", `"a"`}},
		},
		"a hub source without a vLLM model": {
			serve.Triton("t", "Qwen/Qwen2.5-7B-Instruct").AddTritonModel(python("a")),
			[]wantErr{{field.ErrorTypeInvalid, "spec.model", "Triton cannot load hf:// sources; it loads pvc://, s3://"}},
		},
		"settings Triton's vLLM backend lacks": {
			serve.Triton("t", "Qwen/Qwen2.5-7B-Instruct").On(hardware.L4).AddTritonModel(vllm("a")).
				ServedModelName("chat").LoRA("sql", "org/sql-lora").Nodes(2).Accelerators(1),
			[]wantErr{
				{field.ErrorTypeForbidden, "spec.servedModelName", "Triton's vLLM backend has no ServedModelName setting"},
				{field.ErrorTypeForbidden, "spec.lora", "Triton's vLLM backend has no LoRA setting"},
				{field.ErrorTypeInvalid, "spec.nodes", "Triton's vLLM backend serves a replica from one node"},
			},
		},
		"vLLM backend on a CPU node": {
			serve.Triton("t", "Qwen/Qwen2.5-7B-Instruct").AddTritonModel(vllm("a")),
			[]wantErr{{field.ErrorTypeRequired, "spec.image", "the default Triton's vLLM backend image is built for GPUs"}},
		},
		"not a Triton service": {
			serve.VLLM("v", "Qwen/Qwen2.5-7B-Instruct").On(hardware.L4).AddTritonModel(vllm("a")),
			[]wantErr{{field.ErrorTypeForbidden, "spec.tritonModels", "vLLM has no AddTritonModel setting"}},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { assertErrors(t, c.w, c.want...) })
	}
}

// TestVLLMOnTheOtherVendors serves one model on each of the other
// vendors' profiles (Hygon, Cambricon, Kunlunxin, MetaX, Moore Threads,
// Enflame, Iluvatar), on one node and on two, with the vendor's vLLM image
// where hardware knows one (a placeholder otherwise: without one serve
// refuses the devices, TestEnginesPickTheirImageForTheAccelerator), and
// applies each to the real API server with strict validation.
func TestVLLMOnTheOtherVendors(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cl := cube.NewFromClient(env.Client, cube.Namespace(ns))
	for _, p := range hardware.Catalogue() {
		if !p.Accelerated() || p.Vendor == hardware.NVIDIA || p.Vendor == hardware.Huawei {
			continue
		}
		img, err := p.Image(hardware.FrameworkVLLM)
		if err != nil {
			img = "registry.example/vllm-" + strings.ToLower(string(p.Vendor)) + ":1"
		}
		for _, nodes := range []int{1, 2} {
			name := "qwen-" + strings.ToLower(p.Name)
			if nodes > 1 {
				name += "-multi"
			}
			t.Run(name, func(t *testing.T) {
				s := serve.VLLM(name, "Qwen/Qwen2.5-7B-Instruct").Image(img).On(p).Accelerators(4)
				if nodes > 1 {
					s = s.Nodes(nodes).TensorParallel(4).PipelineParallel(nodes).
						Fabric(hardware.RoCE(hardware.SocketInterface("eth0")))
				}
				var buf bytes.Buffer
				require.NoError(t, cube.Render(&buf, s))
				out := buf.String()
				assert.Contains(t, out, string(p.ResourceName)+`: "4"`)
				assert.Contains(t, out, "accelerator: "+p.NodeLabels()[hardware.LabelAccelerator])
				assert.Contains(t, out, "image: "+img)
				assert.NotContains(t, out, "nvidia.com/gpu")
				if nodes > 1 {
					assert.Contains(t, out, p.Collective().SocketInterface)
				}
				_, err := cl.Apply(t.Context(), s)
				require.NoError(t, err)
			})
		}
	}
}

// TestHTTPRouteStatus reads the parent statuses a Gateway controller writes
// (Gateway API v1.6.3, apis/v1/shared_types.go RouteParentStatus).
func TestHTTPRouteStatus(t *testing.T) {
	route := func(gen int64, parents ...gatewayv1.RouteParentStatus) *gatewayv1.HTTPRoute {
		r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "chat", Generation: 2}}
		r.Generation = gen
		r.Spec.ParentRefs = []gatewayv1.ParentReference{{Name: "inference"}, {Name: "internal"}}
		r.Status.Parents = parents
		return r
	}
	cond := func(typ gatewayv1.RouteConditionType, st metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
		return metav1.Condition{Type: string(typ), Status: st, Reason: reason, ObservedGeneration: gen}
	}
	parent := func(name string, conds ...metav1.Condition) gatewayv1.RouteParentStatus {
		return gatewayv1.RouteParentStatus{ParentRef: gatewayv1.ParentReference{Name: gatewayv1.ObjectName(name)}, ControllerName: "example.net/gateway", Conditions: conds}
	}
	ok := func(name string) gatewayv1.RouteParentStatus {
		return parent(name, cond(gatewayv1.RouteConditionAccepted, metav1.ConditionTrue, "Accepted", 2), cond(gatewayv1.RouteConditionResolvedRefs, metav1.ConditionTrue, "ResolvedRefs", 2))
	}
	for _, tc := range []struct {
		name   string
		r      *gatewayv1.HTTPRoute
		phase  cube.Phase
		reason string
	}{
		{"no gateway answered", route(2), cube.InProgress, "Pending"},
		{"one of two answered", route(2, ok("inference")), cube.InProgress, "Pending"},
		{"both accepted", route(2, ok("inference"), ok("internal")), cube.Ready, "Accepted"},
		{"accepted for an older spec", route(3, ok("inference"), ok("internal")), cube.InProgress, "NotObserved"},
		{"not allowed by a listener", route(2, ok("inference"), parent("internal", cond(gatewayv1.RouteConditionAccepted, metav1.ConditionFalse, "NotAllowedByListeners", 2))), cube.Failed, "NotAllowedByListeners"},
		{"a backend not found yet", route(2, ok("inference"), parent("internal", cond(gatewayv1.RouteConditionAccepted, metav1.ConditionTrue, "Accepted", 2), cond(gatewayv1.RouteConditionResolvedRefs, metav1.ConditionFalse, "BackendNotFound", 2))), cube.InProgress, "BackendNotFound"},
		{"a reference not permitted", route(2, ok("inference"), parent("internal", cond(gatewayv1.RouteConditionAccepted, metav1.ConditionTrue, "Accepted", 2), cond(gatewayv1.RouteConditionResolvedRefs, metav1.ConditionFalse, "RefNotPermitted", 2))), cube.Failed, "RefNotPermitted"},
		{"accepted, references unknown", route(2, ok("inference"), parent("internal", cond(gatewayv1.RouteConditionAccepted, metav1.ConditionTrue, "Accepted", 2))), cube.InProgress, "Pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := serve.HTTPRouteStatus(tc.r)
			assert.Equal(t, tc.phase, st.Phase)
			assert.Equal(t, tc.reason, st.Reason)
		})
	}
}
