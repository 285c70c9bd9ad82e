package serve_test

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/vgpu"
)

// A Service that no constructor made, or a nil one, reports that from
// Objects and AutoPlan, and its chained methods do not panic.
func TestUnmadeServicesDoNotPanic(t *testing.T) {
	var nilService *serve.Service
	for name, svc := range map[string]*serve.Service{
		"nil":                   nilService,
		"zero":                  {},
		"zero, chained":         (&serve.Service{}).TensorParallel(2).MaxModelLen(4096).LoRA("a", "org/a").APIKey(pod.SecretKeyRef{Name: "s", Key: "k"}),
		"zero, pod settings":    (&serve.Service{}).Image("x"),
		"nil, chained":          nilService.Replicas(2).LoRA("a", "org/a").HFToken(pod.SecretKeyRef{Name: "s", Key: "k"}).ModelCache("c"),
		"zero, engine settings": (&serve.Service{}).ModelControl("poll").KeepAlive(5 * time.Minute).ConfigureMindIE(nil),
	} {
		t.Run(name, func(t *testing.T) {
			objs, err := svc.Objects()
			assert.Nil(t, objs)
			errs := fieldErrors(t, err)
			require.Len(t, errs, 1)
			assert.Equal(t, field.ErrorTypeRequired, errs[0].Type)
			assert.Contains(t, errs[0].Detail, "serve.VLLM")
			_, err = serve.AutoPlan(svc)
			require.Error(t, err)
			url, err := serve.URL(svc)
			require.Error(t, err)
			assert.Empty(t, url)
		})
	}

	_, err := serve.Canary("c", &serve.Service{}, nil).Gateway("g", "").Objects()
	errs := fieldErrors(t, err)
	require.Len(t, errs, 2)
	assert.Equal(t, "spec.stable", errs[0].Field)
	assert.Equal(t, "spec.canary", errs[1].Field)

	var nilSplit *serve.Split
	_, err = nilSplit.Weights(50, 50).Gateway("g", "").Listener("l").Hostnames("h").PathPrefix("/").Objects()
	require.ErrorContains(t, err, "the Split is nil")
	_, err = (&serve.Split{}).Objects()
	require.Error(t, err)
}

func TestAPIKey(t *testing.T) {
	secretRef := func(name, key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key,
		}}
	}
	env := func(c corev1.Container, name string) *corev1.EnvVar {
		for _, e := range c.Env {
			if e.Name == name {
				return &e
			}
		}
		return nil
	}

	// vLLM reads VLLM_API_KEY when --api-key is not given.
	c := render(t, serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).APIKey(pod.SecretKeyRef{Name: "q-api", Key: "key"})).main(t)
	v := env(c, "VLLM_API_KEY")
	require.NotNil(t, v)
	assert.Empty(t, v.Value)
	assert.Equal(t, secretRef("q-api", "key"), v.ValueFrom)
	assert.NotContains(t, c.Args, "--api-key")

	// SGLang and TGI take the flag; Kubernetes substitutes $(CUBE_API_KEY).
	for _, svc := range []*serve.Service{
		serve.SGLang("q", qwen).On(hardware.H100).Accelerators(1).APIKey(pod.SecretKeyRef{Name: "q-api", Key: "key"}),
		serve.TGI("q", qwen).On(hardware.H100).Accelerators(1).APIKey(pod.SecretKeyRef{Name: "q-api", Key: "key"}),
	} {
		c := render(t, svc).main(t)
		assert.Equal(t, "$(CUBE_API_KEY)", flagValue(c.Args, "--api-key"), c.Name)
		v := env(c, "CUBE_API_KEY")
		require.NotNil(t, v, c.Name)
		assert.Equal(t, secretRef("q-api", "key"), v.ValueFrom)
	}

	assertErrors(t, serve.Ollama("chat", "qwen2.5:7b").On(hardware.L4).Accelerators(1).APIKey(pod.SecretKeyRef{Name: "s", Key: "k"}),
		wantErr{field.ErrorTypeForbidden, "spec.apiKey", "Ollama has no APIKey setting"})
	assertErrors(t, serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).APIKey(pod.SecretKeyRef{Name: "", Key: ""}),
		wantErr{field.ErrorTypeRequired, "spec.apiKey", "secret name and key are required"})
}

