package market

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// FileStore is the embedded registry store: one bbolt file
// (go.etcd.io/bbolt, the B+tree store etcd keeps its data in).
//
// bbolt rather than SQLite: it is pure Go with no dependency beyond
// golang.org/x/sys (a pure-Go SQLite is either a transpiled libc,
// modernc.org/sqlite, or a WebAssembly runtime, ncruces/go-sqlite3); a
// registry needs keyed reads, ordered scans and transactions, not SQL.
// Every write is one transaction that bbolt commits copy-on-write and
// fsyncs before the new meta page makes it visible, so a process killed
// mid-write leaves the previous state; the file is locked with flock, so
// several processes may share it. FileStore opens the file for each
// operation and closes it after, which is what lets another process in:
// writers queue on the lock (up to LockTimeout), readers share it.
type FileStore struct {
	path string
	// LockTimeout bounds the wait for another process's write; the default
	// is 30 seconds.
	LockTimeout time.Duration
	// checked is the meta page of the last transaction checkBoltFile
	// walked or this store committed: while it is the one in use, the file
	// need not be walked again.
	checked atomic.Pointer[boltMeta]
}

// OpenFileStore returns a store in the file at path, creating its
// directory and the file when they do not exist. The file is initialised
// here, under the write lock, so that no reader in another process ever
// opens a file that a writer has created but not yet written.
//
// A file that is not a registry, is truncated or has damaged pages is an
// error, never a panic or a crash: before bbolt maps the file, every call
// checks its meta pages and length, and walks its pages when a transaction
// this store has not seen is in use (see checkBoltFile); a panic or memory
// fault inside bbolt is turned into an error.
func OpenFileStore(path string) (*FileStore, error) {
	if path == "" {
		return nil, fmt.Errorf("open file store: %w", field.Required(field.NewPath("path"), "a file path is required"))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open file store %s: %w", path, err)
	}
	s := &FileStore{path: path}
	_, err := checkBoltFile(path, nil)
	if err == nil {
		err = guarded(func() error { return s.initFile() })
	}
	if err != nil {
		return nil, fmt.Errorf("open file store %s: %w", path, err)
	}
	return s, nil
}

