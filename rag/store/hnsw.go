package store

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"sort"
	"sync"

	"github.com/cubestudio/cube/rag/internal/vecmath"
)

// HNSWParams tunes the approximate index (Malkov and Yashunin's
// hierarchical navigable small world graph).
type HNSWParams struct {
	// M is how many neighbours a node links to on the upper layers; the
	// bottom layer allows 2M. Default 16.
	M int
	// EfConstruction is the candidate list size while inserting; larger
	// builds a better graph, slower. Default 100.
	EfConstruction int
	// EfSearch is the candidate list size while searching (at least k);
	// larger finds more of the true neighbours, slower. Default 64.
	EfSearch int
}

func (p HNSWParams) withDefaults() HNSWParams {
	if p.M == 0 {
		p.M = 16
	}
	if p.EfConstruction == 0 {
		p.EfConstruction = 100
	}
	if p.EfSearch == 0 {
		p.EfSearch = 64
	}
	return p
}

type candidate struct {
	id   int32
	dist float32
}

// minHeap pops the nearest candidate first; maxHeap the farthest.
type minHeap []candidate

func (h minHeap) Len() int           { return len(h) }
func (h minHeap) Less(i, j int) bool { return h[i].dist < h[j].dist }
func (h minHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *minHeap) Push(x any)        { *h = append(*h, x.(candidate)) }
func (h *minHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

type maxHeap []candidate

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return h[i].dist > h[j].dist }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(candidate)) }
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// hnsw is the graph over a store's slots. Deleted slots stay in the graph
// (they still route searches) and are dropped from results by the caller.
type hnsw struct {
	p        HNSWParams
	ml       float64
	rng      *rand.Rand
	vec      func(int32) []float32
	friends  [][][]int32 // friends[node][level]
	entry    int32
	maxLevel int
	visited  sync.Pool
}

func newHNSW(p HNSWParams, vec func(int32) []float32) *hnsw {
	p = p.withDefaults()
	// A fixed seed makes the graph, and so search results, reproducible.
	return &hnsw{p: p, ml: 1 / math.Log(float64(p.M)), rng: rand.New(rand.NewPCG(1, 2)), vec: vec, entry: -1}
}

type visitSet struct {
	marks []uint32
	gen   uint32
}

func (h *hnsw) visitSet() *visitSet {
	v, _ := h.visited.Get().(*visitSet)
	if v == nil {
		v = &visitSet{}
	}
	if len(v.marks) < len(h.friends) {
		v.marks = make([]uint32, len(h.friends)+len(h.friends)/4+16)
		v.gen = 0
	}
	v.gen++
	if v.gen == 0 {
		clear(v.marks)
		v.gen = 1
	}
	return v
}

func (h *hnsw) dist(q []float32, id int32) float32 { return 1 - vecmath.Dot(q, h.vec(id)) }

func (h *hnsw) maxFriends(level int) int {
	if level == 0 {
		return 2 * h.p.M
	}
	return h.p.M
}

// searchLayer returns up to ef nodes nearest q on level, nearest first.
func (h *hnsw) searchLayer(q []float32, entries []candidate, ef, level int) []candidate {
	v := h.visitSet()
	defer h.visited.Put(v)
	cands := make(minHeap, 0, ef*2)
	results := make(maxHeap, 0, ef+1)
	for _, e := range entries {
		v.marks[e.id] = v.gen
		heap.Push(&cands, e)
		heap.Push(&results, e)
		if results.Len() > ef {
			heap.Pop(&results)
		}
	}
	for cands.Len() > 0 {
		c := heap.Pop(&cands).(candidate)
		if results.Len() >= ef && c.dist > results[0].dist {
			break
		}
		for _, n := range h.friends[c.id][level] {
			if v.marks[n] == v.gen {
				continue
			}
			v.marks[n] = v.gen
			d := h.dist(q, n)
			if results.Len() < ef || d < results[0].dist {
				heap.Push(&cands, candidate{n, d})
				heap.Push(&results, candidate{n, d})
				if results.Len() > ef {
					heap.Pop(&results)
				}
			}
		}
	}
	out := []candidate(results)
	sort.Slice(out, func(i, j int) bool { return out[i].dist < out[j].dist })
	return out
}

// selectNeighbors keeps up to m of cands (nearest first) by the paper's
// heuristic: a candidate closer to an already kept neighbour than to the
// new node adds no new direction and is skipped; skipped ones fill the
// list if the heuristic kept fewer than m.
func (h *hnsw) selectNeighbors(cands []candidate, m int) []int32 {
	kept := make([]int32, 0, m)
	var skipped []int32
	for _, c := range cands {
		if len(kept) >= m {
			break
		}
		good := true
		cv := h.vec(c.id)
		for _, k := range kept {
			if 1-vecmath.Dot(cv, h.vec(k)) < c.dist {
				good = false
				break
			}
		}
		if good {
			kept = append(kept, c.id)
		} else {
			skipped = append(skipped, c.id)
		}
	}
	for _, s := range skipped {
		if len(kept) >= m {
			break
		}
		kept = append(kept, s)
	}
	return kept
}

// insert adds node id, whose vector vec(id) returns.
func (h *hnsw) insert(id int32) {
	for int(id) >= len(h.friends) {
		h.friends = append(h.friends, nil)
	}
	level := int(math.Floor(-math.Log(1-h.rng.Float64()) * h.ml))
	h.friends[id] = make([][]int32, level+1)
	if h.entry < 0 {
		h.entry, h.maxLevel = id, level
		return
	}
	q := h.vec(id)
	ep := candidate{h.entry, h.dist(q, h.entry)}
	for l := h.maxLevel; l > level; l-- {
		ep = h.greedy(q, ep, l)
	}
	eps := []candidate{ep}
	for l := min(level, h.maxLevel); l >= 0; l-- {
		w := h.searchLayer(q, eps, h.p.EfConstruction, l)
		neigh := h.selectNeighbors(w, h.p.M)
		h.friends[id][l] = neigh
		for _, n := range neigh {
			h.link(n, id, l)
		}
		eps = w
	}
	if level > h.maxLevel {
		h.entry, h.maxLevel = id, level
	}
}

// link adds to to from's friends on level, keeping the nearest when full.
func (h *hnsw) link(from, to int32, level int) {
	fs := append(h.friends[from][level], to)
	if len(fs) > h.maxFriends(level) {
		fv := h.vec(from)
		cs := make([]candidate, len(fs))
		for i, f := range fs {
			cs[i] = candidate{f, 1 - vecmath.Dot(fv, h.vec(f))}
		}
		sort.Slice(cs, func(i, j int) bool { return cs[i].dist < cs[j].dist })
		fs = fs[:h.maxFriends(level)]
		for i := range fs {
			fs[i] = cs[i].id
		}
	}
	h.friends[from][level] = fs
}

func (h *hnsw) greedy(q []float32, ep candidate, level int) candidate {
	for changed := true; changed; {
		changed = false
		for _, n := range h.friends[ep.id][level] {
			if d := h.dist(q, n); d < ep.dist {
				ep, changed = candidate{n, d}, true
			}
		}
	}
	return ep
}

// search returns up to ef nodes nearest q, nearest first.
func (h *hnsw) search(q []float32, ef int) []candidate {
	if h.entry < 0 {
		return nil
	}
	ep := candidate{h.entry, h.dist(q, h.entry)}
	for l := h.maxLevel; l > 0; l-- {
		ep = h.greedy(q, ep, l)
	}
	return h.searchLayer(q, []candidate{ep}, ef, 0)
}
