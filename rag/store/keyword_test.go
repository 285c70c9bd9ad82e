package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cubestudio/cube/rag/internal/lex"
	"github.com/stretchr/testify/require"
)

// bm25Reference scores every live chunk from scratch, the textbook way:
// it reads the chunks' fields again, counts document frequencies and
// lengths itself, and sorts every scored chunk. It shares nothing with
// the inverted index but the tokenizer.
func bm25Reference(chunks []Chunk, w KeywordFields, query string, k int, f Filter) []Hit {
	w = w.withDefaults()
	type doc struct {
		c   Chunk
		tf  map[string]float64
		len float64
	}
	docs := make([]doc, 0, len(chunks))
	df := map[string]float64{}
	total := 0.0
	for _, c := range chunks {
		d := doc{c: c, tf: map[string]float64{}}
		for _, field := range []struct {
			text string
			w    float32
		}{{c.Text, w.Text}, {c.Title, w.Title}, {c.Section, w.Section}} {
			if field.w == 0 {
				continue
			}
			for _, t := range lex.Terms(field.text) {
				// float32 accumulation, as an index of weighted frequencies keeps them
				d.tf[t] = float64(float32(d.tf[t]) + field.w)
				d.len = float64(float32(d.len) + field.w)
			}
		}
		for t := range d.tf {
			df[t]++
		}
		total += d.len
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		return nil
	}
	avg := total / float64(len(docs))
	if avg == 0 {
		avg = 1
	}
	var terms []string
	for _, t := range lex.Terms(query) {
		if !slices.Contains(terms, t) {
			terms = append(terms, t)
		}
	}
	var hits []Hit
	for _, d := range docs {
		if !f.Match(&d.c) {
			continue
		}
		score, matched := 0.0, false
		for _, t := range terms {
			tf := d.tf[t]
			if tf == 0 {
				continue
			}
			n := df[t]
			idf := math.Log(1 + (float64(len(docs))-n+0.5)/(n+0.5))
			score += idf * tf * (1.2 + 1) / (tf + 1.2*(1-0.75+0.75*d.len/avg))
			matched = true
		}
		if matched {
			hits = append(hits, Hit{Chunk: d.c, Score: score})
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Chunk.ID, b.Chunk.ID)
	})
	return hits[:min(k, len(hits))]
}

// On random corpora (a Zipf vocabulary, so some words are in most chunks
// and many in few; duplicate chunks, so scores tie), with random
// replacements and deletions, random field weights and filters, the
// inverted index returns exactly the reference's top k: the same chunks
// in the same order with the same scores.
func TestKeywordIndexMatchesExhaustiveBM25(t *testing.T) {
	ctx := t.Context()
	for round := range 6 {
		r := rand.New(rand.NewPCG(uint64(round), 7))
		vocab := 50 + r.IntN(400)
		zipf := rand.NewZipf(rand.New(rand.NewPCG(uint64(round), 8)), 1.2, 2, uint64(vocab-1))
		words := func(n int) string {
			ws := make([]string, n)
			for i := range ws {
				ws[i] = fmt.Sprintf("w%d", zipf.Uint64())
			}
			return strings.Join(ws, " ")
		}
		var fields KeywordFields
		if round%2 == 1 {
			fields = KeywordFields{Text: 1, Title: float32(r.IntN(4)) + 0.5, Section: float32(r.IntN(3))}
		}
		s := openLocal(t, t.TempDir(), NoSync(), Keyword(fields))
		live := map[string]Chunk{}
		n := 300 + r.IntN(700)
		var recs []Record
		for i := range n {
			c := Chunk{ID: fmt.Sprintf("c%04d", i), Source: fmt.Sprint("s", r.IntN(5)),
				Title: words(1 + r.IntN(3)), Section: words(r.IntN(3)), Text: words(1 + r.IntN(60))}
			if i > 0 && r.IntN(10) == 0 {
				c.Text = recs[r.IntN(len(recs))].Chunk.Text // a duplicate: ties
			}
			recs = append(recs, Record{Chunk: c, Vector: []float32{1, float32(i)}})
			live[c.ID] = c
		}
		require.NoError(t, s.Upsert(ctx, recs...))
		// Replace and delete some, in another batch.
		var b Batch
		for i := range n / 10 {
			c := recs[r.IntN(n)].Chunk
			c.Text = words(1 + r.IntN(30))
			if slices.ContainsFunc(b.Upsert, func(x Record) bool { return x.Chunk.ID == c.ID }) {
				continue
			}
			b.Upsert = append(b.Upsert, Record{Chunk: c, Vector: []float32{2, float32(i)}})
			live[c.ID] = c
		}
		for range n / 10 {
			id := recs[r.IntN(n)].Chunk.ID
			b.Delete = append(b.Delete, id)
			delete(live, id)
		}
		b.Delete = slices.Compact(slices.Sorted(slices.Values(b.Delete)))
		require.NoError(t, s.Apply(ctx, b))
		all := make([]Chunk, 0, len(live))
		for _, c := range live {
			all = append(all, c)
		}
		for q := range 60 {
			query := words(1 + r.IntN(6))
			if q%7 == 0 {
				query += " unknownword W3" // unknown and upper-case words
			}
			k := 1 + r.IntN(20)
			var f Filter
			if q%3 == 0 {
				f = Filter{"source": fmt.Sprint("s", r.IntN(5))}
			}
			got, err := s.SearchKeyword(ctx, query, k, f)
			require.NoError(t, err)
			want := bm25Reference(all, fields, query, k, f)
			require.Equal(t, hitIDs(want), hitIDs(got), "round %d query %q k %d filter %v", round, query, k, f)
			for i := range want {
				require.InDelta(t, want[i].Score, got[i].Score, 1e-9*want[i].Score, "round %d query %q hit %d", round, query, i)
			}
		}
	}
}
