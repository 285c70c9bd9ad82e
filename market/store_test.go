package market_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/models"
)

// storeFactory returns a fresh, empty store.
type storeFactory func(t *testing.T) market.Store

func newFileStore(t *testing.T) market.Store {
	s, err := market.OpenFileStore(filepath.Join(t.TempDir(), "registry.db"))
	require.NoError(t, err)
	return s
}

func sampleVersion(model string) market.Version {
	return market.Version{
		Model: model,
		Artifact: market.Artifact{
			URI: "pvc://models/" + model, Format: "safetensors", DType: models.BF16,
			SizeBytes: 15 << 30, Checksum: "sha256:" + fmt.Sprintf("%064x", 42),
		},
		Lineage: market.Lineage{
			BaseModel: "Qwen/Qwen2.5-7B-Instruct", Datasets: []string{"pvc://data/support.jsonl"},
			TrainingRelease: "sft-support", TrainingJob: "PyTorchJob/sft-support",
			Hyperparameters: map[string]string{"learning_rate": "2e-5", "lora_rank": "16"},
		},
		Description: "support bot",
	}
}

// testStoreConformance is the suite every Store passes: the file store
// here, the Kubernetes store on the test API server
// (kubestore_apiserver_test.go).
func testStoreConformance(t *testing.T, newStore storeFactory) {
	t.Run("create assigns numbers and keeps what it was given", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		for want := 1; want <= 3; want++ {
			v, err := s.Create(ctx, sampleVersion("support-bot"))
			require.NoError(t, err)
			assert.Equal(t, want, v.Number)
			assert.Equal(t, market.StageNone, v.Stage)
			assert.NotEmpty(t, v.Revision)
			assert.False(t, v.Created.IsZero())
		}
		other, err := s.Create(ctx, sampleVersion("support-bot-x"))
		require.NoError(t, err)
		assert.Equal(t, 1, other.Number, "a model whose name extends another's counts on its own")
		v, err := s.Create(ctx, sampleVersion("support-bot"))
		require.NoError(t, err)
		assert.Equal(t, 4, v.Number)

		got, err := s.Get(ctx, "support-bot", 2)
		require.NoError(t, err)
		want := sampleVersion("support-bot")
		assert.Equal(t, want.Artifact, got.Artifact)
		assert.Equal(t, want.Lineage, got.Lineage)
		assert.Equal(t, "support bot", got.Description)
		assert.Equal(t, time.UTC, got.Created.Location())
	})

	t.Run("get of a missing version is ErrNotFound", func(t *testing.T) {
		s := newStore(t)
		_, err := s.Get(t.Context(), "nothing", 1)
		assert.ErrorIs(t, err, market.ErrNotFound)
		_, err = s.Update(t.Context(), market.Version{Model: "nothing", Number: 1, Artifact: market.Artifact{URI: "pvc://a/b"}, Stage: market.StageNone})
		assert.ErrorIs(t, err, market.ErrNotFound)
	})

	t.Run("update compares and swaps on revision", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		v, err := s.Create(ctx, sampleVersion("bot"))
		require.NoError(t, err)
		first := v.Clone()
		v.Metrics = map[string]float64{"mmlu/acc": 0.61}
		v.Tags = []string{"lora"}
		v.Stage = market.StageStaging
		updated, err := s.Update(ctx, v)
		require.NoError(t, err)
		assert.NotEqual(t, first.Revision, updated.Revision)
		assert.Equal(t, 0.61, updated.Metrics["mmlu/acc"])

		first.Metrics = map[string]float64{"gsm8k/exact_match": 0.5}
		_, err = s.Update(ctx, first)
		require.ErrorIs(t, err, market.ErrConflict, "a write from a stale read must fail")

		got, err := s.Get(ctx, "bot", 1)
		require.NoError(t, err)
		assert.Equal(t, map[string]float64{"mmlu/acc": 0.61}, got.Metrics, "the stale write changed nothing")
		assert.Equal(t, []string{"lora"}, got.Tags)
		assert.Equal(t, market.StageStaging, got.Stage)
		assert.Equal(t, updated.Revision, got.Revision)
	})

	t.Run("registered versions are immutable", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		v, err := s.Create(ctx, sampleVersion("bot"))
		require.NoError(t, err)
		changed := v.Clone()
		changed.Artifact.URI = "pvc://models/other"
		changed.Lineage.Hyperparameters["lora_rank"] = "64"
		_, err = s.Update(ctx, changed)
		require.ErrorIs(t, err, market.ErrImmutable)
		assert.ErrorContains(t, err, "artifact")
		assert.ErrorContains(t, err, "lineage")
	})

	t.Run("invalid versions are refused with every field named", func(t *testing.T) {
		s := newStore(t)
		_, err := s.Create(t.Context(), market.Version{
			Model:    "Bad_Name",
			Artifact: market.Artifact{URI: "ftp://x", DType: "fp12", Checksum: "md5:1"},
			Tags:     []string{"a/b", "ok", "ok"},
			Metrics:  map[string]float64{"": 1},
		})
		require.Error(t, err)
		for _, want := range []string{"model", "artifact.uri", "artifact.dtype", "artifact.checksum", "tags[0]", "tags[2]", "metrics[]"} {
			assert.ErrorContains(t, err, want)
		}
		vs, err := s.List(t.Context(), market.Filter{})
		require.NoError(t, err)
		assert.Empty(t, vs)
	})

	t.Run("list filters by model, stage and tag", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		for _, m := range []string{"b", "a", "b", "a-b"} {
			_, err := s.Create(ctx, sampleVersion(m))
			require.NoError(t, err)
		}
		v, err := s.Get(ctx, "b", 2)
		require.NoError(t, err)
		v.Stage, v.Tags = market.StageProduction, []string{"gold"}
		_, err = s.Update(ctx, v)
		require.NoError(t, err)

		all, err := s.List(ctx, market.Filter{})
		require.NoError(t, err)
		assert.Equal(t, []string{"a@1", "a-b@1", "b@1", "b@2"}, refs(all))
		bs, err := s.List(ctx, market.Filter{Model: "b"})
		require.NoError(t, err)
		assert.Equal(t, []string{"b@1", "b@2"}, refs(bs))
		prod, err := s.List(ctx, market.Filter{Stage: market.StageProduction})
		require.NoError(t, err)
		assert.Equal(t, []string{"b@2"}, refs(prod))
		gold, err := s.List(ctx, market.Filter{Tag: "gold", Model: "b"})
		require.NoError(t, err)
		assert.Equal(t, []string{"b@2"}, refs(gold))
		_, err = s.List(ctx, market.Filter{Stage: "live"})
		assert.ErrorContains(t, err, "stage")
	})

	t.Run("results are copies", func(t *testing.T) {
		s := newStore(t)
		ctx := t.Context()
		v, err := s.Create(ctx, sampleVersion("bot"))
		require.NoError(t, err)
		v.Lineage.Datasets[0] = "changed"
		v.Lineage.Hyperparameters["lora_rank"] = "1"
		got, err := s.Get(ctx, "bot", 1)
		require.NoError(t, err)
		assert.Equal(t, sampleVersion("bot").Lineage, got.Lineage)
	})

	t.Run("concurrent registrations get distinct numbers", func(t *testing.T) {
		s := newStore(t)
		const writers = 12
		numbers := make(chan int, writers)
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				v, err := s.Create(t.Context(), sampleVersion("bot"))
				if assert.NoError(t, err) {
					numbers <- v.Number
				}
			})
		}
		wg.Wait()
		close(numbers)
		seen := map[int]bool{}
		for n := range numbers {
			assert.False(t, seen[n], "number %d given twice", n)
			seen[n] = true
		}
		for n := 1; n <= writers; n++ {
			assert.True(t, seen[n], "number %d missing", n)
		}
	})

	t.Run("concurrent writers of one version lose nothing", func(t *testing.T) {
		s := newStore(t)
		reg := market.NewRegistry(s)
		ctx := t.Context()
		_, err := reg.Register(ctx, sampleVersion("bot"))
		require.NoError(t, err)
		const writers = 8
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				_, err := reg.RecordMetrics(ctx, "bot@1", map[string]float64{fmt.Sprintf("task%d/acc", i): float64(i) / 10})
				assert.NoError(t, err)
				_, err = reg.Tag(ctx, "bot@1", fmt.Sprintf("writer-%d", i))
				assert.NoError(t, err)
			})
		}
		wg.Wait()
		got, err := reg.Get(ctx, "bot@1")
		require.NoError(t, err)
		assert.Len(t, got.Metrics, writers, "every writer's metric survived: %v", got.Metrics)
		assert.Len(t, got.Tags, writers)
	})

	t.Run("registry stages, references and search", func(t *testing.T) {
		testRegistryJourney(t, market.NewRegistry(newStore(t)))
	})
}

