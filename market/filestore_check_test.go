package market

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// registryFile writes a registry holding n versions and returns its path
// and bytes. With a few hundred versions the versions bucket spans
// several leaf pages under a branch page.
func registryFile(t *testing.T, n int) (string, []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "registry.db")
	s, err := OpenFileStore(path)
	require.NoError(t, err)
	for i := range n {
		_, err := s.Create(t.Context(), Version{Model: fmt.Sprintf("model-%03d", i%7),
			Artifact: Artifact{URI: fmt.Sprintf("pvc://models/m-%d", i), Format: "safetensors"}})
		require.NoError(t, err)
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return path, b
}

// damaged writes b to path and checks that opening the registry, and
// using a store opened before the damage, either works or fails with an
// error; a panic fails the test, and a fault or an endless recursion
// would kill it.
func damaged(t *testing.T, path string, b []byte) (openErr, listErr error) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, b, 0o600))
	before := &FileStore{path: path}
	_, listErr = before.List(t.Context(), Filter{})
	_, openErr = OpenFileStore(path)
	return openErr, listErr
}

// A registry cut to 8 KiB keeps its two meta pages but not the pages they
// point to; bbolt would map it and fault reading them.
func TestFileStoreRefusesATruncatedFile(t *testing.T) {
	path, good := registryFile(t, 300)
	require.Greater(t, len(good), 8<<10)
	openErr, listErr := damaged(t, path, good[:8<<10])
	for _, err := range []error{openErr, listErr} {
		require.Error(t, err)
		assert.Contains(t, err.Error(), "damaged registry file: truncated: the file is 8192 bytes")
		assert.Contains(t, err.Error(), path)
	}
	// Every length short of the pages in use is refused too; bbolt grows
	// the file ahead of them, and cutting only that leaves it whole.
	f, err := os.Open(path)
	require.NoError(t, err)
	m, err := boltMetaInUse(f, int64(len(good)))
	f.Close()
	require.NoError(t, err)
	inUse := int(m.pages * m.pageSize)
	require.Less(t, inUse, len(good))
	for n := 512; n < inUse; n += 512 {
		openErr, listErr := damaged(t, path, good[:n])
		assert.Error(t, listErr, "truncated to %d bytes", n)
		assert.Error(t, openErr, "truncated to %d bytes", n)
	}
	for _, n := range []int{inUse, len(good)} {
		openErr, listErr := damaged(t, path, good[:n])
		assert.NoError(t, listErr, "truncated to %d bytes", n)
		assert.NoError(t, openErr, "truncated to %d bytes", n)
	}
}

// Pages overwritten with noise, a page that leads back to itself, and a
// free page still in use are refused with an error naming the page.
func TestFileStoreRefusesDamagedPages(t *testing.T) {
	path, good := registryFile(t, 300)
	f, err := os.Open(path)
	require.NoError(t, err)
	m, err := boltMetaInUse(f, int64(len(good)))
	f.Close()
	require.NoError(t, err)
	pageSize := int(m.pageSize)
	ne := binary.NativeEndian

	rnd := rand.New(rand.NewPCG(1, 2))
	for page := 2; page < len(good)/pageSize; page++ {
		b := clone(good)
		for i := page * pageSize; i < (page+1)*pageSize; i++ {
			b[i] = byte(rnd.Uint32())
		}
		openErr, listErr := damaged(t, path, b)
		if listErr == nil {
			continue // a page not in use: bbolt never reads it
		}
		assert.ErrorContains(t, listErr, "damaged registry file", "page %d scrambled", page)
		assert.ErrorContains(t, openErr, "damaged registry file", "page %d scrambled", page)
	}

	// The versions bucket's root is a branch page (300 versions do not fit
	// one leaf); point its children at itself. bbolt recursed down it until
	// the stack overflowed, which kills the process.
	versions := bucketRoot(t, good, m, "versions")
	at := int(versions) * pageSize
	require.Equal(t, uint16(boltBranchPage), ne.Uint16(good[at+8:]), "the versions bucket should be a branch page")
	b := clone(good)
	for i := range int(ne.Uint16(b[at+10:])) {
		ne.PutUint64(b[at+boltPageHeader+i*boltElementSize+8:], versions)
	}
	openErr, listErr := damaged(t, path, b)
	want := fmt.Sprintf("damaged registry file: page %d element 0 points to page %d, which another page already uses", versions, versions)
	assert.ErrorContains(t, listErr, want)
	assert.ErrorContains(t, openErr, want)

	// List the branch page's first child as free.
	child := ne.Uint64(good[at+boltPageHeader+8:])
	b = clone(good)
	fl := int(m.freelist) * pageSize
	count := ne.Uint16(b[fl+10:])
	require.Less(t, count, uint16(0xFFFF))
	ne.PutUint16(b[fl+10:], count+1)
	ne.PutUint64(b[fl+boltPageHeader+8*int(count):], child)
	openErr, listErr = damaged(t, path, b)
	want = fmt.Sprintf("freelist page %d lists page %d, which is in use", m.freelist, child)
	assert.ErrorContains(t, listErr, want)
	assert.ErrorContains(t, openErr, want)
}

