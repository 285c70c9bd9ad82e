package rag

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/rag/store"
)

func hit(id, source string, score float64) Hit {
	return Hit{Chunk: Chunk{ID: id, Source: source, Text: id}, Score: score}
}

// TestBlendNormalisesByTheoreticalFloors checks the fused scores by hand:
// BM25 scaled by its best (floor 0), cosine as (cos+1)/(best+1), a chunk a
// list lacks taking that list's lowest normalised score.
func TestBlendNormalisesByTheoreticalFloors(t *testing.T) {
	keyword := []Hit{hit("a", "s1", 10), hit("b", "s2", 5)}
	vector := []Hit{hit("c", "s3", 0.5), hit("a", "s1", 0.2)}
	got := blend(vector, keyword, 0.4, 0.6)
	require.Len(t, got, 3)
	want := map[string]float64{
		"a": 0.6*1 + 0.4*(1.2/1.5),
		"b": 0.6*0.5 + 0.4*(1.2/1.5), // missing from the vector list: its lowest
		"c": 0.6*0.5 + 0.4*1,         // missing from the keyword list: its lowest
	}
	for _, h := range got {
		assert.InDelta(t, want[h.Chunk.ID], h.Score, 1e-12, h.Chunk.ID)
	}
	assert.Equal(t, []string{"a", "c", "b"}, []string{got[0].Chunk.ID, got[1].Chunk.ID, got[2].Chunk.ID})

	// A flat vector list barely moves the keyword order: RRF would put b first.
	flat := []Hit{hit("b", "s2", 0.31), hit("a", "s1", 0.30)}
	got = blend(flat, keyword, 0.4, 0.6)
	assert.Equal(t, "a", got[0].Chunk.ID)
	got = fuse(flat, keyword, 1, 1, DefaultRRFK)
	assert.Equal(t, "b", got[0].Chunk.ID, "reciprocal rank fusion gives the flat list's order as much say")
}

// TestGroupDocumentsGivesTopKSourcesWithTheirBestPassages: ten chunks of
// one source do not crowd out the others, and a source whose chunks cover
// the question together outranks one whose single chunk scores a little
// higher.
func TestGroupDocumentsGivesTopKSourcesWithTheirBestPassages(t *testing.T) {
	var hits []Hit
	for i := 0; i < 10; i++ {
		hits = append(hits, hit(string(rune('a'+i)), "big", 1-float64(i)/100))
	}
	hits = append(hits, hit("x", "other", 0.5), hit("y", "third", 0.4))
	docs := groupDocuments(hits, 2, 3, nil)
	require.Len(t, docs, 2)
	assert.Equal(t, "big", docs[0].Source)
	assert.Len(t, docs[0].Passages, 3)
	assert.Equal(t, "a", docs[0].Passages[0].Chunk.ID)
	assert.Equal(t, "other", docs[1].Source)

	cover := []Hit{
		{Chunk: Chunk{ID: "1", Source: "one-chunk", Text: "trim white space"}, Score: 0.9},
		{Chunk: Chunk{ID: "2", Source: "page", Title: "strings", Text: "trim white space"}, Score: 0.85},
		{Chunk: Chunk{ID: "3", Source: "noise", Text: "unrelated words"}, Score: 0.1},
	}
	ev := newEvidence("trim white space in strings", cover)
	docs = groupDocuments(cover, 3, 3, ev)
	assert.Equal(t, "page", docs[0].Source, "its title holds the word the other lacks")
	assert.Equal(t, "one-chunk", docs[1].Source)
}

func TestRetrieveDocumentsOnTheCorpus(t *testing.T) {
	kb := openCorpusKB(t)
	for _, mode := range []Mode{Hybrid, Vector, Keyword} {
		docs, err := kb.RetrieveDocuments(t.Context(), "how many GPUs does a team get by default", mode, TopK(3), Passages(2))
		require.NoError(t, err, mode)
		require.Len(t, docs, 3, mode)
		assert.Equal(t, "gpu-quotas.md", docs[0].Source, mode)
		seen := map[string]bool{}
		for _, d := range docs {
			assert.False(t, seen[d.Source], "each source once")
			seen[d.Source] = true
			require.NotEmpty(t, d.Passages)
			assert.LessOrEqual(t, len(d.Passages), 2)
			for _, p := range d.Passages {
				assert.Equal(t, d.Source, p.Chunk.Source)
			}
		}
	}
	_, err := kb.RetrieveDocuments(t.Context(), "GPU", Passages(0), TopK(0), Blend(-1, 0))
	require.Error(t, err)
	for _, want := range []string{"passages: 0", "topK: 0", "blend: weights -1 and 0"} {
		assert.ErrorContains(t, err, want)
	}
	var nilKB *KnowledgeBase
	_, err = nilKB.RetrieveDocuments(t.Context(), "GPU")
	assert.Error(t, err)
}

// Sources rank by PageWeight times their page score plus the rest times
// their best passage's, each divided by the best of its list; a source one
// list lacks gets that list's lowest; a source found only as a page joins.
func TestFuseDocumentsWeighsPagesAndPassages(t *testing.T) {
	docs := []DocumentHit{{Source: "a", Score: 0.8}, {Source: "b", Score: 0.4}, {Source: "c", Score: 0.2}}
	pages := []store.SourceHit{{Source: "c", Score: 10}, {Source: "d", Score: 8}, {Source: "a", Score: 2}}
	got := fuseDocuments(docs, pages, 3)
	var names []string
	for _, d := range got {
		names = append(names, d.Source)
	}
	// a: 0.7·0.2 + 0.3·1 = 0.44; b: 0.7·0.2 (the lowest page) + 0.3·0.5 = 0.29;
	// c: 0.7·1 + 0.3·0.25 = 0.775; d: 0.7·0.8 + 0.3·0.25 (the lowest passage) = 0.635.
	require.Equal(t, []string{"c", "d", "a"}, names)
	require.InDelta(t, 0.775, got[0].Score, 1e-12)
	require.InDelta(t, 0.635, got[1].Score, 1e-12)
	require.InDelta(t, 0.44, got[2].Score, 1e-12)
	require.Empty(t, fuseDocuments(nil, nil, 3))
	require.Len(t, fuseDocuments(nil, pages, 10), 3, "pages alone still rank")
}
