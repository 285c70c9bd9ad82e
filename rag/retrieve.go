package rag

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/cubestudio/cube/rag/internal/vecmath"
	openai "github.com/sashabaranov/go-openai"
)

// Mode says how Retrieve finds chunks. A Mode is itself a QueryOption:
// kb.Retrieve(ctx, q, rag.Keyword).
type Mode int

const (
	// Hybrid fuses the vector and the keyword ranking by a convex
	// combination of normalised scores (see Blend), or by reciprocal rank
	// fusion when RRF is given; the default.
	Hybrid Mode = iota
	// Vector ranks by cosine similarity of the query's embedding.
	Vector
	// Keyword ranks by BM25.
	Keyword
)

func (m Mode) String() string {
	switch m {
	case Hybrid:
		return "hybrid"
	case Vector:
		return "vector"
	case Keyword:
		return "keyword"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Default retrieval settings.
const (
	DefaultTopK = 5
	// DefaultRRFK is the rank constant of reciprocal rank fusion, 60 as in
	// Cormack, Clarke and Büttcher (2009), where it was found robust.
	DefaultRRFK = 60
)

// QueryOption configures Retrieve, RetrieveDocuments, Answer and
// AnswerStream: a Mode, or what TopK, MinScore, MinSimilarity, Where,
// Blend, RRF, Candidates, Passages, Rerank and History return. Defaults come first, then the caller's options in order.
type QueryOption interface {
	applyQuery(*queryOptions)
}

// queryOptionFunc is the concrete type behind the option constructors.
type queryOptionFunc func(*queryOptions)

func (f queryOptionFunc) applyQuery(o *queryOptions) { f(o) }

// applyQuery selects m: vector, keyword or hybrid retrieval.
func (m Mode) applyQuery(o *queryOptions) { o.mode = m }

type queryOptions struct {
	topK                        int
	minScore, minSimilarity     float64
	filter                      Filter
	mode                        Mode
	vectorWeight, keywordWeight float64
	rrfK                        int
	rrf                         bool // fuse by RRF rather than Blend
	documents                   bool // RetrieveDocuments: more candidates
	passages                    int
	candidates                  int
	reranker                    Reranker
	history                     []openai.ChatCompletionMessage
	setMinScore, setMinSim      bool
}

// TopK sets how many chunks (Retrieve) or sources (RetrieveDocuments) come
// back (default 5).
func TopK(k int) QueryOption { return queryOptionFunc(func(o *queryOptions) { o.topK = k }) }

// MinScore drops hits whose final score (cosine, BM25, the fused score or
// the reranker's, whichever ranks last) is below s.
func MinScore(s float64) QueryOption {
	return queryOptionFunc(func(o *queryOptions) { o.minScore, o.setMinScore = s, true })
}

// MinSimilarity drops vector candidates whose cosine similarity is below
// s before they are fused or returned, so a hybrid search does not pull in
// chunks that merely rank well among unrelated ones.
func MinSimilarity(s float64) QueryOption {
	return queryOptionFunc(func(o *queryOptions) { o.minSimilarity, o.setMinSim = s, true })
}

// Where restricts retrieval to chunks matching f.
func Where(f Filter) QueryOption {
	return queryOptionFunc(func(o *queryOptions) {
		o.filter = make(Filter, len(f))
		for k, v := range f {
			o.filter[k] = v
		}
	})
}

// RRF sets hybrid retrieval to fuse by weighted reciprocal rank fusion
// instead of Blend: a chunk's fused score is vectorWeight/(k+r_v) +
// keywordWeight/(k+r_k), where r_v and r_k are its 1-based ranks in the
// vector and keyword lists (a list it is missing from adds nothing);
// DefaultRRFK is the usual k. A store that fuses itself (HybridSearcher,
// Milvus) does so when both weights are equal.
func RRF(vectorWeight, keywordWeight float64, k int) QueryOption {
	return queryOptionFunc(func(o *queryOptions) {
		o.vectorWeight, o.keywordWeight, o.rrfK, o.rrf = vectorWeight, keywordWeight, k, true
	})
}

// Candidates sets how many chunks each ranking contributes to fusion and
// reranking (default max(4·TopK, 20), and max(10·TopK, 50) for
// RetrieveDocuments).
func Candidates(n int) QueryOption {
	return queryOptionFunc(func(o *queryOptions) { o.candidates = n })
}

// Rerank rescores the fused candidates with r and keeps its top k.
func Rerank(r Reranker) QueryOption { return queryOptionFunc(func(o *queryOptions) { o.reranker = r }) }

// History gives Answer the conversation so far, oldest first; it goes
// between the system prompt and the question.
func History(messages ...openai.ChatCompletionMessage) QueryOption {
	return queryOptionFunc(func(o *queryOptions) { o.history = append([]openai.ChatCompletionMessage(nil), messages...) })
}

func buildQueryOptions(opts []QueryOption) (queryOptions, error) {
	o := queryOptions{topK: DefaultTopK, vectorWeight: DefaultVectorWeight, keywordWeight: DefaultKeywordWeight,
		rrfK: DefaultRRFK, passages: DefaultPassages}
	for _, opt := range opts {
		if opt != nil {
			opt.applyQuery(&o)
		}
	}
	var errs []error
	if o.topK <= 0 {
		errs = append(errs, fmt.Errorf("topK: %d: must be positive", o.topK))
	}
	if o.mode < Hybrid || o.mode > Keyword {
		errs = append(errs, fmt.Errorf("mode: %s: must be rag.Hybrid, rag.Vector or rag.Keyword", o.mode))
	}
	if o.vectorWeight < 0 || o.keywordWeight < 0 || o.vectorWeight+o.keywordWeight == 0 ||
		math.IsNaN(o.vectorWeight) || math.IsNaN(o.keywordWeight) {
		name := "blend"
		if o.rrf {
			name = "rrf"
		}
		errs = append(errs, fmt.Errorf("%s: weights %g and %g: must not be negative and not both zero", name, o.vectorWeight, o.keywordWeight))
	}
	if o.rrfK < 0 {
		errs = append(errs, fmt.Errorf("rrf: k %d: must not be negative", o.rrfK))
	}
	if o.passages <= 0 {
		errs = append(errs, fmt.Errorf("passages: %d: must be positive", o.passages))
	}
	if o.candidates < 0 {
		errs = append(errs, fmt.Errorf("candidates: %d: must not be negative", o.candidates))
	}
	if math.IsNaN(o.minScore) {
		errs = append(errs, errors.New("minScore: NaN"))
	}
	if o.setMinSim && (o.minSimilarity < -1 || o.minSimilarity > 1 || math.IsNaN(o.minSimilarity)) {
		errs = append(errs, fmt.Errorf("minSimilarity: %g: a cosine similarity is between -1 and 1", o.minSimilarity))
	}
	if err := o.filter.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("where: %w", err))
	}
	if len(errs) > 0 {
		return o, errors.Join(errs...)
	}
	if o.candidates == 0 {
		o.candidates = max(4*o.topK, 20)
		if o.documents {
			o.candidates = max(10*o.topK, 50)
		}
	}
	o.candidates = max(o.candidates, o.topK)
	return o, nil
}