// Credentials written into the objects are refused, and the refusal does
// not echo them.
func TestLiteralSecretsAreRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		svc  *serve.Service
		want wantErr
	}{
		"--api-key value": {serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).AddArgs("--max-num-seqs", "64", "--api-key", "sk-live-123"),
			wantErr{field.ErrorTypeForbidden, "spec.args[2]", "use APIKey"}},
		"--api-key=value": {serve.SGLang("q", qwen).On(hardware.H100).Accelerators(1).AddArgs("--api-key=sk-live-123"),
			wantErr{field.ErrorTypeForbidden, "spec.args[0]", "use APIKey"}},
		"a trailing --api-key": {serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).AddArgs("--api-key"),
			wantErr{field.ErrorTypeForbidden, "spec.args[0]", "use APIKey"}},
		"HF_TOKEN": {serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).Env("HF_TOKEN", "hf_live123"),
			wantErr{field.ErrorTypeForbidden, "spec.template.env[HF_TOKEN].value", `EnvFromSecret("HF_TOKEN", secret, key)`}},
		"VLLM_API_KEY": {serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).Env("VLLM_API_KEY", "sk-live-123"),
			wantErr{field.ErrorTypeForbidden, "spec.template.env[VLLM_API_KEY].value", `EnvFromSecret("VLLM_API_KEY", secret, key)`}},
	} {
		t.Run(name, func(t *testing.T) {
			assertErrors(t, tc.svc, tc.want)
			_, err := tc.svc.Objects()
			assert.NotContains(t, err.Error(), "live123")
		})
	}

	// A reference to a variable and a credential from a Secret pass.
	render(t, serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).
		EnvFromSecret("MY_KEY", pod.SecretKeyRef{Name: "keys", Key: "vllm"}).AddArgs("--api-key", "$(MY_KEY)").
		EnvFromSecret("HF_TOKEN", pod.SecretKeyRef{Name: "hf", Key: "token"}))
}

// SGLang's --kv-cache-dtype has its own spellings; vLLM's "fp8" is not one.
func TestKVCacheDTypeFollowsTheEngine(t *testing.T) {
	assertErrors(t, serve.SGLang("q", qwen).On(hardware.H100).Accelerators(1).KVCacheDType("fp8"),
		wantErr{field.ErrorTypeNotSupported, "spec.kvCacheDType", `"fp8_e5m2"`})
	assertErrors(t, serve.TGI("q", qwen).On(hardware.H100).Accelerators(1).KVCacheDType("fp8"),
		wantErr{field.ErrorTypeNotSupported, "spec.kvCacheDType", `"fp8_e4m3fn"`})
	c := render(t, serve.SGLang("q", qwen).On(hardware.H100).Accelerators(1).KVCacheDType("fp8_e4m3")).main(t)
	assert.Equal(t, "fp8_e4m3", flagValue(c.Args, "--kv-cache-dtype"))
	c = render(t, serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).KVCacheDType("fp8")).main(t)
	assert.Equal(t, "fp8", flagValue(c.Args, "--kv-cache-dtype"))
}

