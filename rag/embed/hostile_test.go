package embed

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
	var err error
	var nilEmb *OpenAI
	_, err = nilEmb.BatchSize(1).Parallelism(1).Retry(retry.Policy{Limit: 1, Backoff: time.Second}).Cache(nil).Embed(ctx, []string{"x"})
	assert.ErrorContains(t, err, "nil OpenAI embedder")
	assert.Empty(t, nilEmb.Model())
	_, err = (&OpenAI{}).Embed(ctx, []string{"x"})
	assert.ErrorContains(t, err, "client: required")
	_, err = (&FeatureHasher{}).Embed(ctx, []string{"x"})
	assert.ErrorContains(t, err, "dims: 0")

	var zeroCache Cache
	zeroCache.put("m", "t", []float32{1})
	_, ok := zeroCache.get("m", "t")
	assert.False(t, ok)
	var nilCache *Cache
	h, m := nilCache.Stats()
	assert.Zero(t, h+m)
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
