package rag

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/retry"
)

// Nil and zero values, chained or not, report what is missing; none panics.
func TestNilAndZeroValuesReportInsteadOfPanicking(t *testing.T) {
	ctx := t.Context()
	var nilRec *RecursiveSplitter
	_, err := nilRec.Separators("x").Length(nil).Split(Document{Source: "s", Text: "t"})
	assert.ErrorContains(t, err, "nil RecursiveSplitter")
	_, err = (&RecursiveSplitter{}).Split(Document{Source: "s", Text: "t"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "size: 0")
	assert.Contains(t, err.Error(), "length: required")
	var nilMD *MarkdownSplitter
	_, err = nilMD.Split()
	assert.ErrorContains(t, err, "nil MarkdownSplitter")
	var nilTok *TokenSplitter
	_, err = nilTok.Split()
	assert.ErrorContains(t, err, "nil TokenSplitter")

	var nilEmb *OpenAIEmbedder
	_, err = nilEmb.BatchSize(1).Parallelism(1).Retry(retry.Policy{Limit: 1, Backoff: time.Second}).Cache(nil).Embed(ctx, []string{"x"})
	assert.ErrorContains(t, err, "nil OpenAIEmbedder")
	assert.Empty(t, nilEmb.Model())
	_, err = (&OpenAIEmbedder{}).Embed(ctx, []string{"x"})
	assert.ErrorContains(t, err, "client: required")
	_, err = (&FeatureHasher{}).Embed(ctx, []string{"x"})
	assert.ErrorContains(t, err, "dims: 0")

	var zeroCache EmbeddingCache
	zeroCache.put("m", "t", []float32{1})
	_, ok := zeroCache.get("m", "t")
	assert.False(t, ok)
	var nilCache *EmbeddingCache
	h, m := nilCache.Stats()
	assert.Zero(t, h+m)

	var nilRR *HTTPReranker
	_, err = nilRR.APIKey("k").HTTPClient(nil).Rerank(ctx, "q", []string{"a"})
	assert.ErrorContains(t, err, "nil HTTPReranker")
	assert.Equal(t, "rag.HTTPReranker(nil)", nilRR.String())
	_, err = (&HTTPReranker{}).Rerank(ctx, "q", []string{"a"})
	assert.ErrorContains(t, err, "endpoint")

	var nilKB *KnowledgeBase
	_, err = nilKB.Splitter(nil).Chat(nil).Ingest(ctx)
	assert.ErrorContains(t, err, "nil")
	_, err = nilKB.Answer(ctx, "q")
	assert.ErrorContains(t, err, "nil")
	_, err = nilKB.Stats(ctx)
	assert.ErrorContains(t, err, "nil")
	assert.NoError(t, nilKB.Close())
	assert.Empty(t, nilKB.Name())
	_, err = (&KnowledgeBase{}).Retrieve(ctx, "q")
	assert.ErrorContains(t, err, "name: required")
	_, err = (&KnowledgeBase{}).DeleteSource(ctx, "s")
	assert.ErrorContains(t, err, "store: required")

	var nilLib *Library
	_, err = nilLib.Open("t", "n", nil)
	assert.ErrorContains(t, err, "root: required")
	_, err = (&Library{}).List()
	assert.ErrorContains(t, err, "root: required")

	var zeroStore Local
	_, err = zeroStore.SearchVector(ctx, []float32{1}, 1, nil)
	assert.ErrorContains(t, err, "not opened")
	assert.ErrorContains(t, zeroStore.Compact(ctx), "not opened")
	assert.ErrorContains(t, zeroStore.BuildIndex(), "not opened")
	assert.Zero(t, zeroStore.LogBytes())
	_, err = Open("", HNSW(HNSWParams{M: 1, EfConstruction: -1, EfSearch: -2}), ExactBelow(-1), nil)
	require.Error(t, err)
	for _, want := range []string{"dir: required", "hnsw.M: 1", "hnsw.EfConstruction: -1", "hnsw.EfSearch: -2", "exactBelow: -1"} {
		assert.Contains(t, err.Error(), want)
	}
}

// Dimensions past any embedding model's are refused before a vector is
// allocated: 1<<40 asked for 4 TiB per text and the process was killed.
func TestHashedFeaturesBoundsDimensions(t *testing.T) {
	_, err := HashedFeatures(1<<40).Embed(t.Context(), []string{"text"})
	assert.EqualError(t, err, "embed: hashed features: dims: 1099511627776: must be at most 65536")
	_, err = HashedFeatures(-3).Embed(t.Context(), []string{"text"})
	assert.EqualError(t, err, "embed: hashed features: dims: -3: must be positive")
	vs, err := HashedFeatures(1<<16).Embed(t.Context(), []string{"text"})
	require.NoError(t, err)
	assert.Len(t, vs[0], 1<<16)
}

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
		docs, err := LoadMarkdown("hostile.md", strings.NewReader(text))
		took := time.Since(start)
		require.NoError(t, err, name)
		require.Len(t, docs, 1, name)
		assert.Less(t, took, time.Second, "%s: %d bytes took %v", name, len(text), took)
	}

	// A heading 3 quotes deep is a heading; 40 deep, past the bound, text.
	docs, err := LoadMarkdown("q.md", strings.NewReader("> > > # Shallow\n\n"+strings.Repeat("> ", 40)+"# Deep\n"))
	require.NoError(t, err)
	assert.Equal(t, "Shallow", docs[0].Title)
	hs := markdownHeadings([]byte(strings.Repeat("> ", 40) + "# Deep\n"))
	assert.Empty(t, hs)
}

// Titles lose their inline markup, reference links included, as before
// the block and inline parses were split.
func TestMarkdownTitlesDropInlineMarkup(t *testing.T) {
	src := "# See [the guide][g] and `code`\n\nSetext with **bold**\n===\n\n[g]: /guide\n"
	hs := markdownHeadings([]byte(src))
	require.Len(t, hs, 2)
	assert.Equal(t, "See the guide and code", hs[0].title)
	assert.Equal(t, "Setext with bold", hs[1].title)
}
