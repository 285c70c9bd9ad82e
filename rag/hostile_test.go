package rag

import (
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
