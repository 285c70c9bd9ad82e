package rag

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/philippgille/chromem-go"

	"github.com/cubestudio/cube/rag/embed"
	"github.com/cubestudio/cube/rag/internal/lex"
	"github.com/cubestudio/cube/rag/load"
	"github.com/cubestudio/cube/rag/store"
)

// ranker answers a question with sources, best first, each once.
type ranker func(ctx context.Context, q string) ([]string, error)

// quality is recall@10 and MRR@10 over questions, and the latency of each.
type quality struct {
	recall, mrr float64
	latencies   []time.Duration
}

func (q quality) percentile(p float64) time.Duration {
	if len(q.latencies) == 0 {
		return 0
	}
	l := append([]time.Duration(nil), q.latencies...)
	sort.Slice(l, func(i, j int) bool { return l[i] < l[j] })
	return l[min(len(l)-1, int(math.Ceil(p*float64(len(l))))-1)]
}

func measure(ctx context.Context, tb testing.TB, r ranker, qs []goQuestion) quality {
	tb.Helper()
	var out quality
	for _, q := range qs {
		start := time.Now()
		got, err := r(ctx, q.text)
		out.latencies = append(out.latencies, time.Since(start))
		if err != nil {
			tb.Fatalf("%q: %v", q.text, err)
		}
		for i, s := range got[:min(10, len(got))] {
			if s == q.relevant {
				out.recall++
				out.mrr += 1 / float64(i+1)
				break
			}
		}
	}
	out.recall /= float64(len(qs))
	out.mrr /= float64(len(qs))
	return out
}

// goBench is the Go reference benchmark loaded into cube and into each
// baseline.
type goBench struct {
	pages     []goPage
	questions []goQuestion
	kb        *KnowledgeBase
	chunks    int
	rankers   map[string]ranker
	names     []string
}

// newGoBench ingests pages into a knowledge base as doc.go shows it
// (Markdown loader, default splitter, embed.FeatureHasher with 384
// dimensions) and into the baselines: plain BM25 over whole pages (k1 1.2,
// b 0.75, the words of internal/lex), bleve v2 over whole pages (an
// in-memory index, title and body fields, the English analyzer, a match
// query), and chromem-go's exhaustive search over the same chunks and
// vectors cube stores.
func newGoBench(tb testing.TB, pages []goPage, questions []goQuestion, engines bool) *goBench {
	tb.Helper()
	ctx := context.Background()
	st, err := store.Open(tb.TempDir(), store.NoSync())
	if err != nil {
		tb.Fatal(err)
	}
	kb := New("go", st, embed.HashedFeatures(384))
	tb.Cleanup(func() { _ = kb.Close() })
	var docs []Document
	for _, p := range pages {
		d, err := load.Markdown(p.source, strings.NewReader(p.text))
		if err != nil {
			tb.Fatal(err)
		}
		docs = append(docs, d...)
	}
	rep, err := kb.Ingest(ctx, docs...)
	if err != nil {
		tb.Fatal(err)
	}
	// The graph is built in the background after a bulk load; wait for
	// it, so that vector search is measured through it, not by the exact
	// scan that stands in until it is built.
	if err := st.BuildIndex(); err != nil {
		tb.Fatal(err)
	}
	g := &goBench{pages: pages, questions: questions, kb: kb, chunks: rep.Added, rankers: map[string]ranker{}}
	for _, m := range []Mode{Keyword, Vector, Hybrid} {
		g.add("cube/"+m.String(), func(ctx context.Context, q string) ([]string, error) {
			docs, err := kb.RetrieveDocuments(ctx, q, m, TopK(10))
			out := make([]string, len(docs))
			for i, d := range docs {
				out[i] = d.Source
			}
			return out, err
		})
	}
	g.add("baseline/bm25-pages", newPageBM25(pages).rank)
	if engines {
		g.add("cube/hybrid-rrf", func(ctx context.Context, q string) ([]string, error) {
			docs, err := kb.RetrieveDocuments(ctx, q, RRF(1, 1, DefaultRRFK), TopK(10))
			out := make([]string, len(docs))
			for i, d := range docs {
				out[i] = d.Source
			}
			return out, err
		})
		g.add("baseline/bleve", newBleve(tb, pages))
		g.add("baseline/chromem", newChromem(tb, kb))
	}
	return g
}

func (g *goBench) add(name string, r ranker) {
	g.rankers[name] = r
	g.names = append(g.names, name)
}

