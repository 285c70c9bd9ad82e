package market

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"
)

// bbolt reads its file through a memory map and trusts what it finds: a
// page id past the end of a truncated file faults (SIGBUS, which kills the
// process), a page of unexpected type panics, and a branch page that leads
// back to itself recurses until the stack overflows. checkBoltFile
// therefore reads the file as bbolt will, with plain reads, before bbolt
// maps it, and guard turns whatever bbolt still panics on into an error.
//
// The layout is bbolt's (go.etcd.io/bbolt/internal/common), in the
// machine's byte order: every page starts with a 16-byte header (id u64,
// flags u16, count u16, overflow u32); pages 0 and 1 are meta pages, whose
// meta (after the header) is magic u32, version u32, page size u32, flags
// u32, the root bucket (root page u64, sequence u64), freelist page u64,
// high-water mark u64 (pages in use: the file holds at least that many),
// transaction id u64, and an FNV-64a checksum of the 56 bytes before it.
const (
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	boltPageHeader   = 16
	boltElementSize  = 16 // branch: pos, ksize u32, child u64; leaf: flags, pos, ksize, vsize u32
	boltBucketHeader = 16 // a bucket's value: root page u64, sequence u64, then an inline page
	boltNoFreelist   = ^uint64(0)

	boltBranchPage   = 0x01
	boltLeafPage     = 0x02
	boltFreelistPage = 0x10
	boltBucketLeaf   = 0x01
)

// errDamaged is wrapped by every error about a file's structure.
var errDamaged = errors.New("damaged registry file")

type boltMeta struct {
	pageSize       uint64
	root, freelist uint64
	pages          uint64 // the high-water mark
	txid           uint64
	sum            uint64 // the meta page's checksum
}

// readBoltMeta reads the meta page at off; ok is false when it is not a
// valid one (bbolt then falls back to the other).
func readBoltMeta(f io.ReaderAt, off int64) (m boltMeta, ok bool) {
	var b [boltPageHeader + 64]byte
	if _, err := f.ReadAt(b[:], off); err != nil {
		return m, false
	}
	meta := b[boltPageHeader:]
	ne := binary.NativeEndian
	if ne.Uint32(meta[0:]) != boltMagic || ne.Uint32(meta[4:]) != boltVersion {
		return m, false
	}
	h := fnv.New64a()
	h.Write(meta[:56])
	if h.Sum64() != ne.Uint64(meta[56:]) {
		return m, false
	}
	return boltMeta{
		pageSize: uint64(ne.Uint32(meta[8:])),
		root:     ne.Uint64(meta[16:]),
		freelist: ne.Uint64(meta[32:]),
		pages:    ne.Uint64(meta[40:]),
		txid:     ne.Uint64(meta[48:]),
		sum:      ne.Uint64(meta[56:]),
	}, true
}

// boltMetaInUse finds the meta page bbolt will use: the page size comes
// from the meta at offset 0 or else, as bbolt looks for it, from a meta at
// 1 KiB, 2 KiB, ... 16 MiB; the second meta page is at that page size;
// of the valid ones, the later transaction wins.
func boltMetaInUse(f io.ReaderAt, size int64) (boltMeta, error) {
	m0, ok0 := readBoltMeta(f, 0)
	pageSize := m0.pageSize
	if !ok0 {
		for i := range 15 {
			pos := int64(1024) << i
			if pos >= size-1024 {
				break
			}
			if m, ok := readBoltMeta(f, pos); ok {
				pageSize = m.pageSize
				break
			}
		}
	}
	var m1 boltMeta
	ok1 := false
	if pageSize >= 1024 && pageSize <= 1<<24 {
		m1, ok1 = readBoltMeta(f, int64(pageSize))
	}
	switch {
	case ok0 && ok1 && m1.txid > m0.txid, !ok0 && ok1:
		m0 = m1
	case !ok0:
		return boltMeta{}, fmt.Errorf("%w: no valid bbolt meta page (not a registry file, or both meta pages overwritten)", errDamaged)
	}
	m := m0
	if m.pageSize != pageSize || m.pageSize < 1024 || m.pageSize > 1<<24 {
		return boltMeta{}, fmt.Errorf("%w: meta page of transaction %d says pages are %d bytes, the file's are %d", errDamaged, m.txid, m.pageSize, pageSize)
	}
	if m.pages > uint64(size)/m.pageSize {
		return boltMeta{}, fmt.Errorf("%w: truncated: the file is %d bytes, its meta page (transaction %d) says it holds %d pages of %d bytes", errDamaged, size, m.txid, m.pages, m.pageSize)
	}
	if m.root < 2 || m.root >= m.pages {
		return boltMeta{}, fmt.Errorf("%w: root page %d outside the %d pages in use", errDamaged, m.root, m.pages)
	}
	if m.freelist != boltNoFreelist && (m.freelist < 2 || m.freelist >= m.pages) {
		return boltMeta{}, fmt.Errorf("%w: freelist page %d outside the %d pages in use", errDamaged, m.freelist, m.pages)
	}
	return m, nil
}

