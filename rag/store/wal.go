package store

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/cubestudio/cube/rag/internal/durable"
)

// The log is the embedded store's only file: a header, then frames of
// [payload length u32][CRC-32C of payload u32][payload], little-endian.
// A payload is one operation: a put with a record, a deletion with IDs,
// or the commit of a batch. A write of one operation is one standalone
// frame; a write of more is a batch, its operations as parts and then a
// commit that counts them. The frames of a write are appended and the
// file fsynced once before Upsert, Delete or Apply returns, so an
// acknowledged write survives a crash.
//
// On open the log is replayed, and it must end in one of two ways. It ends
// cleanly after a standalone frame or a commit; or it ends in a torn tail,
// what the one write an append was doing when the process died left,
// which was never acknowledged and is cut off: the parts of a batch whose
// commit is missing, whole or not, and the one frame cut short. An append
// writes its bytes in order, so the frame cut short is a strict prefix of
// a frame as the append encoded it:
//
//   - fewer than the 8 bytes of a frame header; or
//   - a header whose length (1 to maxFrame, as appends write them) runs
//     past the end of the file, followed by bytes that begin one operation
//     of exactly that length: a known operation code, a chunk that fits and
//     is JSON once all of it is there, and a vector length that makes the
//     record that long once it is there; a deletion whose IDs all fit in the
//     bytes present is whole and shorter than the length, so no torn tail,
//     nor is a commit whose count is all there;
//     and when at most 3 bytes are missing, some ending of the bytes present
//     must match the frame's checksum (with 4 or more missing, every prefix
//     has an ending that matches, so the checksum cannot tell).
//
// Anything else is damage, which no crash makes, and Open fails with
// ErrCorrupt naming the frame's offset, truncating nothing: a frame whose
// bytes are all there but fail their checksum or do not decode, even the
// last (an interrupted append leaves a frame short, never whole and
// wrong); a commit whose count is not the parts before it, or a standalone
// frame among a batch's parts; a length of 0 or over maxFrame; and a length past the end of the
// file over bytes that hold a whole operation of another length, which is
// what a damaged length in front of further frames looks like. Such a
// length once made Open take the whole log for a torn tail and cut it.
// What the rule cannot tell apart is damage that leaves exactly what a cut
// leaves: a last frame missing its last bytes, or missing 4 or more bytes
// from its vector, reads as a cut.
const (
	logMagic = "CUBERAG1"
	logName  = "chunks.log"
	// maxFrame bounds one frame; a record is far smaller, so a larger
	// length can only be damage.
	maxFrame = 64 << 20
)

// Operations. opPut and opDelete stand alone: each frame is applied as
// replay reads it (logs written before batches, and one-frame writes).
// A write of more frames marks them as parts (opPutPart, opDeletePart)
// and ends with an opCommit frame that counts them; replay applies the
// parts only at their commit, so a crash before the commit leaves none of
// the batch, and the parts after the last commit are cut off with the
// torn tail.
const (
	opPut        byte = 1
	opDelete     byte = 2
	opPutPart    byte = 3
	opDeletePart byte = 4
	opCommit     byte = 5
)

// baseOp maps a part's operation to the standalone one.
func baseOp(op byte) byte {
	switch op {
	case opPutPart:
		return opPut
	case opDeletePart:
		return opDelete
	}
	return op
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is returned (wrapped) by Open when the log holds anything but
// whole frames and, at its end, a frame an interrupted append cut short:
// no crash does that, a disk or another program changed the file. Open
// then changes nothing on disk.
var ErrCorrupt = errors.New("store log corrupt")

type wal struct {
	f    *os.File
	w    *bufio.Writer
	size int64
	sync bool
}

type walOp struct {
	op     byte // opPut, opDelete or opCommit
	part   bool // of a batch that a commit ends
	record Record
	ids    []string
	count  uint64 // of a commit: the parts it commits
}

func encodeCommit(parts int) []byte {
	return binary.AppendUvarint([]byte{opCommit}, uint64(parts))
}

func encodePut(r Record) ([]byte, error) {
	meta, err := json.Marshal(r.Chunk)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(meta)+4+4*len(r.Vector))
	b = append(b, opPut)
	b = binary.AppendUvarint(b, uint64(len(meta)))
	b = append(b, meta...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(r.Vector)))
	for _, x := range r.Vector {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b, nil
}

func encodeDelete(ids []string) []byte {
	b := []byte{opDelete}
	b = binary.AppendUvarint(b, uint64(len(ids)))
	for _, id := range ids {
		b = binary.AppendUvarint(b, uint64(len(id)))
		b = append(b, id...)
	}
	return b
}

