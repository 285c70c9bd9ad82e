package store

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSavedGraphIsReusedOnlyWhenItMatchesTheLog(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	vecs := clustered(3000, 32, 30, 1.0, 5, 1)
	recs := func(from, to int) []Record {
		var out []Record
		for i := from; i < to; i++ {
			out = append(out, Record{Chunk: Chunk{ID: fmt.Sprint(i), Source: "s", Text: "t"}, Vector: vecs[i]})
		}
		return out
	}
	queries := clustered(50, 32, 30, 1.0, 5, 2)
	search := func(s *Local) [][]string {
		var out [][]string
		for _, q := range queries {
			h, err := s.SearchVector(ctx, q, 10, nil)
			require.NoError(t, err)
			out = append(out, hitIDs(h))
		}
		return out
	}

	s, err := Open(dir, ExactBelow(0))
	require.NoError(t, err)
	require.NoError(t, s.Upsert(ctx, recs(0, 2000)...))
	require.NoError(t, s.BuildIndex())
	before := search(s)
	require.NoError(t, s.Close())

	s, err = Open(dir, ExactBelow(0))
	require.NoError(t, err)
	require.NotNil(t, s.graph, "the saved graph is loaded at open")
	assert.Equal(t, before, search(s), "the loaded graph routes as the saved one did")
	// Slots written after the snapshot are inserted into the loaded graph.
	require.NoError(t, s.Upsert(ctx, recs(2000, 3000)...))
	require.NoError(t, s.BuildIndex()) // waits for the indexer, saves the larger graph
	require.NoError(t, s.Close())

	s, err = Open(dir, ExactBelow(0))
	require.NoError(t, err)
	require.NotNil(t, s.graph)
	assert.Len(t, s.graph.friends, 3000)
	total := 0.0
	for _, q := range queries {
		exact, _ := s.SearchExact(ctx, q, 10, nil)
		approx, _ := s.SearchVector(ctx, q, 10, nil)
		total += recallAt(exact, approx)
	}
	assert.GreaterOrEqual(t, total/float64(len(queries)), 0.95)
	// A snapshot that stops matching (the log compacted and renumbered
	// after deletes) is ignored.
	var del []string
	for i := 0; i < 3000; i += 3 {
		del = append(del, fmt.Sprint(i))
	}
	require.NoError(t, s.Delete(ctx, del...))
	require.NoError(t, s.Compact(ctx))
	require.NoError(t, os.Rename(filepath.Join(dir, snapName), filepath.Join(dir, "keep.snap")))
	require.NoError(t, s.Close()) // saves the compacted graph
	require.NoError(t, os.Rename(filepath.Join(dir, "keep.snap"), filepath.Join(dir, snapName)))
	s, err = Open(dir, ExactBelow(0))
	require.NoError(t, err)
	assert.Nil(t, s.graph, "a snapshot of the log before compaction is not used")
	hits, err := s.SearchVector(ctx, queries[0], 10, nil) // built again on demand
	require.NoError(t, err)
	assert.Len(t, hits, 10)
	require.NoError(t, s.Close())

	// A damaged snapshot is ignored too.
	b, err := os.ReadFile(filepath.Join(dir, snapName))
	require.NoError(t, err)
	b[len(b)/2] ^= 0x40
	require.NoError(t, os.WriteFile(filepath.Join(dir, snapName), b, 0o644))
	s, err = Open(dir, ExactBelow(0), HNSW(HNSWParams{}))
	require.NoError(t, err)
	assert.Nil(t, s.graph)
	require.NoError(t, s.Close())
}

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
