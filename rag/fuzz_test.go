package rag

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/cubestudio/cube/rag/bpe"
)

// Loaders must return documents or an error for any input, never panic.
func FuzzLoaders(f *testing.F) {
	f.Add([]byte("# T\n\ntext"), uint8(0))
	f.Add([]byte("<html><title>x</title><p>a<b>b</p>"), uint8(1))
	f.Add([]byte("a,b\n1,2\n\"x"), uint8(2))
	f.Add([]byte("{\"text\":\"x\",\"n\":1}\n[]"), uint8(3))
	f.Add(makePDF("hello"), uint8(4))
	f.Add(makeDOCX(f, "#T", "p"), uint8(5))
	f.Fuzz(func(t *testing.T, b []byte, which uint8) {
		var docs []Document
		var err error
		switch which % 6 {
		case 0:
			docs, err = LoadMarkdown("f.md", bytes.NewReader(b))
		case 1:
			docs, err = LoadHTML("f.html", bytes.NewReader(b))
		case 2:
			docs, err = LoadCSV("f.csv", bytes.NewReader(b))
		case 3:
			docs, err = LoadJSONL("f.jsonl", bytes.NewReader(b), "")
		case 4:
			docs, err = LoadPDF("f.pdf", bytes.NewReader(b), int64(len(b)))
		case 5:
			docs, err = LoadDOCX("f.docx", bytes.NewReader(b), int64(len(b)))
		}
		if err != nil {
			return
		}
		for _, d := range docs {
			if d.Source == "" {
				t.Fatal("document without source")
			}
			if which%6 == 0 && d.Text != string(b) {
				t.Fatal("markdown text changed")
			}
			if (which%6 == 2 || which%6 == 3) && (d.Offset < 0 || d.Offset > len(b)) {
				t.Fatalf("offset %d outside %d bytes", d.Offset, len(b))
			}
		}
	})
}

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
		if err := os.WriteFile(filepath.Join(dir, logName), b, 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, NoSync())
		if err != nil {
			return
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
