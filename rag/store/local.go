package store

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cubestudio/cube/rag/internal/durable"
	"github.com/cubestudio/cube/rag/internal/vecmath"
)

// Local is the embedded store: every chunk and vector in memory, every
// write appended to a checksummed log in its directory and fsynced before
// the call returns (see Open). It searches exactly, through an HNSW graph
// built in the background, and by BM25 over an inverted index. It is safe
// for concurrent use; one process at a time may open a directory.
type Local struct {
	mu    sync.RWMutex
	dir   string
	log   *wal
	slots []slot
	byID  map[string]int32
	// bySource holds the slots of each source, live ones only.
	bySource map[string]map[int32]struct{}
	// sources numbers the sources for keyword search over whole sources.
	sources sourceIndex
	alive   int
	dims    int
	bm      *bm25
	// graph covers slots[:graph.size()]; the indexer adds the rest. nil
	// until the store first reaches exactBelow chunks (or BuildIndex).
	graph *hnsw
	// gen changes whenever slots are renumbered (Compact): an indexer
	// working on an older numbering drops its work.
	gen int
	// indexing is set while the indexer goroutine runs; wantIndex once
	// BuildIndex asked for a graph below exactBelow.
	indexing  bool
	wantIndex bool
	indexed   *sync.Cond // signalled (under mu) when the indexer stops or catches up
	bg        sync.WaitGroup
	// graphSaved is how many slots the graph snapshot on disk covers;
	// stateSaved how many bytes of the log the checkpoint does.
	graphSaved int
	stateSaved int64
	params     HNSWParams
	fields     KeywordFields
	exactBelow int
	sync       bool
	closed     atomic.Bool
	// writing counts the writes under way and lastWrite is when the last
	// one ended (UnixNano): the indexer waits for a pause in writes.
	writing   atomic.Int32
	lastWrite atomic.Int64
	// indexAlongside makes the indexer run during writes, as it did
	// before it waited for a pause: the ingest benchmark's baseline.
	indexAlongside bool
}

type slot struct {
	chunk Chunk
	vec   []float32
	alive bool
}

// LocalOption configures Open: what HNSW, ExactBelow, Keyword and NoSync
// return.
type LocalOption interface {
	applyLocal(*localOptions)
}

// localOptionFunc is the concrete type behind the option constructors.
type localOptionFunc func(*localOptions)

func (f localOptionFunc) applyLocal(o *localOptions) { f(o) }

type localOptions struct {
	params     HNSWParams
	fields     KeywordFields
	exactBelow int
	noSync     bool
}

// HNSW sets the approximate index's parameters.
func HNSW(p HNSWParams) LocalOption {
	return localOptionFunc(func(o *localOptions) { o.params = p })
}

// ExactBelow makes vector search exact while the store holds fewer than n
// chunks (default 5,000, where a scan takes about a millisecond). From n
// on a background goroutine builds the HNSW graph (on every core) and
// keeps it up to date as chunks arrive; until it is built, and for chunks
// it has not reached yet, search scans exactly. No search waits for it.
func ExactBelow(n int) LocalOption {
	return localOptionFunc(func(o *localOptions) { o.exactBelow = n })
}

// Keyword sets the fields keyword search reads and their weights (BM25F;
// see KeywordFields). The index is built on Open from the log, so the
// weights may change between opens.
func Keyword(fields KeywordFields) LocalOption {
	return localOptionFunc(func(o *localOptions) { o.fields = fields })
}

// NoSync skips fsync: writes survive a crash of the process but not of the
// machine. For bulk loads that can be redone and for benchmarks.
func NoSync() LocalOption { return localOptionFunc(func(o *localOptions) { o.noSync = true }) }

