package rag

import (
	"strings"
	"testing"
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
