package rag

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/cubestudio/cube/rag/internal/lex"
	"github.com/cubestudio/cube/rag/store"
)

// Default weights of hybrid fusion (see Blend). On the Go reference
// benchmark (gobench_test.go, 1,200 symbols of the whole standard
// library, not the packages of its test) every keyword weight from 0.5 to
// 0.7 ranked within 0.005 recall@10 and MRR@10 of the best; 0.6 is the
// middle of that flat region, and leans to keywords because the default
// embedder is lexical and weaker than BM25 (Bruch et al. found the best
// weight similarly flat, nearer the semantic side for neural embedders).
const (
	DefaultVectorWeight  = 0.4
	DefaultKeywordWeight = 0.6
)

// coverWeight is how much a document's coverage of the question (see
// evidence) adds to its best passage's fused score, which is at most 1.
// On the Go reference benchmark 0.3 to 0.7 did equally well (MRR@10 0.489
// to 0.496 against 0.468 without it); 1 began to cost recall.
const coverWeight = 0.5

// Blend sets hybrid retrieval to fuse by a convex combination of
// normalised scores, the default (with DefaultVectorWeight and
// DefaultKeywordWeight): a chunk's fused score is vectorWeight·v +
// keywordWeight·k, where k is its BM25 score divided by the best in the
// keyword list (BM25's floor is 0) and v is (cos+1)/(best+1) for its
// cosine similarity cos (the floor of a cosine is -1); a chunk a list
// lacks gets that list's lowest normalised score. This is TM2C2 of Bruch,
// Gai and Ingber ("An Analysis of Fusion Functions for Hybrid Retrieval",
// ACM TOIS 2023), which they found better than reciprocal rank fusion and
// robust to its weight. The theoretical floors are what calibrates it:
// a list whose scores are close together (the usual case of a lexical
// embedder, whose cosines cluster) moves the fused ranking little, where
// reciprocal rank fusion and min-max scaling give its arbitrary order as
// much say as BM25's. RRF selects reciprocal rank fusion instead.
func Blend(vectorWeight, keywordWeight float64) QueryOption {
	return queryOptionFunc(func(o *queryOptions) {
		o.vectorWeight, o.keywordWeight, o.rrf = vectorWeight, keywordWeight, false
	})
}

// blend fuses two rankings as Blend says; ties keep the keyword ranking's
// order, then the vector ranking's.
func blend(vector, keyword []Hit, wv, wk float64) []Hit {
	byID := map[string]*fused{}
	var all []*fused
	var missing [2]float64
	// add puts list n's normalised scores in; floor is the lowest score
	// its measure can give.
	add := func(n int, list []Hit, w, floor float64) {
		best := math.Inf(-1)
		for _, h := range list {
			best = max(best, h.Score)
		}
		if len(list) == 0 || best <= floor {
			return
		}
		norm := func(s float64) float64 { return (max(s, floor) - floor) / (best - floor) }
		for _, h := range list {
			f, ok := byID[h.Chunk.ID]
			if !ok {
				f = &fused{hit: h, order: len(all)}
				byID[h.Chunk.ID] = f
				all = append(all, f)
			}
			if !f.inList[n] {
				f.inList[n] = true
				f.score += w * norm(h.Score)
			}
		}
		missing[n] = w * norm(list[len(list)-1].Score)
	}
	add(0, keyword, wk, 0)
	add(1, vector, wv, -1)
	for _, f := range all {
		for n, in := range f.inList {
			if !in {
				f.score += missing[n]
			}
		}
	}
	return ranked(all)
}

// fused is a chunk of either ranking with its fused score and the order
// it was first seen in, which breaks ties.
type fused struct {
	hit    Hit
	score  float64
	order  int
	inList [2]bool // blend: which rankings hold it
}

// ranked orders fused hits by score, ties by first sight, as Hits.
func ranked(all []*fused) []Hit {
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		return all[i].order < all[j].order
	})
	out := make([]Hit, len(all))
	for i, f := range all {
		out[i] = Hit{Chunk: f.hit.Chunk, Score: f.score}
	}
	return out
}

// DocumentHit is a source a search found, with the chunks of it that
// matched best.
type DocumentHit struct {
	Source string
	Title  string
	// Score is the score of the document's best passage; in the default
	// hybrid mode, PageWeight times its keyword score as a whole page plus
	// the rest times its best passage's, each divided by the best (at most
	// 1), or, where the store cannot rank whole sources, the best
	// passage's plus its coverage of the question (at most 0.5).
	Score float64
	// Passages are the source's best chunks, best first: at most
	// DefaultPassages unless Passages sets it.
	Passages []Hit
}

