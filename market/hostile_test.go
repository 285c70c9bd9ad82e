package market_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/models"
)

// secret is the password hostile URLs carry; no error may repeat it.
const secret = "wJalrXUtnFEMI-K7MDENG-bPxRfiCY"

// A URL with credentials (user:password@) is refused wherever the market
// takes one, with an error that names the field and does not repeat the
// password: it would be stored in the registry or rendered into a Job's
// spec, both readable by anyone who can read the namespace.
func TestCredentialsInURLsAreRefusedWithoutEchoingThem(t *testing.T) {
	uris := []string{
		"s3://AKIAIOSFODNN7EXAMPLE:" + secret + "@team-models/bot/v3",
		"pvc://user:" + secret + "@models/bot",
		"hf://user:" + secret + "@Qwen/Qwen2.5-7B",
		"modelscope://token:" + secret + "@ZhipuAI/glm-4",
	}
	for _, uri := range uris {
		v := sampleVersion("bot")
		v.Artifact.URI = uri
		err := v.Validate()
		if assert.Error(t, err, uri) {
			assert.ErrorContains(t, err, "artifact.uri", uri)
			assert.NotContains(t, err.Error(), secret, uri)
		}
	}

	v := sampleVersion("bot")
	v.Lineage.BaseModel = "s3://AKIA:" + secret + "@bucket/base"
	v.Lineage.Datasets = []string{"s3://AKIA:" + secret + "@bucket/data.jsonl"}
	err := v.Validate()
	require.Error(t, err)
	assert.ErrorContains(t, err, "lineage.baseModel")
	assert.ErrorContains(t, err, "lineage.datasets[0]")
	assert.NotContains(t, err.Error(), secret)

	v = sampleVersion("bot")
	v.Artifact.URI = uris[0]
	_, err = market.NewRegistry(newFileStore(t)).Register(t.Context(), v)
	require.Error(t, err, "the registry stores no credentials")
	assert.NotContains(t, err.Error(), secret)

	for _, build := range []func() error{
		func() error {
			_, err := market.Download("x", "hf://Qwen/Qwen2.5-7B", "models").HFEndpoint("https://user:" + secret + "@hf-mirror.com").Build()
			return err
		},
		func() error {
			_, err := market.Download("x", "hf://Qwen/Qwen2.5-7B", "models").HFEndpoint("ftp://user:" + secret + "@hf-mirror.com").Build()
			return err
		},
		func() error {
			_, err := market.Download("x", "s3://bucket/p", "models").S3Endpoint("http://minio:" + secret + "@minio.storage:9000").Build()
			return err
		},
		func() error {
			_, err := market.Download("x", "modelscope://a/b", "models").ModelScopeEndpoint("https://u:" + secret + "@www.modelscope.ai").Build()
			return err
		},
		func() error {
			_, err := market.Download("x", "s3://AKIA:"+secret+"@bucket/p", "models").Build()
			return err
		},
		func() error {
			_, err := market.Evaluate("e", registered("pvc://models/bot"), "mmlu").Endpoint("http://u:"+secret+"@bot-api:8000", "bot").Build()
			return err
		},
	} {
		err := build()
		if assert.Error(t, err) {
			assert.ErrorContains(t, err, "credentials")
			assert.NotContains(t, err.Error(), secret)
		}
	}
}

// Paths that climb out of where they point are refused, not kept in the
// registry or cleaned into another path.
func TestPathTraversalIsRefused(t *testing.T) {
	for _, uri := range []string{"pvc://models/../../etc", "pvc://models/bot/../../../etc/passwd", "s3://bucket/../other", "hf://../..", "hf://Qwen/..@main", "pvc://models/./bot"} {
		v := sampleVersion("bot")
		v.Artifact.URI = uri
		assert.ErrorContains(t, v.Validate(), "artifact.uri", uri)
	}
	_, err := market.Evaluate("e", registered("pvc://models/../../etc"), "mmlu").On(hardware.H100).Accelerators(1).Build()
	assert.ErrorContains(t, err, "spec.version.artifact.uri", "the pod would mount the claim and read outside /models")

	_, err = market.Download("x", "hf://Qwen/Qwen2.5-7B", "models").Into("../../etc").Build()
	assert.ErrorContains(t, err, "spec.into", "a directory that climbs out of the claim is refused, not cleaned into another")
	_, err = market.Download("x", "hf://Qwen/Qwen2.5-7B", "models").Into("/abs/dir").Build()
	assert.ErrorContains(t, err, "spec.into")
	_, err = market.Download("x", "s3://bucket/a/../../b", "models").Build()
	assert.ErrorContains(t, err, "spec.source")

	_, err = market.Download("x", "hf://Qwen/Qwen2.5-7B", "models").Include("../../*.json", "/etc/*").Exclude("a/../../b").Build()
	require.Error(t, err)
	for _, want := range []string{"spec.include[0]", "spec.include[1]", "spec.exclude[0]"} {
		assert.ErrorContains(t, err, want)
	}
}

