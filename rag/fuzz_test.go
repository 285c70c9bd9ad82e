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

// LoadMarkdown finds the headings of any text in time and memory linear in
// its length.
func FuzzLoadMarkdown(f *testing.F) {
	f.Add("# T\n\ntext\n\nSetext\n===\n")
	f.Add(strings.Repeat(">", 2000) + " # deep")
	f.Add(strings.Repeat("1. ", 1000) + "\n" + strings.Repeat("  - x\n", 100))
	f.Add("# [a](b \"c\") `d` **e** [f][g]\n\n[g]: /h\n" + strings.Repeat("[a](", 500))
	f.Fuzz(func(t *testing.T, text string) {
		start, allocs := time.Now(), allocated()
		docs, err := LoadMarkdown("f.md", strings.NewReader(text))
		within(t, "LoadMarkdown", len(text), start, allocs, 20*time.Microsecond, 2000)
		if err != nil {
			if utf8.ValidString(text) {
				t.Fatalf("valid UTF-8 refused: %v", err)
			}
			return
		}
		if len(docs) != 1 || docs[0].Text != text {
			t.Fatal("markdown text changed")
		}
		for _, h := range markdownHeadings([]byte(text)) {
			if h.start == -1 && h.end == -1 {
				continue // an empty heading ("#") has no line to place it
			}
			if h.start < 0 || h.end > len(text) || h.start > h.end {
				t.Fatalf("heading %q at %d-%d outside %d bytes", h.title, h.start, h.end, len(text))
			}
		}
	})
}

// LoadPDF returns pages or an error for any bytes, in bounded time and
// memory: the PDF library it guards recursed, looped and allocated as the
// file said.
func FuzzLoadPDF(f *testing.F) {
	f.Add(makePDF("hello", "second page"))
	f.Add(testPDF{objs: onePage("BT /F1 12 Tf [(Hel) -20 (lo)] TJ ET"), xrefStream: true}.bytes())
	f.Add(testPDF{objs: append(onePage("BT /F1 12 Tf (packed) Tj ET"), ""), packed: []int{1, 2, 3, 5}, packedIn: 6}.bytes())
	f.Add(testPDF{objs: func() []string {
		o := onePage("BT /F1 12 Tf <0001> Tj ET")
		o[4] = "<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /ToUnicode 6 0 R >>"
		return append(o, streamObj("", []byte("begincmap 1 begincodespacerange <0000> <FFFF> endcodespacerange 1 beginbfchar <0001> <0041> endbfchar endcmap")))
	}()}.bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		start, allocs := time.Now(), allocated()
		docs, err := LoadPDF("f.pdf", bytes.NewReader(b), int64(len(b)))
		// Reading is bounded by 64 times the file, decompressing by 100
		// times; the reader allocates a buffer per object it reads.
		within(t, "LoadPDF", len(b), start, allocs, 50*time.Microsecond, 4000)
		if err != nil {
			return
		}
		for _, d := range docs {
			if d.Page < 1 || d.Source != "f.pdf" {
				t.Fatalf("document %+v", d)
			}
		}
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
