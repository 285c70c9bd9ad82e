package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
)

// SourceHit is a source that keyword search over whole sources found.
type SourceHit struct {
	Source string
	Score  float64
}

// SourceSearcher is a Store that ranks whole sources by keyword: each
// source's chunks taken together as one document.
type SourceSearcher interface {
	SearchKeywordSources(ctx context.Context, query string, k int, f Filter) ([]SourceHit, error)
}

// sourceIndex numbers the sources and keeps, per source, its live chunks
// and their summed keyword length; per slot, its source's number.
type sourceIndex struct {
	ids      map[string]int32
	names    []string
	of       []int32 // by slot
	chunks   []int32 // live chunks, by source
	length   []float64
	live     int     // sources with a live chunk
	totalLen float64 // of live chunks
	acc      sync.Pool
}

func (x *sourceIndex) add(slot int32, source string, length float32) {
	if x.ids == nil {
		x.ids = map[string]int32{}
	}
	id, ok := x.ids[source]
	if !ok {
		id = int32(len(x.names))
		x.ids[source] = id
		x.names = append(x.names, source)
		x.chunks = append(x.chunks, 0)
		x.length = append(x.length, 0)
	}
	for int(slot) >= len(x.of) {
		x.of = append(x.of, -1)
	}
	x.of[slot] = id
	if x.chunks[id] == 0 {
		x.live++
	}
	x.chunks[id]++
	x.length[id] += float64(length)
	x.totalLen += float64(length)
}

func (x *sourceIndex) remove(slot int32, length float32) {
	id := x.of[slot]
	x.chunks[id]--
	if x.chunks[id] == 0 {
		x.live--
	}
	x.length[id] -= float64(length)
	x.totalLen -= float64(length)
}

// sourceAccumulator holds, for the term being scored, each source's
// summed frequency, and each source's score so far.
type sourceAccumulator struct {
	tf, score    []float64
	termTouched  []int32
	touched      []int32
	seen         []bool
	admitted     []int8 // by slot: 0 undecided, 1 accepted, -1 rejected
	admitTouched []int32
}

// SearchKeywordSources ranks sources by BM25 (k1 1.2, b 0.75) over each
// source's live chunks that match f taken together: a term's frequency
// in a source is its weighted frequency summed over those chunks, the
// source's length is the summed length of its live chunks, and the IDF
// counts sources, not chunks. This is plain BM25 over whole documents,
// computed from the chunk index; ties go to the smaller source name.
func (s *Local) SearchKeywordSources(ctx context.Context, query string, k int, f Filter) ([]SourceHit, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	if errs := searchLimits(k, f); len(errs) > 0 {
		return nil, fmt.Errorf("search sources: %w", errors.Join(errs...))
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	x, b := &s.sources, s.bm
	if x.live == 0 {
		return nil, nil
	}
	a, _ := x.acc.Get().(*sourceAccumulator)
	if a == nil {
		a = &sourceAccumulator{}
	}
	if len(a.tf) < len(x.names) {
		n := len(x.names) + len(x.names)/4
		a.tf, a.score, a.seen = make([]float64, n), make([]float64, n), make([]bool, n)
	}
	if len(a.admitted) < len(s.slots) {
		a.admitted = make([]int8, len(s.slots)+len(s.slots)/4)
	}
	avg := x.totalLen / float64(x.live)
	if avg == 0 {
		avg = 1
	}
	n := float64(x.live)
	for _, q := range b.query(query) {
		for _, p := range b.postings[q.id] {
			adm := a.admitted[p.slot]
			if adm == 0 {
				adm = -1
				if sl := &s.slots[p.slot]; sl.alive && (len(f) == 0 || f.Match(&sl.chunk)) {
					adm = 1
				}
				a.admitted[p.slot] = adm
				a.admitTouched = append(a.admitTouched, p.slot)
			}
			if adm < 0 {
				continue
			}
			src := x.of[p.slot]
			if a.tf[src] == 0 {
				a.termTouched = append(a.termTouched, src)
			}
			a.tf[src] += float64(p.tf)
		}
		df := float64(len(a.termTouched))
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for _, src := range a.termTouched {
			if !a.seen[src] {
				a.seen[src] = true
				a.touched = append(a.touched, src)
			}
			a.score[src] += termScore(idf, a.tf[src], x.length[src], avg)
			a.tf[src] = 0
		}
		a.termTouched = a.termTouched[:0]
	}
	h := topHeap{less: func(i, j int32) bool { return x.names[i] < x.names[j] }}
	for _, src := range a.touched {
		h.offer(scored{src, a.score[src]}, k)
		a.score[src], a.seen[src] = 0, false
	}
	for _, slot := range a.admitTouched {
		a.admitted[slot] = 0
	}
	a.touched, a.admitTouched = a.touched[:0], a.admitTouched[:0]
	x.acc.Put(a)
	top := h.sorted()
	out := make([]SourceHit, len(top))
	for i, t := range top {
		out[i] = SourceHit{Source: x.names[t.slot], Score: t.score}
	}
	return out, nil
}