// Flipping any byte of the pages in use, meta pages included, leaves a
// registry that works or an error; never a panic, fault or hang. The
// headers and elements of every page are flipped byte by byte, their keys
// and values one byte in 37.
func TestFileStoreSurvivesAFlippedByteAnywhere(t *testing.T) {
	path, good := registryFile(t, 40)
	f, err := os.Open(path)
	require.NoError(t, err)
	m, err := boltMetaInUse(f, int64(len(good)))
	f.Close()
	require.NoError(t, err)
	pageSize := int(m.pageSize)
	ne := binary.NativeEndian
	refused := 0
	tried := 0
	for page := 0; page < int(m.pages); page++ {
		start := page * pageSize
		dense := boltPageHeader + 64 + boltElementSize*int(ne.Uint16(good[start+10:]))
		for off := 0; off < pageSize; off++ {
			if off >= dense && off%37 != 0 {
				continue
			}
			b := clone(good)
			b[start+off] ^= 0xFF
			require.NoError(t, os.WriteFile(path, b, 0o600))
			_, err := (&FileStore{path: path}).List(t.Context(), Filter{})
			tried++
			if err != nil {
				refused++
			}
		}
	}
	t.Logf("%d flipped bytes, %d refused", tried, refused)
	assert.Positive(t, refused)
}

// bucketRoot returns the root page of the top-level bucket name, which
// must not be inline.
func bucketRoot(t *testing.T, b []byte, m boltMeta, name string) uint64 {
	t.Helper()
	ne := binary.NativeEndian
	at := int(m.root * m.pageSize)
	require.Equal(t, uint16(boltLeafPage), ne.Uint16(b[at+8:]))
	for i := range int(ne.Uint16(b[at+10:])) {
		e := at + boltPageHeader + i*boltElementSize
		pos, ksize := int(ne.Uint32(b[e+4:])), int(ne.Uint32(b[e+8:]))
		if string(b[e+pos:e+pos+ksize]) == name {
			root := ne.Uint64(b[e+pos+ksize:])
			require.NotZero(t, root, "bucket %s is inline", name)
			return root
		}
	}
	t.Fatalf("no bucket %s", name)
	return 0
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }

// Any bytes as a registry file open and serve, or fail with an error.
func FuzzOpenFileStore(f *testing.F) {
	dir := f.TempDir()
	s, err := OpenFileStore(filepath.Join(dir, "registry.db"))
	if err != nil {
		f.Fatal(err)
	}
	for i := range 3 {
		if _, err := s.Create(f.Context(), Version{Model: "qwen", Artifact: Artifact{URI: fmt.Sprintf("pvc://m/%d", i), Format: "safetensors"}}); err != nil {
			f.Fatal(err)
		}
	}
	good, err := os.ReadFile(filepath.Join(dir, "registry.db"))
	if err != nil {
		f.Fatal(err)
	}
	// Only the pages in use: bbolt grows the file far ahead of them.
	m, err := boltMetaInUse(bytes.NewReader(good), int64(len(good)))
	if err != nil {
		f.Fatal(err)
	}
	good = good[:m.pages*m.pageSize]
	f.Add(good)
	f.Add(good[:8<<10])
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "registry.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		before := &FileStore{path: path}
		_, _ = before.List(t.Context(), Filter{})
		_, _ = before.Get(t.Context(), "qwen", 2)
		s, err := OpenFileStore(path)
		if err != nil {
			return
		}
		if _, err := s.List(t.Context(), Filter{}); err != nil {
			return
		}
		_, _ = s.Create(t.Context(), Version{Model: "qwen", Artifact: Artifact{URI: "pvc://m/new", Format: "safetensors"}})
	})
}
