package store

import (
	"encoding/binary"
	"errors"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/cubestudio/cube/rag/internal/durable"
)

// The checkpoint (state.snap) spares a reopen the replay of the whole log:
// it holds what replay computes from the log up to a byte offset, the
// chunks, their vectors and the keyword index (term dictionary, posting
// lists, lengths), so that Open reads them and replays only the frames
// after that offset. It is a cache, never the truth: it names the offset
// and the CRC-32C of the log's bytes up to it, and Open uses it only when
// the log on disk still begins with exactly those bytes (the whole prefix
// is read and checked, which also finds damage in it) and the keyword
// field weights are the same; a checkpoint that is damaged (its own
// CRC-32C), stale (the log compacted, replaced, cut or changed) or
// malformed is ignored and the whole log replayed, which reports damage in
// the log as before. The log's torn tail, if any, lies after the offset
// and is cut by the same rule as on a full replay. It is written to a
// temporary file, fsynced and renamed over the old one, when the store
// closes and when BuildIndex returns.
//
// Layout, little-endian: magic; the log offset (u64) and its CRC-32C
// (u32); the keyword weights (3 × f32); the slot count and dimensions
// (u32 each); per slot its liveness (a byte), the lengths of its five
// strings (uvarints), Page, Start and End (varints) and its metadata (a
// count, then each key's and value's length); every slot's vector; the
// term count, each term's length, live document count and posting count,
// then every posting (slot u32, weighted frequency f32); each slot's
// length (f32) and its distinct terms (a count, then term IDs); the
// index's live count (u32) and total length (f64); the strings, one after
// the other, in the order their lengths were written; then the offset of
// those strings (u64) and the CRC-32C of everything before it (u32).
const (
	stateName  = "state.snap"
	stateMagic = "CUBESTATE1"
)

var errBadState = errors.New("checkpoint does not match the log")

