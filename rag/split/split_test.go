package split

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/rag/bpe"
	"github.com/cubestudio/cube/rag/load"
	"github.com/cubestudio/cube/rag/store"
)

// checkOffsets asserts every chunk is the source text between its offsets.
func checkOffsets(t *testing.T, text string, chunks []store.Chunk) {
	t.Helper()
	for i, c := range chunks {
		require.GreaterOrEqual(t, c.Start, 0, "chunk %d", i)
		require.LessOrEqual(t, c.End, len(text), "chunk %d", i)
		assert.Equal(t, text[c.Start:c.End], c.Text, "chunk %d", i)
	}
}

func TestRecursiveSplitsAtParagraphsThenSentencesWithOverlap(t *testing.T) {
	text := "Alpha beta gamma. Delta epsilon zeta.\n\nEta theta iota. Kappa lambda mu. Nu xi omicron."
	chunks, err := Recursive(40, 18).Split(load.Document{Source: "g.txt", Text: text})
	require.NoError(t, err)
	var texts []string
	for _, c := range chunks {
		texts = append(texts, c.Text)
		assert.LessOrEqual(t, utf8.RuneCountInString(c.Text), 40)
	}
	assert.Equal(t, []string{
		"Alpha beta gamma. Delta epsilon zeta.",
		"Eta theta iota. Kappa lambda mu.",
		"Kappa lambda mu. Nu xi omicron.",
	}, texts)
	checkOffsets(t, text, chunks)
}

func TestRecursiveCutsTextWithoutSeparatorsByCharacter(t *testing.T) {
	text := strings.Repeat("é", 25)
	chunks, err := Recursive(10, 2).Split(load.Document{Source: "s", Text: text})
	require.NoError(t, err)
	require.Len(t, chunks, 3)
	assert.Equal(t, strings.Repeat("é", 10), chunks[0].Text)
	assert.Equal(t, 16, chunks[1].Start, "the second chunk starts 2 characters (4 bytes) before the first ends")
	checkOffsets(t, text, chunks)
}

func TestChunkIDsAreDeterministicAndTellDuplicatesApart(t *testing.T) {
	doc := load.Document{Source: "f.txt", Text: "footer\n\nbody one\n\nfooter"}
	a, err := Recursive(8, 0).Split(doc)
	require.NoError(t, err)
	b, err := Recursive(8, 0).Split(doc)
	require.NoError(t, err)
	require.Len(t, a, 4)
	assert.Equal(t, a, b)
	assert.Equal(t, a[0].Text, a[3].Text)
	assert.NotEqual(t, a[0].ID, a[3].ID)
	assert.Equal(t, ChunkID("f.txt", "footer", 1), a[3].ID)
	other, _ := Recursive(8, 0).Split(load.Document{Source: "g.txt", Text: doc.Text})
	assert.NotEqual(t, a[0].ID, other[0].ID, "the source is part of the ID")
}

func TestSplitterValidationReportsEveryField(t *testing.T) {
	_, err := Recursive(0, -1).Separators().Split(load.Document{Source: "x", Text: "y"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "size: 0")
	assert.Contains(t, err.Error(), "overlap: -1")
	assert.Contains(t, err.Error(), "separators")
	_, err = Recursive(10, 10).Split()
	assert.ErrorContains(t, err, "overlap: 10")
	var nilSplitter *RecursiveSplitter
	_, err = nilSplitter.Split()
	assert.ErrorContains(t, err, "nil RecursiveSplitter")
	_, err = Markdown(nil).Split()
	assert.ErrorContains(t, err, "inner: required")
	_, err = Tokens(nil, 0, 0).Split()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tokenizer: required")
	assert.Contains(t, err.Error(), "size: 0")
}

func TestMarkdownSectionsCarryTheirHeadingPath(t *testing.T) {
	text := "Preamble.\n\n# Install\n\nGet it.\n\n## Debian\n\napt-get install cube\n\n```sh\n# a comment, not a heading\n```\n\n## Fedora\n\ndnf install cube\n\n# Use\n\nRun it.\n"
	chunks, err := Markdown(Recursive(200, 0)).Split(load.Document{Source: "README.md", Text: text, Offset: 0})
	require.NoError(t, err)
	got := map[string]string{}
	for _, c := range chunks {
		got[c.Section] = c.Text
	}
	assert.Equal(t, map[string]string{
		"":                 "Preamble.",
		"Install":          "# Install\n\nGet it.",
		"Install > Debian": "## Debian\n\napt-get install cube\n\n```sh\n# a comment, not a heading\n```",
		"Install > Fedora": "## Fedora\n\ndnf install cube",
		"Use":              "# Use\n\nRun it.",
	}, got)
	checkOffsets(t, text, chunks)
}

func TestTokenSplitterWindowsAreExactTokenCounts(t *testing.T) {
	tok := bpe.CL100kBase()
	text := strings.Repeat("Kubernetes schedules pods onto nodes. ", 40) + "Ünïcödé ends 日本語."
	chunks, err := Tokens(tok, 50, 10).Split(load.Document{Source: "k.txt", Text: text})
	require.NoError(t, err)
	require.Greater(t, len(chunks), 5)
	for i, c := range chunks {
		n := tok.Count(c.Text)
		assert.LessOrEqual(t, n, 51, "chunk %d has %d tokens", i, n) // a boundary inside a character may re-merge one token
		assert.True(t, utf8.ValidString(c.Text))
	}
	checkOffsets(t, text, chunks)
	assert.Equal(t, len(text), chunks[len(chunks)-1].End)

	// Recursive with the token count as length keeps sentence boundaries.
	rec, err := Recursive(50, 0).Length(tok.Count).Split(load.Document{Source: "k.txt", Text: text})
	require.NoError(t, err)
	for _, c := range rec {
		assert.LessOrEqual(t, tok.Count(c.Text), 52)
	}
	assert.True(t, strings.HasSuffix(rec[0].Text, "."), rec[0].Text)
}

// Nil and zero splitters report what is missing; none panics.
func TestNilAndZeroSplittersReportInsteadOfPanicking(t *testing.T) {
	var nilRec *RecursiveSplitter
	_, err := nilRec.Separators("x").Length(nil).Split(load.Document{Source: "s", Text: "t"})
	assert.ErrorContains(t, err, "nil RecursiveSplitter")
	_, err = (&RecursiveSplitter{}).Split(load.Document{Source: "s", Text: "t"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "size: 0")
	assert.Contains(t, err.Error(), "length: required")
	var nilMD *MarkdownSplitter
	_, err = nilMD.Split()
	assert.ErrorContains(t, err, "nil MarkdownSplitter")
	var nilTok *TokenSplitter
	_, err = nilTok.Split()
	assert.ErrorContains(t, err, "nil TokenSplitter")
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
		doc := load.Document{Source: "s", Text: text}
		check := func(name string, chunks []store.Chunk, err error, limit func(string) bool) {
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