// Open opens, creating if needed, the embedded store in dir. The log is
// replayed: a last record a crash cut short, or a batch whose commit a
// crash kept from being written, is cut off (that write was never
// acknowledged); anything else that is not a whole, valid record, a
// damaged last record included, is an ErrCorrupt error naming the byte
// offset, and the log is left as it was. A cut is told from damage by what
// an interrupted append leaves: a strict prefix of the frames it was
// writing, with which the last frame's length, operation and (when at most
// three bytes are missing) checksum agree.
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
	for _, w := range []struct {
		name string
		v    float32
	}{{"keyword.Text", o.fields.Text}, {"keyword.Title", o.fields.Title}, {"keyword.Section", o.fields.Section}} {
		if !(w.v >= 0) || w.v > 1e6 {
			errs = append(errs, fmt.Errorf("%s: %v: must be between 0 and 1e6", w.name, w.v))
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("open store: %w", errors.Join(errs...))
	}
	s := &Local{dir: dir, byID: map[string]int32{}, bySource: map[string]map[int32]struct{}{},
		bm: newBM25(o.fields), params: p.withDefaults(), fields: o.fields,
		exactBelow: o.exactBelow, sync: !o.noSync}
	s.indexed = sync.NewCond(&s.mu)
	// A checkpoint that matches the log's beginning spares replaying it;
	// any other is ignored (see checkpoint.go).
	resume := func(f *os.File, size int64) int64 {
		at, err := s.loadState(f, size)
		if err != nil {
			return 0
		}
		return at
	}
	log, err := openWAL(dir, s.sync, resume, s.replayBatch)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", dir, err)
	}
	s.log = log
	// A saved graph that matches the log spares rebuilding it; any other
	// is ignored (see snapshot.go).
	_ = s.loadGraph()
	s.mu.Lock()
	s.kickIndex()
	s.mu.Unlock()
	return s, nil
}

// replayBatch applies one committed batch of the log: records are decoded
// and analysed on every core, then applied in log order.
func (s *Local) replayBatch(ops []walOp) error {
	as := make([]analysis, len(ops))
	parallel(len(ops), func(i int) {
		if ops[i].op == opPut {
			as[i] = s.bm.analyze(&ops[i].record.Chunk)
		}
	})
	for i, op := range ops {
		switch op.op {
		case opPut:
			if s.dims != 0 && len(op.record.Vector) != s.dims {
				return fmt.Errorf("%w: record %s has %d dimensions, earlier ones %d", ErrCorrupt, op.record.Chunk.ID, len(op.record.Vector), s.dims)
			}
			s.put(op.record, as[i])
		case opDelete:
			for _, id := range op.ids {
				s.remove(id)
			}
		}
	}
	return nil
}

// parallel runs f(0..n-1) on every core.
func parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n/256)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(256)) - 256
				if i >= n {
					return
				}
				for j := i; j < min(n, i+256); j++ {
					f(j)
				}
			}
		}()
	}
	wg.Wait()
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
func (s *Local) put(r Record, a analysis) {
	s.remove(r.Chunk.ID)
	id := int32(len(s.slots))
	s.slots = append(s.slots, slot{chunk: r.Chunk, vec: r.Vector, alive: true})
	s.byID[r.Chunk.ID] = id
	src := s.bySource[r.Chunk.Source]
	if src == nil {
		src = map[int32]struct{}{}
		s.bySource[r.Chunk.Source] = src
	}
	src[id] = struct{}{}
	s.alive++
	s.dims = len(r.Vector)
	s.bm.add(id, a)
	s.sources.add(id, r.Chunk.Source, a.len)
}

func (s *Local) remove(id string) {
	i, ok := s.byID[id]
	if !ok {
		return
	}
	delete(s.byID, id)
	s.slots[i].alive = false
	src := s.bySource[s.slots[i].chunk.Source]
	delete(src, i)
	if len(src) == 0 {
		delete(s.bySource, s.slots[i].chunk.Source)
	}
	s.alive--
	s.sources.remove(i, s.bm.docLen[i])
	s.bm.remove(i)
}

// Upsert validates every record (all problems are reported together,
// naming records[i]), appends them to the log as one batch, fsyncs, and
// only then makes them visible. A record equal to the stored one is not
// written again.
func (s *Local) Upsert(ctx context.Context, records ...Record) error {
	if err := s.apply(ctx, Batch{Upsert: records}, "records"); err != nil {
		return fmt.Errorf("upsert: %w", err)
	}
	return nil
}