// A slice is the pod's devices: TP × PP must use exactly them, and a MIG
// instance or a vNPU is one device to the engine.
func TestSlicesAndParallelism(t *testing.T) {
	hami := func() *vgpu.Spec { return vgpu.Slice(hardware.A100_80G).Memory("20Gi") }
	assertErrors(t, serve.VLLM("q", qwen).Slice(hami()).TensorParallel(2),
		wantErr{field.ErrorTypeInvalid, "spec.tensorParallel", "must equal the slice's 1 device(s)"})
	assertErrors(t, serve.VLLM("q", qwen).Slice(vgpu.MIG(hardware.A100_80G, "3g.40gb")).TensorParallel(2),
		wantErr{field.ErrorTypeInvalid, "spec.tensorParallel", "one device to the engine"})
	assertErrors(t, serve.VLLM("q", qwen).Slice(vgpu.MIG(hardware.A100_80G, "3g.40gb").Accelerators(2)),
		wantErr{field.ErrorTypeInvalid, "spec.slice.accelerators", "1 would sit idle"})
	assertErrors(t, serve.VLLM("q", qwen).Slice(hami()).Accelerators(2),
		wantErr{field.ErrorTypeForbidden, "spec.template.accelerators", "Accelerators(2) and Slice both set"})
	assertErrors(t, serve.VLLM("q", qwen).Slice(hami()).Auto(),
		wantErr{field.ErrorTypeForbidden, "spec.auto", "Auto sizes whole devices"})
	assertErrors(t, serve.VLLM("q", qwen).Slice(hami()).Nodes(2),
		wantErr{field.ErrorTypeInvalid, "spec.nodes", "runs in one pod"})

	// A slice over two devices is split by TP when none is given.
	r := render(t, serve.VLLM("q", qwen).Slice(hami().Accelerators(2)))
	c := r.main(t)
	assert.Equal(t, "2", flagValue(c.Args, "--tensor-parallel-size"))
	gpus := c.Resources.Limits[hardware.ResourceNVIDIAGPU]
	assert.Equal(t, int64(2), gpus.Value())
	assert.Empty(t, r.deployment.Spec.Template.Spec.SchedulerName)

	c = render(t, serve.VLLM("q", qwen).Slice(hami())).main(t)
	assert.Empty(t, flagValue(c.Args, "--tensor-parallel-size"))

	// A Volcano vGPU slice runs under Volcano's scheduler, whose device
	// plugin allocates only to pods that scheduler annotated.
	r = render(t, serve.VLLM("q", qwen).Slice(hami().Backend(vgpu.Volcano)))
	assert.Equal(t, "volcano", r.deployment.Spec.Template.Spec.SchedulerName)
}

// Engines without pipeline stages cannot use devices TP leaves over.
func TestNoDeviceSitsIdle(t *testing.T) {
	assertErrors(t, serve.TGI("q", qwen).On(hardware.H100).Accelerators(2).TensorParallel(1),
		wantErr{field.ErrorTypeInvalid, "spec.tensorParallel", "must equal the devices of a replica, 2"})
	assertErrors(t, serve.MindIE("q", "pvc://m/q").On(hardware.Ascend910B3).Accelerators(2).TensorParallel(1),
		wantErr{field.ErrorTypeInvalid, "spec.tensorParallel", "must equal the devices of a replica, 2"})
	// vLLM puts them in pipeline stages.
	c := render(t, serve.VLLM("q", qwen).On(hardware.H100).Accelerators(2).TensorParallel(1)).main(t)
	assert.Equal(t, "2", flagValue(c.Args, "--pipeline-parallel-size"))
}

// vLLM-Ascend cannot load FP8 weights: DeepSeek-V3 on 910Bs is served from
// a W8A8 checkpoint with --quantization ascend.
func TestFP8WeightsOnAscend(t *testing.T) {
	assertErrors(t, serve.VLLM("ds", "deepseek-ai/DeepSeek-V3").On(hardware.Ascend910B3).Auto(),
		wantErr{field.ErrorTypeInvalid, "spec.model", `published in FP8, which vLLM-Ascend cannot load: serve a W8A8 checkpoint of it (such as ModelScope's vllm-ascend/DeepSeek-V3-W8A8) with Quantization("ascend")`})

	svc := serve.VLLM("ds", "modelscope://vllm-ascend/DeepSeek-V3-W8A8").On(hardware.Ascend910B3).
		ModelFacts(mustLookup("deepseek-ai/DeepSeek-V3")).Quantization("ascend").Auto(serve.ContextLength(8192))
	r := render(t, svc)
	require.NotNil(t, r.lws)
	leader := r.lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0]
	assert.Equal(t, "ascend", flagValue(leader.Args, "--quantization"))
	plan, err := serve.AutoPlan(svc)
	require.NoError(t, err)
	assert.Equal(t, "int8", string(plan.WeightDType))
	assert.Equal(t, 128, plan.BlockSize)
}

