package milvus

import (
	"testing"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"
	"github.com/milvus-io/milvus-proto/go-api/v2/schemapb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/rag"
	"github.com/cubestudio/cube/rag/embed"
)

// These tests run the real Milvus Go client against the in-process
// MilvusService of server_test.go: Milvus cannot run here.

func openStore(t *testing.T, addr, collection string, dims int) *Store {
	t.Helper()
	s, err := Open(t.Context(), Config{Address: addr, Collection: collection, Dimensions: dims, APIKey: "root:Milvus"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestOpenCreatesTheCollectionWithBM25AndIndexes(t *testing.T) {
	f, addr := startFakeMilvus(t)
	openStore(t, addr, "nlp_handbook", 64)
	c := f.collections["nlp_handbook"]
	require.NotNil(t, c)
	assert.True(t, c.loaded)
	assert.Equal(t, commonpb.ConsistencyLevel_Strong, c.cl)
	types := map[string]schemapb.DataType{}
	for _, fl := range c.schema.GetFields() {
		types[fl.GetName()] = fl.GetDataType()
		if fl.GetName() == FieldID {
			assert.True(t, fl.GetIsPrimaryKey())
		}
	}
	assert.Equal(t, schemapb.DataType_FloatVector, types[FieldDense])
	assert.Equal(t, schemapb.DataType_SparseFloatVector, types[FieldSparse])
	assert.Equal(t, schemapb.DataType_JSON, types[FieldMetadata])
	require.Len(t, c.schema.GetFunctions(), 1)
	fn := c.schema.GetFunctions()[0]
	assert.Equal(t, schemapb.FunctionType_BM25, fn.GetType())
	assert.Equal(t, []string{FieldText}, fn.GetInputFieldNames())
	assert.Equal(t, []string{FieldSparse}, fn.GetOutputFieldNames())
	assert.Equal(t, "COSINE", c.indexes[FieldDense]["metric_type"])
	assert.Equal(t, "HNSW", c.indexes[FieldDense]["index_type"])
	assert.Equal(t, "BM25", c.indexes[FieldSparse]["metric_type"])

	// Opening again uses the collection; other dimensions are refused.
	openStore(t, addr, "nlp_handbook", 64)
	assert.Equal(t, 1, f.calls["CreateCollection"])
	_, err := Open(t.Context(), Config{Address: addr, Collection: "nlp_handbook", Dimensions: 128})
	assert.ErrorContains(t, err, "holds 64-dimensional vectors, not 128")
}

func TestKnowledgeBaseOnMilvus(t *testing.T) {
	f, addr := startFakeMilvus(t)
	ctx := t.Context()
	kb := rag.New("platform/handbook", openStore(t, addr, "platform_handbook", 384), embed.HashedFeatures(384))
	rep, err := kb.IngestDir(ctx, "../../examples/rag/corpus")
	require.NoError(t, err)
	assert.Equal(t, rag.IngestReport{Sources: 5, Added: 11, Embedded: 11}, rep)
	rep, err = kb.IngestDir(ctx, "../../examples/rag/corpus")
	require.NoError(t, err)
	assert.Equal(t, 5, rep.Unchanged, "re-ingest is idempotent on Milvus too")

	for _, mode := range []rag.Mode{rag.Keyword, rag.Vector, rag.Hybrid} {
		hits, err := kb.Retrieve(ctx, "drain a node before maintenance", mode, rag.TopK(2))
		require.NoError(t, err, mode)
		require.NotEmpty(t, hits, mode)
		assert.Equal(t, "runbooks/node-drain.txt", hits[0].Chunk.Source, mode)
	}
	assert.Equal(t, 0, f.calls["HybridSearch"], "the default, Blend, fuses in rag")
	// RRF with equal weights fuses in Milvus; Milvus's fusion and rag's
	// agree: same chunks, same scores.
	inMilvus, err := kb.Retrieve(ctx, "GPU quota of a team", rag.TopK(5), rag.RRF(1, 1, rag.DefaultRRFK))
	require.NoError(t, err)
	assert.Equal(t, 1, f.calls["HybridSearch"], "equal weights fuse in Milvus")
	vec, err := kb.Retrieve(ctx, "GPU quota of a team", rag.Vector, rag.TopK(20))
	require.NoError(t, err)
	kw, err := kb.Retrieve(ctx, "GPU quota of a team", rag.Keyword, rag.TopK(20))
	require.NoError(t, err)
	require.Len(t, inMilvus, 5)
	byID := map[string]float64{}
	for r, h := range vec {
		byID[h.Chunk.ID] += 1 / float64(60+r+1)
	}
	for r, h := range kw {
		byID[h.Chunk.ID] += 1 / float64(60+r+1)
	}
	for _, h := range inMilvus {
		assert.InDelta(t, byID[h.Chunk.ID], h.Score, 1e-6, h.Chunk.ID)
	}
	// Unequal weights fuse in rag.
	_, err = kb.Retrieve(ctx, "GPU quota", rag.RRF(1, 2, 60))
	require.NoError(t, err)
	assert.Equal(t, 1, f.calls["HybridSearch"])
	hits, err := kb.Retrieve(ctx, "GPU", rag.Where(rag.Filter{"section": "GPU quotas > Fractional GPUs", "format": "markdown"}))
	require.NoError(t, err)
	require.Len(t, hits, 1)
	assert.Contains(t, hits[0].Chunk.Text, "HAMi")
	assert.Equal(t, "markdown", hits[0].Chunk.Metadata["format"])

	a, err := kb.Answer(ctx, "What is the default GPU quota per team?")
	require.NoError(t, err)
	require.NotEmpty(t, a.Citations)
	assert.Equal(t, "gpu-quotas.md", a.Citations[0].Source)

	n, err := kb.DeleteSource(ctx, "teams.csv")
	require.NoError(t, err)
	assert.Equal(t, 3, n)
	st, err := kb.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, 4, st.Sources)
	assert.Equal(t, 8, st.Chunks)
}

func TestValidationNamesEveryField(t *testing.T) {
	_, err := Open(t.Context(), Config{Collection: "bad-name", Dimensions: 0})
	require.Error(t, err)
	for _, want := range []string{"address: required", `collection: "bad-name"`, "dimensions: 0"} {
		assert.Contains(t, err.Error(), want)
	}
	_, addr := startFakeMilvus(t)
	s := openStore(t, addr, "v", 2)
	err = s.Upsert(t.Context(), rag.Record{Chunk: rag.Chunk{Text: "\xff"}, Vector: []float32{1}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "records[0].chunk.text: not UTF-8")
	assert.Contains(t, err.Error(), "records[0].chunk.id: required")
	assert.Contains(t, err.Error(), "records[0].vector: 1 dimensions, the collection holds 2")
	_, err = s.SearchVector(t.Context(), []float32{1, 0}, 0, rag.Filter{"bad key!": "x"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "k: 0")
	assert.Contains(t, err.Error(), `metadata key "bad key!"`)

	expr, err := Expr(rag.Filter{"source": `a "quoted" name`, "team": "nlp"})
	require.NoError(t, err)
	assert.Equal(t, `source == "a \"quoted\" name" && metadata["team"] == "nlp"`, expr)

	var zero Store
	assert.ErrorContains(t, zero.Delete(t.Context(), "x"), "not opened")
	var nilStore *Store
	_, err = nilStore.List(t.Context(), nil)
	assert.ErrorContains(t, err, "not opened")
	assert.NoError(t, nilStore.Close())
}