// Delete removes chunks by ID, durably before it returns.
func (s *Local) Delete(ctx context.Context, ids ...string) error {
	if err := s.Apply(ctx, Batch{Delete: ids}); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return nil
}

// Apply writes b atomically: its records and deletions are appended to
// the log as one batch that ends in a commit frame, fsynced once, and
// only then made visible, all at once. A crash before the commit is on
// disk leaves none of the batch on reopen; after Apply returns, all of it.
// Records are validated first (every problem reported together, naming
// upsert[i] and delete[i]); a record equal to the stored one is not
// written again, and deletions of unknown IDs are ignored. Deletions apply
// after the records, so a batch can replace a source's chunks by writing
// the new ones and deleting the old.
func (s *Local) Apply(ctx context.Context, b Batch) error {
	return s.apply(ctx, b, "upsert")
}

// apply is Apply, naming the records name[i] in errors.
func (s *Local) apply(ctx context.Context, b Batch, name string) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	s.writing.Add(1)
	defer func() {
		s.lastWrite.Store(time.Now().UnixNano())
		s.writing.Add(-1)
	}()
	var errs []error
	batch := make([]Record, 0, len(b.Upsert))
	seen := make(map[string]int, len(b.Upsert))
	s.mu.RLock()
	dims, held := s.dims, "the store holds"
	s.mu.RUnlock()
	for i, r := range b.Upsert {
		switch {
		case r.Chunk.ID == "":
			errs = append(errs, fmt.Errorf("%s[%d].chunk.id: required", name, i))
		case seen[r.Chunk.ID] > 0:
			errs = append(errs, fmt.Errorf("%s[%d].chunk.id: %s: duplicate of %s[%d]", name, i, r.Chunk.ID, name, seen[r.Chunk.ID]-1))
		}
		seen[r.Chunk.ID] = i + 1
		if len(r.Vector) == 0 {
			errs = append(errs, fmt.Errorf("%s[%d].vector: required", name, i))
			continue
		}
		if dims == 0 {
			dims, held = len(r.Vector), fmt.Sprintf("%s[%d] has", name, i)
		}
		if len(r.Vector) != dims {
			errs = append(errs, fmt.Errorf("%s[%d].vector: %d dimensions, %s %d", name, i, len(r.Vector), held, dims))
			continue
		}
		v := slices.Clone(r.Vector)
		if !vecmath.Normalize(v) {
			errs = append(errs, fmt.Errorf("%s[%d].vector: zero, NaN or infinite: has no direction to compare", name, i))
			continue
		}
		batch = append(batch, Record{Chunk: r.Chunk.clone(), Vector: v})
	}
	for i, id := range b.Delete {
		if id == "" {
			errs = append(errs, fmt.Errorf("delete[%d]: empty ID", i))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	// Encoding and analysis need no lock: on every core, before it.
	payloads := make([][]byte, len(batch))
	as := make([]analysis, len(batch))
	encErrs := make([]error, len(batch))
	parallel(len(batch), func(i int) {
		payloads[i], encErrs[i] = encodePut(batch[i])
		as[i] = s.bm.analyze(&batch[i].Chunk)
	})
	for i, err := range encErrs {
		if err != nil {
			return fmt.Errorf("%s[%d]: %w", name, i, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(); err != nil {
		return err
	}
	if len(batch) > 0 && s.dims != 0 && dims != s.dims {
		return fmt.Errorf("%s[0].vector: %d dimensions, the store holds %d", name, dims, s.dims)
	}
	// Unchanged records and unknown deletions are dropped.
	keep := batch[:0]
	kept := payloads[:0]
	keptA := as[:0]
	for i, r := range batch {
		if j, ok := s.byID[r.Chunk.ID]; ok && slices.Equal(s.slots[j].vec, r.Vector) && s.slots[j].chunk.Equal(r.Chunk) {
			continue
		}
		keep, kept, keptA = append(keep, r), append(kept, payloads[i]), append(keptA, as[i])
	}
	var gone []string
	for _, id := range b.Delete {
		if _, ok := s.byID[id]; ok || seen[id] > 0 {
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		kept = append(kept, encodeDelete(gone))
	}
	if len(kept) == 0 {
		return nil
	}
	if err := s.log.appendBatch(kept); err != nil {
		return fmt.Errorf("write log: %w", err)
	}
	for i, r := range keep {
		s.put(r, keptA[i])
	}
	for _, id := range gone {
		s.remove(id)
	}
	s.kickIndex()
	return nil
}

// List returns copies of the chunks matching f. A filter on "source" reads
// that source's chunks only.
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
	if src, ok := f["source"]; ok {
		for i := range s.bySource[src] {
			if f.Match(&s.slots[i].chunk) {
				out = append(out, s.slots[i].chunk.clone())
			}
		}
	} else {
		for i := range s.slots {
			if s.slots[i].alive && f.Match(&s.slots[i].chunk) {
				out = append(out, s.slots[i].chunk.clone())
			}
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

// Stats reports what the store holds and how far its vector index is.
func (s *Local) Stats(ctx context.Context) (Stats, error) {
	if err := s.ready(ctx); err != nil {
		return Stats{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := Stats{Chunks: s.alive, Sources: len(s.bySource), Dimensions: s.dims, LogBytes: s.log.size,
		Index: IndexExact}
	if s.graph != nil {
		// Deleted slots stay in the graph; count the live ones it covers.
		for i := range s.graph.size() {
			if s.slots[i].alive {
				st.Indexed++
			}
		}
	}
	switch {
	case s.graph != nil && s.graph.size() == len(s.slots):
		st.Index = IndexReady
	case s.indexing:
		st.Index = IndexBuilding
	}
	return st, nil
}

// searchLimits are the problems of a search's k and filter, for every
// search to report with its own.
func searchLimits(k int, f Filter) []error {
	var errs []error
	if k <= 0 {
		errs = append(errs, fmt.Errorf("k: %d: must be positive", k))
	}
	if err := f.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errs
}

func (s *Local) searchArgs(vector []float32, k int, f Filter) ([]float32, error) {
	errs := searchLimits(k, f)
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
// similarity to vector: exactly below ExactBelow chunks and while the
// graph is being built, through the HNSW graph (and exactly over the
// chunks written since the graph last caught up) above. A filtered search
// through the graph that finds fewer than k matches falls back to the
// exact scan of the matching chunks.
func (s *Local) SearchVector(ctx context.Context, vector []float32, k int, f Filter) ([]Hit, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	q, err := s.searchArgs(vector, k, f)
	if err != nil {
		return nil, err
	}
	g := s.graph
	if s.alive < s.exactBelow || s.alive <= k || g == nil {
		return s.exact(q, k, f, 0), nil
	}
	ef := max(s.params.EfSearch, k)
	if len(f) > 0 {
		ef *= 4
	}
	g.mu.RLock()
	n := g.size()
	cands := g.search(q, ef)
	g.mu.RUnlock()
	h := make(minHeap, 0, k+1)
	for _, c := range cands {
		sl := &s.slots[c.id]
		if sl.alive && f.Match(&sl.chunk) {
			h = append(h, candidate{c.id, 1 - c.dist})
			if len(h) == k {
				break
			}
		}
	}
	if len(h) < k {
		return s.exact(q, k, f, 0), nil
	}
	heap.Init(&h)
	// Chunks the indexer has not reached yet are scanned.
	s.scan(q, k, f, n, &h)
	return s.hits(h), nil
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
	return s.exact(q, k, f, 0), nil
}

func (s *Local) exact(q []float32, k int, f Filter, from int) []Hit {
	h := make(minHeap, 0, k+1)
	s.scan(q, k, f, from, &h)
	return s.hits(h)
}

// scan offers slots[from:] to the min-heap of the k most similar.
func (s *Local) scan(q []float32, k int, f Filter, from int, h *minHeap) {
	for i := from; i < len(s.slots); i++ {
		sl := &s.slots[i]
		if !sl.alive || (len(f) > 0 && !f.Match(&sl.chunk)) {
			continue
		}
		sim := vecmath.Dot(q, sl.vec)
		if h.Len() < k {
			heap.Push(h, candidate{int32(i), sim})
		} else if sim > (*h)[0].dist {
			(*h)[0] = candidate{int32(i), sim}
			heap.Fix(h, 0)
		}
	}
}

// hits empties the min-heap of similarities into hits, most similar first.
func (s *Local) hits(h minHeap) []Hit {
	out := make([]Hit, h.Len())
	for i := len(out) - 1; i >= 0; i-- {
		c := heap.Pop(&h).(candidate)
		out[i] = Hit{Chunk: s.slots[c.id].chunk.clone(), Score: float64(c.dist)}
	}
	return out
}

// kickIndex starts the indexer if the graph is wanted and behind; the
// caller holds mu for writing.
func (s *Local) kickIndex() {
	if s.indexing || s.closed.Load() || !s.needsIndex() {
		return
	}
	s.indexing = true
	s.bg.Add(1)
	go s.indexLoop()
}

func (s *Local) needsIndex() bool {
	if s.graph == nil {
		return (s.alive >= s.exactBelow || s.wantIndex) && len(s.slots) > 0
	}
	return s.graph.size() < len(s.slots)
}

// indexBatch bounds how many nodes go into a live graph at once, and so
// how long a search waits for the graph's lock.
const indexBatch = 128

// writePause is how long the indexer waits after a write before it
// takes the CPU: writes that follow each other closer than this (a bulk
// load) run first, and the graph catches up in the pause after them.
const writePause = 20 * time.Millisecond

// awaitPause returns once no write is under way and none ended in the
// last writePause, or the store closes.
func (s *Local) awaitPause() {
	for !s.closed.Load() && !s.indexAlongside {
		wait := writePause - time.Since(time.Unix(0, s.lastWrite.Load()))
		if s.writing.Load() > 0 {
			wait = writePause
		}
		if wait <= 0 {
			return
		}
		time.Sleep(wait)
	}
}

// indexLoop builds the graph, off every lock, the first time, and then
// inserts the slots written since, a batch at a time, until it has caught
// up; it stops when the store closes.
func (s *Local) indexLoop() {
	defer s.bg.Done()
	workers := runtime.GOMAXPROCS(0)
	stop := func() bool { return s.closed.Load() }
	for {
		s.awaitPause()
		s.mu.Lock()
		if s.closed.Load() || !s.needsIndex() {
			s.indexing = false
			s.indexed.Broadcast()
			s.mu.Unlock()
			return
		}
		g, gen, from := s.graph, s.gen, 0
		if g != nil {
			from = g.size()
		}
		to := len(s.slots)
		if g != nil {
			to = min(to, from+indexBatch)
		}
		vecs := make([][]float32, to-from)
		for i := range vecs {
			vecs[i] = s.slots[from+i].vec
		}
		s.mu.Unlock()
		if g == nil {
			g = newHNSW(s.params)
			if !g.add(vecs, workers, stop) {
				continue
			}
			s.mu.Lock()
			if s.gen == gen && s.graph == nil {
				s.graph = g
				s.indexed.Broadcast()
			}
			s.mu.Unlock()
			continue
		}
		// A batch into the live graph is short and always finished, so
		// that Close can save the graph it leaves.
		g.mu.Lock()
		g.add(vecs, workers, func() bool { return false })
		g.mu.Unlock()
		s.mu.Lock()
		s.indexed.Broadcast()
		s.mu.Unlock()
	}
}

// BuildIndex builds the HNSW graph now, even below ExactBelow, waits
// until it covers every chunk, and saves it beside the log so that the
// next Open need not build it again. The graph is otherwise built in the
// background (see ExactBelow); BuildIndex only waits for it.
func (s *Local) BuildIndex() error {
	if err := s.check(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.wantIndex = true
	s.kickIndex()
	for !s.closed.Load() && (s.graph == nil || s.graph.size() < len(s.slots)) {
		if !s.indexing {
			s.kickIndex()
			if !s.indexing {
				break
			}
		}
		s.indexed.Wait()
	}
	if err := s.check(); err != nil {
		return err
	}
	if err := s.saveGraph(); err != nil {
		return fmt.Errorf("save graph: %w", err)
	}
	if err := s.saveState(); err != nil {
		return fmt.Errorf("save checkpoint: %w", err)
	}
	return nil
}

// SearchKeyword ranks the chunks matching f by BM25 (k1 1.2, b 0.75) for
// query's words through the inverted index, keeping the k best in a
// bounded heap; ties go to the smaller chunk ID.
func (s *Local) SearchKeyword(ctx context.Context, query string, k int, f Filter) ([]Hit, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	if errs := searchLimits(k, f); len(errs) > 0 {
		return nil, fmt.Errorf("search: %w", errors.Join(errs...))
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	top := s.bm.topK(query, k, func(i int32) bool {
		return s.slots[i].alive && (len(f) == 0 || f.Match(&s.slots[i].chunk))
	}, func(a, b int32) bool { return s.slots[a].chunk.ID < s.slots[b].chunk.ID })
	out := make([]Hit, len(top))
	for i, t := range top {
		out[i] = Hit{Chunk: s.slots[t.slot].chunk.clone(), Score: t.score}
	}
	return out, nil
}

// Compact rewrites the log with only the live chunks (replaced and deleted
// ones drop out). The new log is written beside the old, fsynced and
// renamed over it, so a crash during Compact leaves one or the other whole.
// The graph is built again in the background over the new numbering.
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
	tmp, err := openWAL(tmpDir, s.sync, nil, func([]walOp) error { return nil })
	if err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	var live []slot
	var payloads [][]byte
	flush := func() error {
		err := tmp.appendBatch(payloads)
		payloads = payloads[:0]
		return err
	}
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
			payloads = append(payloads, p)
			if len(payloads) == 4096 {
				err = flush()
			}
		}
		if err != nil {
			tmp.close()
			return fmt.Errorf("compact: %w", err)
		}
		live = append(live, sl)
	}
	if len(payloads) > 0 {
		if err := flush(); err != nil {
			tmp.close()
			return fmt.Errorf("compact: %w", err)
		}
	}
	if err := tmp.close(); err != nil {
		return fmt.Errorf("compact: %w", err)
	}
	// The checkpoint describes the old log; its checksum would tell, but
	// it is of no more use.
	if err := os.Remove(filepath.Join(s.dir, stateName)); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("compact: %w", err)
	}
	s.stateSaved = 0
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
	log, err := openWAL(s.dir, s.sync, nil, func([]walOp) error { return nil })
	if err != nil {
		return fmt.Errorf("compact: reopen: %w", err)
	}
	_ = old.f.Close()
	s.log = log
	s.slots, s.byID, s.bySource, s.alive, s.bm, s.graph, s.graphSaved = nil, map[string]int32{}, map[string]map[int32]struct{}{}, 0, newBM25(s.fields), nil, 0
	s.sources = sourceIndex{}
	s.gen++
	as := make([]analysis, len(live))
	parallel(len(live), func(i int) { as[i] = s.bm.analyze(&live[i].chunk) })
	for i, sl := range live {
		s.put(Record{Chunk: sl.chunk, Vector: sl.vec}, as[i])
	}
	s.kickIndex()
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

// Close stops the indexer, saves a graph that covers every chunk, and
// flushes and closes the log; the store cannot be used after.
func (s *Local) Close() error {
	if s == nil || s.log == nil {
		return nil
	}
	if s.closed.Swap(true) {
		return nil
	}
	s.bg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.indexed.Broadcast()
	err := s.saveGraph()
	if err == nil {
		err = s.saveState()
	}
	return errors.Join(err, s.log.close())
}
