package milvus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/milvus-io/milvus/client/v2/column"
	"github.com/milvus-io/milvus/client/v2/entity"
	"github.com/milvus-io/milvus/client/v2/index"
	"github.com/milvus-io/milvus/client/v2/milvusclient"

	"github.com/cubestudio/cube/rag"
	"github.com/cubestudio/cube/rag/store"
)

// Field names of the collection.
const (
	FieldID       = "id"
	FieldSource   = "source"
	FieldTitle    = "title"
	FieldSection  = "section"
	FieldPage     = "page"
	FieldStart    = "start"
	FieldEnd      = "end"
	FieldText     = "text"
	FieldMetadata = "metadata"
	FieldDense    = "dense"
	FieldSparse   = "sparse"
)

// maxText is Milvus's VarChar limit.
const maxText = 65535

// queryWindow is the most rows one Milvus query returns.
const queryWindow = 16384

var scalarFields = []string{FieldID, FieldSource, FieldTitle, FieldSection, FieldPage, FieldStart, FieldEnd, FieldText, FieldMetadata}

// Config says which Milvus and which collection.
type Config struct {
	// Address is Milvus's gRPC address, host:port.
	Address string
	// Collection is the knowledge base's collection; one per knowledge
	// base, so teams are kept apart by collection. Created when missing.
	Collection string
	// Dimensions of the dense vectors.
	Dimensions int
	// Consistency of reads; default Strong, so a search sees every
	// acknowledged write, as the embedded store does.
	Consistency entity.ConsistencyLevel
	// APIKey authenticates (a Milvus token, "user:password"); read it from
	// a Secret. It is never printed.
	APIKey string
}

// Store is a rag.Store on a Milvus collection.
type Store struct {
	client     *milvusclient.Client
	collection string
	dims       int
	cl         entity.ConsistencyLevel
}

var (
	_ rag.Store          = (*Store)(nil)
	_ rag.HybridSearcher = (*Store)(nil)
)

var collectionPattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,254}$`)

func (c Config) validate() error {
	var errs []error
	if strings.TrimSpace(c.Address) == "" {
		errs = append(errs, errors.New("address: required, host:port of Milvus's gRPC port"))
	}
	if !collectionPattern.MatchString(c.Collection) {
		errs = append(errs, fmt.Errorf("collection: %q: must start with a letter or _ and hold only letters, digits and _", c.Collection))
	}
	if c.Dimensions <= 0 || c.Dimensions > 32768 {
		errs = append(errs, fmt.Errorf("dimensions: %d: must be between 1 and 32768", c.Dimensions))
	}
	if len(errs) > 0 {
		return fmt.Errorf("milvus: %w", errors.Join(errs...))
	}
	return nil
}

// Open connects to Milvus, creates the collection with its indexes when it
// is missing, and loads it.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Consistency == 0 {
		cfg.Consistency = entity.ClStrong
	}
	client, err := milvusclient.New(ctx, &milvusclient.ClientConfig{Address: cfg.Address, APIKey: cfg.APIKey})
	if err != nil {
		return nil, fmt.Errorf("milvus: connect to %s: %w", cfg.Address, err)
	}
	s := &Store{client: client, collection: cfg.Collection, dims: cfg.Dimensions, cl: cfg.Consistency}
	if err := s.ensure(ctx); err != nil {
		_ = client.Close(ctx)
		return nil, err
	}
	return s, nil
}

// Schema returns the collection's schema for dims-dimensional vectors.
func Schema(name string, dims int) *entity.Schema {
	vc := func(n string, l int64) *entity.Field {
		return entity.NewField().WithName(n).WithDataType(entity.FieldTypeVarChar).WithMaxLength(l)
	}
	return entity.NewSchema().WithName(name).
		WithField(vc(FieldID, 64).WithIsPrimaryKey(true)).
		WithField(vc(FieldSource, 2048)).
		WithField(vc(FieldTitle, 2048)).
		WithField(vc(FieldSection, 2048)).
		WithField(entity.NewField().WithName(FieldPage).WithDataType(entity.FieldTypeInt64)).
		WithField(entity.NewField().WithName(FieldStart).WithDataType(entity.FieldTypeInt64)).
		WithField(entity.NewField().WithName(FieldEnd).WithDataType(entity.FieldTypeInt64)).
		WithField(vc(FieldText, maxText).WithEnableAnalyzer(true)).
		WithField(entity.NewField().WithName(FieldMetadata).WithDataType(entity.FieldTypeJSON)).
		WithField(entity.NewField().WithName(FieldDense).WithDataType(entity.FieldTypeFloatVector).WithDim(int64(dims))).
		WithField(entity.NewField().WithName(FieldSparse).WithDataType(entity.FieldTypeSparseVector)).
		WithFunction(entity.NewFunction().WithName("text_bm25").WithType(entity.FunctionTypeBM25).
			WithInputFields(FieldText).WithOutputFields(FieldSparse))
}

func (s *Store) ensure(ctx context.Context) error {
	has, err := s.client.HasCollection(ctx, milvusclient.NewHasCollectionOption(s.collection))
	if err != nil {
		return fmt.Errorf("milvus: has collection %s: %w", s.collection, err)
	}
	if !has {
		opt := milvusclient.NewCreateCollectionOption(s.collection, Schema(s.collection, s.dims)).
			WithIndexOptions(
				milvusclient.NewCreateIndexOption(s.collection, FieldDense, index.NewHNSWIndex(entity.COSINE, 16, 100)),
				milvusclient.NewCreateIndexOption(s.collection, FieldSparse, index.NewSparseInvertedIndex(entity.BM25, 0)),
			).WithConsistencyLevel(s.cl)
		if err := s.client.CreateCollection(ctx, opt); err != nil {
			return fmt.Errorf("milvus: create collection %s: %w", s.collection, err)
		}
	} else {
		coll, err := s.client.DescribeCollection(ctx, milvusclient.NewDescribeCollectionOption(s.collection))
		if err != nil {
			return fmt.Errorf("milvus: describe collection %s: %w", s.collection, err)
		}
		for _, f := range coll.Schema.Fields {
			if f.Name == FieldDense {
				if d, err := f.GetDim(); err == nil && int(d) != s.dims {
					return fmt.Errorf("milvus: collection %s holds %d-dimensional vectors, not %d", s.collection, d, s.dims)
				}
			}
		}
	}
	task, err := s.client.LoadCollection(ctx, milvusclient.NewLoadCollectionOption(s.collection))
	if err != nil {
		return fmt.Errorf("milvus: load collection %s: %w", s.collection, err)
	}
	if err := task.Await(ctx); err != nil {
		return fmt.Errorf("milvus: load collection %s: %w", s.collection, err)
	}
	return nil
}

func (s *Store) check() error {
	if s == nil || s.client == nil {
		return errors.New("milvus: store not opened: use milvus.Open")
	}
	return nil
}

// Upsert writes records; Milvus acknowledges them once they are in its log.
func (s *Store) Upsert(ctx context.Context, records ...rag.Record) error {
	if err := s.check(); err != nil {
		return err
	}
	if len(records) == 0 {
		return nil
	}
	var errs []error
	n := len(records)
	ids, sources, titles, sections, texts := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	pages, starts, ends := make([]int64, n), make([]int64, n), make([]int64, n)
	metas := make([][]byte, n)
	vecs := make([][]float32, n)
	for i, r := range records {
		c := r.Chunk
		switch {
		case c.ID == "":
			errs = append(errs, fmt.Errorf("records[%d].chunk.id: required", i))
		case len(c.ID) > 64:
			errs = append(errs, fmt.Errorf("records[%d].chunk.id: longer than 64 bytes", i))
		}
		for name, v := range map[string]string{"source": c.Source, "title": c.Title, "section": c.Section, "text": c.Text} {
			if !utf8.ValidString(v) {
				errs = append(errs, fmt.Errorf("records[%d].chunk.%s: not UTF-8, which Milvus strings must be", i, name))
			}
		}
		if len(c.Text) > maxText {
			errs = append(errs, fmt.Errorf("records[%d].chunk.text: %d bytes, Milvus keeps at most %d", i, len(c.Text), maxText))
		}
		if len(r.Vector) != s.dims {
			errs = append(errs, fmt.Errorf("records[%d].vector: %d dimensions, the collection holds %d", i, len(r.Vector), s.dims))
		}
		meta, err := json.Marshal(c.Metadata)
		if err != nil {
			errs = append(errs, fmt.Errorf("records[%d].chunk.metadata: %w", i, err))
		}
		if c.Metadata == nil {
			meta = []byte("{}")
		}
		ids[i], sources[i], titles[i], sections[i], texts[i] = c.ID, c.Source, c.Title, c.Section, c.Text
		pages[i], starts[i], ends[i], metas[i], vecs[i] = int64(c.Page), int64(c.Start), int64(c.End), meta, r.Vector
	}
	if len(errs) > 0 {
		return fmt.Errorf("milvus: upsert: %w", errors.Join(errs...))
	}
	opt := milvusclient.NewColumnBasedInsertOption(s.collection,
		column.NewColumnVarChar(FieldID, ids), column.NewColumnVarChar(FieldSource, sources),
		column.NewColumnVarChar(FieldTitle, titles), column.NewColumnVarChar(FieldSection, sections),
		column.NewColumnInt64(FieldPage, pages), column.NewColumnInt64(FieldStart, starts),
		column.NewColumnInt64(FieldEnd, ends), column.NewColumnVarChar(FieldText, texts),
		column.NewColumnJSONBytes(FieldMetadata, metas), column.NewColumnFloatVector(FieldDense, s.dims, vecs))
	if _, err := s.client.Upsert(ctx, opt); err != nil {
		return fmt.Errorf("milvus: upsert %d records into %s: %w", n, s.collection, err)
	}
	return nil
}

// Delete removes chunks by ID.
func (s *Store) Delete(ctx context.Context, ids ...string) error {
	if err := s.check(); err != nil {
		return err
	}
	if len(ids) == 0 {
		return nil
	}
	if _, err := s.client.Delete(ctx, milvusclient.NewDeleteOption(s.collection).WithExpr(inExpr(FieldID, ids))); err != nil {
		return fmt.Errorf("milvus: delete %d chunks from %s: %w", len(ids), s.collection, err)
	}
	return nil
}

// Apply upserts b's records, then deletes its IDs: two Milvus calls, not
// one atomic write (Milvus has no transaction across them); a failure
// between them leaves the records written and the IDs not deleted, which
// applying the batch again repairs.
func (s *Store) Apply(ctx context.Context, b rag.Batch) error {
	if err := s.Upsert(ctx, b.Upsert...); err != nil {
		return err
	}
	return s.Delete(ctx, b.Delete...)
}

// SearchExact is refused: Milvus searches a collection through its index,
// and cube creates it with an approximate one. Measure recall against a
// store.Local holding the same records.
func (s *Store) SearchExact(ctx context.Context, vector []float32, k int, f rag.Filter) ([]rag.Hit, error) {
	return nil, errors.New("milvus: exact search: not supported: Milvus searches through the collection's index; compare with a store.Local holding the same records")
}

// Stats counts the collection's chunks with a count(*) query
// (https://milvus.io/docs/get-and-scalar-query.md); Sources is -1, since
// Milvus does not count distinct values, and Index is IndexRemote.
func (s *Store) Stats(ctx context.Context) (rag.StoreStats, error) {
	if err := s.check(); err != nil {
		return rag.StoreStats{}, err
	}
	rs, err := s.client.Query(ctx, milvusclient.NewQueryOption(s.collection).WithFilter(FieldID+` != ""`).
		WithOutputFields("count(*)").WithConsistencyLevel(s.cl))
	if err != nil {
		return rag.StoreStats{}, fmt.Errorf("milvus: count %s: %w", s.collection, err)
	}
	col := rs.GetColumn("count(*)")
	if col == nil || col.Len() != 1 {
		return rag.StoreStats{}, fmt.Errorf("milvus: count %s: the result holds no count(*)", s.collection)
	}
	n, err := col.GetAsInt64(0)
	if err != nil {
		return rag.StoreStats{}, fmt.Errorf("milvus: count %s: %w", s.collection, err)
	}
	return rag.StoreStats{Chunks: int(n), Sources: -1, Dimensions: s.dims, Index: store.IndexRemote}, nil
}

func quote(v string) string { return strconv.Quote(v) }

func inExpr(field string, values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = quote(v)
	}
	return field + " in [" + strings.Join(q, ", ") + "]"
}

var metaKeyPattern = regexp.MustCompile(`^[A-Za-z0-9_.\-/]+$`)

// Expr translates a rag.Filter into a Milvus boolean expression; keys are
// joined with && in sorted order, "" for the empty filter.
func Expr(f rag.Filter) (string, error) {
	if err := f.Validate(); err != nil {
		return "", err
	}
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		if !utf8.ValidString(f[k]) {
			return "", fmt.Errorf("filter: %s: the value is not UTF-8, which Milvus strings must be", k)
		}
		switch k {
		case "source", "title", "section":
			parts = append(parts, fmt.Sprintf("%s == %s", k, quote(f[k])))
		default:
			if !metaKeyPattern.MatchString(k) {
				return "", fmt.Errorf("filter: metadata key %q: only letters, digits and _ . - / reach Milvus's JSON path", k)
			}
			parts = append(parts, fmt.Sprintf("%s[%s] == %s", FieldMetadata, quote(k), quote(f[k])))
		}
	}
	return strings.Join(parts, " && "), nil
}

// List returns the chunks matching f (at most 16,384).
func (s *Store) List(ctx context.Context, f rag.Filter) ([]rag.Chunk, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	expr, err := Expr(f)
	if err != nil {
		return nil, fmt.Errorf("milvus: list: %w", err)
	}
	if expr == "" {
		expr = FieldID + ` != ""`
	}
	rs, err := s.client.Query(ctx, milvusclient.NewQueryOption(s.collection).WithFilter(expr).
		WithOutputFields(scalarFields...).WithLimit(queryWindow).WithConsistencyLevel(s.cl))
	if err != nil {
		return nil, fmt.Errorf("milvus: list %s: %w", s.collection, err)
	}
	chunks, err := chunksOf(rs)
	if err != nil {
		return nil, fmt.Errorf("milvus: list %s: %w", s.collection, err)
	}
	sort.Slice(chunks, func(i, j int) bool {
		a, b := chunks[i], chunks[j]
		if a.Source != b.Source {
			return a.Source < b.Source
		}
		if a.Page != b.Page {
			return a.Page < b.Page
		}
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		return a.ID < b.ID
	})
	return chunks, nil
}

// chunksOf reads the chunks of a result set.
func chunksOf(rs milvusclient.ResultSet) ([]rag.Chunk, error) {
	out := make([]rag.Chunk, rs.ResultCount)
	str := func(name string, set func(*rag.Chunk, string)) error {
		col := rs.GetColumn(name)
		if col == nil {
			return fmt.Errorf("result lacks field %s", name)
		}
		for i := range out {
			v, err := col.GetAsString(i)
			if err != nil {
				return fmt.Errorf("field %s row %d: %w", name, i, err)
			}
			set(&out[i], v)
		}
		return nil
	}
	num := func(name string, set func(*rag.Chunk, int)) error {
		col := rs.GetColumn(name)
		if col == nil {
			return fmt.Errorf("result lacks field %s", name)
		}
		for i := range out {
			v, err := col.GetAsInt64(i)
			if err != nil {
				return fmt.Errorf("field %s row %d: %w", name, i, err)
			}
			set(&out[i], int(v))
		}
		return nil
	}
	err := errors.Join(
		str(FieldID, func(c *rag.Chunk, v string) { c.ID = v }),
		str(FieldSource, func(c *rag.Chunk, v string) { c.Source = v }),
		str(FieldTitle, func(c *rag.Chunk, v string) { c.Title = v }),
		str(FieldSection, func(c *rag.Chunk, v string) { c.Section = v }),
		str(FieldText, func(c *rag.Chunk, v string) { c.Text = v }),
		num(FieldPage, func(c *rag.Chunk, v int) { c.Page = v }),
		num(FieldStart, func(c *rag.Chunk, v int) { c.Start = v }),
		num(FieldEnd, func(c *rag.Chunk, v int) { c.End = v }),
	)
	if err != nil {
		return nil, err
	}
	meta := rs.GetColumn(FieldMetadata)
	if meta == nil {
		return nil, fmt.Errorf("result lacks field %s", FieldMetadata)
	}
	for i := range out {
		v, err := meta.Get(i)
		if err != nil {
			return nil, fmt.Errorf("field %s row %d: %w", FieldMetadata, i, err)
		}
		b, _ := v.([]byte)
		m := map[string]string{}
		if len(b) > 0 {
			if err := json.Unmarshal(b, &m); err != nil {
				return nil, fmt.Errorf("field %s row %d: %w", FieldMetadata, i, err)
			}
		}
		if len(m) > 0 {
			out[i].Metadata = m
		}
	}
	return out, nil
}

func (s *Store) search(ctx context.Context, what string, vector entity.Vector, field string, k int, f rag.Filter) ([]rag.Hit, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var errs []error
	if k <= 0 {
		errs = append(errs, fmt.Errorf("k: %d: must be positive", k))
	}
	expr, err := Expr(f)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("milvus: %s search: %w", what, errors.Join(errs...))
	}
	opt := milvusclient.NewSearchOption(s.collection, k, []entity.Vector{vector}).WithANNSField(field).
		WithOutputFields(scalarFields...).WithConsistencyLevel(s.cl)
	if expr != "" {
		opt = opt.WithFilter(expr)
	}
	sets, err := s.client.Search(ctx, opt)
	if err != nil {
		return nil, fmt.Errorf("milvus: %s search in %s: %w", what, s.collection, err)
	}
	return hitsOf(what, s.collection, sets)
}

// hitsOf reads the hits of a one-query search.
func hitsOf(what, collection string, sets []milvusclient.ResultSet) ([]rag.Hit, error) {
	if len(sets) != 1 {
		return nil, fmt.Errorf("milvus: %s search in %s: %d result sets for one query", what, collection, len(sets))
	}
	if sets[0].Err != nil {
		return nil, fmt.Errorf("milvus: %s search in %s: %w", what, collection, sets[0].Err)
	}
	chunks, err := chunksOf(sets[0])
	if err != nil {
		return nil, fmt.Errorf("milvus: %s search in %s: %w", what, collection, err)
	}
	hits := make([]rag.Hit, len(chunks))
	for i, c := range chunks {
		hits[i] = rag.Hit{Chunk: c, Score: float64(sets[0].Scores[i])}
	}
	return hits, nil
}

// SearchVector searches the dense field by cosine similarity.
func (s *Store) SearchVector(ctx context.Context, vector []float32, k int, f rag.Filter) ([]rag.Hit, error) {
	if s != nil && len(vector) != s.dims {
		return nil, fmt.Errorf("milvus: vector search: vector: %d dimensions, the collection holds %d", len(vector), s.dims)
	}
	return s.search(ctx, "vector", entity.FloatVector(vector), FieldDense, k, f)
}

// SearchKeyword searches the BM25 sparse field with the query's text,
// which Milvus analyses as it analysed the chunks.
func (s *Store) SearchKeyword(ctx context.Context, query string, k int, f rag.Filter) ([]rag.Hit, error) {
	if strings.TrimSpace(query) == "" {
		return nil, nil
	}
	return s.search(ctx, "keyword", entity.Text(query), FieldSparse, k, f)
}

// SearchHybrid runs one Milvus HybridSearch: the dense field searched with
// vector and the BM25 field with query, each for k candidates matching f,
// fused by Milvus's RRF ranker with rank constant rrfK.
func (s *Store) SearchHybrid(ctx context.Context, vector []float32, query string, k int, f rag.Filter, rrfK int) ([]rag.Hit, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var errs []error
	if k <= 0 {
		errs = append(errs, fmt.Errorf("k: %d: must be positive", k))
	}
	if len(vector) != s.dims {
		errs = append(errs, fmt.Errorf("vector: %d dimensions, the collection holds %d", len(vector), s.dims))
	}
	if rrfK < 0 {
		errs = append(errs, fmt.Errorf("rrfK: %d: must not be negative", rrfK))
	}
	expr, err := Expr(f)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("milvus: hybrid search: %w", errors.Join(errs...))
	}
	dense := milvusclient.NewAnnRequest(FieldDense, k, entity.FloatVector(vector))
	sparse := milvusclient.NewAnnRequest(FieldSparse, k, entity.Text(query))
	if expr != "" {
		dense, sparse = dense.WithFilter(expr), sparse.WithFilter(expr)
	}
	sets, err := s.client.HybridSearch(ctx, milvusclient.NewHybridSearchOption(s.collection, k, dense, sparse).
		WithReranker(milvusclient.NewRRFReranker().WithK(float64(rrfK))).
		WithOutputFields(scalarFields...).WithConsistencyLevel(s.cl))
	if err != nil {
		return nil, fmt.Errorf("milvus: hybrid search in %s: %w", s.collection, err)
	}
	return hitsOf("hybrid", s.collection, sets)
}

// Close closes the connection.
func (s *Store) Close() error {
	if s == nil || s.client == nil {
		return nil
	}
	return s.client.Close(context.Background())
}
