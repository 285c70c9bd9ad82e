package store

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	chromem "github.com/philippgille/chromem-go"
)

// The 100k × 384 benchmark: clustered unit vectors (1,000 topics, each
// coordinate the topic's plus noise of twice its spread, so that topics
// overlap and the nearest neighbours are not simply the query's topic)
// searched through HNSW at three efSearch settings (cube/…) and, as
// baselines, exactly and with chromem-go's exhaustive search
// (baseline/…), all in one run. Run it on one core:
//
//	go test -run '^$' -bench 'Search100k' -benchtime 200x -cpu 1 -benchmem ./rag/store/
const (
	benchN    = 100_000
	benchDims = 384
	benchK    = 10
	benchQ    = 200
	// benchNoise is the noise's standard deviation relative to the
	// topics' (1): within-topic distances are 0.91 of between-topic ones.
	benchNoise = 2.0
)

type searchBench struct {
	store   *Local
	chromem *chromem.Collection
	queries [][]float32
	exact   [][]Hit
	ingest  time.Duration
	build   time.Duration
	heapMiB float64
	p50     map[string]time.Duration
}

var (
	benchOnce  sync.Once
	benchState *searchBench
	benchErr   error
)

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

func setupSearchBench(b *testing.B) *searchBench {
	benchOnce.Do(func() {
		ctx := context.Background()
		st := &searchBench{p50: map[string]time.Duration{}}
		vecs := clustered(benchN, benchDims, 1000, benchNoise, 42, 1)
		st.queries = clustered(benchQ, benchDims, 1000, benchNoise, 42, 2) // the corpus's topics, new points
		before := heapInUse()
		store, err := Open(b.TempDir(), NoSync(), ExactBelow(0))
		if err != nil {
			benchErr = err
			return
		}
		start := time.Now()
		for i := 0; i < benchN; i += 1000 {
			recs := make([]Record, 0, 1000)
			for j := i; j < i+1000; j++ {
				recs = append(recs, Record{Chunk: Chunk{ID: fmt.Sprint(j), Source: fmt.Sprint("s", j%10), Text: "chunk"}, Vector: vecs[j]})
			}
			if err := store.Upsert(ctx, recs...); err != nil {
				benchErr = err
				return
			}
		}
		st.ingest = time.Since(start)
		start = time.Now()
		_ = store.BuildIndex()
		st.build = time.Since(start)
		st.heapMiB = float64(heapInUse()-before) / (1 << 20)
		st.store = store
		for _, q := range st.queries {
			hits, _ := store.SearchExact(ctx, q, benchK, nil)
			st.exact = append(st.exact, hits)
		}
		db := chromem.NewDB()
		col, err := db.CreateCollection("bench", nil, func(context.Context, string) ([]float32, error) {
			return nil, fmt.Errorf("not used: embeddings are given")
		})
		if err != nil {
			benchErr = err
			return
		}
		ids := make([]string, benchN)
		contents := make([]string, benchN)
		for i := range ids {
			ids[i], contents[i] = fmt.Sprint(i), "chunk"
		}
		if err := col.Add(ctx, ids, vecs, nil, contents); err != nil {
			benchErr = err
			return
		}
		st.chromem = col
		benchState = st
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchState
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func BenchmarkSearch100k(b *testing.B) {
	st := setupSearchBench(b)
	ctx := context.Background()
	hnswAt := func(ef int) func(q []float32) []string {
		return func(q []float32) []string {
			st.store.params.EfSearch = ef
			h, _ := st.store.SearchVector(ctx, q, benchK, nil)
			return hitIDs(h)
		}
	}
	type engine struct {
		name   string
		search func(q []float32) []string
	}
	// cube's approximate search at three efSearch settings against two
	// baselines measured in the same run: cube's own exact scan (the naive
	// way, and the recall reference) and chromem-go's exhaustive search
	// (an upstream library doing the same job).
	groups := []struct {
		name    string
		engines []engine
	}{
		{"cube", []engine{{"hnsw-ef64", hnswAt(64)}, {"hnsw-ef128", hnswAt(128)}, {"hnsw-ef256", hnswAt(256)}}},
		{"baseline", []engine{
			{"exact", func(q []float32) []string { h, _ := st.store.SearchExact(ctx, q, benchK, nil); return hitIDs(h) }},
			{"chromem", func(q []float32) []string {
				rs, err := st.chromem.QueryEmbedding(ctx, q, benchK, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				ids := make([]string, len(rs))
				for i, r := range rs {
					ids[i] = r.ID
				}
				return ids
			}},
		}},
	}
	for _, g := range groups {
		b.Run(g.name, func(b *testing.B) {
			for _, e := range g.engines {
				b.Run(e.name, func(b *testing.B) { runSearchEngine(b, st, e.name, e.search) })
			}
		})
	}
}

// runSearchEngine measures one engine's latency and recall against the
// exact top 10, and reports each p50 against chromem-go's once both ran.
func runSearchEngine(b *testing.B, st *searchBench, name string, search func(q []float32) []string) {
	b.ReportAllocs()
	lat := make([]time.Duration, 0, b.N)
	recall := 0.0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		qi := i % benchQ
		start := time.Now()
		ids := search(st.queries[qi])
		lat = append(lat, time.Since(start))
		want := map[string]bool{}
		for _, h := range st.exact[qi] {
			want[h.Chunk.ID] = true
		}
		for _, id := range ids {
			if want[id] {
				recall++
			}
		}
	}
	b.StopTimer()
	p50 := percentile(lat, 0.5)
	st.p50[name] = p50
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(recall/float64(b.N*benchK), "recall@10")
	switch name {
	case "exact":
		b.ReportMetric(benchN/st.ingest.Seconds(), "ingest-chunks/s")
		b.ReportMetric(st.heapMiB, "store-heap-MiB")
	case "hnsw-ef64":
		b.ReportMetric(st.build.Seconds(), "graph-build-s")
	}
	if c, ok := st.p50["chromem"]; ok && name == "chromem" {
		for _, other := range []string{"exact", "hnsw-ef64", "hnsw-ef128", "hnsw-ef256"} {
			if o, ok := st.p50[other]; ok && o > 0 {
				b.ReportMetric(float64(c)/float64(o), other+"-speedup-vs-chromem")
			}
		}
	}
}