// vLLM-Ascend across nodes over Ray binds HCCL, Gloo and the TP group to
// the pod's interface and keeps Ray off ASCEND_RT_VISIBLE_DEVICES.
func TestVLLMAscendOverRay(t *testing.T) {
	r := render(t, serve.VLLM("q", "pvc://models/qwen-72b").On(hardware.Ascend910B3).Accelerators(8).Nodes(2))
	require.NotNil(t, r.lws)
	for _, tmpl := range []*corev1.PodTemplateSpec{r.lws.Spec.LeaderWorkerTemplate.LeaderTemplate, &r.lws.Spec.LeaderWorkerTemplate.WorkerTemplate} {
		c := tmpl.Spec.Containers[0]
		assert.Equal(t, serve.PodInterface, envValue(t, c, "GLOO_SOCKET_IFNAME"))
		assert.Equal(t, serve.PodInterface, envValue(t, c, "TP_SOCKET_IFNAME"))
		assert.Equal(t, serve.PodInterface, envValue(t, c, "HCCL_SOCKET_IFNAME"))
		assert.Equal(t, "1", envValue(t, c, "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES"))
	}
	// The caller's interface wins.
	r = render(t, serve.VLLM("q", "pvc://models/qwen-72b").On(hardware.Ascend910B3).Accelerators(8).Nodes(2).Env("GLOO_SOCKET_IFNAME", "net1"))
	assert.Equal(t, "net1", envValue(t, r.lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0], "GLOO_SOCKET_IFNAME"))
	// NVIDIA nodes need none of them.
	r = render(t, serve.VLLM("q", "pvc://models/qwen-72b").On(hardware.H100).Accelerators(8).Nodes(2))
	assert.False(t, hasEnv(r.lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0], "RAY_EXPERIMENTAL_NOSET_ASCEND_RT_VISIBLE_DEVICES"))
}

// Extra arguments are for the engine's server: a vLLM worker runs ray
// start, which would refuse them.
func TestVLLMWorkersTakeNoServerArguments(t *testing.T) {
	r := render(t, serve.VLLM("q", "pvc://models/qwen-72b").On(hardware.H100).Accelerators(8).Nodes(2).AddArgs("--max-num-seqs", "64"))
	leader := r.lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0]
	worker := r.lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0]
	assert.Equal(t, "64", flagValue(leader.Args, "--max-num-seqs"))
	assert.Equal(t, []string{"1800"}, worker.Args)
}

// ASCEND_VISIBLE_DEVICES from Volcano's allocation annotation only where
// Volcano schedules.
func TestAscendVisibleDevicesOnlyUnderVolcano(t *testing.T) {
	c := render(t, serve.VLLM("q", "pvc://m/q").On(hardware.Ascend910B3).Accelerators(2)).main(t)
	assert.False(t, hasEnv(c, "ASCEND_VISIBLE_DEVICES"))
	c = render(t, serve.VLLM("q", "pvc://m/q").On(hardware.Ascend910B3).Accelerators(2).Scheduler("volcano")).main(t)
	require.True(t, hasEnv(c, "ASCEND_VISIBLE_DEVICES"))
}

// A device count far beyond a node is reported, not rendered: MindIE's
// npuDeviceIds list once grew with it (the fuzzer ran out of memory).
func TestHugeDeviceCountsAreReportedCheaply(t *testing.T) {
	start := time.Now()
	_, err := serve.MindIE("q", "pvc://m/q").On(hardware.Ascend910B3).Accelerators(math.MaxInt32).Objects()
	require.ErrorContains(t, err, "a Ascend910B3 node holds 8")
	assert.Less(t, time.Since(start), 2*time.Second)
}

func TestHostileSettingsAreReported(t *testing.T) {
	assertErrors(t, serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).Port("metrics", 70000),
		wantErr{field.ErrorTypeInvalid, "spec.template.spec.containers[0].ports[0].containerPort", "between 1 and 65535"})

	bad := mustLookup(qwen)
	bad.Layers = -28
	bad.MoE.DenseLayers = -1
	assertErrors(t, serve.VLLM("q", "pvc://models/qwen").On(hardware.H100).Accelerators(1).ModelFacts(bad),
		wantErr{field.ErrorTypeInvalid, "spec.modelFacts", "num_hidden_layers: Invalid value: -28: must be positive"})
	_, err := serve.VLLM("q", "pvc://models/qwen").On(hardware.H100).Accelerators(1).ModelFacts(bad).Objects()
	assert.ErrorContains(t, err, "first_k_dense_replace: Invalid value: -1: must not be negative")
}

