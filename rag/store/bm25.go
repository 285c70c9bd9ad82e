package store

import (
	"math"

	"github.com/cubestudio/cube/rag/internal/lex"
)

// BM25 parameters (Robertson and Zaragoza's usual values): k1 saturates a
// term's frequency, b normalises for chunk length.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

type posting struct {
	slot int32
	tf   uint32
}

// bm25 is an inverted index over the store's slots. Postings of deleted
// slots stay until the store is compacted; the caller skips them.
type bm25 struct {
	postings map[string][]posting
	df       map[string]int
	docLen   []int32
	docTerms [][]string // unique terms per slot, to undo df on delete
	alive    int
	totalLen int64
}

func newBM25() *bm25 { return &bm25{postings: map[string][]posting{}, df: map[string]int{}} }

func (b *bm25) add(slot int32, text string) {
	ts := lex.Terms(text)
	tf := map[string]uint32{}
	for _, t := range ts {
		tf[t]++
	}
	for int(slot) >= len(b.docLen) {
		b.docLen = append(b.docLen, 0)
		b.docTerms = append(b.docTerms, nil)
	}
	uniq := make([]string, 0, len(tf))
	for t, n := range tf {
		b.postings[t] = append(b.postings[t], posting{slot, n})
		b.df[t]++
		uniq = append(uniq, t)
	}
	b.docLen[slot] = int32(len(ts))
	b.docTerms[slot] = uniq
	b.alive++
	b.totalLen += int64(len(ts))
}

func (b *bm25) remove(slot int32) {
	for _, t := range b.docTerms[slot] {
		if b.df[t]--; b.df[t] == 0 {
			delete(b.df, t)
			delete(b.postings, t)
		}
	}
	b.docTerms[slot] = nil
	b.alive--
	b.totalLen -= int64(b.docLen[slot])
}

// scores returns the BM25 score of every slot that contains a query term
// and that accept admits.
func (b *bm25) scores(query string, accept func(int32) bool) map[int32]float64 {
	out := map[int32]float64{}
	if b.alive == 0 {
		return out
	}
	avg := float64(b.totalLen) / float64(b.alive)
	if avg == 0 {
		avg = 1
	}
	seen := map[string]bool{}
	for _, t := range lex.Terms(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		df := b.df[t]
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (float64(b.alive)-float64(df)+0.5)/(float64(df)+0.5))
		for _, p := range b.postings[t] {
			if !accept(p.slot) {
				continue
			}
			tf := float64(p.tf)
			dl := float64(b.docLen[p.slot])
			out[p.slot] += idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*dl/avg))
		}
	}
	return out
}
