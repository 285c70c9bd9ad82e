package store

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/cubestudio/cube/rag/internal/durable"
	"github.com/cubestudio/cube/rag/internal/vecmath"
)

// Local is the embedded store: every chunk and vector in memory, every
// write appended to a checksummed log in its directory and fsynced before
// the call returns (see Open). It searches exactly, through an HNSW graph,
// and by BM25. It is safe for concurrent use; one process at a time may
// open a directory.
type Local struct {
	mu    sync.RWMutex
	dir   string
	log   *wal
	slots []slot
	byID  map[string]int32
	alive int
	dims  int
	bm    *bm25
	graph *hnsw
	// graphSaved is how many slots the graph snapshot on disk covers.
	graphSaved int
	params     HNSWParams
	exactBelow int
	sync       bool
	closed     atomic.Bool
}

type slot struct {
	chunk Chunk
	vec   []float32
	alive bool
}

// LocalOption configures Open: what HNSW, ExactBelow and NoSync return.
type LocalOption interface {
	applyLocal(*localOptions)
}

// localOptionFunc is the concrete type behind the option constructors.
type localOptionFunc func(*localOptions)

func (f localOptionFunc) applyLocal(o *localOptions) { f(o) }

type localOptions struct {
	params     HNSWParams
	exactBelow int
	noSync     bool
}

// HNSW sets the approximate index's parameters.
func HNSW(p HNSWParams) LocalOption {
	return localOptionFunc(func(o *localOptions) { o.params = p })
}

// ExactBelow makes vector search exact while the store holds fewer than n
// chunks (default 5,000, where a scan takes about a millisecond); from n
// on it uses the HNSW graph, built on the first such search.
func ExactBelow(n int) LocalOption {
	return localOptionFunc(func(o *localOptions) { o.exactBelow = n })
}

// NoSync skips fsync: writes survive a crash of the process but not of the
// machine. For bulk loads that can be redone and for benchmarks.
func NoSync() LocalOption { return localOptionFunc(func(o *localOptions) { o.noSync = true }) }

