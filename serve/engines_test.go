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
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/internal/testsupport/golden"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/models"
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

// wantErr is one expected field error: its type, path and a part of its
// detail.
type wantErr struct {
	typ    field.ErrorType
	field  string
	detail string
}

func fieldErrors(t *testing.T, err error) []*field.Error {
	t.Helper()
	return fuzzcorpus.FieldErrors(t, err)
}

// assertErrors checks that w fails with exactly the wanted errors.
func assertErrors(t *testing.T, w cube.Workload, want ...wantErr) {
	t.Helper()
	objs, err := w.Objects()
	assert.Nil(t, objs)
	got := fieldErrors(t, err)
	for _, w := range want {
		found := false
		for _, g := range got {
			if g.Type == w.typ && g.Field == w.field && strings.Contains(g.Detail, w.detail) {
				found = true
				break
			}
		}
		assert.True(t, found, "missing %s %s %q in:\n%v", w.typ, w.field, w.detail, err)
	}
	assert.Len(t, got, len(want), "errors:\n%v", err)
}

// longContext is m allowing sequences of n tokens.
func longContext(m models.Model, n int) models.Model { m.ContextLength = n; return m }

const qwen = "Qwen/Qwen2.5-7B-Instruct" // 28 attention heads, 4 KV heads

func TestValidationErrors(t *testing.T) {
	cases := map[string]struct {
		w    cube.Workload
		want []wantErr
	}{
		// The list.
		"tensor parallel does not divide the attention heads": {
			serve.VLLM("q", qwen).On(hardware.H100).TensorParallel(8),
			[]wantErr{{field.ErrorTypeInvalid, "spec.tensorParallel", "must divide Qwen2.5-7B-Instruct's 28 attention heads"}},
		},
		"more GPUs than a node holds without multi-node": {
			serve.VLLM("q", "pvc://models/x").On(hardware.H100).Accelerators(16),
			[]wantErr{{field.ErrorTypeInvalid, "spec.accelerators", "16 devices per pod (tensor parallel 16 × pipeline parallel 1) but a H100-SXM-80GB node holds 8: spread the replica over nodes with Nodes"}},
		},
		"tensor parallel beyond a node": {
			serve.SGLang("q", "pvc://models/x").On(hardware.L4).TensorParallel(16),
			[]wantErr{{field.ErrorTypeInvalid, "spec.accelerators", "a L4 node holds 8"}},
		},
		"a model that cannot fit anywhere": {
			serve.VLLM("ds", "deepseek-ai/DeepSeek-V3").On(hardware.L4).Auto(serve.MaxNodes(2)),
			[]wantErr{{field.ErrorTypeInvalid, "spec.auto", "cannot be served on L4 within 2 nodes: needs"}},
		},
		"explicit settings that do not fit": {
			serve.VLLM("llama", "meta-llama/Llama-3.1-8B-Instruct").On(hardware.L4).Accelerators(1),
			[]wantErr{{field.ErrorTypeInvalid, "spec.accelerators", "Llama-3.1-8B-Instruct does not fit 1 L4 device(s) with one 131072-token sequence: at tensor parallel 1 it needs 2 pipeline stages (2 devices); add Accelerators or Nodes, lower MaxModelLen, or use Auto"}},
		},
		"explicit settings that cannot fit at all": {
			serve.VLLM("llama", "meta-llama/Llama-3.1-8B-Instruct").On(hardware.L4).TensorParallel(1).MaxModelLen(8_000_000).
				ModelFacts(longContext(mustLookup("meta-llama/Llama-3.1-8B-Instruct"), 8_000_000)),
			[]wantErr{{field.ErrorTypeInvalid, "spec.model", "does not fit at tensor parallel 1 on L4 even across"}},
		},
		"a context longer than the model's": {
			serve.VLLM("llama", "meta-llama/Llama-3.1-8B-Instruct").On(hardware.L4).TensorParallel(1).MaxModelLen(8_000_000),
			[]wantErr{{field.ErrorTypeInvalid, "spec.maxModelLen", "exceeds Llama-3.1-8B-Instruct's context of 131072 tokens"}},
		},
		"a bad model source": {
			serve.VLLM("q", "s3://Bad_Bucket/x").On(hardware.H100),
			[]wantErr{{field.ErrorTypeInvalid, "spec.model", `bucket "Bad_Bucket" may only hold lower-case letters`}},
		},
		"an unknown scheme": {
			serve.VLLM("q", "gs://bucket/x").On(hardware.H100),
			[]wantErr{{field.ErrorTypeInvalid, "spec.model", `unknown scheme "gs"`}},
		},
		"no model": {
			serve.TGI("q", "").On(hardware.L4),
			[]wantErr{{field.ErrorTypeRequired, "spec.model", "a model is required"}},
		},
		"a source the engine does not load": {
			serve.MindIE("q", qwen).On(hardware.Ascend910B3).Accelerators(1),
			[]wantErr{{field.ErrorTypeInvalid, "spec.model", "MindIE cannot load hf:// sources; it loads pvc://, s3://"}},
		},
		"HPA min > max": {
			serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).Autoscale(3, 2, serve.ScaleOnQueue("5")),
			[]wantErr{{field.ErrorTypeInvalid, "spec.autoscale.maxReplicas", "must be at least minReplicas (3)"}},
		},

		// Autoscaling.
		"HPA min below one": {
			serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).Autoscale(0, 2, serve.ScaleOnQueue("5")),
			[]wantErr{{field.ErrorTypeInvalid, "spec.autoscale.minReplicas", "at least 1"}},
		},
		"replicas and autoscale": {
			serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).Replicas(2).Autoscale(1, 2, serve.ScaleOnQueue("5")),
			[]wantErr{{field.ErrorTypeForbidden, "spec.replicas", "the autoscaler owns the replica count"}},
		},
		"no metrics": {
			serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).Autoscale(1, 2),
			[]wantErr{{field.ErrorTypeRequired, "spec.autoscale.metrics", "at least one metric"}},
		},
		"cpu utilisation without a cpu request": {
			serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).Autoscale(1, 2, serve.ScaleOnCPU(70), serve.ScaleOnMemory(0)),
			[]wantErr{
				{field.ErrorTypeRequired, "spec.autoscale.metrics[0]", "needs a cpu request: call CPU"},
				{field.ErrorTypeInvalid, "spec.autoscale.metrics[1].percent", "at least 1"},
				{field.ErrorTypeRequired, "spec.autoscale.metrics[1]", "needs a memory request: call Memory"},
			},
		},
		"bad pod metrics": {
			serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).Autoscale(1, 2,
				serve.ScaleOnPodMetric("", "1"), serve.ScaleOnPodMetric("m", "lots"), serve.ScaleOnQueue("-1"),
				serve.ScaleOnPodMetric("requests waiting", "1"), serve.ScaleOnPodMetric("a/b", "1")),
			[]wantErr{
				{field.ErrorTypeRequired, "spec.autoscale.metrics[0].name", "a metric name is required"},
				{field.ErrorTypeInvalid, "spec.autoscale.metrics[1].averageValue", "quantities must match"},
				{field.ErrorTypeInvalid, "spec.autoscale.metrics[2].averageValue", "must be positive"},
				{field.ErrorTypeInvalid, "spec.autoscale.metrics[3].name", "must not contain spaces or control characters"},
				{field.ErrorTypeInvalid, "spec.autoscale.metrics[4].name", "may not contain '/'"},
			},
		},
		"queue metric of an engine without one": {
			serve.Ollama("o", "qwen2.5:7b").Autoscale(1, 2, serve.ScaleOnQueue("5")),
			[]wantErr{{field.ErrorTypeForbidden, "spec.autoscale.metrics[0]", "Ollama exports no queue metric"}},
		},

		// Settings an engine does not have.
		"unsupported settings": {
			serve.Triton("t", "pvc://models/repo").MaxModelLen(4096).TensorParallel(2).DType("float16").LoRA("a", "org/a").KeepAlive(5 * time.Minute),
			[]wantErr{
				{field.ErrorTypeForbidden, "spec.maxModelLen", "Triton has no MaxModelLen setting"},
				{field.ErrorTypeForbidden, "spec.tensorParallel", "Triton has no TensorParallel setting"},
				{field.ErrorTypeForbidden, "spec.dtype", "Triton has no DType setting"},
				{field.ErrorTypeForbidden, "spec.lora", "Triton has no LoRA setting"},
				{field.ErrorTypeForbidden, "spec.keepAlive", "Triton has no KeepAlive setting"},
			},
		},
		"more unsupported settings": {
			serve.TGI("t", qwen).On(hardware.L4).PipelineParallel(2).ServedModelName("x").RankTable("r").ModelControl("poll").
				ConfigureMindIE(func(*serve.MindIEConfig) {}),
			[]wantErr{
				{field.ErrorTypeForbidden, "spec.pipelineParallel", "TGI has no PipelineParallel setting"},
				{field.ErrorTypeForbidden, "spec.servedModelName", "TGI has no ServedModelName setting"},
				{field.ErrorTypeForbidden, "spec.rankTable", "TGI has no RankTable setting"},
				{field.ErrorTypeForbidden, "spec.modelControl", "TGI has no ModelControl setting"},
				{field.ErrorTypeForbidden, "spec.configureMindIE", "TGI has no ConfigureMindIE setting"},
			},
		},
		"Ollama and MindIE lack flags": {
			serve.MindIE("m", "pvc://models/x").On(hardware.Ascend910B3).Accelerators(1).DType("bfloat16").Quantization("awq").KVCacheDType("fp8").PipelineParallel(1),
			[]wantErr{
				{field.ErrorTypeForbidden, "spec.dtype", "MindIE has no DType setting"},
				{field.ErrorTypeForbidden, "spec.quantization", "MindIE has no Quantization setting"},
				{field.ErrorTypeForbidden, "spec.kvCacheDType", "MindIE has no KVCacheDType setting"},
				{field.ErrorTypeForbidden, "spec.pipelineParallel", "MindIE has no PipelineParallel setting"},
			},
		},
		"a dtype the engine does not know": {
			serve.TGI("t", qwen).On(hardware.L4).DType("float32"),
			[]wantErr{{field.ErrorTypeNotSupported, "spec.dtype", `"float16", "bfloat16"`}},
		},

		// Hardware.
		"MindIE without an Ascend profile": {
			serve.MindIE("m", "pvc://models/x").On(hardware.H100).Accelerators(1),
			[]wantErr{{field.ErrorTypeRequired, "spec.on", "MindIE runs on Ascend NPUs"}},
		},
		"Ollama on Ascend": {
			serve.Ollama("o", "qwen2.5:7b").On(hardware.Ascend910B3).Accelerators(1),
			[]wantErr{{field.ErrorTypeInvalid, "spec.on", "Ollama does not run on Ascend NPUs; use MindIE or vLLM"}},
		},
		"SGLang on Ascend without an image": {
			serve.SGLang("s", "pvc://models/x").On(hardware.Ascend910B3).Accelerators(1),
			[]wantErr{{field.ErrorTypeRequired, "spec.image", "cube pins no SGLang image for Ascend NPUs: set Image"}},
		},
		"a GPU image on a CPU node": {
			serve.SGLang("s", "pvc://models/x").CPU("16"),
			[]wantErr{{field.ErrorTypeRequired, "spec.image", "the default SGLang image is built for GPUs: call On with an accelerator, or set Image to a CPU build"}},
		},
		"GPUs without a profile": {
			serve.VLLM("q", "pvc://models/x").Accelerators(2),
			[]wantErr{{field.ErrorTypeRequired, "spec.template.on", "2 accelerators asked for without a hardware profile"}},
		},

		// Layout.
		"nodes on an engine that serves from one node": {
			serve.TGI("t", "pvc://models/x").On(hardware.H100).Accelerators(8).Nodes(2),
			[]wantErr{{field.ErrorTypeInvalid, "spec.nodes", "TGI serves a replica from one node"}},
		},
		"nodes without GPUs": {
			serve.VLLM("q", "pvc://models/x").On(hardware.H100).Nodes(2),
			[]wantErr{{field.ErrorTypeRequired, "spec.accelerators", "a replica across nodes needs accelerators on each node"}},
		},
		"tensor × pipeline is not the devices": {
			serve.VLLM("q", "pvc://models/x").On(hardware.H100).Accelerators(8).TensorParallel(4).PipelineParallel(4),
			[]wantErr{{field.ErrorTypeInvalid, "spec.tensorParallel", "tensorParallel × pipelineParallel = 4 × 4 must equal the devices of a replica, 8 (8 per pod × 1 nodes)"}},
		},
		"pipeline stages that do not divide the devices": {
			serve.VLLM("q", "pvc://models/x").On(hardware.H100).Accelerators(8).PipelineParallel(3),
			[]wantErr{{field.ErrorTypeInvalid, "spec.pipelineParallel", "must divide the 8 devices of a replica"}},
		},

		// Auto.
		"auto on an engine the planner does not size": {
			serve.Triton("t", "pvc://models/repo").On(hardware.L4).Auto(),
			[]wantErr{{field.ErrorTypeForbidden, "spec.auto", "Triton is not sized by the planner"}},
		},
		"auto with explicit GPUs and no profile": {
			serve.VLLM("q", qwen).Accelerators(2).Nodes(1).Auto(),
			[]wantErr{
				{field.ErrorTypeForbidden, "spec.auto", "Auto chooses the accelerators, nodes and pipeline stages"},
				{field.ErrorTypeRequired, "spec.on", "Auto sizes the service for an accelerator"},
			},
		},
		"auto for a model not in the catalogue": {
			serve.VLLM("q", "my-org/my-model").On(hardware.H100).Auto(),
			[]wantErr{{field.ErrorTypeInvalid, "spec.model", "Auto needs the model's architecture and my-org/my-model is not in the model catalogue (models.Lookup): give it with ModelFacts, or size the service yourself"}},
		},
		"auto for a model on a volume": {
			serve.VLLM("q", "pvc://models/mine").On(hardware.H100).Auto(),
			[]wantErr{{field.ErrorTypeInvalid, "spec.model", "a model on a volume has no catalogue entry"}},
		},
		"auto that needs pipeline stages TGI lacks": {
			serve.TGI("t", "deepseek-ai/DeepSeek-V3").On(hardware.H100).Auto(serve.ContextLength(8192)),
			[]wantErr{{field.ErrorTypeInvalid, "spec.auto", "TGI has no pipeline parallelism"}},
		},
		"auto with a bad plan option": {
			serve.VLLM("q", qwen).On(hardware.H100).Auto(serve.ContextLength(-1)),
			[]wantErr{{field.ErrorTypeInvalid, "spec.auto", "contextLength"}},
		},

		// Methods recording bad input.
		"bad values": {
			serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).
				Replicas(-1).MaxModelLen(1).MemoryUtilization(1.5).Quantization("").KVCacheDType("").
				ServedModelName("a b").HFToken(pod.SecretKeyRef{Name: "", Key: ""}).HFEndpoint("hf-mirror.com").StartupTimeout(time.Second).
				DisruptionBudget(-1),
			[]wantErr{
				{field.ErrorTypeInvalid, "spec.replicas", "must not be negative"},
				{field.ErrorTypeInvalid, "spec.maxModelLen", "at least 2"},
				{field.ErrorTypeInvalid, "spec.memoryUtilization", "(0, 1]"},
				{field.ErrorTypeInvalid, "spec.quantization", "a method name"},
				{field.ErrorTypeInvalid, "spec.kvCacheDType", "a type such as fp8"},
				{field.ErrorTypeInvalid, "spec.servedModelName", "without whitespace"},
				{field.ErrorTypeRequired, "spec.hfToken", "secret name and key"},
				{field.ErrorTypeInvalid, "spec.hfEndpoint", "http(s) URL"},
				{field.ErrorTypeInvalid, "spec.startupTimeout", "at least 10s"},
				{field.ErrorTypeInvalid, "spec.disruptionBudget", "must not be negative"},
			},
		},
		"bad layout values": {
			serve.VLLM("q", "pvc://models/x").On(hardware.H100).TensorParallel(0).PipelineParallel(0).Nodes(0),
			[]wantErr{
				{field.ErrorTypeInvalid, "spec.tensorParallel", "at least 1"},
				{field.ErrorTypeInvalid, "spec.pipelineParallel", "at least 1"},
				{field.ErrorTypeInvalid, "spec.nodes", "at least 1"},
			},
		},
		"bad s3 settings and cache": {
			serve.VLLM("q", "s3://bucket/x").On(hardware.H100).S3Credentials(pod.SecretKeyRef{Name: "", Key: "AWS_ACCESS_KEY_ID"}, pod.SecretKeyRef{Name: "", Key: "AWS_SECRET_ACCESS_KEY"}).S3Endpoint("minio:9000").ModelCache("Bad_Claim"),
			[]wantErr{
				{field.ErrorTypeRequired, "spec.s3Credentials.accessKeyID", "secret name and key are required"},
				{field.ErrorTypeRequired, "spec.s3Credentials.secretAccessKey", "secret name and key are required"},
				{field.ErrorTypeInvalid, "spec.s3Endpoint", "http(s) URL"},
				{field.ErrorTypeInvalid, "spec.modelCache", "lowercase RFC 1123 subdomain"},
			},
		},
		"bad names": {
			serve.VLLM("1-qwen", qwen).On(hardware.H100),
			[]wantErr{{field.ErrorTypeInvalid, "metadata.name", "must start with a letter: it names the Service"}},
		},
		"too long a name": {
			serve.VLLM(strings.Repeat("a", 53), qwen).On(hardware.H100),
			[]wantErr{{field.ErrorTypeTooLong, "metadata.name", "52"}},
		},
		"bad LoRA adapters": {
			serve.VLLM("q", qwen).On(hardware.H100).LoRA("Bad_Name", "org/a").LoRA("a", "org/a").LoRA("a", "s3://bucket/a").LoRA("b", "hf://x"),
			[]wantErr{
				{field.ErrorTypeInvalid, "spec.loras[0].name", "RFC 1123 label"},
				{field.ErrorTypeDuplicate, "spec.loras[2].name", ""},
				{field.ErrorTypeInvalid, "spec.loras[2].source", "vLLM loads LoRA adapters from hf://, pvc://"},
				{field.ErrorTypeInvalid, "spec.loras[3].source", "must be a repository id org/name"},
			},
		},
		"MindIE model names": {
			serve.MindIE("m", "pvc://models/x").On(hardware.Ascend910B3).Accelerators(1).ServedModelName("org/model"),
			[]wantErr{{field.ErrorTypeInvalid, "spec.servedModelName", "MindIE model names hold letters"}},
		},
		"a rank table for one node": {
			serve.MindIE("m", "pvc://models/x").On(hardware.Ascend910B3).Accelerators(1).RankTable("ranks"),
			[]wantErr{{field.ErrorTypeInvalid, "spec.rankTable", "a rank table is for a replica across nodes"}},
		},
		"an edit that empties the MindIE models": {
			serve.MindIE("m", "pvc://models/x").On(hardware.Ascend910B3).Accelerators(1).
				ConfigureMindIE(func(c *serve.MindIEConfig) { c.BackendConfig.ModelDeployConfig.ModelConfig = nil }).
				ConfigureMindIE(nil),
			[]wantErr{
				{field.ErrorTypeRequired, "spec.mindIEConfig", "edit function is nil"},
				{field.ErrorTypeRequired, "spec.mindIEConfig.BackendConfig.ModelDeployConfig.ModelConfig", "MindIE needs one model"},
			},
		},
		"Triton model control": {
			serve.Triton("t", "pvc://models/repo").ModelControl("lazy").ModelControl("poll", "resnet"),
			[]wantErr{
				{field.ErrorTypeNotSupported, "spec.modelControl", `"none", "poll", "explicit"`},
				{field.ErrorTypeInvalid, "spec.modelControl", "need the explicit mode"},
			},
		},
		"Ollama settings": {
			serve.Ollama("o", "hf://org/repo-GGUF@main").KeepAlive(time.Minute),
			[]wantErr{
				{field.ErrorTypeInvalid, "spec.model", "takes no revision"},
			},
		},
		"pod settings are checked once for both LeaderWorkerSet templates": {
			serve.VLLM("q", "pvc://models/x").On(hardware.H100).Accelerators(8).Nodes(2).CPU("lots"),
			[]wantErr{
				{field.ErrorTypeInvalid, "spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0].resources.requests[cpu]", "quantities must match"},
				{field.ErrorTypeInvalid, "spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0].resources.limits[cpu]", "quantities must match"},
			},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { assertErrors(t, c.w, c.want...) })
	}
}

