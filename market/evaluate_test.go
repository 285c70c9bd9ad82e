package market_test

import (
	"os"
	"strings"
	"testing"

	"github.com/cubestudio/cube/pod"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/market"
)

func registered(uri string) market.Version {
	v := sampleVersion("support-bot")
	v.Number = 3
	v.Artifact.URI = uri
	return v
}

// serve.Service's Endpoint has no path; the harness needs the /v1 base
// (found when the evaluation first ran on the test cluster: base_url was
// http://qwen-api.ns:8000/completions and the engine answered 404).
func TestEvaluateAServeEndpoint(t *testing.T) {
	for endpoint, want := range map[string]string{
		"http://qwen-api.team:8000":     "base_url=http://qwen-api.team:8000/v1/completions",
		"http://qwen-api.team:8000/":    "base_url=http://qwen-api.team:8000/v1/completions",
		"http://qwen-api.team:8000/v1/": "base_url=http://qwen-api.team:8000/v1/completions",
		"http://gw.team/openai/v1":      "base_url=http://gw.team/openai/v1/completions",
	} {
		job, err := market.Evaluate("eval", registered("pvc://models/support-bot/v3"), "mmlu").Endpoint(endpoint, "bot").Build()
		require.NoError(t, err, endpoint)
		assert.Contains(t, strings.Join(job.Spec.Template.Spec.Containers[0].Args, " "), want, endpoint)
	}
}

func TestEvaluateAnEndpoint(t *testing.T) {
	job, err := market.Evaluate("eval-bot", registered("pvc://models/support-bot/v3"), "mmlu", "gsm8k").
		Endpoint("http://support-bot-api.ml:8000/v1/", "support-bot").FewShot(5).SampleLimit(100).Parallelism(16).
		HFToken(pod.SecretKeyRef{Name: "hf", Key: "token"}).Build()
	require.NoError(t, err)
	assert.Equal(t, "support-bot@3", job.Annotations[market.AnnotationVersion])
	spec := job.Spec.Template.Spec
	c := spec.Containers[0]
	assert.Equal(t, "evaluate", c.Name)
	assert.Equal(t, market.DefaultEvalImage, c.Image)
	assert.Equal(t, []string{
		"lm_eval", "run", "--model", "local-completions",
		"--model_args", "model=support-bot,base_url=http://support-bot-api.ml:8000/v1/completions,num_concurrent=16,max_retries=3,tokenizer=/models/support-bot/v3",
		"--tasks", "mmlu,gsm8k", "--batch_size", "1", "--output_path", "/results", "--num_fewshot", "5", "--limit", "100",
	}, c.Args)
	env := envMap(t, c)
	assert.Equal(t, secretRef("hf", "token"), env["HF_TOKEN"].ValueFrom)
	assert.Equal(t, market.LMEvalPackage, env["CUBE_PIP_PACKAGE"].Value)
	assert.Equal(t, []corev1.VolumeMount{{Name: "results", MountPath: "/results"}, {Name: "models", MountPath: "/models", ReadOnly: true}}, c.VolumeMounts)
	assert.Equal(t, "models", spec.Volumes[1].PersistentVolumeClaim.ClaimName)
	assert.True(t, spec.Volumes[1].PersistentVolumeClaim.ReadOnly)
	assert.Empty(t, c.Resources.Limits, "an endpoint evaluation takes no accelerator")
}

func TestEvaluateLocalWeightsOnNVIDIAAndAscend(t *testing.T) {
	job, err := market.Evaluate("eval-bot", registered("pvc://models/support-bot/v3"), "mmlu").
		On(hardware.H100).Accelerators(2).Build()
	require.NoError(t, err)
	c := job.Spec.Template.Spec.Containers[0]
	assert.Equal(t, market.DefaultEvalVLLMImage, c.Image)
	assert.Equal(t, []string{"lm_eval", "run", "--model", "vllm",
		"--model_args", "pretrained=/models/support-bot/v3,tensor_parallel_size=2,dtype=auto,gpu_memory_utilization=0.8",
		"--tasks", "mmlu", "--batch_size", "auto", "--output_path", "/results"}, c.Args)
	assert.Equal(t, "2", c.Resources.Limits.Name("nvidia.com/gpu", "").String())

	job, err = market.Evaluate("eval-bot", registered("hf://acme/support-bot@v3"), "ceval-valid").
		On(hardware.Ascend910B3).Accelerators(1).Build()
	require.NoError(t, err)
	c = job.Spec.Template.Spec.Containers[0]
	assert.Equal(t, market.DefaultEvalVLLMAscendImage, c.Image)
	// The version's hub revision is what the harness loads.
	assert.Equal(t, "pretrained=acme/support-bot,tensor_parallel_size=1,dtype=auto,gpu_memory_utilization=0.8,revision=v3", c.Args[5])
	assert.Equal(t, "1", c.Resources.Limits.Name("huawei.com/Ascend910", "").String())
}

