package load

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cubestudio/cube/internal/testsupport/bounds"
	"github.com/cubestudio/cube/rag/internal/markdown"
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
			docs, err = Markdown("f.md", bytes.NewReader(b))
		case 1:
			docs, err = HTML("f.html", bytes.NewReader(b))
		case 2:
			docs, err = CSV("f.csv", bytes.NewReader(b))
		case 3:
			docs, err = JSONL("f.jsonl", bytes.NewReader(b), "")
		case 4:
			docs, err = PDF("f.pdf", bytes.NewReader(b), int64(len(b)))
		case 5:
			docs, err = DOCX("f.docx", bytes.NewReader(b), int64(len(b)))
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

// Markdown finds the headings of any text in time and memory linear in
// its length.
func FuzzLoadMarkdown(f *testing.F) {
	f.Add("# T\n\ntext\n\nSetext\n===\n")
	f.Add(strings.Repeat(">", 2000) + " # deep")
	f.Add(strings.Repeat("1. ", 1000) + "\n" + strings.Repeat("  - x\n", 100))
	f.Add("# [a](b \"c\") `d` **e** [f][g]\n\n[g]: /h\n" + strings.Repeat("[a](", 500))
	f.Fuzz(func(t *testing.T, text string) {
		start, allocs := time.Now(), bounds.Allocated()
		docs, err := Markdown("f.md", strings.NewReader(text))
		bounds.Within(t, "Markdown", len(text), start, allocs, 20*time.Microsecond, 2000)
		if err != nil {
			if utf8.ValidString(text) {
				t.Fatalf("valid UTF-8 refused: %v", err)
			}
			return
		}
		if len(docs) != 1 || docs[0].Text != text {
			t.Fatal("markdown text changed")
		}
		for _, h := range markdown.Headings([]byte(text)) {
			if h.Start == -1 && h.End == -1 {
				continue // an empty heading ("#") has no line to place it
			}
			if h.Start < 0 || h.End > len(text) || h.Start > h.End {
				t.Fatalf("heading %q at %d-%d outside %d bytes", h.Title, h.Start, h.End, len(text))
			}
		}
	})
}

// PDF returns pages or an error for any bytes, in bounded time and
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
		start, allocs := time.Now(), bounds.Allocated()
		docs, err := PDF("f.pdf", bytes.NewReader(b), int64(len(b)))
		// Reading is bounded by 64 times the file, decompressing by 100
		// times; the reader allocates a buffer per object it reads.
		bounds.Within(t, "PDF", len(b), start, allocs, 50*time.Microsecond, 4000)
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