func TestCanaryErrors(t *testing.T) {
	stable := serve.VLLM("v1", qwen)
	canary := serve.VLLM("v2", qwen)
	cases := map[string]struct {
		w    *serve.Split
		want []wantErr
	}{
		"weights not adding up to 100": {
			serve.Canary("chat", stable, canary).Gateway("gw", "").Weights(90, 20),
			[]wantErr{{field.ErrorTypeInvalid, "spec.weights", "are percentages and must add up to 100, not 110"}},
		},
		"negative weights": {
			serve.Canary("chat", stable, canary).Gateway("gw", "").Weights(110, -10),
			[]wantErr{{field.ErrorTypeInvalid, "spec.weights", "must not be negative"}},
		},
		"no gateway": {
			serve.Canary("chat", stable, canary),
			[]wantErr{{field.ErrorTypeRequired, "spec.gateway", "a Gateway to attach to is required"}},
		},
		"bad gateway": {
			serve.Canary("chat", stable, canary).Gateway("Bad", "Bad_NS"),
			[]wantErr{
				{field.ErrorTypeInvalid, "spec.gateway", "RFC 1123 subdomain"},
				{field.ErrorTypeInvalid, "spec.gatewayNamespace", "RFC 1123 label"},
			},
		},
		"missing and identical versions": {
			serve.Canary("chat", nil, canary).Gateway("gw", ""),
			[]wantErr{{field.ErrorTypeRequired, "spec.stable", "the stable Service is nil"}},
		},
		"the same service twice": {
			serve.Canary("chat", stable, serve.VLLM("v1", qwen)).Gateway("gw", ""),
			[]wantErr{{field.ErrorTypeDuplicate, "spec.canary.name", ""}},
		},
		"another namespace": {
			serve.Canary("chat", stable, serve.VLLM("v2", qwen).Namespace("other")).Gateway("gw", ""),
			[]wantErr{{field.ErrorTypeInvalid, "spec.canary.namespace", `must be the route's namespace ""`}},
		},
		"bad hostnames, path and timeout": {
			serve.Canary("chat", stable, canary).Gateway("gw", "").Hostnames("Chat_Example", "*.example.com").
				PathPrefix("v1").RequestTimeout(1500 * time.Microsecond),
			[]wantErr{
				{field.ErrorTypeInvalid, "spec.hostnames[0]", "RFC 1123 subdomain"},
				{field.ErrorTypeInvalid, "spec.pathPrefix", "must start with '/'"},
				{field.ErrorTypeInvalid, "spec.requestTimeout", "whole number of milliseconds"},
			},
		},
		"bad route name": {
			serve.Canary("Chat", stable, canary).Gateway("gw", ""),
			[]wantErr{{field.ErrorTypeInvalid, "metadata.name", "RFC 1123 label"}},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { assertErrors(t, c.w, c.want...) })
	}
}
