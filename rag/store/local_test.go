package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cubestudio/cube/rag/internal/vecmath"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func rec(id, source, text string, vec ...float32) Record {
	return Record{Chunk: Chunk{ID: id, Source: source, Text: text, Metadata: map[string]string{"team": "nlp"}}, Vector: vec}
}

func openLocal(t *testing.T, dir string, opts ...LocalOption) *Local {
	t.Helper()
	s, err := Open(dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func hitIDs(hs []Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.Chunk.ID
	}
	return out
}

func TestLocalUpsertSearchDeleteAndReopen(t *testing.T) {
	dir := t.TempDir()
	s := openLocal(t, dir)
	ctx := t.Context()
	require.NoError(t, s.Upsert(ctx,
		rec("a", "x.md", "gpu quota for teams", 1, 0, 0),
		rec("b", "x.md", "cpu limits", 0, 1, 0),
		rec("c", "y.md", "gpu scheduling with volcano", 0.9, 0.1, 0)))
	hits, err := s.SearchVector(ctx, []float32{2, 0, 0}, 2, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "c"}, hitIDs(hits))
	assert.InDelta(t, 1.0, hits[0].Score, 1e-6)

	hits, err = s.SearchVector(ctx, []float32{1, 0, 0}, 5, Filter{"source": "y.md"})
	require.NoError(t, err)
	assert.Equal(t, []string{"c"}, hitIDs(hits))

	kw, err := s.SearchKeyword(ctx, "GPU volcano", 3, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"c", "a"}, hitIDs(kw), "both words beat one")

	require.NoError(t, s.Delete(ctx, "a", "unknown"))
	require.NoError(t, s.Upsert(ctx, rec("b", "x.md", "cpu limits, revised", 0, 0, 1)))
	require.NoError(t, s.Close())
	assert.ErrorContains(t, s.Upsert(ctx, rec("z", "z", "z", 1)), "closed")

	s2 := openLocal(t, dir)
	assert.Equal(t, 2, s2.Count())
	list, err := s2.List(ctx, Filter{"team": "nlp"})
	require.NoError(t, err)
	require.Len(t, list, 2)
	assert.Equal(t, "cpu limits, revised", list[0].Text)
	hits, err = s2.SearchVector(ctx, []float32{0, 0, 1}, 1, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"b"}, hitIDs(hits))
	kw, err = s2.SearchKeyword(ctx, "quota", 3, nil)
	require.NoError(t, err)
	assert.Empty(t, kw, "the deleted chunk's words are gone from BM25")
}

func TestLocalSecondOpenOfADirectoryIsRefused(t *testing.T) {
	dir := t.TempDir()
	openLocal(t, dir)
	_, err := Open(dir)
	assert.ErrorContains(t, err, "open in another process")
}