// initFile creates the buckets, in a new file under bbolt's write lock.
func (s *FileStore) initFile() error {
	db, err := boltOpen(s.path, bolt.Options{Timeout: defaultLockTimeout})
	if err != nil {
		return err
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketVersions, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if m, err := committedMeta(s.path); err == nil {
		s.checked.Store(&m)
	}
	return db.Close()
}

const defaultLockTimeout = 30 * time.Second

var (
	bucketVersions = []byte("versions")
	bucketMeta     = []byte("meta")
)

// record is what one key holds: the revision beside the version, which
// does not marshal its Revision.
type record struct {
	Revision uint64  `json:"revision"`
	Version  Version `json:"version"`
}

// key orders versions by model then number: model, a zero byte (which no
// model name contains), and the number big-endian.
func key(model string, number int) []byte {
	k := make([]byte, 0, len(model)+9)
	k = append(k, model...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, uint64(number))
}

func (s *FileStore) usable() error {
	if s == nil || s.path == "" {
		return errors.New("market: file store is not open: use OpenFileStore")
	}
	return nil
}

// open checks the file, opens it with bbolt and runs fn on it, turning a
// panic or memory fault inside bbolt into an error.
func (s *FileStore) open(ctx context.Context, readOnly bool, fn func(db *bolt.DB) error) error {
	if err := s.usable(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	timeout := s.LockTimeout
	if timeout <= 0 {
		timeout = defaultLockTimeout
	}
	m, err := checkBoltFile(s.path, s.checked.Load())
	if err != nil {
		return fmt.Errorf("open %s: %w", s.path, err)
	}
	s.checked.Store(&m)
	err = guarded(func() error {
		db, err := boltOpen(s.path, bolt.Options{Timeout: timeout, ReadOnly: readOnly})
		if err != nil {
			return fmt.Errorf("open %s: %w", s.path, err)
		}
		defer db.Close()
		if err := fn(db); err != nil {
			return err
		}
		if !readOnly {
			// What this store committed, under the lock it still holds, is
			// bbolt's own writing over a checked file.
			if m, err := committedMeta(s.path); err == nil {
				s.checked.Store(&m)
			}
		}
		if err := db.Close(); err != nil {
			return fmt.Errorf("close %s: %w", s.path, err)
		}
		return nil
	})
	if errors.Is(err, errDamaged) {
		return fmt.Errorf("read %s: %w", s.path, err)
	}
	return err
}

// view runs fn in a read transaction.
func (s *FileStore) view(ctx context.Context, fn func(b *bolt.Bucket) error) error {
	return s.open(ctx, true, func(db *bolt.DB) error {
		return db.View(func(tx *bolt.Tx) error { return fn(tx.Bucket(bucketVersions)) })
	})
}

func (s *FileStore) update(ctx context.Context, fn func(versions, meta *bolt.Bucket) error) error {
	return s.open(ctx, false, func(db *bolt.DB) error {
		return db.Update(func(tx *bolt.Tx) error {
			versions, err := tx.CreateBucketIfNotExists(bucketVersions)
			if err != nil {
				return err
			}
			meta, err := tx.CreateBucketIfNotExists(bucketMeta)
			if err != nil {
				return err
			}
			return fn(versions, meta)
		})
	})
}

func decode(raw []byte) (Version, error) {
	var r record
	if err := json.Unmarshal(raw, &r); err != nil {
		return Version{}, fmt.Errorf("decode stored version: %w", err)
	}
	r.Version.Revision = strconv.FormatUint(r.Revision, 10)
	return r.Version, nil
}

func put(versions, meta *bolt.Bucket, v Version) (Version, error) {
	rev, err := meta.NextSequence()
	if err != nil {
		return Version{}, err
	}
	raw, err := json.Marshal(record{Revision: rev, Version: v})
	if err != nil {
		return Version{}, fmt.Errorf("encode %s: %w", v.Ref(), err)
	}
	if err := versions.Put(key(v.Model, v.Number), raw); err != nil {
		return Version{}, fmt.Errorf("write %s: %w", v.Ref(), err)
	}
	v.Revision = strconv.FormatUint(rev, 10)
	return v, nil
}

// Create implements Store.
func (s *FileStore) Create(ctx context.Context, v Version) (Version, error) {
	v, err := prepareCreate(v, time.Now())
	if err != nil {
		return Version{}, err
	}
	var out Version
	err = s.update(ctx, func(versions, meta *bolt.Bucket) error {
		// The last key of this model's range holds the highest number.
		prefix := append([]byte(v.Model), 0)
		c := versions.Cursor()
		next := 1
		k, _ := c.Seek(key(v.Model, 1<<62))
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		if k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+8 {
			next = int(binary.BigEndian.Uint64(k[len(prefix):])) + 1
		}
		v.Number = next
		out, err = put(versions, meta, v)
		return err
	})
	if err != nil {
		return Version{}, fmt.Errorf("register version of %q: %w", v.Model, err)
	}
	return out.Clone(), nil
}

// Get implements Store.
func (s *FileStore) Get(ctx context.Context, model string, number int) (Version, error) {
	var out Version
	err := s.view(ctx, func(b *bolt.Bucket) error {
		var raw []byte
		if b != nil {
			raw = b.Get(key(model, number))
		}
		if raw == nil {
			return fmt.Errorf("get %s@%d: %w", model, number, ErrNotFound)
		}
		var err error
		out, err = decode(raw)
		return err
	})
	return out, err
}

// Update implements Store.
func (s *FileStore) Update(ctx context.Context, v Version) (Version, error) {
	if err := s.usable(); err != nil {
		return Version{}, err
	}
	var out Version
	err := s.update(ctx, func(versions, meta *bolt.Bucket) error {
		raw := versions.Get(key(v.Model, v.Number))
		if raw == nil {
			return fmt.Errorf("update %s: %w", v.Ref(), ErrNotFound)
		}
		stored, err := decode(raw)
		if err != nil {
			return err
		}
		next, err := prepareUpdate(stored, v, time.Now())
		if err != nil {
			return err
		}
		out, err = put(versions, meta, next)
		return err
	})
	return out, err
}

// List implements Store.
func (s *FileStore) List(ctx context.Context, f Filter) ([]Version, error) {
	if err := f.validate(); err != nil {
		return nil, fmt.Errorf("list versions: %w", err)
	}
	var out []Version
	err := s.view(ctx, func(b *bolt.Bucket) error {
		if b == nil {
			return nil
		}
		c := b.Cursor()
		var prefix []byte
		k, raw := c.First()
		if f.Model != "" {
			prefix = append([]byte(f.Model), 0)
			k, raw = c.Seek(prefix)
		}
		for ; k != nil && bytes.HasPrefix(k, prefix); k, raw = c.Next() {
			v, err := decode(raw)
			if err != nil {
				return err
			}
			if f.matches(v) {
				out = append(out, v)
			}
		}
		return nil
	})
	return out, err
}