func decodeOp(p []byte) (walOp, error) {
	if len(p) == 0 {
		return walOp{}, errors.New("empty payload")
	}
	part := p[0] == opPutPart || p[0] == opDeletePart
	switch baseOp(p[0]) {
	case opCommit:
		n, w := binary.Uvarint(p[1:])
		if w <= 0 || 1+w != len(p) || n < 2 {
			return walOp{}, errors.New("bad commit")
		}
		return walOp{op: opCommit, count: n}, nil
	case opPut:
		rest := p[1:]
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)-w) {
			return walOp{}, errors.New("bad chunk length")
		}
		var r Record
		if err := json.Unmarshal(rest[w:w+int(n)], &r.Chunk); err != nil {
			return walOp{}, err
		}
		rest = rest[w+int(n):]
		if len(rest) < 4 {
			return walOp{}, errors.New("no vector length")
		}
		dims := binary.LittleEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(len(rest)) != 4*uint64(dims) {
			return walOp{}, errors.New("vector length mismatch")
		}
		r.Vector = make([]float32, dims)
		for i := range r.Vector {
			r.Vector[i] = math.Float32frombits(binary.LittleEndian.Uint32(rest[4*i:]))
		}
		return walOp{op: opPut, part: part, record: r}, nil
	case opDelete:
		rest := p[1:]
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(rest)) {
			return walOp{}, errors.New("bad id count")
		}
		rest = rest[w:]
		ids := make([]string, 0, n)
		for range n {
			l, w := binary.Uvarint(rest)
			if w <= 0 || l > uint64(len(rest)-w) {
				return walOp{}, errors.New("bad id length")
			}
			ids = append(ids, string(rest[w:w+int(l)]))
			rest = rest[w+int(l):]
		}
		if len(rest) != 0 {
			return walOp{}, errors.New("bytes after the last id")
		}
		return walOp{op: opDelete, part: part, ids: ids}, nil
	}
	return walOp{}, fmt.Errorf("unknown operation %d", p[0])
}

// openWAL opens (creating) the log in dir and replays it through apply,
// which receives the operations in order, in groups: a committed batch
// whole, standalone operations several at a time. resume, if not nil, is
// asked first where to begin: an offset past the header, at the end of a
// write, up to which the caller has restored the log's effect by other
// means; 0 replays from the beginning.
func openWAL(dir string, sync bool, resume func(f *os.File, size int64) int64, apply func([]walOp) error) (*wal, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, logName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	size := st.Size()
	if size < int64(len(logMagic)) {
		// A new log, or one whose header a crash cut: it held no frame.
		head := make([]byte, size)
		if _, err := io.ReadFull(f, head); err != nil {
			f.Close()
			return nil, err
		}
		if string(head) != logMagic[:size] {
			f.Close()
			return nil, fmt.Errorf("%s: %w: not a cube rag log (header %q)", path, ErrCorrupt, head)
		}
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, err
		}
		if _, err := f.WriteAt([]byte(logMagic), 0); err != nil {
			f.Close()
			return nil, err
		}
		if err := syncFile(f, dir, sync); err != nil {
			f.Close()
			return nil, err
		}
		size = int64(len(logMagic))
	} else {
		from := int64(len(logMagic))
		if resume != nil {
			from = max(from, resume(f, size))
		}
		good, err := replay(f, size, from, apply)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if good < size {
			if err := f.Truncate(good); err != nil {
				f.Close()
				return nil, err
			}
			if sync {
				if err := f.Sync(); err != nil {
					f.Close()
					return nil, err
				}
			}
			size = good
		}
	}
	if _, err := f.Seek(size, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return &wal{f: f, w: bufio.NewWriterSize(f, 1<<20), size: size, sync: sync}, nil
}

// rawFrame is a frame's payload, checksum verified, not yet decoded.
type rawFrame struct {
	off int64
	p   []byte
}