func testRegistryJourney(t *testing.T, reg *market.Registry) {
	ctx := t.Context()
	for range 3 {
		_, err := reg.Register(ctx, sampleVersion("support-bot"))
		require.NoError(t, err)
	}
	_, err := reg.Register(ctx, sampleVersion("summarizer"))
	require.NoError(t, err)

	latest, err := reg.Get(ctx, "support-bot")
	require.NoError(t, err)
	assert.Equal(t, 3, latest.Number)
	_, err = reg.Get(ctx, "support-bot@production")
	assert.ErrorIs(t, err, market.ErrNotFound)

	_, err = reg.RecordMetrics(ctx, "support-bot@2", map[string]float64{"mmlu/acc": 0.70, "gsm8k/exact_match": 0.55})
	require.NoError(t, err)
	_, err = reg.RecordMetrics(ctx, "support-bot@3", map[string]float64{"mmlu/acc": 0.74})
	require.NoError(t, err)
	_, err = reg.Tag(ctx, "support-bot@3", "lora", "candidate")
	require.NoError(t, err)

	moved, err := reg.Promote(ctx, "support-bot@2", market.StageProduction, market.Promotion{By: "alice", Reason: "passed review"})
	require.NoError(t, err)
	require.Len(t, moved, 1)
	assert.Equal(t, market.StageProduction, moved[0].Stage)

	moved, err = reg.Promote(ctx, "support-bot@3", market.StageProduction, market.Promotion{By: "bob"})
	require.NoError(t, err)
	assert.Equal(t, []string{"support-bot@3", "support-bot@2"}, refs(moved))
	prod, err := reg.Get(ctx, "support-bot@production")
	require.NoError(t, err)
	assert.Equal(t, 3, prod.Number)
	old, err := reg.Get(ctx, "support-bot@2")
	require.NoError(t, err)
	assert.Equal(t, market.StageArchived, old.Stage)
	require.Len(t, old.History, 2)
	assert.Equal(t, market.StageChange{From: market.StageNone, To: market.StageProduction, At: old.History[0].At, By: "alice", Reason: "passed review"}, old.History[0])
	assert.Equal(t, market.StageProduction, old.History[1].From)
	assert.Equal(t, "replaced in production by support-bot@3", old.History[1].Reason)

	// Roll back: version 2 again; it is what @production names now.
	_, err = reg.Promote(ctx, "support-bot@2", market.StageProduction, market.Promotion{By: "alice", Reason: "rollback"})
	require.NoError(t, err)
	prod, err = reg.Get(ctx, "support-bot@production")
	require.NoError(t, err)
	assert.Equal(t, 2, prod.Number)

	found, err := reg.Search(ctx, market.Query{Name: "SUPPORT", MinMetrics: map[string]float64{"mmlu/acc": 0.7}, OrderBy: "mmlu/acc"})
	require.NoError(t, err)
	assert.Equal(t, []string{"support-bot@3", "support-bot@2"}, refs(found))
	found, err = reg.Search(ctx, market.Query{Tags: []string{"lora", "candidate"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"support-bot@3"}, refs(found))
	found, err = reg.Search(ctx, market.Query{Stage: market.StageProduction})
	require.NoError(t, err)
	assert.Equal(t, []string{"support-bot@2"}, refs(found))
	found, err = reg.Search(ctx, market.Query{OrderBy: "mmlu/acc", Limit: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"support-bot@3"}, refs(found))
	// A misspelt metric would leave the results unordered: refused.
	_, err = reg.Search(ctx, market.Query{OrderBy: "mmlu/accuracy"})
	assert.ErrorContains(t, err, `search: orderBy: Invalid value: "mmlu/accuracy": none of the`)
	_, err = reg.Search(ctx, market.Query{OrderBy: " mmlu/acc"})
	assert.ErrorContains(t, err, "orderBy")
	found, err = reg.Search(ctx, market.Query{Model: "no-such-model", OrderBy: "mmlu/accuracy"})
	require.NoError(t, err, "nothing matched: nothing to order")
	assert.Empty(t, found)
	_, err = reg.Search(ctx, market.Query{Stage: "live", Limit: -1, Tags: []string{"a/b"}})
	require.Error(t, err)
	for _, want := range []string{"stage", "limit", "tags[0]"} {
		assert.ErrorContains(t, err, want)
	}
}

func refs(vs []market.Version) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Ref()
	}
	return out
}

