package rag

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
)

// The log is the embedded store's only file: a header, then frames of
// [payload length u32][CRC-32C of payload u32][payload], little-endian.
// A payload is one operation: opPut with a record, or opDelete with IDs.
// Frames are appended and the file fsynced before Upsert or Delete
// returns, so an acknowledged write survives a crash. On open the log is
// replayed; a frame cut short or failing its checksum at the end of the
// file is a write the crash interrupted (never acknowledged) and is cut
// off; a bad frame followed by more data is corruption and an error.
const (
	logMagic = "CUBERAG1"
	logName  = "chunks.log"
	// maxFrame bounds one frame; a record is far smaller, so a larger
	// length can only be damage.
	maxFrame = 64 << 20
)

const (
	opPut    byte = 1
	opDelete byte = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is returned (wrapped) by Open when the log is damaged before
// its end, which no crash does: a disk or another program changed it.
var ErrCorrupt = errors.New("store log corrupt")

type wal struct {
	f    *os.File
	w    *bufio.Writer
	size int64
	sync bool
}

type walOp struct {
	op     byte
	record Record
	ids    []string
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
	switch p[0] {
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
		return walOp{op: opPut, record: r}, nil
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
		return walOp{op: opDelete, ids: ids}, nil
	}
	return walOp{}, fmt.Errorf("unknown operation %d", p[0])
}

// openWAL opens (creating) the log in dir and replays it through apply.
func openWAL(dir string, sync bool, apply func(walOp) error) (*wal, error) {
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
		good, err := replay(f, size, apply)
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

// replay applies every whole frame and returns the offset after the last.
func replay(f *os.File, size int64, apply func(walOp) error) (int64, error) {
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 1<<20)
	magic := make([]byte, len(logMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != logMagic {
		return 0, fmt.Errorf("%w: not a cube rag log (header %q)", ErrCorrupt, magic)
	}
	off := int64(len(logMagic))
	var head [8]byte
	var payload []byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return off, nil // end of log, or a header cut short: a torn tail
		}
		n := binary.LittleEndian.Uint32(head[:4])
		sum := binary.LittleEndian.Uint32(head[4:])
		end := off + 8 + int64(n)
		if n > maxFrame || end > size {
			if n > maxFrame && end < size {
				return 0, fmt.Errorf("%w: frame at byte %d claims %d bytes", ErrCorrupt, off, n)
			}
			return off, nil // cut short by the crash
		}
		if cap(payload) < int(n) {
			payload = make([]byte, n)
		}
		payload = payload[:n]
		if _, err := io.ReadFull(r, payload); err != nil {
			return off, nil
		}
		if crc32.Checksum(payload, castagnoli) != sum {
			if end == size {
				return off, nil // the last frame, half written
			}
			return 0, fmt.Errorf("%w: checksum mismatch in the frame at byte %d of %d", ErrCorrupt, off, size)
		}
		op, err := decodeOp(payload)
		if err != nil {
			return 0, fmt.Errorf("%w: frame at byte %d: %v", ErrCorrupt, off, err)
		}
		if err := apply(op); err != nil {
			return 0, err
		}
		off = end
	}
}

// append writes payloads as frames and, when the log syncs, fsyncs them.
// On error the log is cut back to where it was, so no half frame is left
// for the next append to follow.
func (l *wal) append(payloads ...[]byte) error {
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
	return syncDir(dir)
}

// syncDir makes a file created or renamed in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