func TestEvaluateErrorsAreJoined(t *testing.T) {
	_, err := market.Evaluate("Eval", market.Version{Artifact: market.Artifact{URI: "s3://b/p"}}, "", "a,b").
		FewShot(-1).SampleLimit(0).BatchSize("big").Parallelism(0).Endpoint("localhost", "a b").HFToken(pod.SecretKeyRef{Name: "", Key: ""}).Build()
	require.Error(t, err)
	for _, want := range []string{"metadata.name", "spec.version.model", "spec.tasks[0]", "spec.tasks[1]",
		"spec.version.artifact.uri", "spec.fewShot", "spec.sampleLimit", "spec.batchSize", "spec.parallelism", "spec.endpoint", "spec.servedModel", "spec.hfToken"} {
		assert.ErrorContains(t, err, want)
	}
	_, err = market.Evaluate("e", registered("pvc://models/x")).Build()
	assert.ErrorContains(t, err, "spec.tasks: Required")
	assert.ErrorContains(t, err, "spec.accelerators: Required", "local weights need accelerators")
	var nilJob *market.EvaluationJob
	_, err = nilJob.Objects()
	assert.ErrorContains(t, err, "nil")
	assert.Nil(t, nilJob.FewShot(1).Endpoint("http://x", "y"))
}

