package store

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/cubestudio/cube/rag/internal/durable"
)

// The HNSW graph is saved beside the log (graph.snap) when BuildIndex
// builds it and when the store closes, so that a reopened store does not
// rebuild it (a minute of both cores at 100,000 chunks). The snapshot is a cache: it
// names how many slots it covers and a hash of their IDs and vectors'
// first coordinates, and Open uses it only when the replayed log begins
// with those same slots; the indexer inserts the slots the log has beyond it.
// Anything else (damage, a compacted log, other parameters) is ignored and
// the graph is built again on demand. Even a stale graph could only route
// a search worse: hits are scored with the stored vectors.
const (
	snapName  = "graph.snap"
	snapMagic = "CUBEHNSW1"
)

// slotsHash hashes the IDs and the first four coordinates of slots[:n].
func (s *Local) slotsHash(n int) [32]byte {
	h := sha256.New()
	var buf [4]byte
	for _, sl := range s.slots[:n] {
		h.Write([]byte(sl.chunk.ID))
		h.Write([]byte{0})
		for _, x := range sl.vec[:min(4, len(sl.vec))] {
			binary.LittleEndian.PutUint32(buf[:], math.Float32bits(x))
			h.Write(buf[:])
		}
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// saveGraph writes the graph's snapshot; the caller holds the write lock.
func (s *Local) saveGraph() error {
	g := s.graph
	if g == nil || g.size() <= s.graphSaved {
		return nil
	}
	g.mu.RLock()
	defer g.mu.RUnlock()
	n := g.size()
	le := binary.LittleEndian
	b := []byte(snapMagic)
	put := func(v uint32) { b = le.AppendUint32(b, v) }
	put(uint32(n))
	hash := s.slotsHash(n)
	b = append(b, hash[:]...)
	put(uint32(g.p.M))
	put(uint32(g.p.EfConstruction))
	put(uint32(g.entry))
	put(uint32(g.maxLevel))
	for _, levels := range g.friends[:n] {
		put(uint32(len(levels)))
		for _, fs := range levels {
			put(uint32(len(fs)))
			for _, f := range fs {
				put(uint32(f))
			}
		}
	}
	put(crc32.Checksum(b, castagnoli))
	tmp := filepath.Join(s.dir, snapName+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if s.sync {
		f, err := os.Open(tmp)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, snapName)); err != nil {
		return err
	}
	s.graphSaved = n
	if s.sync {
		return durable.SyncDir(s.dir)
	}
	return nil
}

var errBadSnapshot = errors.New("graph snapshot does not match the log")

// loadGraph installs the saved graph if it matches the replayed slots and
// inserts the slots after it; the caller holds the write lock (or is Open).
func (s *Local) loadGraph() error {
	b, err := os.ReadFile(filepath.Join(s.dir, snapName))
	if err != nil {
		return err
	}
	if len(b) < len(snapMagic)+4+32+16+4 || string(b[:len(snapMagic)]) != snapMagic {
		return errBadSnapshot
	}
	le := binary.LittleEndian
	body, sum := b[:len(b)-4], le.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return errBadSnapshot
	}
	r := body[len(snapMagic):]
	next := func() (uint32, bool) {
		if len(r) < 4 {
			return 0, false
		}
		v := le.Uint32(r)
		r = r[4:]
		return v, true
	}
	n, _ := next()
	if int(n) > len(s.slots) || n == 0 {
		return errBadSnapshot
	}
	var hash [32]byte
	copy(hash[:], r)
	r = r[32:]
	if hash != s.slotsHash(int(n)) {
		return errBadSnapshot
	}
	m, _ := next()
	efc, _ := next()
	entry, _ := next()
	maxLevel, ok := next()
	if !ok || int(m) != s.params.M || int(efc) != s.params.EfConstruction || entry >= n || maxLevel > 64 {
		return errBadSnapshot
	}
	g := newHNSW(s.params)
	g.friends = make([][][]int32, n)
	for node := range g.friends {
		levels, ok := next()
		if !ok || levels == 0 || levels > maxLevel+1 {
			return errBadSnapshot
		}
		g.friends[node] = make([][]int32, levels)
		for l := range g.friends[node] {
			count, ok := next()
			if !ok || int(count) > g.maxFriends(l) || uint64(len(r)) < 4*uint64(count) {
				return errBadSnapshot
			}
			fs := make([]int32, count)
			for i := range fs {
				f, _ := next()
				if f >= n {
					return errBadSnapshot
				}
				fs[i] = int32(f)
			}
			g.friends[node][l] = fs
		}
	}
	if len(r) != 0 || len(g.friends[entry]) != int(maxLevel)+1 {
		return errBadSnapshot
	}
	// A neighbour on level l must itself reach level l.
	for _, levels := range g.friends {
		for l, fs := range levels {
			for _, f := range fs {
				if len(g.friends[f]) <= l {
					return errBadSnapshot
				}
			}
		}
	}
	g.entry, g.maxLevel = int32(entry), int(maxLevel)
	g.vecs = make([][]float32, n)
	for i := range g.vecs {
		g.vecs[i] = s.slots[i].vec
	}
	g.locks = make([]sync.Mutex, n)
	g.n.Store(int64(n))
	// The slots written after the snapshot are left to the indexer.
	s.graph = g
	s.graphSaved = int(n)
	return nil
}
