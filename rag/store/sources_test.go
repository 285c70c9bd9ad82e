package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/cubestudio/cube/rag/internal/lex"
	"github.com/stretchr/testify/require"
)

// sourcesReference is BM25 over whole sources the textbook way: each
// source's live chunks matching f concatenated field by field into one
// document, document frequencies counted over sources, every source
// scored and sorted.
func sourcesReference(chunks []Chunk, w KeywordFields, query string, k int, f Filter) []SourceHit {
	w = w.withDefaults()
	tf := map[string]map[string]float64{}
	length := map[string]float64{}
	for _, c := range chunks {
		if tf[c.Source] == nil {
			tf[c.Source] = map[string]float64{}
		}
		for _, field := range []struct {
			text string
			w    float32
		}{{c.Text, w.Text}, {c.Title, w.Title}, {c.Section, w.Section}} {
			if field.w == 0 {
				continue
			}
			for _, t := range lex.Terms(field.text) {
				length[c.Source] += float64(field.w)
				if f.Match(&c) {
					tf[c.Source][t] += float64(field.w)
				}
			}
		}
	}
	total := 0.0
	for _, l := range length {
		total += l
	}
	n := float64(len(length))
	avg := total / n
	scores := map[string]float64{}
	seen := map[string]bool{}
	for _, t := range lex.Terms(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		df := 0.0
		for _, m := range tf {
			if m[t] > 0 {
				df++
			}
		}
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for src, m := range tf {
			if m[t] > 0 {
				scores[src] += idf * m[t] * (bm25K1 + 1) / (m[t] + bm25K1*(1-bm25B+bm25B*length[src]/avg))
			}
		}
	}
	var out []SourceHit
	for src, sc := range scores {
		out = append(out, SourceHit{src, sc})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Source < out[j].Source
	})
	return out[:min(k, len(out))]
}

// Keyword search over whole sources ranks as BM25 over each source's
// chunks put together does, after replacements and deletions, with and
// without a filter and field weights, and after a reopen from the
// checkpoint.
func TestSearchKeywordSourcesIsBM25OverWholeSources(t *testing.T) {
	ctx := t.Context()
	for round := range 4 {
		r := rand.New(rand.NewPCG(uint64(round), 9))
		words := func(n int) string {
			ws := make([]string, n)
			for i := range ws {
				ws[i] = fmt.Sprintf("w%d", r.IntN(80))
			}
			return strings.Join(ws, " ")
		}
		var fields KeywordFields
		if round%2 == 1 {
			fields = KeywordFields{Text: 1, Title: 2, Section: 0.5}
		}
		dir := t.TempDir()
		s, err := Open(dir, NoSync(), Keyword(fields))
		require.NoError(t, err)
		live := map[string]Chunk{}
		var recs []Record
		for i := range 400 {
			c := Chunk{ID: fmt.Sprint("c", i), Source: fmt.Sprint("s", r.IntN(40)), Title: words(2), Section: words(1), Text: words(1 + r.IntN(30)),
				Metadata: map[string]string{"team": fmt.Sprint(r.IntN(2))}}
			recs = append(recs, Record{Chunk: c, Vector: []float32{1, float32(i)}})
			live[c.ID] = c
		}
		require.NoError(t, s.Upsert(ctx, recs...))
		var b Batch
		for i := 0; i < 400; i += 9 {
			c := recs[i].Chunk
			c.Source, c.Text = fmt.Sprint("s", r.IntN(45)), words(8) // moved to another source, maybe a new one
			b.Upsert = append(b.Upsert, Record{Chunk: c, Vector: []float32{2, float32(i)}})
			live[c.ID] = c
			b.Delete = append(b.Delete, recs[i+1].Chunk.ID)
			delete(live, recs[i+1].Chunk.ID)
		}
		require.NoError(t, s.Apply(ctx, b))
		check := func(s *Local) {
			all := make([]Chunk, 0, len(live))
			for _, c := range live {
				all = append(all, c)
			}
			for q := range 40 {
				query, k := words(1+r.IntN(4)), 1+r.IntN(15)
				var f Filter
				if q%3 == 0 {
					f = Filter{"team": "1"}
				}
				got, err := s.SearchKeywordSources(ctx, query, k, f)
				require.NoError(t, err)
				want := sourcesReference(all, fields, query, k, f)
				require.Len(t, got, len(want), "round %d query %q", round, query)
				for i := range want {
					require.Equal(t, want[i].Source, got[i].Source, "round %d query %q filter %v hit %d", round, query, f, i)
					require.InDelta(t, want[i].Score, got[i].Score, 1e-6*want[i].Score)
				}
			}
		}
		check(s)
		require.NoError(t, s.Close())
		s, err = Open(dir, NoSync(), Keyword(fields))
		require.NoError(t, err)
		require.Positive(t, s.stateSaved)
		check(s)
		require.NoError(t, s.Close())
	}
	_, err := (&Local{}).SearchKeywordSources(ctx, "x", 0, nil)
	require.Error(t, err)
}
