package market_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/pod"
)

// finishJob plays the Job controller and the kubelet, which the test API
// server does not run: it marks the Job complete and adds a succeeded pod
// of it whose container reports message. The test cluster would run the
// pod for real, but it cannot reach Hugging Face, ModelScope or S3.
func finishJob(t *testing.T, env *testenv.Env, ns, name, container, message string) {
	t.Helper()
	ctx := t.Context()
	job := &batchv1.Job{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job))
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	job.Status = batchv1.JobStatus{
		StartTime: &now, CompletionTime: &now, Succeeded: 1,
		Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
	}
	require.NoError(t, env.Client.Status().Update(ctx, job))

	tmpl := job.Spec.Template
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-abcde", Namespace: ns, Labels: map[string]string{batchv1.JobNameLabel: name}},
		Spec:       tmpl.Spec,
	}
	require.NoError(t, env.Client.Create(ctx, p))
	p.Status = corev1.PodStatus{
		Phase: corev1.PodSucceeded,
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: container, Image: tmpl.Spec.Containers[0].Image, ImageID: "sha256:" + sha64,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", Message: message, StartedAt: now, FinishedAt: now,
			}},
		}},
	}
	require.NoError(t, env.Client.Status().Update(ctx, p))
}

// TestDownloadAppliesAndRegisters applies download Jobs for the three
// sources with strict field validation, then registers one once it has
// "succeeded", twice, getting one version.
func TestDownloadAppliesAndRegisters(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	cl := cube.NewFromClient(env.Client, cube.Namespace(ns))
	for _, d := range []*market.DownloadJob{
		market.Download("qwen", "hf://Qwen/Qwen2.5-7B-Instruct@a09a35458c702b33eeacc393d103063234e8bc28", "models").
			HFToken(pod.SecretKeyRef{Name: "hf", Key: "token"}).HFEndpoint("https://hf-mirror.com").Include("*.safetensors"),
		market.Download("glm", "modelscope://ZhipuAI/glm-4-9b-chat", "models").ModelScopeToken(pod.SecretKeyRef{Name: "ms", Key: "token"}),
		market.Download("bot", "s3://team/bot", "models").S3Credentials(pod.SecretKeyRef{Name: "minio", Key: "AWS_ACCESS_KEY_ID"}, pod.SecretKeyRef{Name: "minio", Key: "AWS_SECRET_ACCESS_KEY"}).S3Endpoint("http://minio:9000"),
	} {
		_, err := cl.Apply(ctx, d.Namespace(ns))
		require.NoError(t, err, podspec.Of(&d.Handle).Name())
	}

	store, err := market.NewKubernetesStore(env.Client, ns)
	require.NoError(t, err)
	reg := market.NewRegistry(store)
	d := market.Download("qwen", "hf://Qwen/Qwen2.5-7B-Instruct@a09a35458c702b33eeacc393d103063234e8bc28", "models").
		HFToken(pod.SecretKeyRef{Name: "hf", Key: "token"}).HFEndpoint("https://hf-mirror.com").Include("*.safetensors").
		Namespace(ns).Register("qwen2-5-7b-instruct", "safetensors", models.BF16)
	_, err = market.RegisterDownload(ctx, env.Client, reg, d)
	require.ErrorIs(t, err, market.ErrNotFinished)

	finishJob(t, env, ns, "qwen", "download", `{"bytes":15231233024,"checksum":"sha256:`+sha64+`"}`)
	v, err := market.RegisterDownload(ctx, env.Client, reg, d)
	require.NoError(t, err)
	assert.Equal(t, "qwen2-5-7b-instruct@1", v.Ref())
	assert.Equal(t, market.Artifact{
		URI: "pvc://models/Qwen/Qwen2.5-7B-Instruct", Format: "safetensors", DType: models.BF16,
		SizeBytes: 15231233024, Checksum: "sha256:" + sha64,
	}, v.Artifact)
	assert.Equal(t, "hf://Qwen/Qwen2.5-7B-Instruct@a09a35458c702b33eeacc393d103063234e8bc28", v.Lineage.BaseModel)

	again, err := market.RegisterDownload(ctx, env.Client, reg, d)
	require.NoError(t, err)
	assert.Equal(t, v.Ref(), again.Ref(), "a second call finds the version it registered")
	all, err := reg.Versions(ctx, "qwen2-5-7b-instruct")
	require.NoError(t, err)
	assert.Len(t, all, 1)
}

// Argument dictionaries for generated FuzzDownloadBuild inputs: valid
// values first (the generator favours them), then hostile ones.
var (
	corpusNames   = []string{"qwen", "glm-4", "x", "", "Bad_Name", strings.Repeat("a", 60), "-x"}
	corpusSources = []string{"hf://Qwen/Qwen2.5-7B-Instruct", "modelscope://ZhipuAI/glm-4-9b-chat", "s3://bucket/a/b", "hf://org/m@main", "hf://", "s3://bucket", "ftp://x", "", "pvc://models/x", "hf://a/b/c", "modelscope://0/"}
	corpusClaims  = []string{"models", "m", "", "Bad Claim", strings.Repeat("c", 300)}
	corpusInto    = []string{"", "sub/dir", "Qwen", "../../etc", "/abs", "a b", "../..0/0"}
	corpusRevs    = []string{"", "main", "a09a35458c702b33eeacc393d103063234e8bc28", "-rf", "v1.0", "with space"}
	corpusPattern = []string{"", "*.json", "*.safetensors", "--all", "a\nb", "-"}
)