// DefaultPassages is how many chunks a DocumentHit carries.
const DefaultPassages = 3

// Passages sets how many chunks each DocumentHit carries (default 3).
func Passages(n int) QueryOption {
	return queryOptionFunc(func(o *queryOptions) { o.passages = n })
}

// RetrieveDocuments returns the TopK sources that best match query, each
// once, with their best passages: the chunks Retrieve ranks, grouped by
// source. It asks each ranking for Candidates chunks (default
// max(10·TopK, 50)), so that sources with many matching chunks do not
// crowd the others out; fewer than TopK sources come back only when fewer
// match. A source ranks by its best chunk; in the default hybrid mode
// (Blend, no reranker) it also gains for the question's words its
// matching chunks, their titles and section paths hold together, each
// word weighed by how rare it is among the candidates. When the store
// ranks whole sources by keyword (store.SourceSearcher, as Local does),
// the default hybrid mode ranks a source by PageWeight times its BM25
// score as one document plus the rest times its best passage's fused
// score, each divided by the best of its list (see PageWeight).
func (kb *KnowledgeBase) RetrieveDocuments(ctx context.Context, query string, opts ...QueryOption) ([]DocumentHit, error) {
	if err := kb.validate(); err != nil {
		return nil, fmt.Errorf("retrieve documents: %w", err)
	}
	o, err := buildQueryOptions(append([]QueryOption{queryOptionFunc(func(o *queryOptions) { o.documents = true })}, opts...))
	if err != nil {
		return nil, fmt.Errorf("retrieve documents: %w", err)
	}
	topK := o.topK
	o.topK = 2 * o.candidates // finish keeps every candidate of both lists; grouping cuts
	hits, err := retrieve(ctx, kb.store, kb.embedder, query, o)
	if err != nil {
		return nil, fmt.Errorf("retrieve documents: %w", err)
	}
	if o.mode != Hybrid || o.rrf || o.reranker != nil {
		return groupDocuments(hits, topK, o.passages, nil), nil
	}
	ss, ok := kb.store.(store.SourceSearcher)
	if !ok {
		return groupDocuments(hits, topK, o.passages, newEvidence(query, hits)), nil
	}
	pages, err := ss.SearchKeywordSources(ctx, query, o.candidates, o.filter)
	if err != nil {
		return nil, fmt.Errorf("retrieve documents: %w", err)
	}
	docs := fuseDocuments(groupDocuments(hits, len(hits), o.passages, nil), pages, topK)
	// A source found as a page but by none of its chunks gets its best
	// passages by keyword.
	for i := range docs {
		if len(docs[i].Passages) > 0 {
			continue
		}
		f := Filter{"source": docs[i].Source}
		for k, v := range o.filter {
			f[k] = v
		}
		passages, err := kb.store.SearchKeyword(ctx, query, o.passages, f)
		if err != nil {
			return nil, fmt.Errorf("retrieve documents: %w", err)
		}
		docs[i].Passages = passages
		if len(passages) > 0 {
			docs[i].Title = passages[0].Chunk.Title
		}
	}
	return docs, nil
}

// PageWeight is the share of a source's rank that its keyword score as a
// whole page takes in hybrid RetrieveDocuments, the rest going to its best
// passage's fused score: BM25 over a whole page sees the question's words
// spread over its sections, which no one chunk holds, and combining a
// document's score with its best passage's is Callan's passage-level
// evidence ("Passage-level evidence in document retrieval", SIGIR 1994).
// On the 26-package subset of the Go reference benchmark
// (TestHybridRetrievalOnGoReference) shares from 0.6 to 0.8 ranked within
// 0.002 of each other; 0.7 is the middle.
const PageWeight = 0.7

