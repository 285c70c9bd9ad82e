package market_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
