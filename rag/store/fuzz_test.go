package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cubestudio/cube/internal/testsupport/bounds"
)

// Any bytes as a log file open as a store or fail with an error, and a
// store that opens accepts writes and reopens with the same chunks.
// Opening never changes the file but to cut a torn tail: what is left is
// a prefix of what was there. Replay is linear in the log.
func FuzzOpenLog(f *testing.F) {
	dir := f.TempDir()
	s, err := Open(dir)
	if err != nil {
		f.Fatal(err)
	}
	_ = s.Upsert(f.Context(), rec("a", "s", "alpha", 1, 0), rec("b", "s", "beta", 0, 1))
	_ = s.Delete(f.Context(), "a")
	_ = s.Close()
	good, _ := os.ReadFile(filepath.Join(dir, logName))
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add([]byte(logMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, logName)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		start, allocs := time.Now(), bounds.Allocated()
		s, err := Open(dir, NoSync())
		// Replay reads the log in a 1 MiB buffer and keeps its records.
		bounds.Within(t, "Open", len(b), start, allocs, 20*time.Microsecond, 100)
		after, rerr := os.ReadFile(path)
		if rerr != nil {
			t.Fatal(rerr)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("a log that does not open must be ErrCorrupt: %v", err)
			}
			if !bytes.Equal(after, b) {
				t.Fatal("a log that does not open was changed")
			}
			return
		}
		if len(b) >= len(logMagic) && !bytes.HasPrefix(b, after) || len(after) < len(logMagic) {
			t.Fatalf("opening turned %d bytes into %d that are not a prefix of them", len(b), len(after))
		}
		n := s.Count()
		if err := s.Upsert(t.Context(), rec("zz-new", "s", "new", 1, 0)); err != nil && s.Dimensions() == 2 {
			t.Fatalf("upsert after replay: %v", err)
		}
		want := s.Count()
		if want < n {
			t.Fatal("upsert lost chunks")
		}
		_ = s.Close()
		s, err = Open(dir, NoSync())
		if err != nil {
			t.Fatalf("a log the store wrote does not reopen: %v", err)
		}
		if s.Count() != want {
			t.Fatalf("reopened with %d chunks, want %d", s.Count(), want)
		}
		_ = s.Close()
	})
}

// Any bytes as the graph snapshot leave a store that opens and searches.
func FuzzGraphSnapshot(f *testing.F) {
	dir := f.TempDir()
	s, err := Open(dir, ExactBelow(0), NoSync())
	if err != nil {
		f.Fatal(err)
	}
	vecs := clustered(60, 8, 4, 1, 3, 1)
	for i, v := range vecs {
		_ = s.Upsert(f.Context(), Record{Chunk: Chunk{ID: fmt.Sprint(i), Source: "s", Text: "t"}, Vector: v})
	}
	_ = s.BuildIndex()
	_ = s.Close()
	log, _ := os.ReadFile(filepath.Join(dir, logName))
	snap, _ := os.ReadFile(filepath.Join(dir, snapName))
	f.Add(snap)
	f.Add(snap[:len(snap)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, logName), log, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, snapName), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, ExactBelow(0), NoSync())
		if err != nil {
			t.Fatalf("a bad snapshot must not stop Open: %v", err)
		}
		defer s.Close()
		hits, err := s.SearchVector(t.Context(), vecs[0], 5, nil)
		if err != nil || len(hits) != 5 {
			t.Fatalf("search after a bad snapshot: %d hits, %v", len(hits), err)
		}
	})
}

// Any bytes as the checkpoint leave a store that opens with the chunks
// and keyword scores a replay of the whole log gives.
func FuzzCheckpoint(f *testing.F) {
	dir := f.TempDir()
	s, err := Open(dir, NoSync())
	if err != nil {
		f.Fatal(err)
	}
	_ = s.Upsert(f.Context(), rec("a", "s", "alpha beta", 1, 0), rec("b", "t", "beta gamma", 0, 1))
	_ = s.Upsert(f.Context(), Record{Chunk: Chunk{ID: "c", Source: "s", Title: "T", Text: "gamma", Metadata: map[string]string{"k": "v"}}, Vector: []float32{1, 1}})
	_ = s.Delete(f.Context(), "a")
	_ = s.Close()
	log, _ := os.ReadFile(filepath.Join(dir, logName))
	state, _ := os.ReadFile(filepath.Join(dir, stateName))
	full, err := Open(copyDir(f, dir, logName), NoSync())
	if err != nil {
		f.Fatal(err)
	}
	want := fuzzView(f, full)
	_ = full.Close()
	f.Add(state)
	f.Add(state[:len(state)/2])
	f.Add(state[:len(state)-1])
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, logName), log, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, stateName), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, NoSync())
		if err != nil {
			t.Fatalf("a bad checkpoint must not stop Open: %v", err)
		}
		defer s.Close()
		if got := fuzzView(t, s); got != want {
			t.Fatalf("after checkpoint %q:\n%s\nwant\n%s", b, got, want)
		}
	})
}

func copyDir(t testing.TB, dir string, names ...string) string {
	dst := t.TempDir()
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func fuzzView(t testing.TB, s *Local) string {
	chunks, err := s.List(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	hits, err := s.SearchKeyword(context.Background(), "alpha beta gamma", 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(chunks, hits, s.Count())
}
