package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/cubestudio/cube/internal/testsupport/cputime"
	chromem "github.com/philippgille/chromem-go"
)

// The 100k benchmark on real text: 100,000 chunks of Go's documentation,
// doc comments and code (goCorpus), embedded with rag/embed's default
// offline embedder (384 dimensions), 200 questions of 2 to 5 words drawn
// from the chunks. In one run it measures
//
//   - ingest into a fresh store, fsync on, 1,000 chunks per Apply (one
//     fsync each), the background indexer running meanwhile; the time
//     until the graph covers every chunk; and reopen, wall and CPU time,
//     from the checkpoint and the saved graph (cube) against a replay of the
//     whole log that rebuilds the keyword index (baseline);
//   - keyword search: the inverted index (cube) against the scorer this
//     store had before (baseline/exhaustive: a map of every scored chunk,
//     then a sort of all of them) and bleve v2.6.3 (an in-memory index of
//     the same texts, its default scoring, a match query);
//   - vector search: HNSW at the default and other efSearch (cube) against
//     the exact scan and chromem-go v0.7.0's exhaustive search, with
//     recall@10 against the exact top 10 (ties with the 10th count).
//
// Run it alone, once (building takes minutes on two cores):
//
//	go test -run '^$' -bench 'Store100k' -benchtime 200x -benchmem ./rag/store/
const (
	realN = 100_000
	realQ = 200
)

type realBench struct {
	store                *Local
	chunks               []Chunk
	queries              []string
	qvecs                [][]float32
	exact                [][]Hit
	bleve                bleve.Index
	chromem              *chromem.Collection
	ingest               time.Duration // Apply of every chunk, fsync per batch
	indexed              time.Duration // after ingest, until the graph covers every chunk
	reopen               time.Duration // from the checkpoint
	replay               time.Duration // of the whole log, without the checkpoint
	reopenCPU, replayCPU time.Duration
	bleveIdx             time.Duration
	chromAdd             time.Duration
}

var (
	realOnce  sync.Once
	realState *realBench
	realErr   error
)

func setupReal(b *testing.B) *realBench {
	realOnce.Do(func() {
		ctx := context.Background()
		st := &realBench{}
		st.chunks = goCorpus(b, realN)
		if len(st.chunks) < realN {
			realErr = fmt.Errorf("the corpus has %d chunks, not %d", len(st.chunks), realN)
			return
		}
		texts := make([]string, len(st.chunks))
		for i, c := range st.chunks {
			texts[i] = c.Text
		}
		vecs := embedChunks(b, texts)
		st.queries = corpusQueries(st.chunks, realQ, 7)
		st.qvecs = embedChunks(b, st.queries)

		dir := b.TempDir()
		s, err := Open(dir)
		if err != nil {
			realErr = err
			return
		}
		start := time.Now()
		for i := 0; i < realN; i += 1000 {
			var batch Batch
			for j := i; j < i+1000; j++ {
				batch.Upsert = append(batch.Upsert, Record{Chunk: st.chunks[j], Vector: vecs[j]})
			}
			if err := s.Apply(ctx, batch); err != nil {
				realErr = err
				return
			}
		}
		st.ingest = time.Since(start)
		start = time.Now()
		if err := s.BuildIndex(); err != nil {
			realErr = err
			return
		}
		st.indexed = time.Since(start)
		if err := s.Close(); err != nil {
			realErr = err
			return
		}
		// Reopen without the checkpoint (the whole log replayed, the
		// keyword index rebuilt: the baseline), then with it (cube).
		reopen := func() (*Local, time.Duration, time.Duration, error) {
			start, cpu := time.Now(), cputime.Start()
			s, err := Open(dir)
			wall := time.Since(start)
			used, _ := cpu.Elapsed()
			return s, wall, used, err
		}
		if err := os.Rename(filepath.Join(dir, stateName), filepath.Join(dir, "keep.snap")); err != nil {
			realErr = err
			return
		}
		s, st.replay, st.replayCPU, err = reopen()
		if err != nil {
			realErr = err
			return
		}
		s.stateSaved = s.log.size // Close writes no checkpoint: the kept one goes back
		if err := s.Close(); err != nil {
			realErr = err
			return
		}
		if err := os.Rename(filepath.Join(dir, "keep.snap"), filepath.Join(dir, stateName)); err != nil {
			realErr = err
			return
		}
		s, st.reopen, st.reopenCPU, err = reopen()
		if err != nil {
			realErr = err
			return
		}
		if s.stateSaved != s.log.size {
			realErr = fmt.Errorf("the reopen did not resume from the checkpoint")
			return
		}
		st.store = s
		if stats, _ := s.Stats(ctx); stats.Index != IndexReady {
			realErr = fmt.Errorf("reopened store's index is %s, not Ready", stats.Index)
			return
		}
		for _, q := range st.qvecs {
			h, _ := s.SearchExact(ctx, q, 10, nil)
			st.exact = append(st.exact, h)
		}

		start = time.Now()
		idx, err := bleve.NewMemOnly(bleve.NewIndexMapping())
		if err != nil {
			realErr = err
			return
		}
		for i := 0; i < realN; i += 1000 {
			batch := idx.NewBatch()
			for j := i; j < i+1000; j++ {
				if err := batch.Index(st.chunks[j].ID, map[string]string{"text": st.chunks[j].Text}); err != nil {
					realErr = err
					return
				}
			}
			if err := idx.Batch(batch); err != nil {
				realErr = err
				return
			}
		}
		st.bleveIdx = time.Since(start)
		st.bleve = idx

		start = time.Now()
		col, err := chromem.NewDB().CreateCollection("bench", nil, func(context.Context, string) ([]float32, error) {
			return nil, fmt.Errorf("not used: embeddings are given")
		})
		if err != nil {
			realErr = err
			return
		}
		ids := make([]string, realN)
		for i := range ids {
			ids[i] = st.chunks[i].ID
		}
		if err := col.Add(ctx, ids, vecs, nil, texts); err != nil {
			realErr = err
			return
		}
		st.chromAdd = time.Since(start)
		st.chromem = col
		realState = st
	})
	if realErr != nil {
		b.Fatal(realErr)
	}
	return realState
}

