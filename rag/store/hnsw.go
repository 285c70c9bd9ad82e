package store

import (
	"container/heap"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/cubestudio/cube/rag/internal/vecmath"
)

// HNSWParams tunes the approximate index (Malkov and Yashunin's
// hierarchical navigable small world graph).
type HNSWParams struct {
	// M is how many neighbours a node links to on the upper layers; the
	// bottom layer allows 2M. Default 16.
	M int
	// EfConstruction is the candidate list size while inserting; larger
	// builds a better graph, slower. Default 200: on real text embedded
	// with rag/embed's offline default (100,000 chunks of Go's sources, two
	// sets of 200 questions) the graph it builds found 0.967 and 0.954 of
	// the exact top 10 at efSearch 512, where 100 found 0.939 and 0.945;
	// it takes about twice as long to build.
	EfConstruction int
	// EfSearch is the candidate list size while searching (at least k);
	// larger finds more of the true neighbours, slower. Default 512 (on
	// the graph above: 384 found 0.960 and 0.944, 768 0.976 and 0.961).
	EfSearch int
}

func (p HNSWParams) withDefaults() HNSWParams {
	if p.M == 0 {
		p.M = 16
	}
	if p.EfConstruction == 0 {
		p.EfConstruction = 200
	}
	if p.EfSearch == 0 {
		p.EfSearch = 512
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

// hnsw is the graph over a store's slots: node i is slot i. Deleted slots
// stay in the graph (they still route searches) and are dropped from
// results by the caller. Nodes are inserted in batches by several
// goroutines at once, each node's lists guarded by its own lock (as
// hnswlib does); mu keeps searches out while a batch goes in.
type hnsw struct {
	p        HNSWParams
	ml       float64
	mu       sync.RWMutex
	vecs     [][]float32 // the nodes' vectors, shared with the slots
	friends  [][][]int32 // friends[node][level]
	locks    []sync.Mutex
	entryMu  sync.Mutex
	entry    int32
	maxLevel int
	visited  sync.Pool
	// n is how many nodes are linked in: len(vecs) once add returns. It is
	// read without mu (by the store, to see whether the graph is behind).
	n atomic.Int64
}

func newHNSW(p HNSWParams) *hnsw {
	p = p.withDefaults()
	return &hnsw{p: p, ml: 1 / math.Log(float64(p.M)), entry: -1}
}

// size is how many slots the graph covers.
func (h *hnsw) size() int { return int(h.n.Load()) }

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

func (h *hnsw) dist(q []float32, id int32) float32 { return 1 - vecmath.Dot(q, h.vecs[id]) }

func (h *hnsw) maxFriends(level int) int {
	if level == 0 {
		return 2 * h.p.M
	}
	return h.p.M
}

// level draws node id's top level from a hash of its number, so a graph
// built again from the same slots gets the same levels.
func (h *hnsw) level(id int32) int {
	x := uint64(id) + 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	u := (float64(x>>11) + 0.5) / (1 << 53) // in (0, 1)
	return int(math.Floor(-math.Log(u) * h.ml))
}

// neighbours returns node's friends on level; while a batch is being
// inserted (shared) it copies them under the node's lock into buf.
func (h *hnsw) neighbours(node int32, level int, shared bool, buf []int32) []int32 {
	if !shared {
		return h.friends[node][level]
	}
	h.locks[node].Lock()
	buf = append(buf[:0], h.friends[node][level]...)
	h.locks[node].Unlock()
	return buf
}

// searchLayer returns up to ef nodes nearest q on level, nearest first.
func (h *hnsw) searchLayer(q []float32, entries []candidate, ef, level int, shared bool) []candidate {
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
	var buf []int32
	for cands.Len() > 0 {
		c := heap.Pop(&cands).(candidate)
		if results.Len() >= ef && c.dist > results[0].dist {
			break
		}
		buf = h.neighbours(c.id, level, shared, buf)
		for _, n := range buf {
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
		cv := h.vecs[c.id]
		for _, k := range kept {
			if 1-vecmath.Dot(cv, h.vecs[k]) < c.dist {
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

// add inserts vecs as the next nodes, with up to workers goroutines; stop
// is polled between nodes and abandons the batch (the graph is then
// dropped by its owner). The caller holds mu for writing, or owns a graph
// no search sees yet.
func (h *hnsw) add(vecs [][]float32, workers int, stop func() bool) bool {
	first := int32(len(h.vecs))
	h.vecs = append(h.vecs, vecs...)
	for i := range vecs {
		h.friends = append(h.friends, make([][]int32, h.level(first+int32(i))+1))
	}
	if cap(h.locks) < len(h.vecs) {
		locks := make([]sync.Mutex, len(h.vecs), len(h.vecs)+len(h.vecs)/2)
		h.locks = locks // no insertion runs now, so no lock is held
	}
	h.locks = h.locks[:len(h.vecs)]
	defer func() { h.n.Store(int64(len(h.vecs))) }()
	workers = max(1, min(workers, len(vecs)/64))
	if workers == 1 {
		for i := range vecs {
			if stop() {
				return false
			}
			h.insert(first+int32(i), false)
		}
		return true
	}
	var next atomic.Int64
	var stopped atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(len(vecs)) || stopped.Load() {
					return
				}
				if i%64 == 0 && stop() {
					stopped.Store(true)
					return
				}
				h.insert(first+int32(i), true)
			}
		}()
	}
	wg.Wait()
	return !stopped.Load()
}

// insert links node id, whose lists add allocated, into the graph.
func (h *hnsw) insert(id int32, shared bool) {
	level := len(h.friends[id]) - 1
	h.entryMu.Lock()
	entry, maxLevel := h.entry, h.maxLevel
	if entry < 0 {
		h.entry, h.maxLevel = id, level
		h.entryMu.Unlock()
		return
	}
	top := level > maxLevel
	if !top {
		h.entryMu.Unlock()
	} else {
		// A new top level: other insertions wait for the new entry point
		// (rare: one node in M^level).
		defer h.entryMu.Unlock()
	}
	q := h.vecs[id]
	ep := candidate{entry, h.dist(q, entry)}
	for l := maxLevel; l > level; l-- {
		ep = h.greedy(q, ep, l, shared)
	}
	eps := []candidate{ep}
	for l := min(level, maxLevel); l >= 0; l-- {
		w := h.searchLayer(q, eps, h.p.EfConstruction, l, shared)
		neigh := h.selectNeighbors(w, h.p.M)
		if shared {
			h.locks[id].Lock()
		}
		h.friends[id][l] = neigh
		if shared {
			h.locks[id].Unlock()
		}
		for _, n := range neigh {
			h.link(n, id, l, shared)
		}
		eps = w
	}
	if top {
		h.entry, h.maxLevel = id, level
	}
}

// link adds to to from's friends on level, keeping the nearest when full.
func (h *hnsw) link(from, to int32, level int, shared bool) {
	if shared {
		h.locks[from].Lock()
		defer h.locks[from].Unlock()
	}
	old := h.friends[from][level]
	if len(old) < h.maxFriends(level) {
		// A fresh slice: a search copying the old one under this lock
		// never sees it change.
		fs := make([]int32, len(old)+1, max(4, len(old)+1+len(old)/2))
		copy(fs, old)
		fs[len(old)] = to
		h.friends[from][level] = fs
		return
	}
	fv := h.vecs[from]
	cs := make([]candidate, 0, len(old)+1)
	for _, f := range old {
		cs = append(cs, candidate{f, 1 - vecmath.Dot(fv, h.vecs[f])})
	}
	cs = append(cs, candidate{to, 1 - vecmath.Dot(fv, h.vecs[to])})
	sort.Slice(cs, func(i, j int) bool { return cs[i].dist < cs[j].dist })
	h.friends[from][level] = h.selectNeighbors(cs, h.maxFriends(level))
}

func (h *hnsw) greedy(q []float32, ep candidate, level int, shared bool) candidate {
	var buf []int32
	for changed := true; changed; {
		changed = false
		buf = h.neighbours(ep.id, level, shared, buf)
		for _, n := range buf {
			if d := h.dist(q, n); d < ep.dist {
				ep, changed = candidate{n, d}, true
			}
		}
	}
	return ep
}

// search returns up to ef nodes nearest q, nearest first; the caller
// holds mu for reading.
func (h *hnsw) search(q []float32, ef int) []candidate {
	if h.entry < 0 {
		return nil
	}
	ep := candidate{h.entry, h.dist(q, h.entry)}
	for l := h.maxLevel; l > 0; l-- {
		ep = h.greedy(q, ep, l, false)
	}
	return h.searchLayer(q, []candidate{ep}, ef, 0, false)
}
