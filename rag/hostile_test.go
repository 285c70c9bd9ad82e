package rag

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Nil and zero values, chained or not, report what is missing; none panics.
func TestNilAndZeroValuesReportInsteadOfPanicking(t *testing.T) {
	ctx := t.Context()
	var nilRR *HTTPReranker
	_, err := nilRR.APIKey("k").HTTPClient(nil).Rerank(ctx, "q", []string{"a"})
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