// Times at the zero value's neighbourhood or far in the future are refused
// rather than stored: a version "created" in 9999 would stay the newest of
// its stage forever (Resolve orders by when a version entered it).
func TestImpossibleTimesAreRefused(t *testing.T) {
	reg := market.NewRegistry(newFileStore(t))

	for _, created := range []time.Time{
		time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Now().Add(48 * time.Hour),
		time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC),
	} {
		v := sampleVersion("bot")
		v.Created = created
		_, err := reg.Register(t.Context(), v)
		assert.ErrorContains(t, err, "created", created.String())
	}

	v := sampleVersion("bot")
	v.History = []market.StageChange{{From: market.StageNone, To: market.StageProduction}}
	_, err := reg.Register(t.Context(), v)
	assert.ErrorContains(t, err, "history[0].at", "a stage change at the zero time")

	v = sampleVersion("bot")
	v.History = []market.StageChange{{From: market.StageNone, To: market.StageProduction, At: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}}
	_, err = reg.Register(t.Context(), v)
	assert.ErrorContains(t, err, "history[0].at")

	// Nor through an update.
	stored, err := reg.Register(t.Context(), sampleVersion("bot"))
	require.NoError(t, err)
	_, err = reg.Change(t.Context(), stored.Ref(), func(v *market.Version) error {
		v.History = append(v.History, market.StageChange{From: market.StageNone, To: market.StageProduction, At: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)})
		v.Stage = market.StageProduction
		return nil
	})
	assert.ErrorContains(t, err, "history[0].at")
}

// Values the harness or the tools would misread inside the pod are refused
// when the Job is built.
func TestValuesThePodWouldMisreadAreRefused(t *testing.T) {
	for _, size := range []string{"auto:abc", "auto:0", "auto:-1", "auto:"} {
		_, err := market.Evaluate("e", registered("pvc://models/bot"), "mmlu").On(hardware.H100).Accelerators(1).BatchSize(size).Build()
		assert.ErrorContains(t, err, "spec.batchSize", size)
	}
	// lm_eval/evaluator_utils.py takes int(limit) from 1 up: 1.5 would run 1.
	_, err := market.Evaluate("e", registered("pvc://models/bot"), "mmlu").On(hardware.H100).Accelerators(1).Limit(1.5).Build()
	assert.ErrorContains(t, err, "spec.limit")
	_, err = market.Evaluate("e", registered("pvc://models/bot"), "mmlu").On(hardware.H100).Accelerators(1).Limit(0.25).Build()
	assert.NoError(t, err, "a fraction below 1 is a share of each task")

	for _, url := range []string{"https://", "http:///v1", "https://:443"} {
		_, err := market.Download("x", "hf://Qwen/Qwen2.5-7B", "models").HFEndpoint(url).Build()
		assert.ErrorContains(t, err, "spec.hfEndpoint", url)
		_, err = market.Download("x", "s3://bucket/p", "models").S3Endpoint(url).Build()
		assert.ErrorContains(t, err, "spec.s3Endpoint", url)
		_, err = market.Evaluate("e", registered("pvc://models/bot"), "mmlu").Endpoint(url, "bot").Build()
		assert.ErrorContains(t, err, "spec.endpoint", url)
	}
	for _, region := range []string{"", "us east 1", "us-east-1;rm", "US_EAST"} {
		_, err := market.Download("x", "s3://bucket/p", "models").S3Region(region).Build()
		assert.ErrorContains(t, err, "spec.s3Region", region)
	}
	_, err = market.Download("x", "s3://bucket/p", "models").S3Region("cn-north-1").Build()
	assert.NoError(t, err)
}