// replay applies every whole frame from the offset from (the end of a
// write) and returns the offset after the last, where a torn tail, if any,
// begins (see the rule above); the parts of a batch whose commit is
// missing belong to the torn tail.
func replay(f *os.File, size, from int64, apply func([]walOp) error) (int64, error) {
	magic := make([]byte, len(logMagic))
	if _, err := f.ReadAt(magic, 0); err != nil || string(magic) != logMagic {
		return 0, fmt.Errorf("%w: not a cube rag log (header %q)", ErrCorrupt, magic)
	}
	off := max(from, int64(len(logMagic)))
	r := bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), 1<<20)
	var head [8]byte
	var payload []byte
	// alone holds standalone frames not yet applied; parts the frames of
	// the open batch, which began at partsAt. Frames are decoded a group
	// at a time, on every core.
	var alone, parts []rawFrame
	partsAt := int64(-1)
	decode := func(frames []rawFrame) ([]walOp, error) {
		ops := make([]walOp, len(frames))
		errs := make([]error, len(frames))
		parallel(len(frames), func(i int) { ops[i], errs[i] = decodeOp(frames[i].p) })
		for i, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("%w: frame at byte %d of %d: %v", ErrCorrupt, frames[i].off, size, err)
			}
		}
		return ops, nil
	}
	flush := func() error {
		if len(alone) == 0 {
			return nil
		}
		ops, err := decode(alone)
		if err != nil {
			return err
		}
		alone = nil
		return apply(ops)
	}
	// cut ends the replay at a torn tail that begins at at, or at the open
	// batch it belongs to; the open batch's whole frames must still decode.
	cut := func(at int64) (int64, error) {
		if partsAt >= 0 {
			at = partsAt
			if _, err := decode(parts); err != nil {
				return 0, err
			}
		}
		return at, flush()
	}
	for off < size {
		if size-off < int64(len(head)) {
			return cut(off) // a header cut short
		}
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return 0, err
		}
		n := binary.LittleEndian.Uint32(head[:4])
		sum := binary.LittleEndian.Uint32(head[4:])
		if n == 0 || n > maxFrame {
			return 0, fmt.Errorf("%w: frame at byte %d of %d: length %d, which no append writes", ErrCorrupt, off, size, n)
		}
		end := off + 8 + int64(n)
		have := min(end, size) - off - 8
		if cap(payload) < int(have) {
			payload = make([]byte, have)
		}
		payload = payload[:have]
		if _, err := io.ReadFull(r, payload); err != nil {
			return 0, err
		}
		if end > size {
			if why := notTorn(payload, n, sum); why != "" {
				return 0, fmt.Errorf("%w: frame at byte %d of %d: its length %d runs past the end, but %s", ErrCorrupt, off, size, n, why)
			}
			return cut(off) // the frame an interrupted append was writing
		}
		if crc32.Checksum(payload, castagnoli) != sum {
			return 0, fmt.Errorf("%w: frame at byte %d of %d: checksum mismatch", ErrCorrupt, off, size)
		}
		frame := rawFrame{off, slices.Clone(payload)}
		switch payload[0] {
		case opCommit:
			op, err := decodeOp(payload)
			if err != nil {
				return 0, fmt.Errorf("%w: frame at byte %d of %d: %v", ErrCorrupt, off, size, err)
			}
			if uint64(len(parts)) != op.count {
				return 0, fmt.Errorf("%w: frame at byte %d of %d: commits %d parts, %d precede it", ErrCorrupt, off, size, op.count, len(parts))
			}
			if err := flush(); err != nil {
				return 0, err
			}
			ops, err := decode(parts)
			if err != nil {
				return 0, err
			}
			if err := apply(ops); err != nil {
				return 0, err
			}
			parts, partsAt = nil, -1
		case opPutPart, opDeletePart:
			if partsAt < 0 {
				partsAt = off
			}
			parts = append(parts, frame)
		case opPut, opDelete:
			if partsAt >= 0 {
				return 0, fmt.Errorf("%w: frame at byte %d of %d: a standalone operation inside a batch", ErrCorrupt, off, size)
			}
			alone = append(alone, frame)
			if len(alone) == 4096 {
				if err := flush(); err != nil {
					return 0, err
				}
			}
		default:
			return 0, fmt.Errorf("%w: frame at byte %d of %d: unknown operation %d", ErrCorrupt, off, size, payload[0])
		}
		off = end
	}
	return cut(off)
}