// fuseDocuments ranks docs (sources with their best passage's fused
// score) and pages (sources by keyword as whole pages) together: a
// source's score is PageWeight·page + (1−PageWeight)·passage, each divided
// by the best of its list; a source one list lacks gets that list's
// lowest normalised score. Ties keep the passage ranking's order.
func fuseDocuments(docs []DocumentHit, pages []store.SourceHit, topK int) []DocumentHit {
	index := make(map[string]int, len(docs))
	for i, d := range docs {
		index[d.Source] = i
	}
	passage := make([]float64, len(docs))
	if len(docs) > 0 && docs[0].Score > 0 {
		for i, d := range docs {
			passage[i] = max(d.Score, 0) / docs[0].Score
		}
	}
	lowestPassage := 0.0
	if len(passage) > 0 {
		lowestPassage = passage[len(passage)-1]
	}
	page := make([]float64, len(docs))
	lowest := 0.0
	if len(pages) > 0 && pages[0].Score > 0 {
		lowest = pages[len(pages)-1].Score / pages[0].Score
	}
	for i := range page {
		page[i] = lowest
	}
	for _, p := range pages {
		norm := 0.0
		if pages[0].Score > 0 {
			norm = p.Score / pages[0].Score
		}
		i, ok := index[p.Source]
		if !ok {
			i = len(docs)
			index[p.Source] = i
			docs = append(docs, DocumentHit{Source: p.Source})
			passage = append(passage, lowestPassage)
			page = append(page, 0)
		}
		page[i] = norm
	}
	order := make([]int, len(docs))
	for i := range docs {
		order[i] = i
		docs[i].Score = PageWeight*page[i] + (1-PageWeight)*passage[i]
	}
	sort.SliceStable(order, func(a, b int) bool { return docs[order[a]].Score > docs[order[b]].Score })
	out := make([]DocumentHit, 0, min(topK, len(order)))
	for _, i := range order[:min(topK, len(order))] {
		out = append(out, docs[i])
	}
	return out
}

// groupDocuments groups ranked hits by source. A source ranks by its best
// hit, plus, when ev is not nil, coverWeight times the weight of the
// question's words that its chunks among the hits hold together, in their
// text, title or section path: a page whose title names the product and
// whose paragraph answers the question holds the whole question, though
// no one chunk of it does, as plain BM25 over whole pages sees. This is
// where headings count: a page's title and a chunk's section path are
// evidence for every chunk under them.
func groupDocuments(hits []Hit, topK, passages int, ev *evidence) []DocumentHit {
	var out []DocumentHit
	var masks []uint64
	index := map[string]int{}
	for _, h := range hits {
		i, ok := index[h.Chunk.Source]
		if !ok {
			i = len(out)
			index[h.Chunk.Source] = i
			out = append(out, DocumentHit{Source: h.Chunk.Source, Title: h.Chunk.Title, Score: h.Score})
			masks = append(masks, 0)
		}
		if ev != nil {
			masks[i] |= ev.cover(h.Chunk.Title, h.Chunk.Section, h.Chunk.Text)
		}
		if len(out[i].Passages) < passages {
			out[i].Passages = append(out[i].Passages, h)
		}
	}
	if ev != nil {
		for i := range out {
			out[i].Score += coverWeight * ev.weight(masks[i])
		}
		sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	}
	return out[:min(len(out), topK)]
}

// evidence weighs the question's words by how rare they are among the
// candidate chunks (log(1 + n/(1+df)) for n candidates, df of them holding
// the word), so that a document covering a rare word of the question
// counts for more than one covering a common one, without corpus
// statistics from the store.
type evidence struct {
	index map[string]int
	words []string
	idf   []float64
	total float64
}

// maxEvidenceWords bounds the words evidence tracks (a bit mask each).
const maxEvidenceWords = 64

func newEvidence(query string, pool []Hit) *evidence {
	e := &evidence{index: map[string]int{}}
	for _, w := range lex.Terms(query) {
		if _, dup := e.index[w]; !lex.Stop(w) && !dup && len(e.words) < maxEvidenceWords {
			e.index[w] = len(e.words)
			e.words = append(e.words, w)
		}
	}
	df := make([]int, len(e.words))
	counted := map[string]bool{}
	for i := range pool {
		c := &pool[i].Chunk
		if counted[c.ID] {
			continue
		}
		counted[c.ID] = true
		m := e.cover(c.Title, c.Section, c.Text)
		for j := range e.words {
			if m&(1<<j) != 0 {
				df[j]++
			}
		}
	}
	for j := range e.words {
		idf := math.Log(1 + float64(len(counted))/float64(1+df[j]))
		e.idf = append(e.idf, idf)
		e.total += idf
	}
	return e
}

// cover returns the mask of the question's words the texts hold.
func (e *evidence) cover(texts ...string) uint64 {
	if len(e.words) == 0 {
		return 0
	}
	var m uint64
	for _, t := range texts {
		lex.Each(t, func(w []byte) {
			if j, ok := e.index[string(w)]; ok { // no allocation: Go looks a []byte key up in place
				m |= 1 << j
			}
		})
	}
	return m
}

// weight is the share of the question's word weight that mask covers.
func (e *evidence) weight(mask uint64) float64 {
	if e.total == 0 {
		return 0
	}
	var s float64
	for j := range e.words {
		if mask&(1<<j) != 0 {
			s += e.idf[j]
		}
	}
	return s / e.total
}