// A misspelt artifact format or stage in the history is refused: "LoRA"
// would be served as full weights (serve.FromMarket and Get branch on
// FormatLoRA), and a history naming no stage cannot be read back.
func TestUnknownFormatsAndStagesAreRefused(t *testing.T) {
	for _, format := range []string{"LoRA", "safetensor", "adapter"} {
		v := sampleVersion("bot")
		v.Artifact.Format = format
		assert.ErrorContains(t, v.Validate(), "artifact.format", format)
	}
	for _, format := range []string{"", "safetensors", "gguf", "pytorch", "onnx", market.FormatLoRA} {
		v := sampleVersion("bot")
		v.Artifact.Format = format
		assert.NoError(t, v.Validate(), format)
	}
	_, err := market.Download("x", "hf://a/b", "models").Register("bot", "Safetensors", models.BF16).Build()
	assert.ErrorContains(t, err, "spec.register.format")

	v := sampleVersion("bot")
	v.History = []market.StageChange{{From: "dev", To: "prod", At: time.Now().Add(-time.Hour)}}
	err = v.Validate()
	assert.ErrorContains(t, err, "history[0].from")
	assert.ErrorContains(t, err, "history[0].to")
}

// lm_eval splits --model_args at ',' (lm_eval/_cli/utils.py
// key_val_to_dict): a comma in the weights' path or revision would set
// another model argument, such as trust_remote_code.
func TestModelArgumentsCannotBeInjected(t *testing.T) {
	for _, uri := range []string{"hf://acme/bot@v3,trust_remote_code=True", "pvc://models/bot,trust_remote_code=True"} {
		_, err := market.Evaluate("e", registered(uri), "mmlu").On(hardware.H100).Accelerators(1).Build()
		assert.ErrorContains(t, err, "spec.version.artifact.uri", uri)
		_, err = market.Evaluate("e", registered(uri), "mmlu").Endpoint("http://bot-api:8000", "bot").Build()
		assert.ErrorContains(t, err, "spec.version.artifact.uri", uri)
	}
}

// A download directory the registry would refuse as an artifact URI is
// refused when the Job is built, not after the download has run.
func TestDownloadTargetsTheRegistryRefusesAreRefusedFirst(t *testing.T) {
	for _, into := range []string{"a b", "a\nb", "it's", "a$b"} {
		_, err := market.Download("x", "hf://Qwen/Qwen2.5-7B", "models").Into(into).Build()
		assert.ErrorContains(t, err, "spec.into", into)
	}
}

// NaN and infinite scores are refused wherever a score enters: recorded
// metrics, a version's metrics, search bounds, an evaluation's limit; the
// results reader drops them.
func TestNonFiniteScoresAreRefused(t *testing.T) {
	reg := market.NewRegistry(newFileStore(t))
	stored, err := reg.Register(t.Context(), sampleVersion("bot"))
	require.NoError(t, err)
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := reg.RecordMetrics(t.Context(), stored.Ref(), map[string]float64{"mmlu/acc": bad})
		assert.ErrorContains(t, err, "metrics[mmlu/acc]")
		v := sampleVersion("bot")
		v.Metrics = map[string]float64{"mmlu/acc": bad}
		assert.ErrorContains(t, v.Validate(), "metrics[mmlu/acc]")
		_, err = reg.Search(t.Context(), market.Query{MinMetrics: map[string]float64{"mmlu/acc": bad}})
		assert.ErrorContains(t, err, "minMetrics[mmlu/acc]")
		_, err = market.Evaluate("e", registered("pvc://models/bot"), "mmlu").On(hardware.H100).Accelerators(1).Limit(bad).Build()
		assert.ErrorContains(t, err, "spec.limit")
	}
	got, err := market.ParseLMEvalResults([]byte(`{"results":{"mmlu":{"acc,none":NaN}}}`))
	assert.Error(t, err, "NaN is not JSON")
	assert.Empty(t, got)
}