// retrieve runs the search o describes against store.
func retrieve(ctx context.Context, store Store, embedder Embedder, query string, o queryOptions) ([]Hit, error) {
	if hs, ok := store.(HybridSearcher); ok && o.mode == Hybrid && o.rrf && o.vectorWeight == o.keywordWeight && !o.setMinSim {
		if hits, done, err := retrieveHybridInStore(ctx, hs, embedder, query, o); done {
			return hits, err
		}
	}
	var vector, keyword []Hit
	if o.mode != Keyword {
		vecs, err := embedder.Embed(ctx, []string{query})
		if err != nil {
			return nil, fmt.Errorf("embed query: %w", err)
		}
		if len(vecs) != 1 {
			return nil, fmt.Errorf("embed query: %d vectors for one text", len(vecs))
		}
		if vecmath.Normalize(append([]float32(nil), vecs[0]...)) {
			vector, err = store.SearchVector(ctx, vecs[0], o.candidates, o.filter)
			if err != nil {
				return nil, err
			}
		} // a query without words has no direction: no vector candidates
		if o.setMinSim {
			vector = slices.DeleteFunc(vector, func(h Hit) bool { return h.Score < o.minSimilarity })
		}
	}
	if o.mode != Vector {
		var err error
		keyword, err = store.SearchKeyword(ctx, query, o.candidates, o.filter)
		if err != nil {
			return nil, err
		}
	}
	var hits []Hit
	switch o.mode {
	case Vector:
		hits = vector
	case Keyword:
		hits = keyword
	default:
		if o.rrf {
			hits = fuse(vector, keyword, o.vectorWeight, o.keywordWeight, o.rrfK)
		} else {
			hits = blend(vector, keyword, o.vectorWeight, o.keywordWeight)
		}
	}
	return finish(ctx, hits, query, o)
}