// logPrefixCRC returns the CRC-32C of the log's first n bytes.
func logPrefixCRC(f *os.File, n int64) (uint32, error) {
	h := crc32.New(castagnoli)
	if _, err := io.CopyBuffer(h, io.NewSectionReader(f, 0, n), make([]byte, 4<<20)); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// stateWriter streams the checkpoint to a file through a buffer and its
// checksum.
type stateWriter struct {
	f   io.Writer
	crc hash.Hash32
	buf []byte
	n   int64 // bytes written before buf
	err error
}

// flush writes the buffer once it holds a megabyte, or when all is true.
func (w *stateWriter) flush(all bool) {
	if w.err != nil || (!all && len(w.buf) < 1<<20) {
		return
	}
	w.crc.Write(w.buf)
	_, w.err = w.f.Write(w.buf)
	w.n += int64(len(w.buf))
	w.buf = w.buf[:0]
}

func (w *stateWriter) offset() int64 { return w.n + int64(len(w.buf)) }

func (w *stateWriter) write(b []byte) { w.buf = append(w.buf, b...); w.flush(false) }
func (w *stateWriter) str(s string)   { w.buf = append(w.buf, s...); w.flush(false) }
func (w *stateWriter) u32(v uint32) {
	w.buf = binary.LittleEndian.AppendUint32(w.buf, v)
	w.flush(false)
}
func (w *stateWriter) u64(v uint64) {
	w.buf = binary.LittleEndian.AppendUint64(w.buf, v)
	w.flush(false)
}
func (w *stateWriter) f32(v float32) { w.u32(math.Float32bits(v)) }
func (w *stateWriter) uvarint(v uint64) {
	w.buf = binary.AppendUvarint(w.buf, v)
	w.flush(false)
}
func (w *stateWriter) varint(v int64) {
	w.buf = binary.AppendVarint(w.buf, v)
	w.flush(false)
}

// saveState writes the checkpoint of the store as the log now holds it;
// the caller holds the write lock. It does nothing when the checkpoint on
// disk already covers the whole log.
func (s *Local) saveState() error {
	if s.log.size == s.stateSaved {
		return nil
	}
	logCRC, err := logPrefixCRC(s.log.f, s.log.size)
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.dir, stateName+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer f.Close()
	w := &stateWriter{f: f, crc: crc32.New(castagnoli), buf: make([]byte, 0, 1<<20+64<<10)}
	w.write([]byte(stateMagic))
	w.u64(uint64(s.log.size))
	w.u32(logCRC)
	fields := s.fields.withDefaults()
	w.f32(fields.Text)
	w.f32(fields.Title)
	w.f32(fields.Section)
	w.u32(uint32(len(s.slots)))
	w.u32(uint32(s.dims))
	keys := make([][]string, len(s.slots))
	for i := range s.slots {
		sl := &s.slots[i]
		if sl.alive {
			w.write([]byte{1})
		} else {
			w.write([]byte{0})
		}
		c := &sl.chunk
		for _, str := range []string{c.ID, c.Source, c.Title, c.Section, c.Text} {
			w.uvarint(uint64(len(str)))
		}
		w.varint(int64(c.Page))
		w.varint(int64(c.Start))
		w.varint(int64(c.End))
		w.uvarint(uint64(len(c.Metadata)))
		if len(c.Metadata) > 0 {
			ks := make([]string, 0, len(c.Metadata))
			for k := range c.Metadata {
				ks = append(ks, k)
			}
			slices.Sort(ks)
			keys[i] = ks
			for _, k := range ks {
				w.uvarint(uint64(len(k)))
				w.uvarint(uint64(len(c.Metadata[k])))
			}
		}
	}
	for i := range s.slots {
		for _, x := range s.slots[i].vec {
			w.f32(x)
		}
	}
	bm := s.bm
	terms := make([]string, len(bm.postings))
	for t, id := range bm.terms {
		terms[id] = t
	}
	w.u32(uint32(len(terms)))
	for id, t := range terms {
		w.uvarint(uint64(len(t)))
		w.u32(uint32(bm.df[id]))
		w.u32(uint32(len(bm.postings[id])))
	}
	for _, ps := range bm.postings {
		for _, p := range ps {
			w.u32(uint32(p.slot))
			w.f32(p.tf)
		}
	}
	for i := range s.slots {
		w.f32(bm.docLen[i])
		w.uvarint(uint64(len(bm.docTerms[i])))
		for _, t := range bm.docTerms[i] {
			w.u32(uint32(t))
		}
	}
	w.u32(uint32(bm.alive))
	w.u64(math.Float64bits(bm.totalLen))
	heapAt := w.offset()
	for i := range s.slots {
		c := &s.slots[i].chunk
		for _, str := range []string{c.ID, c.Source, c.Title, c.Section, c.Text} {
			w.str(str)
		}
		for _, k := range keys[i] {
			w.str(k)
			w.str(c.Metadata[k])
		}
	}
	for _, t := range terms {
		w.str(t)
	}
	w.u64(uint64(heapAt))
	w.flush(true)
	if w.err == nil {
		_, w.err = f.Write(binary.LittleEndian.AppendUint32(nil, w.crc.Sum32()))
	}
	if w.err == nil && s.sync {
		w.err = f.Sync()
	}
	if w.err != nil {
		return w.err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, stateName)); err != nil {
		return err
	}
	if s.sync {
		if err := durable.SyncDir(s.dir); err != nil {
			return err
		}
	}
	s.stateSaved = s.log.size
	return nil
}

// stateReader decodes the checkpoint; the first malformed value sets bad
// and every later read returns zero.
type stateReader struct {
	b       []byte
	bad     bool
	heap    string
	heapPos int
}