// Open opens, creating if needed, the embedded store in dir. The log is
// replayed: a last record a crash cut short is cut off (its write was
// never acknowledged); anything else that is not a whole, valid record, a
// damaged last record included, is an ErrCorrupt error naming the byte
// offset, and the log is left as it was. A cut is told from damage by
// what an interrupted append leaves: a strict prefix of the frame it was
// writing, with which the frame's length, operation and (when at most three
// bytes are missing) checksum agree.
func Open(dir string, opts ...LocalOption) (*Local, error) {
	o := localOptions{exactBelow: 5000}
	for _, opt := range opts {
		if opt != nil {
			opt.applyLocal(&o)
		}
	}
	var errs []error
	if dir == "" {
		errs = append(errs, errors.New("dir: required"))
	}
	p := o.params
	if p.M < 0 || p.M == 1 {
		errs = append(errs, fmt.Errorf("hnsw.M: %d: must be at least 2", p.M))
	}
	if p.EfConstruction < 0 {
		errs = append(errs, fmt.Errorf("hnsw.EfConstruction: %d: must not be negative", p.EfConstruction))
	}
	if p.EfSearch < 0 {
		errs = append(errs, fmt.Errorf("hnsw.EfSearch: %d: must not be negative", p.EfSearch))
	}
	if o.exactBelow < 0 {
		errs = append(errs, fmt.Errorf("exactBelow: %d: must not be negative", o.exactBelow))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("open store: %w", errors.Join(errs...))
	}
	s := &Local{dir: dir, byID: map[string]int32{}, bm: newBM25(), params: p.withDefaults(),
		exactBelow: o.exactBelow, sync: !o.noSync}
	log, err := openWAL(dir, s.sync, func(op walOp) error {
		switch op.op {
		case opPut:
			if s.dims != 0 && len(op.record.Vector) != s.dims {
				return fmt.Errorf("%w: record %s has %d dimensions, earlier ones %d", ErrCorrupt, op.record.Chunk.ID, len(op.record.Vector), s.dims)
			}
			s.put(op.record)
		case opDelete:
			for _, id := range op.ids {
				s.remove(id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	s.log = log
	// A saved graph that matches the log spares rebuilding it; any other
	// is ignored (see snapshot.go).
	_ = s.loadGraph()
	return s, nil
}

func (s *Local) check() error {
	if s == nil || s.log == nil {
		return errors.New("store: not opened: use store.Open")
	}
	if s.closed.Load() {
		return errors.New("store: closed")
	}
	return nil
}

// ready reports a store that cannot serve a call: not opened, closed, or
// the call's context done.
func (s *Local) ready(ctx context.Context) error {
	if err := s.check(); err != nil {
		return err
	}
	return ctx.Err()
}

// put applies a record in memory; the vector is already unit length.
func (s *Local) put(r Record) {
	s.remove(r.Chunk.ID)
	id := int32(len(s.slots))
	s.slots = append(s.slots, slot{chunk: r.Chunk, vec: r.Vector, alive: true})
	s.byID[r.Chunk.ID] = id
	s.alive++
	s.dims = len(r.Vector)
	s.bm.add(id, r.Chunk.Text)
	if s.graph != nil {
		s.graph.insert(id)
	}
}

func (s *Local) remove(id string) {
	i, ok := s.byID[id]
	if !ok {
		return
	}
	delete(s.byID, id)
	s.slots[i].alive = false
	s.alive--
	s.bm.remove(i)
}

// Upsert validates every record (all problems are reported together,
// naming records[i]), appends them to the log, fsyncs, and only then makes
// them visible. A record equal to the stored one is not written again.
func (s *Local) Upsert(ctx context.Context, records ...Record) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	dims := s.dims
	var errs []error
	batch := make([]Record, 0, len(records))
	seen := map[string]int{}
	for i, r := range records {
		switch {
		case r.Chunk.ID == "":
			errs = append(errs, fmt.Errorf("records[%d].chunk.id: required", i))
		case seen[r.Chunk.ID] > 0:
			errs = append(errs, fmt.Errorf("records[%d].chunk.id: %s: duplicate of records[%d]", i, r.Chunk.ID, seen[r.Chunk.ID]-1))
		}
		seen[r.Chunk.ID] = i + 1
		if len(r.Vector) == 0 {
			errs = append(errs, fmt.Errorf("records[%d].vector: required", i))
			continue
		}
		if dims == 0 {
			dims = len(r.Vector)
		}
		if len(r.Vector) != dims {
			errs = append(errs, fmt.Errorf("records[%d].vector: %d dimensions, the store holds %d", i, len(r.Vector), dims))
			continue
		}
		v := slices.Clone(r.Vector)
		if !vecmath.Normalize(v) {
			errs = append(errs, fmt.Errorf("records[%d].vector: zero, NaN or infinite: has no direction to compare", i))
			continue
		}
		if j, ok := s.byID[r.Chunk.ID]; ok && slices.Equal(s.slots[j].vec, v) && s.slots[j].chunk.Equal(r.Chunk) {
			continue
		}
		batch = append(batch, Record{Chunk: r.Chunk.clone(), Vector: v})
	}
	if len(errs) > 0 {
		return fmt.Errorf("upsert: %w", errors.Join(errs...))
	}
	payloads := make([][]byte, len(batch))
	for i, r := range batch {
		p, err := encodePut(r)
		if err != nil {
			return fmt.Errorf("upsert: records[%d]: %w", i, err)
		}
		payloads[i] = p
	}
	if err := s.log.append(payloads...); err != nil {
		return fmt.Errorf("upsert: write log: %w", err)
	}
	for _, r := range batch {
		s.put(r)
	}
	return nil
}

// Delete removes chunks by ID, durably before it returns.
func (s *Local) Delete(ctx context.Context, ids ...string) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var known []string
	for _, id := range ids {
		if _, ok := s.byID[id]; ok {
			known = append(known, id)
		}
	}
	if len(known) == 0 {
		return nil
	}
	if err := s.log.append(encodeDelete(known)); err != nil {
		return fmt.Errorf("delete: write log: %w", err)
	}
	for _, id := range known {
		s.remove(id)
	}
	return nil
}

// List returns copies of the chunks matching f.
func (s *Local) List(ctx context.Context, f Filter) ([]Chunk, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := f.Validate(); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Chunk
	for i := range s.slots {
		if s.slots[i].alive && f.Match(&s.slots[i].chunk) {
			out = append(out, s.slots[i].chunk.clone())
		}
	}
	sortChunks(out)
	return out, nil
}

// Count returns how many chunks the store holds.
func (s *Local) Count() int {
	if s.check() != nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.alive
}

// Dimensions returns the vectors' dimension, 0 while the store is empty.
func (s *Local) Dimensions() int {
	if s.check() != nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.dims
}

func (s *Local) searchArgs(vector []float32, k int, f Filter) ([]float32, error) {
	var errs []error
	if k <= 0 {
		errs = append(errs, fmt.Errorf("k: %d: must be positive", k))
	}
	if err := f.Validate(); err != nil {
		errs = append(errs, err)
	}
	q := slices.Clone(vector)
	if len(q) == 0 {
		errs = append(errs, errors.New("vector: required"))
	} else if s.dims != 0 && len(q) != s.dims {
		errs = append(errs, fmt.Errorf("vector: %d dimensions, the store holds %d", len(q), s.dims))
	} else if !vecmath.Normalize(q) {
		errs = append(errs, errors.New("vector: zero, NaN or infinite: has no direction to compare"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("search: %w", errors.Join(errs...))
	}
	return q, nil
}

// SearchVector returns the k chunks matching f with the highest cosine
// similarity to vector: exactly below ExactBelow chunks, through the HNSW
// graph above. A filtered search through the graph that finds fewer than
// k matches falls back to the exact scan of the matching chunks.
func (s *Local) SearchVector(ctx context.Context, vector []float32, k int, f Filter) ([]Hit, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	s.mu.RLock()
	q, err := s.searchArgs(vector, k, f)
	if err != nil {
		s.mu.RUnlock()
		return nil, err
	}
	if s.alive < s.exactBelow || s.alive <= k {
		defer s.mu.RUnlock()
		return s.exact(q, k, f), nil
	}
	for s.graph == nil { // a Compact between the unlock and the lock may drop it again
		s.mu.RUnlock()
		s.buildGraph()
		s.mu.RLock()
	}
	defer s.mu.RUnlock()
	ef := max(s.params.EfSearch, k)
	if len(f) > 0 {
		ef *= 4
	}
	var hits []Hit
	for _, c := range s.graph.search(q, ef) {
		sl := &s.slots[c.id]
		if sl.alive && f.Match(&sl.chunk) {
			hits = append(hits, Hit{Chunk: sl.chunk.clone(), Score: float64(1 - c.dist)})
			if len(hits) == k {
				break
			}
		}
	}
	if len(hits) < k && len(hits) < s.alive {
		return s.exact(q, k, f), nil
	}
	return hits, nil
}

// SearchExact scans every chunk: the reference the HNSW results are
// measured against.
func (s *Local) SearchExact(ctx context.Context, vector []float32, k int, f Filter) ([]Hit, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	q, err := s.searchArgs(vector, k, f)
	if err != nil {
		return nil, err
	}
	return s.exact(q, k, f), nil
}

func (s *Local) buildGraph() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.graph != nil {
		return
	}
	g := newHNSW(s.params, func(i int32) []float32 { return s.slots[i].vec })
	for i := range s.slots {
		g.insert(int32(i))
	}
	s.graph = g
}

// BuildIndex builds the HNSW graph now rather than on the first search
// that needs it (see ExactBelow), and saves it beside the log so that the
// next Open need not build it again.
func (s *Local) BuildIndex() error {
	if err := s.check(); err != nil {
		return err
	}
	s.buildGraph()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.saveGraph(); err != nil {
		return fmt.Errorf("save graph: %w", err)
	}
	return nil
}

func (s *Local) exact(q []float32, k int, f Filter) []Hit {
	h := make(minHeap, 0, k+1)
	for i := range s.slots {
		sl := &s.slots[i]
		if !sl.alive || (len(f) > 0 && !f.Match(&sl.chunk)) {
			continue
		}
		// The min-heap of similarities keeps the k largest.
		sim := vecmath.Dot(q, sl.vec)
		if h.Len() < k {
			heap.Push(&h, candidate{int32(i), sim})
		} else if sim > h[0].dist {
			h[0] = candidate{int32(i), sim}
			heap.Fix(&h, 0)
		}
	}
	out := make([]Hit, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		c := heap.Pop(&h).(candidate)
		out[i] = Hit{Chunk: s.slots[c.id].chunk.clone(), Score: float64(c.dist)}
	}
	return out
}

// SearchKeyword ranks the chunks matching f by BM25 (k1 1.2, b 0.75) for
// query's words.
func (s *Local) SearchKeyword(ctx context.Context, query string, k int, f Filter) ([]Hit, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	var errs []error
	if k <= 0 {
		errs = append(errs, fmt.Errorf("k: %d: must be positive", k))
	}
	if err := f.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("search: %w", errors.Join(errs...))
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	scores := s.bm.scores(query, func(i int32) bool {
		return s.slots[i].alive && (len(f) == 0 || f.Match(&s.slots[i].chunk))
	})
	ids := make([]int32, 0, len(scores))
	for id := range scores {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool {
		if scores[ids[a]] != scores[ids[b]] {
			return scores[ids[a]] > scores[ids[b]]
		}
		return s.slots[ids[a]].chunk.ID < s.slots[ids[b]].chunk.ID
	})
	ids = ids[:min(k, len(ids))]
	out := make([]Hit, len(ids))
	for i, id := range ids {
		out[i] = Hit{Chunk: s.slots[id].chunk.clone(), Score: scores[id]}
	}
	return out, nil
}

// Compact rewrites the log with only the live chunks (replaced and deleted
// ones drop out). The new log is written beside the old, fsynced and
// renamed over it, so a crash during Compact leaves one or the other whole.
func (s *Local) Compact(ctx context.Context) error {
	if err := s.check(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tmpDir := filepath.Join(s.dir, ".compact")
	if err := os.RemoveAll(tmpDir); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	tmp, err := openWAL(tmpDir, s.sync, func(walOp) error { return nil })
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	var live []slot
	for _, sl := range s.slots {
		if !sl.alive {
			continue
		}
		if err := ctx.Err(); err != nil {
			tmp.close()
			return err
		}
		p, err := encodePut(Record{Chunk: sl.chunk, Vector: sl.vec})
		if err == nil {
			err = tmp.append(p)
		}
		if err != nil {
			tmp.close()
			return fmt.Errorf("compact: %w", err)
		}
		live = append(live, sl)
	}
	if err := tmp.close(); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	if err := os.Rename(filepath.Join(tmpDir, logName), filepath.Join(s.dir, logName)); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	if s.sync {
		if err := durable.SyncDir(s.dir); err != nil {
			return fmt.Errorf("compact: %w", err)
		}
	}
	_ = os.RemoveAll(tmpDir)
	old := s.log
	log, err := openWAL(s.dir, s.sync, func(walOp) error { return nil })
	if err != nil {
		return fmt.Errorf("compact: reopen: %w", err)
	}
	_ = old.f.Close()
	s.log = log
	hadGraph := s.graph != nil
	s.slots, s.byID, s.alive, s.bm, s.graph, s.graphSaved = nil, map[string]int32{}, 0, newBM25(), nil, 0
	for _, sl := range live {
		s.put(Record{Chunk: sl.chunk, Vector: sl.vec})
	}
	if hadGraph {
		g := newHNSW(s.params, func(i int32) []float32 { return s.slots[i].vec })
		for i := range s.slots {
			g.insert(int32(i))
		}
		s.graph = g
	}
	return nil
}

// LogBytes returns the size of the store's log on disk.
func (s *Local) LogBytes() int64 {
	if s.check() != nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.log.size
}

// Close flushes and closes the log; the store cannot be used after.
func (s *Local) Close() error {
	if s == nil || s.log == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	err := s.saveGraph()
	return errors.Join(err, s.log.close())
}