// retrieveHybridInStore lets the store fuse; its unweighted RRF scores
// are scaled by the (equal) weight, so they match fuse's. A query whose
// vector has no direction is left to the generic path (done false), which
// searches by keyword alone.
func retrieveHybridInStore(ctx context.Context, hs HybridSearcher, embedder Embedder, query string, o queryOptions) (hits []Hit, done bool, err error) {
	vecs, err := embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, true, fmt.Errorf("embed query: %w", err)
	}
	if len(vecs) != 1 {
		return nil, true, fmt.Errorf("embed query: %d vectors for one text", len(vecs))
	}
	if !vecmath.Normalize(append([]float32(nil), vecs[0]...)) {
		return nil, false, nil
	}
	hits, err = hs.SearchHybrid(ctx, vecs[0], query, o.candidates, o.filter, o.rrfK)
	if err != nil {
		return nil, true, err
	}
	for i := range hits {
		hits[i].Score *= o.vectorWeight
	}
	hits, err = finish(ctx, hits, query, o)
	return hits, true, err
}

// finish reranks, cuts to TopK and applies MinScore.
func finish(ctx context.Context, hits []Hit, query string, o queryOptions) ([]Hit, error) {
	if o.reranker != nil && len(hits) > 0 {
		hits = hits[:min(len(hits), o.candidates)]
		texts := make([]string, len(hits))
		for i, h := range hits {
			texts[i] = h.Chunk.Text
		}
		scores, err := o.reranker.Rerank(ctx, query, texts)
		if err != nil {
			return nil, fmt.Errorf("rerank: %w", err)
		}
		if len(scores) != len(hits) {
			return nil, fmt.Errorf("rerank: %d scores for %d texts", len(scores), len(hits))
		}
		for i := range hits {
			hits[i].Score = scores[i]
		}
		sort.SliceStable(hits, func(i, j int) bool { return hits[i].Score > hits[j].Score })
	}
	hits = hits[:min(len(hits), o.topK)]
	if o.setMinScore {
		hits = slices.DeleteFunc(hits, func(h Hit) bool { return h.Score < o.minScore })
	}
	return hits, nil
}

// fuse merges two rankings by weighted reciprocal rank fusion; ties keep
// the vector ranking's order, then the keyword ranking's.
func fuse(vector, keyword []Hit, wv, wk float64, k int) []Hit {
	byID := map[string]*fused{}
	var all []*fused
	add := func(list []Hit, w float64) {
		for r, h := range list {
			f, ok := byID[h.Chunk.ID]
			if !ok {
				f = &fused{hit: h, order: len(all)}
				byID[h.Chunk.ID] = f
				all = append(all, f)
			}
			f.score += w / float64(k+r+1)
		}
	}
	add(vector, wv)
	add(keyword, wk)
	return ranked(all)
}