// S3 settings on a source that is not s3:// were dropped without a word:
// only the s3:// download reads them.
func TestS3SettingsNeedAnS3Source(t *testing.T) {
	assertErrors(t, serve.VLLM("q", "pvc://models/qwen").On(hardware.H100).Accelerators(1).S3Credentials(pod.SecretKeyRef{Name: "s3", Key: "AWS_ACCESS_KEY_ID"}, pod.SecretKeyRef{Name: "s3", Key: "AWS_SECRET_ACCESS_KEY"}),
		wantErr{field.ErrorTypeForbidden, "spec.s3Credentials", "applies to s3:// sources, not pvc://"})
	assertErrors(t, serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).S3Endpoint("http://minio:9000").S3Region("eu-west-1"),
		wantErr{field.ErrorTypeForbidden, "spec.s3Endpoint", "applies to s3:// sources, not hf://"},
		wantErr{field.ErrorTypeForbidden, "spec.s3Region", "applies to s3:// sources, not hf://"})
	c := render(t, serve.VLLM("q", "s3://bucket/qwen").On(hardware.H100).Accelerators(1).
		S3Credentials(pod.SecretKeyRef{Name: "s3", Key: "AWS_ACCESS_KEY_ID"}, pod.SecretKeyRef{Name: "s3", Key: "AWS_SECRET_ACCESS_KEY"}).S3Endpoint("http://minio:9000").S3Region("eu-west-1")).main(t)
	assert.Contains(t, c.Args, "/model-cache/s3/bucket/qwen")
}

// The hub mirror and the S3 endpoint land in the pods' environment in
// clear: a URL carrying a user or password is refused without quoting it,
// and one the clients cannot append paths to is refused with the reason.
func TestServerURLsCarryNoCredentials(t *testing.T) {
	const secret = "hunter2-s3cr3t"
	for name, tc := range map[string]struct {
		svc  *serve.Service
		want wantErr
	}{
		"hf user:password": {serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).HFEndpoint("https://me:" + secret + "@hf-mirror.com"),
			wantErr{field.ErrorTypeForbidden, "spec.hfEndpoint", "must not carry credentials"}},
		"hf token as user": {serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).HFEndpoint("https://" + secret + "@hf-mirror.com"),
			wantErr{field.ErrorTypeForbidden, "spec.hfEndpoint", "HFToken"}},
		"hf unparsable with @": {serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).HFEndpoint("https://me:" + secret + "@hf mirror.com"),
			wantErr{field.ErrorTypeInvalid, "spec.hfEndpoint", "not a URL"}},
		"hf query": {serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).HFEndpoint("https://hf-mirror.com/?token=x"),
			wantErr{field.ErrorTypeInvalid, "spec.hfEndpoint", "must not have a query or fragment"}},
		"hf no host": {serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).HFEndpoint("https:///models"),
			wantErr{field.ErrorTypeInvalid, "spec.hfEndpoint", "must name a host"}},
		"hf scheme": {serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).HFEndpoint("ftp://hf-mirror.com"),
			wantErr{field.ErrorTypeInvalid, "spec.hfEndpoint", "http(s) URL"}},
		"s3 user:password": {serve.VLLM("q", "s3://bucket/qwen").On(hardware.H100).Accelerators(1).S3Endpoint("http://AKIA:" + secret + "@minio:9000"),
			wantErr{field.ErrorTypeForbidden, "spec.s3Endpoint", "S3Credentials"}},
	} {
		t.Run(name, func(t *testing.T) {
			assertErrors(t, tc.svc, tc.want)
			_, err := tc.svc.Objects()
			assert.NotContains(t, err.Error(), secret)
		})
	}
	// A URL with credentials given to any other setting is refused for
	// what it is, and still not quoted back (found by FuzzService).
	for _, svc := range []*serve.Service{
		serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).Scheduler("https://me:" + secret + "@hf-mirror.com"),
		serve.Triton("t", "pvc://models/repo").On(hardware.L4).Accelerators(1).ModelControl("http://" + secret + "@minio:9000"),
	} {
		_, err := svc.Objects()
		require.Error(t, err)
		assert.NotContains(t, err.Error(), secret)
		assert.Contains(t, err.Error(), "xxxxx@")
	}
	c := render(t, serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).HFEndpoint("https://hf-mirror.com/")).main(t)
	assert.Equal(t, "https://hf-mirror.com/", envValue(t, c, "HF_ENDPOINT"))
}

