package market_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/cubestudio/cube/pod"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/contract"
	"github.com/cubestudio/cube/market"
)

// renderedDownloads are the download Jobs checked against the tools'
// contracts: every source (hf, modelscope, s3) with every setting that
// reaches the command line or the environment.
func renderedDownloads() map[string]*market.DownloadJob {
	return map[string]*market.DownloadJob{
		"hf-all-settings": market.Download("qwen-7b", "hf://Qwen/Qwen2.5-7B-Instruct@a09a35458c702b33eeacc393d103063234e8bc28", "models").
			HFToken(pod.SecretKeyRef{Name: "hf", Key: "token"}).HFEndpoint("https://hf-mirror.com").HFTransfer().MaxWorkers(4).
			Include("*.json", "*.safetensors").Exclude("original/*", "*.bin"),
		"hf-plain":        market.Download("qwen-7b", "hf://Qwen/Qwen2.5-7B-Instruct", "models"),
		"hf-revision":     market.Download("qwen-7b", "hf://Qwen/Qwen2.5-7B-Instruct", "models").Revision("main").Exclude("*.pth"),
		"hf-skip-summary": market.Download("qwen-7b", "hf://Qwen/Qwen2.5-7B-Instruct", "models").SkipChecksum().Include("*.safetensors"),
		"modelscope-all-settings": market.Download("glm", "modelscope://ZhipuAI/glm-4-9b-chat", "models").
			Into("glm/v1").Revision("v1.0.0").ModelScopeToken(pod.SecretKeyRef{Name: "ms", Key: "token"}).ModelScopeEndpoint("https://www.modelscope.ai").
			Include("*.safetensors", "*.json").Exclude("*.bin", "*.pth").MaxWorkers(4),
		"modelscope-plain": market.Download("glm", "modelscope://ZhipuAI/glm-4-9b-chat@master", "models"),
		"s3-all-settings": market.Download("bot", "s3://team-models/support-bot/v3", "models").
			S3Credentials(pod.SecretKeyRef{Name: "minio", Key: "AWS_ACCESS_KEY_ID"}, pod.SecretKeyRef{Name: "minio", Key: "AWS_SECRET_ACCESS_KEY"}).S3Endpoint("http://minio.storage:9000").S3Region("us-east-1").
			Include("*.safetensors", "*.json").Exclude("*.bin").SkipChecksum(),
		"s3-plain": market.Download("bot", "s3://team-models/support-bot/v3", "models"),
	}
}

// renderedEvaluations are the evaluation Jobs checked against the
// lm-evaluation-harness contract: endpoints and local weights on each
// vendor's image, with every option.
func renderedEvaluations() map[string]*market.EvaluationJob {
	return map[string]*market.EvaluationJob{
		"endpoint-all-settings": market.Evaluate("eval-bot", registered("pvc://models/support-bot/v3"), "mmlu", "gsm8k").
			Endpoint("http://support-bot-api.ml:8000/v1/", "support-bot").FewShot(5).SampleLimit(100).Parallelism(16).BatchSize("4").
			HFToken(pod.SecretKeyRef{Name: "hf", Key: "token"}),
		"endpoint-plain": market.Evaluate("eval-bot", registered("hf://acme/support-bot@v3"), "hellaswag").
			Endpoint("http://support-bot-api.ml:8000", "support-bot"),
		"local-nvidia": market.Evaluate("eval-bot", registered("pvc://models/support-bot/v3"), "mmlu", "arc_challenge").
			On(hardware.H100).Accelerators(2).FewShot(0).SampleLimit(0.1).BatchSize("auto:4"),
		"local-lora": (&market.Entry{Version: loraVersion("pvc://models/support-bot/v1"), Base: "hf://Qwen/Qwen2.5-7B-Instruct"}).
			Evaluate("eval-bot", "mmlu").On(hardware.L4).Accelerators(1),
		"local-ascend-hub": market.Evaluate("eval-bot", registered("hf://acme/support-bot@v3"), "ceval-valid").
			On(hardware.Ascend910B3).Accelerators(1).HFToken(pod.SecretKeyRef{Name: "hf", Key: "token"}),
	}
}

func loadContract(t *testing.T, name string) *contract.Contract {
	t.Helper()
	c, err := contract.Load("testdata/contracts/" + name + ".tsv")
	require.NoError(t, err)
	return c
}

// toolEnv is the container's environment the tool reads: cube's own script
// variables (CUBE_*) are left out, secret references stand for their value.
func toolEnv(c corev1.Container) map[string]string {
	env := map[string]string{}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "CUBE_") {
			continue
		}
		v := e.Value
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			v = "secret:" + e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
		env[e.Name] = v
	}
	return env
}

// checkPackage checks that the package the pod installs is the version the
// contract was read from.
func checkPackage(t *testing.T, what string, c corev1.Container, ct *contract.Contract) {
	t.Helper()
	var pkg string
	for _, e := range c.Env {
		if e.Name == "CUBE_PIP_PACKAGE" {
			pkg = e.Value
		}
	}
	_, version, ok := strings.Cut(pkg, "==")
	if !ok || version != ct.Version {
		t.Errorf("%s: the pod installs %q; the contract is of %s %s (%s)", what, pkg, ct.Name, ct.Version, ct.Source)
	}
}