// checkBoltFile refuses a file that bbolt would fault, panic or recurse
// without end on: it finds the meta page bbolt will use, checks that the
// file holds every page the meta says is in use (a shorter file is
// truncated), and walks every page reachable from the root bucket and the
// freelist, checking each page's id and type, that every element, key,
// value and inline bucket lies inside its page, that every page is reached
// once only (so no page leads back to itself), that no inline bucket holds
// a bucket (bbolt never writes one), and that no free page is in use. It
// returns the meta page in use; the zero meta for a missing or empty file,
// which passes: bbolt creates and initialises it.
//
// The walk reads the whole tree, so it is skipped when the meta page in use
// is known, the one of a transaction walked before or committed by this
// process: its pages are as they were. The meta and the file's length are
// always checked.
//
// It reads without the file's lock, so a process writing the file
// meanwhile can reuse pages the walk is reading; such a write commits a
// new transaction, so a walk that fails while the transaction in use
// changed is repeated.
func checkBoltFile(path string, known *boltMeta) (boltMeta, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return boltMeta{}, nil
	}
	if err != nil {
		return boltMeta{}, err
	}
	defer f.Close()
	for attempt := 0; ; attempt++ {
		st, err := f.Stat()
		if err != nil {
			return boltMeta{}, err
		}
		if st.Size() == 0 {
			return boltMeta{}, nil
		}
		m, err := boltMetaInUse(f, st.Size())
		if err != nil || known != nil && m == *known {
			return m, err
		}
		err = walkBolt(f, m)
		if err == nil {
			return m, nil
		}
		st, serr := f.Stat()
		if serr != nil {
			return boltMeta{}, errors.Join(err, serr)
		}
		again, aerr := boltMetaInUse(f, st.Size())
		if attempt < 3 && aerr == nil && again.txid != m.txid {
			continue
		}
		return boltMeta{}, err
	}
}

// committedMeta reads the meta page in use of the file at path, which this
// process has just written and still holds the lock of.
func committedMeta(path string) (boltMeta, error) {
	f, err := os.Open(path)
	if err != nil {
		return boltMeta{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return boltMeta{}, err
	}
	return boltMetaInUse(f, st.Size())
}

// walkBolt checks every page reachable from m, without recursion.
func walkBolt(f io.ReaderAt, m boltMeta) error {
	seen := make([]bool, m.pages)
	// read returns page id and its overflow pages, once each.
	read := func(id uint64, from string) ([]byte, error) {
		if id < 2 || id >= m.pages {
			return nil, fmt.Errorf("%w: %s points to page %d, outside the %d pages in use", errDamaged, from, id, m.pages)
		}
		if seen[id] {
			return nil, fmt.Errorf("%w: %s points to page %d, which another page already uses", errDamaged, from, id)
		}
		var head [boltPageHeader]byte
		if _, err := f.ReadAt(head[:], int64(id*m.pageSize)); err != nil {
			return nil, fmt.Errorf("page %d: %w", id, err)
		}
		ne := binary.NativeEndian
		if got := ne.Uint64(head[0:]); got != id {
			return nil, fmt.Errorf("%w: page %d says it is page %d", errDamaged, id, got)
		}
		overflow := uint64(ne.Uint32(head[12:]))
		if overflow >= m.pages-id {
			return nil, fmt.Errorf("%w: page %d runs over %d more pages, past the %d in use", errDamaged, id, overflow, m.pages)
		}
		for i := id; i <= id+overflow; i++ {
			if seen[i] {
				return nil, fmt.Errorf("%w: page %d overlaps page %d, which another page already uses", errDamaged, id, i)
			}
			seen[i] = true
		}
		b := make([]byte, (1+overflow)*m.pageSize)
		if _, err := f.ReadAt(b, int64(id*m.pageSize)); err != nil {
			return nil, fmt.Errorf("page %d: %w", id, err)
		}
		return b, nil
	}

	var free []uint64
	if m.freelist != boltNoFreelist {
		b, err := read(m.freelist, "the meta page's freelist")
		if err != nil {
			return err
		}
		if free, err = freePages(b, m); err != nil {
			return err
		}
	}
	// A node is a page, or an inline bucket's page inside its parent's value.
	type node struct {
		id   uint64 // 0 for an inline page
		data []byte
	}
	b, err := read(m.root, "the meta page's root bucket")
	if err != nil {
		return err
	}
	stack := []node{{m.root, b}}
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		name := fmt.Sprintf("page %d", n.id)
		if n.id == 0 {
			name = "an inline bucket"
		}
		ne := binary.NativeEndian
		flags, count := ne.Uint16(n.data[8:]), int(ne.Uint16(n.data[10:]))
		if flags != boltBranchPage && flags != boltLeafPage || n.id == 0 && flags != boltLeafPage {
			return fmt.Errorf("%w: %s has type %#x where a branch or leaf page belongs", errDamaged, name, flags)
		}
		if flags == boltBranchPage && count == 0 {
			return fmt.Errorf("%w: %s is a branch page without elements", errDamaged, name)
		}
		if boltPageHeader+count*boltElementSize > len(n.data) {
			return fmt.Errorf("%w: %s claims %d elements, more than fit", errDamaged, name, count)
		}
		for i := range count {
			at := boltPageHeader + i*boltElementSize
			e := n.data[at : at+boltElementSize]
			if flags == boltBranchPage {
				pos, ksize := uint64(ne.Uint32(e[0:])), uint64(ne.Uint32(e[4:]))
				if uint64(at)+pos+ksize > uint64(len(n.data)) {
					return fmt.Errorf("%w: %s: key of element %d lies outside the page", errDamaged, name, i)
				}
				child := ne.Uint64(e[8:])
				b, err := read(child, fmt.Sprintf("%s element %d", name, i))
				if err != nil {
					return err
				}
				stack = append(stack, node{child, b})
				continue
			}
			elemFlags := ne.Uint32(e[0:])
			pos, ksize, vsize := uint64(ne.Uint32(e[4:])), uint64(ne.Uint32(e[8:])), uint64(ne.Uint32(e[12:]))
			end := uint64(at) + pos + ksize + vsize
			if end > uint64(len(n.data)) {
				return fmt.Errorf("%w: %s: key or value of element %d lies outside the page", errDamaged, name, i)
			}
			if elemFlags&boltBucketLeaf == 0 {
				continue
			}
			if n.id == 0 {
				// bbolt writes a bucket inline only when it holds no bucket;
				// elements sharing one value could otherwise nest without end.
				return fmt.Errorf("%w: an inline bucket holds a bucket in element %d", errDamaged, i)
			}
			value := n.data[end-vsize : end]
			if len(value) < boltBucketHeader {
				return fmt.Errorf("%w: %s: bucket of element %d is %d bytes, shorter than a bucket header", errDamaged, name, i, len(value))
			}
			if root := ne.Uint64(value); root != 0 {
				b, err := read(root, fmt.Sprintf("the bucket in %s element %d", name, i))
				if err != nil {
					return err
				}
				stack = append(stack, node{root, b})
				continue
			}
			inline := value[boltBucketHeader:]
			if len(inline) < boltPageHeader {
				return fmt.Errorf("%w: %s: inline bucket of element %d is shorter than a page header", errDamaged, name, i)
			}
			stack = append(stack, node{0, inline})
		}
	}
	// A free page that is also in use would be handed out by the next
	// write and overwritten under the data it holds.
	for _, id := range free {
		if seen[id] {
			return fmt.Errorf("%w: freelist page %d lists page %d, which is in use", errDamaged, m.freelist, id)
		}
	}
	return nil
}