func TestFileStoreConformance(t *testing.T) { testStoreConformance(t, newFileStore) }

func TestZeroValuesReturnErrors(t *testing.T) {
	ctx := context.Background()
	var reg *market.Registry
	_, err := reg.Get(ctx, "bot")
	assert.ErrorContains(t, err, "no store")
	_, err = (&market.Registry{}).Register(ctx, sampleVersion("bot"))
	assert.ErrorContains(t, err, "no store")
	_, err = market.NewRegistry((*market.FileStore)(nil)).Search(ctx, market.Query{})
	assert.ErrorContains(t, err, "no store")
	var fs *market.FileStore
	_, err = fs.Create(ctx, sampleVersion("bot"))
	assert.ErrorContains(t, err, "not open")
	_, err = (&market.FileStore{}).List(ctx, market.Filter{})
	assert.ErrorContains(t, err, "not open")
	var ks *market.KubernetesStore
	_, err = ks.Get(ctx, "bot", 1)
	assert.ErrorContains(t, err, "not set up")
	_, err = market.NewKubernetesStore(nil, "")
	assert.ErrorContains(t, err, "client")
	assert.ErrorContains(t, err, "namespace")
	_, err = market.OpenFileStore("")
	assert.ErrorContains(t, err, "path")
	_, err = market.NewRegistry(newFileStore(t)).Change(ctx, "bot", nil)
	assert.ErrorContains(t, err, "nil")
}

