package serve_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/pod"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/serve"
)

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