// oldKeyword is the keyword search this store had before the inverted
// index's top k: every posting's score into a map, then a sort of every
// scored chunk with map lookups in the comparison.
func oldKeyword(s *Local, query string, k int) []Hit {
	s.mu.RLock()
	defer s.mu.RUnlock()
	scores := map[int32]float64{}
	avg := s.bm.avgLen()
	for _, q := range s.bm.query(query) {
		for _, p := range s.bm.postings[q.id] {
			if !s.slots[p.slot].alive {
				continue
			}
			scores[p.slot] += termScore(q.idf, float64(p.tf), float64(s.bm.docLen[p.slot]), avg)
		}
	}
	ids := make([]int32, 0, len(scores))
	for id := range scores {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool {
		if scores[ids[a]] != scores[ids[b]] {
			return scores[ids[a]] > scores[ids[b]]
		}
		return s.slots[ids[a]].chunk.ID < s.slots[ids[b]].chunk.ID
	})
	ids = ids[:min(k, len(ids))]
	out := make([]Hit, len(ids))
	for i, id := range ids {
		out[i] = Hit{Chunk: s.slots[id].chunk.clone(), Score: scores[id]}
	}
	return out
}

func BenchmarkStore100k(b *testing.B) {
	st := setupReal(b)
	ctx := context.Background()
	b.Run("setup", func(b *testing.B) {
		for range b.N {
		}
		b.ReportMetric(realN/st.ingest.Seconds(), "ingest-chunks/s")
		b.ReportMetric(st.indexed.Seconds(), "graph-after-ingest-s")
		b.ReportMetric(st.reopen.Seconds(), "reopen-s")
		b.ReportMetric(st.reopenCPU.Seconds(), "reopen-cpu-s")
		b.ReportMetric(st.replay.Seconds(), "baseline-replay-s")
		b.ReportMetric(st.replayCPU.Seconds(), "baseline-replay-cpu-s")
		b.ReportMetric(realN/st.bleveIdx.Seconds(), "bleve-index-chunks/s")
		b.ReportMetric(realN/st.chromAdd.Seconds(), "chromem-add-chunks/s")
	})
	// Keyword: the reference top 10 is the old scorer's.
	want := make([][]string, realQ)
	for i, q := range st.queries {
		want[i] = hitIDs(oldKeyword(st.store, q, 10))
	}
	keyword := map[string]func(q string) []string{
		"cube": func(q string) []string {
			h, err := st.store.SearchKeyword(ctx, q, 10, nil)
			if err != nil {
				b.Fatal(err)
			}
			return hitIDs(h)
		},
		"baseline-exhaustive": func(q string) []string { return hitIDs(oldKeyword(st.store, q, 10)) },
		"baseline-bleve": func(q string) []string {
			req := bleve.NewSearchRequestOptions(bleve.NewMatchQuery(q), 10, 0, false)
			res, err := st.bleve.Search(req)
			if err != nil {
				b.Fatal(err)
			}
			ids := make([]string, len(res.Hits))
			for i, h := range res.Hits {
				ids[i] = h.ID
			}
			return ids
		},
	}
	for _, name := range []string{"cube", "baseline-exhaustive", "baseline-bleve"} {
		search := keyword[name]
		b.Run("keyword/"+name, func(b *testing.B) {
			b.ReportAllocs()
			lat := make([]time.Duration, 0, b.N)
			overlap := 0.0
			for i := 0; i < b.N; i++ {
				qi := i % realQ
				start := time.Now()
				ids := search(st.queries[qi])
				lat = append(lat, time.Since(start))
				overlap += overlapAt(want[qi], ids)
			}
			b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(overlap/float64(b.N), "same-top10-as-bm25")
		})
	}
	vector := func(ef int) func(q []float32) []Hit {
		return func(q []float32) []Hit {
			st.store.params.EfSearch = ef
			h, err := st.store.SearchVector(ctx, q, 10, nil)
			if err != nil {
				b.Fatal(err)
			}
			return h
		}
	}
	def := HNSWParams{}.withDefaults().EfSearch
	engines := []struct {
		name   string
		search func(q []float32) []Hit
	}{
		{fmt.Sprintf("cube-hnsw-ef%d-default", def), vector(def)},
		{"cube-hnsw-ef128", vector(128)},
		{"cube-hnsw-ef256", vector(256)},
		{"baseline-exact", func(q []float32) []Hit { h, _ := st.store.SearchExact(ctx, q, 10, nil); return h }},
		{"baseline-chromem", func(q []float32) []Hit {
			rs, err := st.chromem.QueryEmbedding(ctx, q, 10, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			hs := make([]Hit, len(rs))
			for i, r := range rs {
				hs[i] = Hit{Chunk: Chunk{ID: r.ID}, Score: float64(r.Similarity)}
			}
			return hs
		}},
	}
	for _, e := range engines {
		b.Run("vector/"+e.name, func(b *testing.B) {
			b.ReportAllocs()
			lat := make([]time.Duration, 0, b.N)
			recall := 0.0
			for i := 0; i < b.N; i++ {
				qi := i % realQ
				start := time.Now()
				h := e.search(st.qvecs[qi])
				lat = append(lat, time.Since(start))
				recall += recallTies(st.exact[qi], h)
			}
			b.ReportMetric(float64(percentile(lat, 0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(percentile(lat, 0.99).Microseconds())/1000, "p99-ms")
			b.ReportMetric(recall/float64(b.N), "recall@10")
		})
	}
	st.store.params.EfSearch = def
}

func overlapAt(want, got []string) float64 {
	if len(want) == 0 {
		return 1
	}
	in := map[string]bool{}
	for _, id := range want {
		in[id] = true
	}
	n := 0
	for _, id := range got {
		if in[id] {
			n++
		}
	}
	return float64(n) / float64(len(want))
}

// BenchmarkIngestReopen100k measures, in one run, at 100,000 chunks of
// real text (goCorpus, embedded beforehand; fsync on, 1,000 chunks per
// Apply): ingest with the indexer waiting for a pause in writes (cube)
// against the indexer running alongside the writes, as it did before
// (baseline); and reopen from the checkpoint (cube) against a replay of
// the whole log that rebuilds the keyword index (baseline). Wall times
// depend on the machine's load; CPU times (all threads) less so.
//
//	go test -run '^$' -bench IngestReopen100k -benchtime 1x ./rag/store/
func BenchmarkIngestReopen100k(b *testing.B) {
	ctx := context.Background()
	chunks := goCorpus(b, realN)
	if len(chunks) < realN {
		b.Fatalf("the corpus has %d chunks, not %d", len(chunks), realN)
	}
	texts := make([]string, len(chunks))
	for i, c := range chunks {
		texts[i] = c.Text
	}
	vecs := embedChunks(b, texts)
	dirs := map[string]string{}
	for _, name := range []string{"cube", "baseline-indexer-alongside"} {
		parent := b.TempDir() // a sub-benchmark's goes when it ends
		b.Run("ingest/"+name, func(b *testing.B) {
			for i := range b.N {
				dir := filepath.Join(parent, fmt.Sprint(i))
				s, err := Open(dir)
				if err != nil {
					b.Fatal(err)
				}
				s.indexAlongside = name != "cube"
				start, cpu := time.Now(), cputime.Start()
				for i := 0; i < realN; i += 1000 {
					var batch Batch
					for j := i; j < i+1000; j++ {
						batch.Upsert = append(batch.Upsert, Record{Chunk: chunks[j], Vector: vecs[j]})
					}
					if err := s.Apply(ctx, batch); err != nil {
						b.Fatal(err)
					}
				}
				wall := time.Since(start)
				used, _ := cpu.Elapsed()
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				dirs[name] = dir
				b.ReportMetric(realN/wall.Seconds(), "chunks/s")
				b.ReportMetric(used.Seconds(), "cpu-s")
			}
		})
	}
	dir := dirs["cube"]
	if dir == "" {
		b.Fatal("no store was ingested")
	}
	for _, name := range []string{"cube", "baseline-replay"} {
		b.Run("reopen/"+name, func(b *testing.B) {
			for range b.N {
				if name != "cube" {
					if err := os.Rename(filepath.Join(dir, stateName), filepath.Join(dir, "keep.snap")); err != nil {
						b.Fatal(err)
					}
				}
				start, cpu := time.Now(), cputime.Start()
				s, err := Open(dir)
				wall := time.Since(start)
				used, _ := cpu.Elapsed()
				if err != nil {
					b.Fatal(err)
				}
				if resumed := s.stateSaved > 0; resumed != (name == "cube") {
					b.Fatalf("resumed from the checkpoint: %v", resumed)
				}
				if n := s.Count(); n != realN {
					b.Fatalf("reopened with %d chunks", n)
				}
				s.stateSaved = s.log.size // Close writes no checkpoint: the kept one goes back
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				if name != "cube" {
					if err := os.Rename(filepath.Join(dir, "keep.snap"), filepath.Join(dir, stateName)); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(wall.Seconds(), "wall-s")
				b.ReportMetric(used.Seconds(), "cpu-s")
			}
		})
	}
}