func TestLocalUpsertReportsEveryBadRecord(t *testing.T) {
	s := openLocal(t, t.TempDir())
	ctx := t.Context()
	require.NoError(t, s.Upsert(ctx, rec("a", "s", "t", 1, 0)))
	err := s.Upsert(ctx, rec("", "s", "t", 1, 0), rec("b", "s", "t"), rec("c", "s", "t", 1, 2, 3),
		rec("d", "s", "t", 0, 0), rec("e", "s", "t", 1, 1), rec("e", "s", "t", 1, 1))
	require.Error(t, err)
	for _, want := range []string{"records[0].chunk.id: required", "records[1].vector: required",
		"records[2].vector: 3 dimensions, the store holds 2", "records[3].vector: zero", "records[5].chunk.id: e: duplicate of records[4]"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Equal(t, 1, s.Count(), "nothing of a rejected call is written")
	_, err = s.SearchVector(ctx, []float32{1}, 0, Filter{"": "x"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "k: 0")
	assert.Contains(t, err.Error(), "vector: 1 dimensions")
	assert.Contains(t, err.Error(), "empty key")

	var zero Local
	assert.ErrorContains(t, zero.Upsert(ctx), "not opened")
	var nilStore *Local
	_, err = nilStore.SearchKeyword(ctx, "x", 1, nil)
	assert.ErrorContains(t, err, "not opened")
	assert.NoError(t, nilStore.Close())
	assert.Zero(t, nilStore.Count())
}

func TestLocalReupsertOfEqualRecordWritesNothing(t *testing.T) {
	s := openLocal(t, t.TempDir())
	r := rec("a", "s", "t", 3, 4)
	require.NoError(t, s.Upsert(t.Context(), r))
	size := s.LogBytes()
	require.NoError(t, s.Upsert(t.Context(), r))
	assert.Equal(t, size, s.LogBytes())
}

func TestLocalToleratesATornTailAndRefusesCorruptionBeforeIt(t *testing.T) {
	dir := t.TempDir()
	s := openLocal(t, dir)
	for i := range 5 {
		require.NoError(t, s.Upsert(t.Context(), rec(fmt.Sprint(i), "s", "text", float32(i+1), 1)))
	}
	require.NoError(t, s.Close())
	path := filepath.Join(dir, logName)
	full, err := os.ReadFile(path)
	require.NoError(t, err)

	for cut := 1; cut < 40; cut += 7 {
		require.NoError(t, os.WriteFile(path, full[:len(full)-cut], 0o644))
		s := openLocal(t, dir)
		assert.Equal(t, 4, s.Count(), "cut %d bytes: the last record is dropped, the rest kept", cut)
		// The store appends after the cut, and the result replays.
		require.NoError(t, s.Upsert(t.Context(), rec("new", "s", "text", 1, 1)))
		require.NoError(t, s.Close())
		s = openLocal(t, dir)
		assert.Equal(t, 5, s.Count())
		require.NoError(t, s.Close())
	}

	damaged := append([]byte(nil), full...)
	damaged[len(logMagic)+20] ^= 0xff // inside the first frame
	require.NoError(t, os.WriteFile(path, damaged, 0o644))
	_, err = Open(dir)
	assert.ErrorIs(t, err, ErrCorrupt)

	require.NoError(t, os.WriteFile(path, []byte("NOTALOG!and more"), 0o644))
	_, err = Open(dir)
	assert.ErrorIs(t, err, ErrCorrupt)
}

func TestLocalCompactKeepsOnlyLiveChunks(t *testing.T) {
	dir := t.TempDir()
	s := openLocal(t, dir)
	ctx := t.Context()
	for i := range 50 {
		require.NoError(t, s.Upsert(ctx, rec(fmt.Sprint(i%10), "s", fmt.Sprint("text ", i), float32(i+1), 1)))
	}
	before := s.LogBytes()
	require.NoError(t, s.Compact(ctx))
	assert.Less(t, s.LogBytes(), before/3)
	assert.Equal(t, 10, s.Count())
	require.NoError(t, s.Upsert(ctx, rec("x", "s", "after compact", 1, 2)))
	require.NoError(t, s.Close())
	s = openLocal(t, dir)
	assert.Equal(t, 11, s.Count())
	kw, err := s.SearchKeyword(ctx, "49", 1, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"9"}, hitIDs(kw))
}

// clustered returns n unit vectors around c random centres, the shape
// real embeddings have (topics), rather than uniform noise; each
// coordinate is the centre's (standard normal) plus noise of standard
// deviation noise. The centres come from topicSeed, the points from
// pointSeed: queries share a corpus's topics but are new points.
func clustered(n, dims, c int, noise float64, topicSeed, pointSeed uint64) [][]float32 {
	topics := rand.New(rand.NewPCG(topicSeed, 7))
	centres := make([][]float32, c)
	for i := range centres {
		centres[i] = make([]float32, dims)
		for j := range centres[i] {
			centres[i][j] = float32(topics.NormFloat64())
		}
	}
	rng := rand.New(rand.NewPCG(pointSeed, 11))
	out := make([][]float32, n)
	for i := range out {
		ctr := centres[rng.IntN(c)]
		v := make([]float32, dims)
		for j := range v {
			v[j] = ctr[j] + float32(rng.NormFloat64()*noise)
		}
		vecmath.Normalize(v)
		out[i] = v
	}
	return out
}

func recallAt(exact, approx []Hit) float64 {
	want := map[string]bool{}
	for _, h := range exact {
		want[h.Chunk.ID] = true
	}
	n := 0
	for _, h := range approx {
		if want[h.Chunk.ID] {
			n++
		}
	}
	return float64(n) / float64(len(exact))
}

func TestHNSWRecallAgainstExactWithDeletesAndFilters(t *testing.T) {
	s := openLocal(t, t.TempDir(), ExactBelow(0), NoSync())
	ctx := t.Context()
	vecs := clustered(4000, 64, 40, 1.0, 1, 1)
	recs := make([]Record, len(vecs))
	for i, v := range vecs {
		recs[i] = Record{Chunk: Chunk{ID: fmt.Sprint(i), Source: fmt.Sprint("s", i%4), Text: "t"}, Vector: v}
	}
	require.NoError(t, s.Upsert(ctx, recs[:2000]...))
	require.NoError(t, s.BuildIndex())
	require.NoError(t, s.Upsert(ctx, recs[2000:]...)) // inserted into the built graph
	var del []string
	for i := 0; i < 4000; i += 10 {
		del = append(del, fmt.Sprint(i))
	}
	require.NoError(t, s.Delete(ctx, del...))
	queries := clustered(100, 64, 40, 1.0, 1, 2) // same topics, new points
	total, filtered := 0.0, 0.0
	for _, q := range queries {
		exact, err := s.SearchExact(ctx, q, 10, nil)
		require.NoError(t, err)
		approx, err := s.SearchVector(ctx, q, 10, nil)
		require.NoError(t, err)
		total += recallAt(exact, approx)
		for _, h := range approx {
			assert.NotContains(t, del, h.Chunk.ID)
		}
		fe, err := s.SearchExact(ctx, q, 10, Filter{"source": "s1"})
		require.NoError(t, err)
		fa, err := s.SearchVector(ctx, q, 10, Filter{"source": "s1"})
		require.NoError(t, err)
		filtered += recallAt(fe, fa)
		for _, h := range fa {
			assert.Equal(t, "s1", h.Chunk.Source)
		}
	}
	t.Logf("recall@10 %.3f, filtered %.3f", total/100, filtered/100)
	assert.GreaterOrEqual(t, total/100, 0.95, "recall@10")
	assert.GreaterOrEqual(t, filtered/100, 0.95, "filtered recall@10")
}

func TestLocalStatsFollowTheBackgroundIndex(t *testing.T) {
	ctx := t.Context()
	s := openLocal(t, t.TempDir(), NoSync(), ExactBelow(300))
	var st Store = s // no type assertion needed
	vecs := clustered(1000, 16, 10, 1.0, 9, 1)
	recs := make([]Record, len(vecs))
	for i, v := range vecs {
		recs[i] = Record{Chunk: Chunk{ID: fmt.Sprint(i), Source: fmt.Sprint("s", i%7), Text: "t"}, Vector: v}
	}
	require.NoError(t, st.Apply(ctx, Batch{Upsert: recs[:200]}))
	stats, err := st.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, Stats{Chunks: 200, Sources: 7, Dimensions: 16, Index: IndexExact, LogBytes: s.LogBytes()}, stats)
	require.NoError(t, st.Apply(ctx, Batch{Upsert: recs[200:], Delete: []string{"0", "1", "2"}}))
	// Searches never wait for the graph: they are exact until it is built.
	for _, q := range vecs[:20] {
		got, err := st.SearchVector(ctx, q, 5, nil)
		require.NoError(t, err)
		want, err := st.SearchExact(ctx, q, 5, nil)
		require.NoError(t, err)
		assert.GreaterOrEqual(t, recallAt(want, got), 0.6)
	}
	require.NoError(t, s.BuildIndex())
	stats, err = st.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, IndexReady, stats.Index)
	assert.Equal(t, 997, stats.Chunks)
	assert.Equal(t, 997, stats.Indexed, "deleted chunks stay in the graph but are not counted")
	list, err := st.List(ctx, Filter{"source": "s3"})
	require.NoError(t, err)
	assert.Len(t, list, 143, "the source index finds the source's live chunks") // 3, 10, …, 997
	var byScan int
	all, err := st.List(ctx, nil)
	require.NoError(t, err)
	for _, c := range all {
		if c.Source == "s3" {
			byScan++
		}
	}
	assert.Equal(t, byScan, len(list))
}

func TestLocalApplyReportsEveryProblem(t *testing.T) {
	s := openLocal(t, t.TempDir(), NoSync())
	err := s.Apply(t.Context(), Batch{Upsert: []Record{rec("", "s", "t", 1), rec("a", "s", "t")}, Delete: []string{"x", ""}})
	require.Error(t, err)
	for _, want := range []string{"upsert[0].chunk.id: required", "upsert[1].vector: required", "delete[1]: empty ID"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Zero(t, s.Count())
	_, err = Open(t.TempDir(), Keyword(KeywordFields{Title: -1, Section: float32(math.NaN())}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "keyword.Title: -1")
	assert.Contains(t, err.Error(), "keyword.Section: NaN")
	var zero *Local
	assert.Error(t, zero.Apply(t.Context(), Batch{}))
	_, err = zero.Stats(t.Context())
	assert.Error(t, err)
}
