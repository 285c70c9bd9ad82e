package store

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A zero Local and bad options report what is missing; none panics.
func TestZeroLocalAndBadOptionsReportInsteadOfPanicking(t *testing.T) {
	ctx := t.Context()
	var zeroStore Local
	_, err := zeroStore.SearchVector(ctx, []float32{1}, 1, nil)
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
