package market_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/internal/testenv"
	"github.com/cubestudio/cube/market"
)

// fill registers n versions spread over 100 models, a tenth of them
// tagged and scored.
func fill(b *testing.B, reg *market.Registry, n int) {
	b.Helper()
	for i := range n {
		v := sampleVersion(fmt.Sprintf("model-%02d", i%100))
		if i%10 == 0 {
			v.Tags = []string{"candidate"}
			v.Metrics = map[string]float64{"mmlu/acc": float64(i%1000) / 1000}
		}
		_, err := reg.Register(b.Context(), v)
		require.NoError(b, err)
	}
}

func benchRegistry(b *testing.B, newStore func(b *testing.B) market.Store, versions int) {
	reg := market.NewRegistry(newStore(b))
	fill(b, reg, versions)
	ctx := b.Context()
	b.Run("register", func(b *testing.B) {
		for b.Loop() {
			_, err := reg.Register(ctx, sampleVersion("bench"))
			require.NoError(b, err)
		}
	})
	b.Run("get", func(b *testing.B) {
		for b.Loop() {
			_, err := reg.Get(ctx, "model-42@7")
			require.NoError(b, err)
		}
	})
	b.Run("record-metrics", func(b *testing.B) {
		for b.Loop() {
			_, err := reg.RecordMetrics(ctx, "model-42@7", map[string]float64{"gsm8k/exact_match": 0.5})
			require.NoError(b, err)
		}
	})
	b.Run("resolve-stage", func(b *testing.B) {
		_, err := reg.Promote(ctx, "model-42@3", market.StageProduction, market.Promotion{})
		require.NoError(b, err)
		for b.Loop() {
			_, err := reg.Get(ctx, "model-42@production")
			require.NoError(b, err)
		}
	})
	b.Run("search-all", func(b *testing.B) {
		for b.Loop() {
			found, err := reg.Search(ctx, market.Query{Tags: []string{"candidate"}, MinMetrics: map[string]float64{"mmlu/acc": 0.5}, OrderBy: "mmlu/acc", Limit: 10})
			require.NoError(b, err)
			require.Len(b, found, 10)
		}
	})
}

func fileStore(b *testing.B) market.Store {
	s, err := market.OpenFileStore(b.TempDir() + "/registry.db")
	require.NoError(b, err)
	return s
}

// BenchmarkFileStore measures the embedded registry with 10,000 versions.
// Every operation opens and closes the file (see FileStore), and every
// write fsyncs.
func BenchmarkFileStore(b *testing.B) { benchRegistry(b, fileStore, 10000) }

// BenchmarkKubernetesStore measures the ConfigMap store on the test API
// server (one etcd on loopback) with 1,000 versions: filling 10,000 takes
// minutes at the API server's create rate here.
func BenchmarkKubernetesStore(b *testing.B) {
	env := testenv.Get(b)
	ns := env.Namespace(b)
	benchRegistry(b, func(b *testing.B) market.Store {
		s, err := market.NewKubernetesStore(env.Client, ns)
		require.NoError(b, err)
		return s
	}, 1000)
}
