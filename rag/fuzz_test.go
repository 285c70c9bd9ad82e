package rag

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cubestudio/cube/rag/bpe"
)

// Every splitter keeps its invariants on any text: chunks are the text
// between their offsets, fit the size, and IDs are unique.
func FuzzSplitters(f *testing.F) {
	f.Add("# A\n\nsome text. more text\n\n## B\n\n```\n# no\n```\nend", 20, 5)
	f.Add(strings.Repeat("é日本", 30), 7, 3)
	f.Add("a\n\n\n\nb", 1, 0)
	tok := bpe.CL100kBase()
	f.Fuzz(func(t *testing.T, text string, size, overlap int) {
		if size < 1 || size > 500 || overlap < 0 || overlap >= size || len(text) > 4000 {
			return
		}
		doc := Document{Source: "s", Text: text}
		check := func(name string, chunks []Chunk, err error, limit func(string) bool) {
			if err != nil {
				if utf8.ValidString(text) || name != "tokens" {
					t.Fatalf("%s: %v", name, err)
				}
				return
			}
			ids := map[string]bool{}
			for _, c := range chunks {
				if c.Start < 0 || c.End > len(text) || c.Start >= c.End || text[c.Start:c.End] != c.Text {
					t.Fatalf("%s: chunk %+v is not the text between its offsets", name, c)
				}
				if !limit(c.Text) {
					t.Fatalf("%s: chunk %q is over size %d", name, c.Text, size)
				}
				if ids[c.ID] {
					t.Fatalf("%s: duplicate id for %q", name, c.Text)
				}
				ids[c.ID] = true
			}
		}
		runes := func(s string) bool { return utf8.RuneCountInString(s) <= size }
		chunks, err := Recursive(size, overlap).Split(doc)
		check("recursive", chunks, err, runes)
		chunks, err = Markdown(Recursive(size, overlap)).Split(doc)
		check("markdown", chunks, err, runes)
		chunks, err = Tokens(tok, size, overlap).Split(doc)
		check("tokens", chunks, err, func(s string) bool { return tok.Count(s) <= size+2 })
	})
}

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
		start, allocs := time.Now(), allocated()
		s, err := Open(dir, NoSync())
		// Replay reads the log in a 1 MiB buffer and keeps its records.
		within(t, "Open", len(b), start, allocs, 20*time.Microsecond, 100)
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

// Citations never point outside the sources.
func FuzzCitations(f *testing.F) {
	f.Add("a [1] b [2, 3] c [99] [0] [1,1]", 3)
	f.Fuzz(func(t *testing.T, text string, n int) {
		if n < 0 || n > 50 {
			return
		}
		sources := make([]Hit, n)
		for i := range sources {
			sources[i].Chunk.ID = string(rune('a' + i))
		}
		seen := map[int]bool{}
		for _, c := range citations(text, sources) {
			if c.N < 1 || c.N > n || seen[c.N] || c.ChunkID != sources[c.N-1].Chunk.ID {
				t.Fatalf("bad citation %+v of %d sources", c, n)
			}
			seen[c.N] = true
		}
		_ = extractive(text, sources)
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

// allocated is the bytes the process has allocated so far.
func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// within fails t when what ran since start, over an input of n bytes,
// took longer than 1 s plus perByte per byte or allocated more than 64 MiB
// plus allocPerByte per byte: the bounds that hostile input must not
// break. The fuzzing worker's instrumentation and a shared machine are
// allowed for: linear work stays far below.
func within(t *testing.T, what string, n int, start time.Time, allocs uint64, perByte time.Duration, allocPerByte uint64) {
	t.Helper()
	if took, limit := time.Since(start), time.Second+time.Duration(n)*perByte; took > limit {
		t.Fatalf("%s of %d bytes took %v, over %v", what, n, took, limit)
	}
	if used, limit := allocated()-allocs, 64<<20+uint64(n)*allocPerByte; used > limit {
		t.Fatalf("%s of %d bytes allocated %d bytes, over %d", what, n, used, limit)
	}
}