func buildJob(t *testing.T, what string, b interface{ Build() (*batchv1.Job, error) }) corev1.Container {
	t.Helper()
	job, err := b.Build()
	require.NoError(t, err, what)
	return job.Spec.Template.Spec.Containers[0]
}

// TestRenderedCommandsKeepTheContracts checks every download and every
// evaluation command line, environment and image market renders against
// what huggingface_hub, ModelScope, the AWS CLI and lm-evaluation-harness accept at the
// versions market pins (testdata/contracts), so that a flag the parser
// lacks, a repeated nargs="*" flag of which the parser keeps the last, or an
// image without what the pod runs fails here rather than in the pod.
func TestRenderedCommandsKeepTheContracts(t *testing.T) {
	// Each tool: its contract, its subcommand and how many positional
	// arguments it takes (hf download: the repository; modelscope download
	// names it with --model; aws s3 sync: source and destination).
	tools := map[string]struct {
		contract   *contract.Contract
		subcommand []string
		positional int
	}{
		"hf":         {loadContract(t, "huggingface_hub"), []string{"download"}, 1},
		"modelscope": {loadContract(t, "modelscope"), []string{"download"}, 0},
		"aws":        {loadContract(t, "aws-cli"), []string{"s3", "sync"}, 2},
	}
	for name, d := range renderedDownloads() {
		c := buildJob(t, name, d)
		require.NotEmpty(t, c.Args, name)
		tool, ok := tools[c.Args[0]]
		require.True(t, ok, "%s: no contract for %s", name, c.Args[0])
		ct, n := tool.contract, 1+len(tool.subcommand)
		require.GreaterOrEqual(t, len(c.Args), n, name)
		assert.Equal(t, tool.subcommand, c.Args[1:n], name)
		positional, err := ct.CheckArgs(name, c.Args[n:])
		assert.NoError(t, err)
		assert.Len(t, positional, tool.positional, "%s: positional arguments %v", name, positional)
		assert.NoError(t, ct.CheckEnv(name, toolEnv(c)))
		assert.NoError(t, ct.CheckImage(name, c.Image, map[string]string{}))
		if c.Args[0] != "aws" { // the image brings the CLI; nothing is installed
			checkPackage(t, name, c, ct)
		}
	}

	lmEval := loadContract(t, "lm-eval")
	for name, e := range renderedEvaluations() {
		c := buildJob(t, name, e)
		require.GreaterOrEqual(t, len(c.Args), 2, name)
		assert.Equal(t, "lm_eval", c.Args[0], name)
		args := c.Args[1:]
		if args[0] == "run" {
			args = args[1:]
		} else {
			t.Errorf("%s: %v names no subcommand; lm_eval/_cli/harness.py inserts run only when argv[1] is none of its subcommands", name, c.Args)
		}
		positional, err := lmEval.CheckArgs(name, args)
		assert.NoError(t, err)
		assert.Empty(t, positional, name)
		model, modelArgs := flagValue(args, "--model"), flagValue(args, "--model_args")
		assert.NoError(t, lmEval.CheckKeys(name+" --model_args", modelArgKeys(t, model, modelArgs)))
		assert.NoError(t, lmEval.CheckEnv(name, toolEnv(c)))
		assert.NoError(t, lmEval.CheckImage(name, c.Image, map[string]string{"--model": model}))
		checkPackage(t, name, c, lmEval)
	}
}

func flagValue(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

// modelArgKeys reads --model_args key=value,… as "<model>.<key>", the way
// lm_eval/_cli/utils.py key_val_to_dict splits it.
func modelArgKeys(t *testing.T, model, modelArgs string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, kv := range strings.Split(modelArgs, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !assert.True(t, ok, "model argument %q is not key=value", kv) {
			continue
		}
		out[model+"."+k] = v
	}
	return out
}

// TestContractsCatchWhatTheReviewFound: the checks above are not vacuous:
// the contracts refuse the command lines the review of issue 26 found.
func TestContractsCatchWhatTheReviewFound(t *testing.T) {
	hf := loadContract(t, "huggingface_hub")
	_, err := hf.CheckArgs("hf", []string{"Qwen/Qwen2.5-7B", "--include", "*.json", "--include", "*.safetensors"})
	assert.ErrorContains(t, err, "--include is given more than once")

	lmEval := loadContract(t, "lm-eval")
	_, err = lmEval.CheckArgs("lm_eval", []string{"--model", "vllm", "--num-fewshot", "5"})
	assert.ErrorContains(t, err, "--num-fewshot is not a flag")
	err = lmEval.CheckImage("old image", "vllm/vllm-openai:v0.17.0", map[string]string{"--model": "vllm"})
	assert.ErrorContains(t, err, "nothing is recorded of image")
	assert.Error(t, lmEval.CheckKeys("args", map[string]string{"vllm.dtype": "fp8"}))
}
