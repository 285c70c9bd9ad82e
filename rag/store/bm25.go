package store

import (
	"math"
	"slices"
	"sync"

	"github.com/cubestudio/cube/rag/internal/lex"
)

// BM25 parameters (Robertson and Zaragoza's usual values): k1 saturates a
// term's frequency, b normalises for chunk length.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// KeywordFields weighs the fields of a chunk that keyword search reads, as
// BM25F does: a term's frequency in a chunk is the weighted sum of its
// frequencies in the fields, and so is the chunk's length. The zero value
// (and the default) reads the text and the title at weight 1 each: on the
// Go reference benchmark of package rag (600 questions) the title added
// 0.005 recall@10 and MRR@10 to keyword search and made hybrid documents
// rank above plain BM25 over whole pages. KeywordFields{Text: 1} reads the
// text alone, plain BM25 over the chunk's text.
type KeywordFields struct {
	// Text weighs Chunk.Text; 0 means 1.
	Text float32
	// Title weighs Chunk.Title and Section weighs Chunk.Section (the
	// Markdown headings above the chunk); 0 leaves the field out, unless
	// every field is 0 (the default above).
	Title, Section float32
}

func (w KeywordFields) withDefaults() KeywordFields {
	if w == (KeywordFields{}) {
		return KeywordFields{Text: 1, Title: 1}
	}
	if w.Text == 0 {
		w.Text = 1
	}
	return w
}

type posting struct {
	slot int32
	tf   float32 // weighted term frequency
}

// bm25 is an inverted index over the store's slots: a term dictionary,
// one posting list per term in slot order (slots only grow, so appending
// keeps them sorted), and each slot's length. Postings of deleted slots
// stay until the store is compacted; search skips them.
type bm25 struct {
	fields   KeywordFields
	terms    map[string]int32
	postings [][]posting // by term ID
	df       []int32     // live chunks holding the term, by term ID
	docLen   []float32
	docTerms [][]int32 // unique term IDs per slot, to undo df on delete
	alive    int
	totalLen float64
	acc      sync.Pool // *accumulator
}

func newBM25(fields KeywordFields) *bm25 {
	return &bm25{fields: fields.withDefaults(), terms: map[string]int32{}}
}

// analysis is what indexing a chunk needs from its text, computed without
// the index (in parallel on replay).
type analysis struct {
	terms []string
	tf    []float32
	len   float32
}

// analyzer is the scratch space of one analysis: each distinct word's
// position in terms and tf.
type analyzer struct {
	index map[string]int32
	terms []string
	tf    []float32
}

var analyzers = sync.Pool{New: func() any { return &analyzer{index: map[string]int32{}} }}

// analyze counts the chunk's words, weighted by field, in the order they
// first occur (a deterministic term ID order); a word seen before costs a
// map lookup and no allocation.
func (b *bm25) analyze(c *Chunk) analysis {
	z := analyzers.Get().(*analyzer)
	var n float32
	add := func(text string, w float32) {
		if w == 0 || text == "" {
			return
		}
		lex.Each(text, func(word []byte) {
			i, ok := z.index[string(word)]
			if !ok {
				t := string(word)
				i = int32(len(z.terms))
				z.index[t] = i
				z.terms = append(z.terms, t)
				z.tf = append(z.tf, 0)
			}
			z.tf[i] += w
			n += w
		})
	}
	add(c.Text, b.fields.Text)
	add(c.Title, b.fields.Title)
	add(c.Section, b.fields.Section)
	a := analysis{terms: slices.Clone(z.terms), tf: slices.Clone(z.tf), len: n}
	clear(z.index)
	z.terms, z.tf = z.terms[:0], z.tf[:0]
	analyzers.Put(z)
	return a
}

func (b *bm25) add(slot int32, a analysis) {
	for int(slot) >= len(b.docLen) {
		b.docLen = append(b.docLen, 0)
		b.docTerms = append(b.docTerms, nil)
	}
	ids := make([]int32, len(a.terms))
	for i, t := range a.terms {
		id, ok := b.terms[t]
		if !ok {
			id = int32(len(b.postings))
			b.terms[t] = id
			b.postings = append(b.postings, nil)
			b.df = append(b.df, 0)
		}
		b.postings[id] = append(b.postings[id], posting{slot, a.tf[i]})
		b.df[id]++
		ids[i] = id
	}
	b.docLen[slot] = a.len
	b.docTerms[slot] = ids
	b.alive++
	b.totalLen += float64(a.len)
}