// pageBM25 is plain BM25 over whole pages, exhaustive over the postings.
type pageBM25 struct {
	sources  []string
	postings map[string][]struct{ doc, tf int }
	length   []int
	avg      float64
}

func newPageBM25(pages []goPage) *pageBM25 {
	b := &pageBM25{postings: map[string][]struct{ doc, tf int }{}}
	total := 0
	for i, p := range pages {
		terms := lex.Terms(p.text)
		tf := map[string]int{}
		var order []string
		for _, t := range terms {
			if tf[t] == 0 {
				order = append(order, t)
			}
			tf[t]++
		}
		for _, t := range order {
			b.postings[t] = append(b.postings[t], struct{ doc, tf int }{i, tf[t]})
		}
		b.sources = append(b.sources, p.source)
		b.length = append(b.length, len(terms))
		total += len(terms)
	}
	b.avg = float64(total) / float64(len(pages))
	return b
}

func (b *pageBM25) rank(_ context.Context, q string) ([]string, error) {
	const k1, bb = 1.2, 0.75
	scores := map[int]float64{}
	seen := map[string]bool{}
	n := float64(len(b.sources))
	for _, t := range lex.Terms(q) {
		if seen[t] {
			continue
		}
		seen[t] = true
		ps := b.postings[t]
		df := float64(len(ps))
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			scores[p.doc] += idf * tf * (k1 + 1) / (tf + k1*(1-bb+bb*float64(b.length[p.doc])/b.avg))
		}
	}
	docs := make([]int, 0, len(scores))
	for d := range scores {
		docs = append(docs, d)
	}
	sort.Slice(docs, func(i, j int) bool {
		if scores[docs[i]] != scores[docs[j]] {
			return scores[docs[i]] > scores[docs[j]]
		}
		return docs[i] < docs[j]
	})
	out := make([]string, 0, 10)
	for _, d := range docs[:min(10, len(docs))] {
		out = append(out, b.sources[d])
	}
	return out, nil
}

func newBleve(tb testing.TB, pages []goPage) ranker {
	tb.Helper()
	m := bleve.NewIndexMapping()
	m.DefaultAnalyzer = "en"
	idx, err := bleve.NewMemOnly(m)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = idx.Close() })
	batch := idx.NewBatch()
	for _, p := range pages {
		title, body, _ := strings.Cut(p.text, "\n")
		if err := batch.Index(p.source, map[string]string{"title": strings.TrimPrefix(title, "# "), "body": body}); err != nil {
			tb.Fatal(err)
		}
		if batch.Size() >= 1000 {
			if err := idx.Batch(batch); err != nil {
				tb.Fatal(err)
			}
			batch = idx.NewBatch()
		}
	}
	if err := idx.Batch(batch); err != nil {
		tb.Fatal(err)
	}
	return func(ctx context.Context, q string) ([]string, error) {
		req := bleve.NewSearchRequestOptions(bleve.NewMatchQuery(q), 10, 0, false)
		res, err := idx.SearchInContext(ctx, req)
		if err != nil {
			return nil, err
		}
		out := make([]string, len(res.Hits))
		for i, h := range res.Hits {
			out[i] = h.ID
		}
		return out, nil
	}
}