func (r *stateReader) take(n int) []byte {
	if r.bad || n < 0 || n > len(r.b) {
		r.bad = true
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *stateReader) u32() uint32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (r *stateReader) u64() uint64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

func (r *stateReader) f32() float32 { return math.Float32frombits(r.u32()) }

func (r *stateReader) uvarint() uint64 {
	if r.bad {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) varint() int {
	if r.bad {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 || v != int64(int(v)) {
		r.bad = true
		return 0
	}
	r.b = r.b[n:]
	return int(v)
}

// str returns the next n bytes of the string heap.
func (r *stateReader) str(n uint64) string {
	if r.bad || n > uint64(len(r.heap)-r.heapPos) {
		r.bad = true
		return ""
	}
	s := r.heap[r.heapPos : r.heapPos+int(n)]
	r.heapPos += int(n)
	return s
}

// count reads a count of items of at least min bytes each, refusing one
// the bytes left cannot hold (so a damaged count allocates nothing).
func (r *stateReader) count(v uint64, min int) int {
	if r.bad || v > uint64(len(r.b))/uint64(min) {
		r.bad = true
		return 0
	}
	return int(v)
}

// loadState installs the checkpoint if it matches the first bytes of the
// log f (of size bytes) and returns the offset replay resumes from; the
// caller is Open, before replay. On any mismatch it changes nothing and
// returns the error.
func (s *Local) loadState(f *os.File, size int64) (int64, error) {
	b, err := os.ReadFile(filepath.Join(s.dir, stateName))
	if err != nil {
		return 0, err
	}
	const head = len(stateMagic) + 8 + 4 + 12 + 8
	if len(b) < head+12 || string(b[:len(stateMagic)]) != stateMagic {
		return 0, errBadState
	}
	le := binary.LittleEndian
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != le.Uint32(b[len(b)-4:]) {
		return 0, errBadState
	}
	heapAt := le.Uint64(body[len(body)-8:])
	if heapAt < uint64(head) || heapAt > uint64(len(body)-8) {
		return 0, errBadState
	}
	r := &stateReader{b: body[len(stateMagic):heapAt]}
	logSize := int64(r.u64())
	logCRC := r.u32()
	if logSize < int64(len(logMagic)) || logSize > size {
		return 0, errBadState
	}
	// The log's prefix is checked while the checkpoint decodes.
	prefix := make(chan error, 1)
	go func() {
		sum, err := logPrefixCRC(f, logSize)
		if err == nil && sum != logCRC {
			err = errBadState
		}
		prefix <- err
	}()
	st, err := decodeState(r, string(body[heapAt:len(body)-8]), s.fields.withDefaults())
	if perr := <-prefix; perr != nil {
		return 0, perr
	}
	if err != nil {
		return 0, err
	}
	s.slots, s.byID, s.bySource, s.alive, s.dims, s.bm = st.slots, st.byID, st.bySource, st.alive, st.dims, st.bm
	s.bm.fields = s.fields.withDefaults()
	s.sources = sourceIndex{}
	for i := range s.slots {
		s.sources.add(int32(i), s.slots[i].chunk.Source, s.bm.docLen[i])
		if !s.slots[i].alive {
			s.sources.remove(int32(i), s.bm.docLen[i])
		}
	}
	s.stateSaved = logSize
	return logSize, nil
}

type decodedState struct {
	slots    []slot
	byID     map[string]int32
	bySource map[string]map[int32]struct{}
	alive    int
	dims     int
	bm       *bm25
}

func decodeState(r *stateReader, heap string, fields KeywordFields) (*decodedState, error) {
	r.heap = heap
	if r.f32() != fields.Text || r.f32() != fields.Title || r.f32() != fields.Section {
		return nil, errBadState
	}
	// A slot takes at least 10 bytes (liveness, five lengths, three
	// numbers, a metadata count) and a posting 8.
	n := r.count(uint64(r.u32()), 10)
	dims := int(r.u32())
	st := &decodedState{slots: make([]slot, n), byID: make(map[string]int32, n),
		bySource: map[string]map[int32]struct{}{}, dims: dims}
	for i := range st.slots {
		sl := &st.slots[i]
		alive := r.take(1)
		if alive == nil || alive[0] > 1 {
			return nil, errBadState
		}
		sl.alive = alive[0] == 1
		var lens [5]uint64
		for j := range lens {
			lens[j] = r.uvarint()
		}
		c := &sl.chunk
		c.Page, c.Start, c.End = r.varint(), r.varint(), r.varint()
		meta := r.count(r.uvarint(), 2)
		var kv []uint64
		for range meta {
			kv = append(kv, r.uvarint(), r.uvarint())
		}
		c.ID, c.Source, c.Title, c.Section, c.Text = r.str(lens[0]), r.str(lens[1]), r.str(lens[2]), r.str(lens[3]), r.str(lens[4])
		if meta > 0 {
			c.Metadata = make(map[string]string, meta)
			for j := 0; j < len(kv); j += 2 {
				k := r.str(kv[j])
				c.Metadata[k] = r.str(kv[j+1])
			}
			if len(c.Metadata) != meta {
				return nil, errBadState
			}
		}
		if r.bad || c.ID == "" {
			return nil, errBadState
		}
		if sl.alive {
			if _, dup := st.byID[c.ID]; dup {
				return nil, errBadState
			}
			st.byID[c.ID] = int32(i)
			src := st.bySource[c.Source]
			if src == nil {
				src = map[int32]struct{}{}
				st.bySource[c.Source] = src
			}
			src[int32(i)] = struct{}{}
			st.alive++
		}
	}
	if r.bad || (n > 0 && (dims <= 0 || uint64(n)*uint64(dims) > uint64(len(r.b))/4)) {
		return nil, errBadState
	}
	vecs := make([]float32, n*dims)
	raw := r.take(4 * len(vecs))
	parallel(n, func(i int) {
		v, b := vecs[i*dims:(i+1)*dims:(i+1)*dims], raw[4*i*dims:4*(i+1)*dims]
		for j := range v {
			v[j] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*j:]))
		}
		st.slots[i].vec = v
	})
	bm := newBM25(fields)
	terms := r.count(uint64(r.u32()), 9)
	bm.terms = make(map[string]int32, terms)
	bm.df = make([]int32, terms)
	bm.postings = make([][]posting, terms)
	counts := make([]int, terms)
	termLens := make([]uint64, terms)
	total := 0
	for id := range terms {
		termLens[id] = r.uvarint()
		bm.df[id] = int32(r.u32())
		counts[id] = r.count(uint64(r.u32()), 8)
		total += counts[id]
	}
	if r.bad || uint64(total) > uint64(len(r.b))/8 {
		return nil, errBadState
	}
	flat := make([]posting, total)
	raw = r.take(8 * total)
	for i := range flat {
		flat[i] = posting{int32(binary.LittleEndian.Uint32(raw[8*i:])), math.Float32frombits(binary.LittleEndian.Uint32(raw[8*i+4:]))}
		if flat[i].slot < 0 || int(flat[i].slot) >= n {
			return nil, errBadState
		}
	}
	at := 0
	for id, c := range counts {
		// Capacity is cut at the length, so that appending a posting
		// copies the list instead of overwriting the next term's.
		bm.postings[id] = flat[at : at+c : at+c]
		at += c
	}
	bm.docLen = make([]float32, n)
	bm.docTerms = make([][]int32, n)
	for i := range n {
		bm.docLen[i] = r.f32()
		k := r.count(r.uvarint(), 4)
		if k > 0 {
			ids := make([]int32, k)
			for j := range ids {
				ids[j] = int32(r.u32())
				if ids[j] < 0 || int(ids[j]) >= terms {
					return nil, errBadState
				}
			}
			bm.docTerms[i] = ids
		}
	}
	bm.alive = int(r.u32())
	bm.totalLen = math.Float64frombits(r.u64())
	for id := range terms {
		t := r.str(termLens[id])
		if _, dup := bm.terms[t]; dup || r.bad {
			return nil, errBadState
		}
		bm.terms[t] = int32(id)
	}
	if r.bad || len(r.b) != 0 || r.heapPos != len(heap) || bm.alive != st.alive {
		return nil, errBadState
	}
	st.bm = bm
	return st, nil
}