func TestParseReference(t *testing.T) {
	for in, want := range map[string]market.Reference{
		"bot":            {Model: "bot"},
		"bot@latest":     {Model: "bot"},
		"bot@12":         {Model: "bot", Number: 12},
		"bot@production": {Model: "bot", Stage: market.StageProduction},
		"bot@none":       {Model: "bot", Stage: market.StageNone},
	} {
		got, err := market.ParseReference(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for in, wantErr := range map[string]string{
		"":         "model: Required",
		"Bot@1":    "model: Invalid",
		"bot@":     "selector: Required",
		"bot@0":    "positive integer",
		"bot@01":   "positive integer",
		"bot@1x":   "positive integer",
		"bot@live": "selector: Unsupported",
	} {
		_, err := market.ParseReference(in)
		assert.ErrorContains(t, err, wantErr, in)
	}
}

func TestChangeGivesUpOnlyWhenToldTo(t *testing.T) {
	reg := market.NewRegistry(newFileStore(t))
	ctx := t.Context()
	_, err := reg.Register(ctx, sampleVersion("bot"))
	require.NoError(t, err)
	boom := errors.New("boom")
	_, err = reg.Change(ctx, "bot@1", func(*market.Version) error { return boom })
	assert.ErrorIs(t, err, boom)
	_, err = reg.Change(ctx, "bot@1", func(v *market.Version) error { v.Artifact.URI = "pvc://x/y"; return nil })
	assert.ErrorIs(t, err, market.ErrImmutable)
	_, err = reg.Promote(ctx, "bot@1", "live", market.Promotion{})
	assert.ErrorContains(t, err, "stage")
	_, err = reg.RecordMetrics(ctx, "bot@1", map[string]float64{"x": nan()})
	assert.ErrorContains(t, err, "finite")
}

func nan() float64 { var z float64; return z / z }

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
	_, err := market.Evaluate("e", registered("pvc://models/bot"), "mmlu").On(hardware.H100).Accelerators(1).SampleLimit(1.5).Build()
	assert.ErrorContains(t, err, "spec.sampleLimit")
	_, err = market.Evaluate("e", registered("pvc://models/bot"), "mmlu").On(hardware.H100).Accelerators(1).SampleLimit(0.25).Build()
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
// would be served as full weights (Entry.Serve and Get branch on
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
		_, err = market.Evaluate("e", registered("pvc://models/bot"), "mmlu").On(hardware.H100).Accelerators(1).SampleLimit(bad).Build()
		assert.ErrorContains(t, err, "spec.sampleLimit")
	}
	got, err := market.ParseLMEvalResults([]byte(`{"results":{"mmlu":{"acc,none":NaN}}}`))
	assert.Error(t, err, "NaN is not JSON")
	assert.Empty(t, got)
}
