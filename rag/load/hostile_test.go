package load

import (
	"strings"
	"testing"
	"time"

	"github.com/cubestudio/cube/rag/internal/markdown"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Markdown that made the parser quadratic parses in well under a second:
// the 100,000-character cases took 2 to 13 seconds each, a megabyte of the
// deepening list 7 seconds, and 1.6 MB of link definitions over three
// minutes. The headings such files have are still found.
func TestLoadMarkdownIsLinearOnHostileNesting(t *testing.T) {
	const n = 100_000
	lines := func(size int, f func(i int) string) string {
		var b strings.Builder
		for i := 0; b.Len() < size; i++ {
			b.WriteString(f(i))
		}
		return b.String()
	}
	cases := map[string]string{
		"a line of >":                    strings.Repeat(">", n),
		"a line of 1.":                   strings.Repeat("1. ", n/3),
		"a line of > -":                  strings.Repeat("> - ", n/4),
		"a paragraph of unclosed links":  strings.Repeat("[a](", n/4),
		"a setext heading of links":      strings.Repeat("[a](", n/4) + "\n===\n",
		"headings of unclosed links":     lines(n, func(int) string { return "# " + strings.Repeat("[a](", 120) + "\n" }),
		"quotes one deeper a line":       lines(n, func(i int) string { return strings.Repeat(">", i) + " x\n" }),
		"a list one deeper a line, 1 MB": lines(1<<20, func(i int) string { return strings.Repeat("  ", i) + "- x\n" }),
		"link definitions, 1 MB":         lines(1<<20, func(int) string { return "[a]: /b\n" }),
	}
	for name, text := range cases {
		start := time.Now()
		docs, err := Markdown("hostile.md", strings.NewReader(text))
		took := time.Since(start)
		require.NoError(t, err, name)
		require.Len(t, docs, 1, name)
		assert.Less(t, took, time.Second, "%s: %d bytes took %v", name, len(text), took)
	}

	// A heading 3 quotes deep is a heading; 40 deep, past the bound, text.
	docs, err := Markdown("q.md", strings.NewReader("> > > # Shallow\n\n"+strings.Repeat("> ", 40)+"# Deep\n"))
	require.NoError(t, err)
	assert.Equal(t, "Shallow", docs[0].Title)
	hs := markdown.Headings([]byte(strings.Repeat("> ", 40) + "# Deep\n"))
	assert.Empty(t, hs)
}

// Titles lose their inline markup, reference links included, as before
// the block and inline parses were split.
func TestMarkdownTitlesDropInlineMarkup(t *testing.T) {
	src := "# See [the guide][g] and `code`\n\nSetext with **bold**\n===\n\n[g]: /guide\n"
	hs := markdown.Headings([]byte(src))
	require.Len(t, hs, 2)
	assert.Equal(t, "See the guide and code", hs[0].Title)
	assert.Equal(t, "Setext with bold", hs[1].Title)
}