// freePages reads the freelist page b and checks that the pages it lists
// are among those in use.
func freePages(b []byte, m boltMeta) ([]uint64, error) {
	ne := binary.NativeEndian
	if flags := ne.Uint16(b[8:]); flags != boltFreelistPage {
		return nil, fmt.Errorf("%w: freelist page %d has type %#x", errDamaged, m.freelist, flags)
	}
	ids := b[boltPageHeader:]
	count := uint64(ne.Uint16(b[10:]))
	if count == 0xFFFF { // the real count is the first element
		if len(ids) < 8 {
			return nil, fmt.Errorf("%w: freelist page %d is too short for its count", errDamaged, m.freelist)
		}
		count, ids = ne.Uint64(ids), ids[8:]
	}
	if count > uint64(len(ids))/8 {
		return nil, fmt.Errorf("%w: freelist page %d lists %d pages, more than fit", errDamaged, m.freelist, count)
	}
	free := make([]uint64, count)
	for i := range free {
		free[i] = ne.Uint64(ids[8*i:])
		if free[i] < 2 || free[i] >= m.pages {
			return nil, fmt.Errorf("%w: freelist page %d lists page %d, outside the %d pages in use", errDamaged, m.freelist, free[i], m.pages)
		}
	}
	return free, nil
}

// guarded runs fn, turning a panic or a memory fault inside bbolt, which
// checkBoltFile did not foresee, into an error wrapping errDamaged. A fault
// reading bbolt's memory map is fatal unless the goroutine asked for a
// panic instead (debug.SetPanicOnFault).
func guarded(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: bbolt: %v", errDamaged, p)
		}
	}()
	return fn()
}

// boltOpen opens path with bbolt. Should bbolt panic while opening, after
// it has locked the file, the file is closed before the panic goes on, so
// that the lock does not outlive the error and hold off the next open.
func boltOpen(path string, opts bolt.Options) (*bolt.DB, error) {
	var file *os.File
	opts.OpenFile = func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		file = f
		return f, err
	}
	opened := false
	defer func() {
		if !opened && file != nil {
			file.Close()
		}
	}()
	db, err := bolt.Open(path, 0o600, &opts)
	opened = true
	return db, err
}