func TestParseLMEvalResults(t *testing.T) {
	raw, err := os.ReadFile("testdata/lmeval/results_2025-07-01T10-00-00.json")
	require.NoError(t, err)
	got, err := market.ParseLMEvalResults(raw)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{
		"mmlu/acc":                           0.7183,
		"gsm8k/exact_match/strict-match":     0.8211,
		"gsm8k/exact_match/flexible-extract": 0.8355,
		"hellaswag/acc":                      0.6112,
		"hellaswag/acc_norm":                 0.8004,
	}, got)

	// The reduced form the pod writes to its termination message.
	got, err = market.ParseLMEvalResults([]byte(`{"results":{"mmlu":{"acc,none":0.5}},"dropped":0}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"mmlu/acc": 0.5}, got)

	for _, bad := range []string{``, `[]`, `{}`, `{"results": 3}`} {
		_, err := market.ParseLMEvalResults([]byte(bad))
		assert.Error(t, err, bad)
	}
}

func loraVersion(uri string) market.Version {
	v := registered(uri)
	v.Model = "support-bot"
	v.Number = 1
	v.Artifact.Format = market.FormatLoRA
	v.Lineage.BaseModel = "Qwen/Qwen2.5-7B-Instruct"
	return v
}

func modelArgs(t *testing.T, c corev1.Container) string {
	t.Helper()
	for i, a := range c.Args {
		if a == "--model_args" && i+1 < len(c.Args) {
			return c.Args[i+1]
		}
	}
	t.Fatalf("no --model_args in %v", c.Args)
	return ""
}

// A LoRA adapter's local weights are evaluated as lm-eval's vllm model
// takes them (lm_eval/models/vllm_causallms.py at v0.4.12): the base
// weights as pretrained and the adapter directory as lora_local_path.
// Found by a user trial: the adapter directory went to pretrained, which
// vLLM cannot load as a model.
func TestEvaluateALoRAAdapterOnItsBase(t *testing.T) {
	for name, tc := range map[string]struct {
		base, args string
		claims     map[string]string // volume → claim
		mounts     map[string]string // volume → mount path
	}{
		"hub base": {
			base:   "hf://Qwen/Qwen2.5-7B-Instruct@a09a3545",
			args:   "pretrained=Qwen/Qwen2.5-7B-Instruct,tensor_parallel_size=1,dtype=auto,gpu_memory_utilization=0.8,revision=a09a3545,lora_local_path=/adapter/support-bot/v1",
			claims: map[string]string{"adapter": "models"},
			mounts: map[string]string{"results": "/results", "dshm": "/dev/shm", "adapter": "/adapter"},
		},
		"base on the same claim": {
			base:   "pvc://models/qwen-7b",
			args:   "pretrained=/models/qwen-7b,tensor_parallel_size=1,dtype=auto,gpu_memory_utilization=0.8,lora_local_path=/models/support-bot/v1",
			claims: map[string]string{"models": "models"},
			mounts: map[string]string{"results": "/results", "dshm": "/dev/shm", "models": "/models"},
		},
		"base on another claim": {
			base:   "pvc://base-models/qwen-7b",
			args:   "pretrained=/models/qwen-7b,tensor_parallel_size=1,dtype=auto,gpu_memory_utilization=0.8,lora_local_path=/adapter/support-bot/v1",
			claims: map[string]string{"models": "base-models", "adapter": "models"},
			mounts: map[string]string{"results": "/results", "dshm": "/dev/shm", "models": "/models", "adapter": "/adapter"},
		},
	} {
		e := &market.Entry{Version: loraVersion("pvc://models/support-bot/v1"), Base: tc.base}
		job, err := e.Evaluate("eval-bot", "mmlu").On(hardware.L4).Accelerators(1).Build()
		require.NoError(t, err, name)
		spec := job.Spec.Template.Spec
		c := spec.Containers[0]
		assert.Equal(t, market.DefaultEvalVLLMImage, c.Image, name)
		assert.Equal(t, tc.args, modelArgs(t, c), name)
		claims := map[string]string{}
		for _, v := range spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				claims[v.Name] = v.PersistentVolumeClaim.ClaimName
				assert.True(t, v.PersistentVolumeClaim.ReadOnly, name)
			}
		}
		assert.Equal(t, tc.claims, claims, name)
		mounts := map[string]string{}
		for _, m := range c.VolumeMounts {
			mounts[m.Name] = m.MountPath
		}
		assert.Equal(t, tc.mounts, mounts, name)
		assert.Equal(t, "support-bot@1", job.Annotations[market.AnnotationVersion], name)
	}

	// Through an endpoint, the adapter is served; the base's tokenizer
	// counts the tokens.
	e := &market.Entry{Version: loraVersion("pvc://models/support-bot/v1"), Base: "hf://Qwen/Qwen2.5-7B-Instruct"}
	job, err := e.Evaluate("eval-bot", "mmlu").Endpoint("http://support-bot-staging-api.ml:8000", "support-bot").Build()
	require.NoError(t, err)
	assert.Equal(t, "model=support-bot,base_url=http://support-bot-staging-api.ml:8000/v1/completions,num_concurrent=8,max_retries=3,tokenizer=Qwen/Qwen2.5-7B-Instruct",
		modelArgs(t, job.Spec.Template.Spec.Containers[0]))
}

// Without its base weights, an adapter's local weights are refused with
// the field that says why, not handed to vLLM as a model.
func TestEvaluateRefusesALoRAAdapterWithoutItsBase(t *testing.T) {
	const want = `spec.version.artifact.format: Invalid value: "lora": a LoRA adapter is evaluated on the base weights it applies to`
	_, err := market.Evaluate("eval-bot", loraVersion("pvc://models/support-bot/v1"), "mmlu").On(hardware.L4).Accelerators(1).Build()
	require.ErrorContains(t, err, want)
	_, err = (&market.Entry{Version: loraVersion("pvc://models/support-bot/v1")}).Evaluate("eval-bot", "mmlu").On(hardware.L4).Accelerators(1).Build()
	require.ErrorContains(t, err, want)

	// An adapter on the hub: lm-eval reads lora_local_path from the pod's
	// disk.
	e := &market.Entry{Version: loraVersion("hf://acme/support-bot-lora"), Base: "hf://Qwen/Qwen2.5-7B-Instruct"}
	_, err = e.Evaluate("eval-bot", "mmlu").On(hardware.L4).Accelerators(1).Build()
	require.ErrorContains(t, err, `spec.version.artifact.uri: Invalid value: "hf://acme/support-bot-lora": the harness loads a LoRA adapter from a directory`)

	// Its served endpoint needs no base weights.
	_, err = market.Evaluate("eval-bot", loraVersion("pvc://models/support-bot/v1"), "mmlu").Endpoint("http://bot-api.ml:8000", "support-bot").Build()
	require.NoError(t, err)
}