// Values that were accepted and failed only inside the pod, or did
// nothing: a setting whose value starts with '-' (the engine's parser reads
// it as the next flag and finds the setting without a value), a KV-cache
// type vLLM's parser refuses, an empty dtype or S3 region (no flag or
// variable rendered: the call had no effect), and a keep-alive Ollama
// ignores for its 5-minute default.
func TestValuesTheEngineWouldRefuse(t *testing.T) {
	v := func() *serve.Service { return serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1) }
	for name, tc := range map[string]struct {
		svc  *serve.Service
		want wantErr
	}{
		"served name as a flag": {v().ServedModelName("--port"),
			wantErr{field.ErrorTypeInvalid, "spec.servedModelName", "not starting with '-'"}},
		"quantization as a flag": {v().Quantization("--enforce-eager"),
			wantErr{field.ErrorTypeInvalid, "spec.quantization", "method name"}},
		"revision as a flag": {serve.VLLM("q", qwen+"@--port").On(hardware.H100).Accelerators(1),
			wantErr{field.ErrorTypeInvalid, "spec.model", "not a valid branch, tag or commit"}},
		"vLLM kv type": {v().KVCacheDType("fp4"),
			wantErr{field.ErrorTypeNotSupported, "spec.kvCacheDType", `"fp8_e4m3"`}},
		"empty dtype": {v().DType(""),
			wantErr{field.ErrorTypeRequired, "spec.dtype", "bfloat16"}},
		"empty region": {serve.VLLM("q", "s3://bucket/qwen").On(hardware.H100).Accelerators(1).S3Region(""),
			wantErr{field.ErrorTypeInvalid, "spec.s3Region", "us-east-1"}},
		"region with a newline": {serve.VLLM("q", "s3://bucket/qwen").On(hardware.H100).Accelerators(1).S3Region("us\neast-1"),
			wantErr{field.ErrorTypeInvalid, "spec.s3Region", "us-east-1"}},
	} {
		t.Run(name, func(t *testing.T) { assertErrors(t, tc.svc, tc.want) })
	}
	// What the engines accept still renders.
	// KeepAlive renders what Ollama's envconfig.KeepAlive reads: a Go
	// duration, or -1 for forever.
	for keep, want := range map[time.Duration]string{
		-1: "-1", -time.Hour: "-1", 0: "0", 300 * time.Second: "5m", 90 * time.Minute: "1h30m",
		time.Hour: "1h", 90 * time.Second: "1m30s", 1500 * time.Millisecond: "1.5s",
	} {
		c := render(t, serve.Ollama("o", "qwen2.5:7b").On(hardware.L4).Accelerators(1).KeepAlive(keep)).main(t)
		assert.Equal(t, want, envValue(t, c, "OLLAMA_KEEP_ALIVE"), keep)
		// envconfig.KeepAlive: a Go duration, else whole seconds.
		if _, err := time.ParseDuration(want); err != nil {
			_, err = strconv.ParseInt(want, 10, 64)
			assert.NoError(t, err, "Ollama parses %q", want)
		}
	}
	for _, kv := range []string{"auto", "fp8", "fp8_e5m2", "bfloat16"} {
		render(t, v().KVCacheDType(kv))
	}
	render(t, serve.VLLM("q", "s3://bucket/qwen").On(hardware.H100).Accelerators(1).S3Region("cn-north-1"))
}

// A model whose weights overflow a byte count does not fit anything: the
// weights per device were once ⌈MaxInt64/2⌉ computed as (a+b-1)/b, which
// wrapped negative and left a huge KV cache, so Plan placed 9.2e18
// parameters on two H100s.
func TestPlanDoesNotOverflow(t *testing.T) {
	m := mustLookup(qwen)
	for _, params := range []int64{math.MaxInt64, math.MaxInt64 / 16, 1 << 60} {
		m.Parameters = params
		_, err := serve.Plan(m, hardware.H100)
		require.ErrorIs(t, err, serve.ErrDoesNotFit, "%d parameters", params)
		var fit *serve.FitError
		require.ErrorAs(t, err, &fit)
		assert.Positive(t, fit.NeedBytes, "%d parameters", params)
		_, err = serve.VLLM("q", "pvc://models/q").ModelFacts(m).On(hardware.H100).Auto().Objects()
		require.Error(t, err, "%d parameters", params)
	}
}