func (b *bm25) remove(slot int32) {
	for _, t := range b.docTerms[slot] {
		b.df[t]--
	}
	b.docTerms[slot] = nil
	b.alive--
	b.totalLen -= float64(b.docLen[slot])
}

// accumulator holds one score per slot for term-at-a-time scoring; only
// the slots in touched are non-zero between queries.
type accumulator struct {
	score   []float64
	touched []int32
}

// queryTerm is a query term the index knows, with its IDF.
type queryTerm struct {
	id  int32
	idf float64
}

// query returns the query's distinct known terms in query order (the
// order scores are summed in) with their IDF.
func (b *bm25) query(query string) []queryTerm {
	var out []queryTerm
	seen := map[string]bool{}
	for _, t := range lex.Terms(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		id, ok := b.terms[t]
		if !ok || b.df[id] == 0 {
			continue
		}
		df := float64(b.df[id])
		out = append(out, queryTerm{id, math.Log(1 + (float64(b.alive)-df+0.5)/(df+0.5))})
	}
	return out
}

func (b *bm25) avgLen() float64 {
	avg := b.totalLen / float64(b.alive)
	if avg == 0 {
		avg = 1
	}
	return avg
}

// termScore is one term's BM25 contribution; every scorer uses it, so
// that their sums agree to the bit.
func termScore(idf, tf, dl, avg float64) float64 {
	return idf * tf * (bm25K1 + 1) / (tf + bm25K1*(1-bm25B+bm25B*dl/avg))
}

// topK returns the k best slots that accept admits, best first: highest
// score, then smallest chunk ID (less reports a smaller ID). It scores
// term at a time into a dense accumulator, then keeps the k best in a
// bounded heap; no map and no sort over every scored chunk.
func (b *bm25) topK(query string, k int, accept func(int32) bool, less func(a, b int32) bool) []scored {
	if b.alive == 0 || k <= 0 {
		return nil
	}
	qs := b.query(query)
	if len(qs) == 0 {
		return nil
	}
	avg := b.avgLen()
	a, _ := b.acc.Get().(*accumulator)
	if a == nil {
		a = &accumulator{}
	}
	if len(a.score) < len(b.docLen) {
		a.score = make([]float64, len(b.docLen)+len(b.docLen)/4)
	}
	// A slot's admission is decided once, on its first posting; a rejected
	// slot is marked with -1 and never touched again.
	for _, q := range qs {
		for _, p := range b.postings[q.id] {
			s := a.score[p.slot]
			if s < 0 {
				continue
			}
			if s == 0 {
				if !accept(p.slot) {
					a.score[p.slot] = -1
					a.touched = append(a.touched, p.slot)
					continue
				}
				a.touched = append(a.touched, p.slot)
			}
			a.score[p.slot] = s + termScore(q.idf, float64(p.tf), float64(b.docLen[p.slot]), avg)
		}
	}
	h := topHeap{less: less}
	for _, slot := range a.touched {
		if s := a.score[slot]; s > 0 {
			h.offer(scored{slot, s}, k)
		}
		a.score[slot] = 0
	}
	a.touched = a.touched[:0]
	b.acc.Put(a)
	return h.sorted()
}

type scored struct {
	slot  int32
	score float64
}

// topHeap keeps the k best offers; its root is the worst of them.
type topHeap struct {
	items []scored
	less  func(a, b int32) bool // a's chunk ID before b's
}

// better reports whether x ranks before y.
func (h *topHeap) better(x, y scored) bool {
	if x.score != y.score {
		return x.score > y.score
	}
	return h.less(x.slot, y.slot)
}

func (h *topHeap) offer(x scored, k int) {
	if len(h.items) < k {
		h.items = append(h.items, x)
		for i := len(h.items) - 1; i > 0; {
			p := (i - 1) / 2
			if !h.better(h.items[p], h.items[i]) {
				break
			}
			h.items[p], h.items[i] = h.items[i], h.items[p]
			i = p
		}
		return
	}
	if !h.better(x, h.items[0]) {
		return
	}
	h.items[0] = x
	for i := 0; ; {
		l, r, w := 2*i+1, 2*i+2, i
		if l < len(h.items) && h.better(h.items[w], h.items[l]) {
			w = l
		}
		if r < len(h.items) && h.better(h.items[w], h.items[r]) {
			w = r
		}
		if w == i {
			return
		}
		h.items[w], h.items[i] = h.items[i], h.items[w]
		i = w
	}
}

func (h *topHeap) sorted() []scored {
	slices.SortFunc(h.items, func(x, y scored) int {
		if h.better(x, y) {
			return -1
		}
		if h.better(y, x) {
			return 1
		}
		return 0
	})
	return h.items
}