// downloadCorpus is FuzzDownloadBuild's seeds, the inputs go test -fuzz
// saved, and n inputs drawn from the dictionaries with a fixed seed.
func downloadCorpus(t *testing.T, n int) []downloadInput {
	corpus := append([]downloadInput{}, downloadSeeds...)
	for _, v := range fuzzcorpus.Saved(t, "FuzzDownloadBuild") {
		var s [6]string
		for i := range s {
			s[i] = v[i].(string)
		}
		corpus = append(corpus, downloadInput{s[0], s[1], s[2], s[3], s[4], s[5]})
	}
	for _, b := range fuzzcorpus.Programs(11, n, 6, 6) {
		pick := func(i int, values []string) string { return values[int(b[i])%len(values)] }
		corpus = append(corpus, downloadInput{pick(0, corpusNames), pick(1, corpusSources), pick(2, corpusClaims),
			pick(3, corpusInto), pick(4, corpusRevs), pick(5, corpusPattern)})
	}
	return corpus
}

// TestFuzzCorpusApplies applies every download Job of the FuzzDownloadBuild
// corpus that Build accepts to the API server (strict field validation)
// and checks it is stored as rendered: what cube accepts, the server
// accepts.
func TestFuzzCorpusApplies(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns))
	fuzzcorpus.StoredAll(t, c, env, ns, downloadCorpus(t, 400), 60,
		func(in downloadInput) cube.Workload { return in.job() }, nil)
}

// TestEvaluationAppliesAndRecords applies evaluation Jobs (an endpoint, and
// local weights on NVIDIA and Ascend) with strict field validation, then
// writes a "succeeded" Job's scores back to the version. The harness itself
// does not run here: the test API server runs no pods, and the test
// cluster cannot fetch benchmark datasets; finishJob stands in for it.
func TestEvaluationAppliesAndRecords(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	store, err := market.NewKubernetesStore(env.Client, ns)
	require.NoError(t, err)
	reg := market.NewRegistry(store)
	v, err := reg.Register(ctx, sampleVersion("support-bot"))
	require.NoError(t, err)

	cl := cube.NewFromClient(env.Client, cube.Namespace(ns))
	for _, e := range []*market.EvaluationJob{
		market.Evaluate("eval-gpu", v, "mmlu").On(hardware.H100).Accelerators(1),
		market.Evaluate("eval-npu", v, "ceval-valid").On(hardware.Ascend910B3).Accelerators(1),
	} {
		_, err := cl.Apply(ctx, e.Namespace(ns))
		require.NoError(t, err, podspec.Of(&e.Handle).Name())
	}
	e := market.Evaluate("eval-bot", v, "mmlu", "gsm8k").Endpoint("http://support-bot-api:8000/v1", "support-bot").Namespace(ns)
	_, err = cl.Apply(ctx, e)
	require.NoError(t, err)
	_, err = market.RecordEvaluation(ctx, env.Client, reg, e)
	require.ErrorIs(t, err, market.ErrNotFinished)

	finishJob(t, env, ns, "eval-bot", "evaluate",
		`{"results":{"gsm8k":{"exact_match,strict-match":0.82},"mmlu":{"acc,none":0.7183,"acc_stderr,none":0.0036}},"dropped":0}`)
	got, err := market.RecordEvaluation(ctx, env.Client, reg, e)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{"mmlu/acc": 0.7183, "gsm8k/exact_match/strict-match": 0.82}, got.Metrics)
	stored, err := reg.Get(ctx, "support-bot@1")
	require.NoError(t, err)
	assert.Equal(t, got.Metrics, stored.Metrics)
}

// TestKubernetesStoreConformance runs the store suite against ConfigMaps
// on a real kube-apiserver and etcd (internal/testsupport/testenv): the API server's
// resourceVersion is the compare-and-swap, AlreadyExists the number lock.
func TestKubernetesStoreConformance(t *testing.T) {
	env := testenv.Get(t)
	testStoreConformance(t, func(t *testing.T) market.Store {
		s, err := market.NewKubernetesStore(env.Client, env.Namespace(t))
		require.NoError(t, err)
		return s
	})
}

// TestKubernetesStoreObjects checks what the API server holds for a
// version: one labelled ConfigMap, tags and stage as labels, and a version
// too large for one object refused before it is sent.
func TestKubernetesStoreObjects(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	s, err := market.NewKubernetesStore(env.Client, ns)
	require.NoError(t, err)
	reg := market.NewRegistry(s)
	_, err = reg.Register(ctx, sampleVersion("support-bot"))
	require.NoError(t, err)
	_, err = reg.Tag(ctx, "support-bot@1", "lora")
	require.NoError(t, err)
	_, err = reg.Promote(ctx, "support-bot@1", market.StageStaging, market.Promotion{By: "ci"})
	require.NoError(t, err)

	cm := &corev1.ConfigMap{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "support-bot-v1"}, cm))
	assert.Equal(t, map[string]string{
		cube.LabelName: "support-bot", cube.LabelManagedBy: "cube", cube.LabelPartOf: "market",
		cube.LabelKind: "modelversion", cube.LabelRelease: "support-bot",
		market.LabelModel: "support-bot", market.LabelVersion: "1", market.LabelStage: "staging",
		market.LabelTagPrefix + "lora": "true",
	}, cm.Labels)
	assert.Contains(t, cm.Data["version.json"], `"uri":"pvc://models/support-bot"`)

	big := sampleVersion("support-bot")
	big.Description = strings.Repeat("x", market.MaxObjectBytes)
	_, err = reg.Register(ctx, big)
	assert.ErrorIs(t, err, market.ErrTooLarge)
}