// notTorn says why p, the bytes present of a frame of length n and
// checksum sum that runs past the end of the log, cannot be the beginning
// of a frame an append wrote; "" when it can.
func notTorn(p []byte, n, sum uint32) string {
	if len(p) == 0 {
		return ""
	}
	switch baseOp(p[0]) {
	case opCommit:
		// A commit is a count, 1 + its varint's bytes long.
		if n > 1+binary.MaxVarintLen64 {
			return fmt.Sprintf("a commit is at most %d bytes", 1+binary.MaxVarintLen64)
		}
		if _, w := binary.Uvarint(p[1:]); w < 0 {
			return "its part count overflows"
		} else if w > 0 {
			return fmt.Sprintf("the bytes present hold a whole commit of %d bytes", 1+w)
		}
	case opPut:
		m, w := binary.Uvarint(p[1:])
		if w < 0 {
			return "its chunk length overflows"
		}
		if w == 0 {
			break // cut inside the chunk length
		}
		chunkEnd := 1 + uint64(w) + min(m, maxFrame)
		if m > maxFrame || chunkEnd+4 > uint64(n) {
			return fmt.Sprintf("its %d-byte chunk does not fit in it", m)
		}
		if chunkEnd <= uint64(len(p)) && !json.Valid(p[1+w:chunkEnd]) {
			return "its chunk is not JSON"
		}
		if chunkEnd+4 <= uint64(len(p)) {
			dims := binary.LittleEndian.Uint32(p[chunkEnd:])
			if whole := chunkEnd + 4 + 4*uint64(dims); whole != uint64(n) {
				return fmt.Sprintf("the record it begins, of %d dimensions, is %d bytes", dims, whole)
			}
		}
	case opDelete:
		count, w := binary.Uvarint(p[1:])
		if w < 0 {
			return "its ID count overflows"
		}
		if w == 0 {
			break
		}
		at := 1 + w
		for i := uint64(0); ; i++ {
			if i == count {
				return fmt.Sprintf("the bytes present hold a whole deletion of %d bytes", at)
			}
			l, w := binary.Uvarint(p[at:])
			if w < 0 {
				return fmt.Sprintf("the length of ID %d overflows", i)
			}
			if w == 0 {
				break // cut inside an ID's length
			}
			if l > uint64(n)-uint64(at+w) {
				return fmt.Sprintf("ID %d, of %d bytes, does not fit in it", i, l)
			}
			if l > uint64(len(p)-at-w) {
				break // cut inside an ID
			}
			at += w + int(l)
		}
	default:
		return fmt.Sprintf("it begins with operation %d, which is none", p[0])
	}
	if missing := int(n) - len(p); missing <= 3 && !completes(p, missing, sum) {
		return fmt.Sprintf("no %d bytes after the %d present match its checksum", missing, len(p))
	}
	return ""
}

// completes reports whether some missing (1 to 3) bytes after p give the
// CRC-32C sum. It tries every ending but the last byte, which it solves
// for: at most 2^16 tries.
func completes(p []byte, missing int, sum uint32) bool {
	// Between bytes, the table-driven CRC holds the complement of the
	// checksum so far; a byte b takes state c to tab[byte(c)^b] ^ c>>8,
	// whose top byte is tab's alone, and tab's top bytes are all different.
	start, want := ^crc32.Update(0, castagnoli, p), ^sum
	for x := range 1 << (8 * (missing - 1)) {
		c := start
		for i := range missing - 1 {
			c = castagnoli[byte(c)^byte(x>>(8*i))] ^ c>>8
		}
		if castagnoli[crcIndexByTop[want>>24]] == want^c>>8 {
			return true
		}
	}
	return false
}

// crcIndexByTop inverts the top byte of the CRC-32C table's entries.
var crcIndexByTop = func() (idx [256]byte) {
	seen := [256]bool{}
	for i, v := range castagnoli {
		if seen[v>>24] {
			panic("rag: CRC-32C table entries share a top byte")
		}
		seen[v>>24] = true
		idx[v>>24] = byte(i)
	}
	return idx
}()

// appendBatch writes payloads (each an operation as encodePut and
// encodeDelete write it) as one batch: a single payload as a standalone
// frame, more as parts followed by a commit. When the log syncs it fsyncs
// once, after the commit. On error the log is cut back to where it was, so
// no half batch is left for the next append to follow.
func (l *wal) appendBatch(payloads [][]byte) error {
	if len(payloads) > 1 {
		for _, p := range payloads {
			switch p[0] {
			case opPut:
				p[0] = opPutPart
			case opDelete:
				p[0] = opDeletePart
			}
		}
		payloads = append(payloads[:len(payloads):len(payloads)], encodeCommit(len(payloads)))
	}
	start := l.size
	var head [8]byte
	for _, p := range payloads {
		if len(p) > maxFrame {
			return fmt.Errorf("record of %d bytes exceeds the %d-byte frame limit", len(p), maxFrame)
		}
		binary.LittleEndian.PutUint32(head[:4], uint32(len(p)))
		binary.LittleEndian.PutUint32(head[4:], crc32.Checksum(p, castagnoli))
		if _, err := l.w.Write(head[:]); err != nil {
			return l.rollback(start, err)
		}
		if _, err := l.w.Write(p); err != nil {
			return l.rollback(start, err)
		}
		l.size += int64(8 + len(p))
	}
	if err := l.w.Flush(); err != nil {
		return l.rollback(start, err)
	}
	if l.sync {
		if err := l.f.Sync(); err != nil {
			return l.rollback(start, err)
		}
	}
	return nil
}

func (l *wal) rollback(start int64, err error) error {
	l.w.Reset(l.f)
	l.size = start
	if terr := l.f.Truncate(start); terr != nil {
		return errors.Join(err, terr)
	}
	if _, serr := l.f.Seek(start, io.SeekStart); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}

func (l *wal) close() error {
	err := l.w.Flush()
	if l.sync {
		err = errors.Join(err, l.f.Sync())
	}
	return errors.Join(err, l.f.Close())
}

func syncFile(f *os.File, dir string, sync bool) error {
	if !sync {
		return nil
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return durable.SyncDir(dir)
}
