package rag

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

}