// newChromem puts the knowledge base's chunks, with the vectors the same
// embedder makes, into a chromem-go collection; a question asks for 50
// chunks and keeps the first ten sources.
func newChromem(tb testing.TB, kb *KnowledgeBase) ranker {
	tb.Helper()
	ctx := context.Background()
	chunks, err := kb.store.List(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	col, err := chromem.NewDB().CreateCollection("go", nil, func(ctx context.Context, text string) ([]float32, error) {
		v, err := kb.embedder.Embed(ctx, []string{text})
		if err != nil {
			return nil, err
		}
		return v[0], nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	ids, texts := make([]string, len(chunks)), make([]string, len(chunks))
	metas := make([]map[string]string, len(chunks))
	for i, c := range chunks {
		ids[i], texts[i], metas[i] = c.ID, c.Text, map[string]string{"source": c.Source}
	}
	vecs, err := kb.embedder.Embed(ctx, texts)
	if err != nil {
		tb.Fatal(err)
	}
	if err := col.Add(ctx, ids, vecs, metas, texts); err != nil {
		tb.Fatal(err)
	}
	return func(ctx context.Context, q string) ([]string, error) {
		res, err := col.Query(ctx, q, min(50, col.Count()), nil, nil)
		if err != nil {
			return nil, err
		}
		var out []string
		seen := map[string]bool{}
		for _, r := range res {
			if s := r.Metadata["source"]; !seen[s] && len(out) < 10 {
				seen[s] = true
				out = append(out, s)
			}
		}
		return out, nil
	}
}

// table measures every ranker and renders the quality table.
func (g *goBench) table(ctx context.Context, tb testing.TB) (map[string]quality, string) {
	res := map[string]quality{}
	var b strings.Builder
	fmt.Fprintf(&b, "%d pages, %d chunks, %d questions\n%-22s %9s %7s %9s %9s\n", len(g.pages), g.chunks, len(g.questions), "", "recall@10", "MRR@10", "p50", "p99")
	for _, name := range g.names {
		q := measure(ctx, tb, g.rankers[name], g.questions)
		res[name] = q
		fmt.Fprintf(&b, "%-22s %9.3f %7.3f %9s %9s\n", name, q.recall, q.mrr, q.percentile(0.5).Round(time.Microsecond), q.percentile(0.99).Round(time.Microsecond))
	}
	return res, b.String()
}

// goBenchPackages is the part of the standard library the fast test reads.
var goBenchPackages = []string{"bytes", "strings", "strconv", "bufio", "io", "os", "sort", "slices", "maps",
	"math", "math/big", "math/rand", "math/rand/v2", "text/template", "html/template", "net/url", "path",
	"path/filepath", "time", "sync", "unicode/utf8", "encoding/json", "encoding/csv", "regexp", "errors", "fmt"}

// TestHybridRetrievalOnGoReference runs the Go reference benchmark on 26
// packages and holds the default hybrid retrieval to the better of keyword
// and vector search and to plain BM25 over whole pages, within noise:
// with 200 questions one standard error of recall@10 is about 0.025, so a
// hybrid more than 0.03 below either is a regression, not chance.
func TestHybridRetrievalOnGoReference(t *testing.T) {
	pages, qs := goReferenceCorpus(t, goBenchPackages, 500, 200)
	g := newGoBench(t, pages, qs, false)
	res, table := g.table(t.Context(), t)
	t.Log("\n" + table)
	const noise = 0.03
	h, k, v, bm := res["cube/hybrid"], res["cube/keyword"], res["cube/vector"], res["baseline/bm25-pages"]
	if h.recall < max(k.recall, v.recall)-noise || h.mrr < max(k.mrr, v.mrr)-noise {
		t.Errorf("hybrid %.3f/%.3f is worse than keyword %.3f/%.3f or vector %.3f/%.3f", h.recall, h.mrr, k.recall, k.mrr, v.recall, v.mrr)
	}
	if h.recall < bm.recall-noise || h.mrr < bm.mrr-noise {
		t.Errorf("hybrid %.3f/%.3f is worse than plain BM25 over pages %.3f/%.3f", h.recall, h.mrr, bm.recall, bm.mrr)
	}
}

// BenchmarkRetrievalQuality runs the Go reference benchmark on the whole
// standard library: cube's three modes against plain BM25 over pages,
// bleve and chromem-go, in one run. Each sub-benchmark reports recall@10
// and MRR@10 over all questions and p50/p99 latency; its b.N loop repeats
// questions for ns/op.
//
//	go test -run '^$' -bench RetrievalQuality -benchtime 1x -cpu 1 -timeout 1h ./rag/
func BenchmarkRetrievalQuality(b *testing.B) {
	pages, qs := goReferenceCorpus(b, nil, 3000, 600)
	g := newGoBench(b, pages, qs, true)
	ctx := context.Background()
	var table strings.Builder
	fmt.Fprintf(&table, "%d pages, %d chunks, %d questions\n%-22s %9s %7s %9s %9s\n", len(pages), g.chunks, len(qs), "", "recall@10", "MRR@10", "p50", "p99")
	for _, name := range g.names {
		r := g.rankers[name]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			q := measure(ctx, b, r, qs)
			b.ResetTimer() // deletes reported metrics: report after the loop
			for i := 0; i < b.N; i++ {
				if _, err := r(ctx, qs[i%len(qs)].text); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(q.recall, "recall@10")
			b.ReportMetric(q.mrr, "MRR@10")
			b.ReportMetric(float64(q.percentile(0.5).Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(q.percentile(0.99).Microseconds())/1000, "p99-ms")
			fmt.Fprintf(&table, "%-22s %9.3f %7.3f %9s %9s\n", name, q.recall, q.mrr, q.percentile(0.5).Round(time.Microsecond), q.percentile(0.99).Round(time.Microsecond))
		})
	}
	b.Log("\n" + table.String())
}
