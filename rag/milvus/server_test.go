package milvus

// An in-process Milvus for the tests: a gRPC server that implements the
// part of milvus-proto's MilvusService this store calls (Connect,
// HasCollection, CreateCollection, DescribeCollection, CreateIndex,
// DescribeIndex, LoadCollection, GetLoadingProgress, Upsert, Delete, Query,
// Search), keeping rows in memory, evaluating the boolean expressions the
// store writes, and computing cosine similarity for the dense field and
// BM25 over the analysed text for the sparse field, as Milvus's BM25
// function does. Milvus itself cannot run here. Decoding and encoding of
// columns reuse the client's column package.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unicode"

	"github.com/milvus-io/milvus-proto/go-api/v2/commonpb"
	"github.com/milvus-io/milvus-proto/go-api/v2/milvuspb"
	"github.com/milvus-io/milvus-proto/go-api/v2/schemapb"
	"github.com/milvus-io/milvus/client/v2/column"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

type fakeRow struct {
	id, source, title, section, text string
	page, start, end                 int64
	meta                             []byte
	dense                            []float32
}

type fakeCollection struct {
	schema  *schemapb.CollectionSchema
	cl      commonpb.ConsistencyLevel
	indexes map[string]map[string]string // field → index params
	loaded  bool
	rows    map[string]fakeRow
}

type fakeMilvus struct {
	milvuspb.UnimplementedMilvusServiceServer
	mu          sync.Mutex
	collections map[string]*fakeCollection
	calls       map[string]int
	auth        []string
}

func ok() *commonpb.Status { return &commonpb.Status{ErrorCode: commonpb.ErrorCode_Success} }

func fail(msg string) *commonpb.Status {
	return &commonpb.Status{ErrorCode: commonpb.ErrorCode_UnexpectedError, Code: 1100, Reason: msg}
}

// startFakeMilvus serves the fake on a loopback port and returns its address.
func startFakeMilvus(t *testing.T) (*fakeMilvus, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeMilvus{collections: map[string]*fakeCollection{}, calls: map[string]int{}}
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		f.mu.Lock()
		f.calls[info.FullMethod[strings.LastIndex(info.FullMethod, "/")+1:]]++
		f.mu.Unlock()
		return h(ctx, req)
	}))
	milvuspb.RegisterMilvusServiceServer(srv, f)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return f, lis.Addr().String()
}

func (f *fakeMilvus) coll(name string) (*fakeCollection, error) {
	c, ok := f.collections[name]
	if !ok {
		return nil, fmt.Errorf("collection not found[collection=%s]", name)
	}
	return c, nil
}

func (f *fakeMilvus) Connect(ctx context.Context, _ *milvuspb.ConnectRequest) (*milvuspb.ConnectResponse, error) {
	return &milvuspb.ConnectResponse{Status: ok(), ServerInfo: &commonpb.ServerInfo{BuildTags: "fake"}, Identifier: 1}, nil
}

func (f *fakeMilvus) HasCollection(_ context.Context, r *milvuspb.HasCollectionRequest) (*milvuspb.BoolResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, has := f.collections[r.GetCollectionName()]
	return &milvuspb.BoolResponse{Status: ok(), Value: has}, nil
}

func (f *fakeMilvus) CreateCollection(_ context.Context, r *milvuspb.CreateCollectionRequest) (*commonpb.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var s schemapb.CollectionSchema
	if err := proto.Unmarshal(r.GetSchema(), &s); err != nil {
		return fail("bad schema: " + err.Error()), nil
	}
	if _, exists := f.collections[r.GetCollectionName()]; exists {
		return fail("collection exists"), nil
	}
	f.collections[r.GetCollectionName()] = &fakeCollection{schema: &s, cl: r.GetConsistencyLevel(),
		indexes: map[string]map[string]string{}, rows: map[string]fakeRow{}}
	return ok(), nil
}

func (f *fakeMilvus) DescribeCollection(_ context.Context, r *milvuspb.DescribeCollectionRequest) (*milvuspb.DescribeCollectionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.coll(r.GetCollectionName())
	if err != nil {
		// Milvus's code 100, which the client reads as "no such collection".
		return &milvuspb.DescribeCollectionResponse{Status: &commonpb.Status{
			ErrorCode: commonpb.ErrorCode_CollectionNotExists, Code: 100, Reason: err.Error()}}, nil
	}
	return &milvuspb.DescribeCollectionResponse{Status: ok(), Schema: c.schema, CollectionName: r.GetCollectionName(),
		CollectionID: 1, ConsistencyLevel: c.cl}, nil
}

func (f *fakeMilvus) CreateIndex(_ context.Context, r *milvuspb.CreateIndexRequest) (*commonpb.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.coll(r.GetCollectionName())
	if err != nil {
		return fail(err.Error()), nil
	}
	params := map[string]string{}
	for _, kv := range r.GetExtraParams() {
		params[kv.GetKey()] = kv.GetValue()
	}
	c.indexes[r.GetFieldName()] = params
	return ok(), nil
}

func (f *fakeMilvus) DescribeIndex(_ context.Context, r *milvuspb.DescribeIndexRequest) (*milvuspb.DescribeIndexResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.coll(r.GetCollectionName())
	if err != nil {
		return &milvuspb.DescribeIndexResponse{Status: fail(err.Error())}, nil
	}
	resp := &milvuspb.DescribeIndexResponse{Status: ok()}
	for field := range c.indexes {
		if r.GetFieldName() == "" || r.GetFieldName() == field {
			resp.IndexDescriptions = append(resp.IndexDescriptions, &milvuspb.IndexDescription{
				IndexName: field, FieldName: field, State: commonpb.IndexState_Finished})
		}
	}
	return resp, nil
}

func (f *fakeMilvus) LoadCollection(_ context.Context, r *milvuspb.LoadCollectionRequest) (*commonpb.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.coll(r.GetCollectionName())
	if err != nil {
		return fail(err.Error()), nil
	}
	if len(c.indexes) < 2 {
		return fail("index not found: every vector field needs an index before loading"), nil
	}
	c.loaded = true
	return ok(), nil
}

func (f *fakeMilvus) GetLoadingProgress(_ context.Context, r *milvuspb.GetLoadingProgressRequest) (*milvuspb.GetLoadingProgressResponse, error) {
	return &milvuspb.GetLoadingProgressResponse{Status: ok(), Progress: 100, RefreshProgress: 100}, nil
}

func strColumn(fds []*schemapb.FieldData, name string) ([]string, error) {
	for _, fd := range fds {
		if fd.GetFieldName() == name {
			col, err := column.FieldDataColumn(fd, 0, -1)
			if err != nil {
				return nil, err
			}
			out := make([]string, col.Len())
			for i := range out {
				if out[i], err = col.GetAsString(i); err != nil {
					return nil, err
				}
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("field %s missing", name)
}

func (f *fakeMilvus) Upsert(_ context.Context, r *milvuspb.UpsertRequest) (*milvuspb.MutationResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.coll(r.GetCollectionName())
	if err != nil {
		return &milvuspb.MutationResult{Status: fail(err.Error())}, nil
	}
	fds := r.GetFieldsData()
	for _, fd := range fds {
		if fd.GetFieldName() == FieldSparse {
			return &milvuspb.MutationResult{Status: fail("sparse is a BM25 function output and must not be given")}, nil
		}
	}
	get := func(name string) []string {
		v, e := strColumn(fds, name)
		if e != nil && err == nil {
			err = e
		}
		return v
	}
	ids, sources, titles, sections, texts := get(FieldID), get(FieldSource), get(FieldTitle), get(FieldSection), get(FieldText)
	nums := map[string][]int64{}
	var metas [][]byte
	var dense [][]float32
	for _, fd := range fds {
		col, e := column.FieldDataColumn(fd, 0, -1)
		if e != nil {
			return &milvuspb.MutationResult{Status: fail(e.Error())}, nil
		}
		switch fd.GetFieldName() {
		case FieldPage, FieldStart, FieldEnd:
			for i := 0; i < col.Len(); i++ {
				v, _ := col.GetAsInt64(i)
				nums[fd.GetFieldName()] = append(nums[fd.GetFieldName()], v)
			}
		case FieldMetadata:
			for i := 0; i < col.Len(); i++ {
				v, _ := col.Get(i)
				metas = append(metas, v.([]byte))
			}
		case FieldDense:
			data := fd.GetVectors().GetFloatVector().GetData()
			dim := int(fd.GetVectors().GetDim())
			for i := 0; i+dim <= len(data); i += dim {
				dense = append(dense, data[i:i+dim])
			}
		}
	}
	if err != nil {
		return &milvuspb.MutationResult{Status: fail(err.Error())}, nil
	}
	for i, id := range ids {
		c.rows[id] = fakeRow{id: id, source: sources[i], title: titles[i], section: sections[i], text: texts[i],
			page: nums[FieldPage][i], start: nums[FieldStart][i], end: nums[FieldEnd][i], meta: metas[i], dense: dense[i]}
	}
	return &milvuspb.MutationResult{Status: ok(), UpsertCnt: int64(len(ids)),
		IDs: &schemapb.IDs{IdField: &schemapb.IDs_StrId{StrId: &schemapb.StringArray{Data: ids}}}}, nil
}

var errMissingKey = errors.New("missing JSON key")

// match evaluates the expressions the store writes: clauses joined by
// " && ", each `field == "v"`, `metadata["k"] == "v"`, `id in ["a", ...]`
// or `id != ""`.
func match(expr string, r fakeRow) (bool, error) {
	if expr == "" {
		return true, nil
	}
	for _, clause := range strings.Split(expr, " && ") {
		field, rest, found := strings.Cut(clause, " ")
		if !found {
			return false, fmt.Errorf("cannot parse %q", clause)
		}
		value := func(name string) (string, error) {
			switch name {
			case FieldID:
				return r.id, nil
			case FieldSource:
				return r.source, nil
			case FieldTitle:
				return r.title, nil
			case FieldSection:
				return r.section, nil
			}
			if key, ok := strings.CutPrefix(name, FieldMetadata+"["); ok {
				k, err := strconv.Unquote(strings.TrimSuffix(key, "]"))
				if err != nil {
					return "", err
				}
				m := map[string]string{}
				_ = json.Unmarshal(r.meta, &m)
				v, present := m[k]
				if !present {
					return "", errMissingKey // Milvus: a missing JSON key compares as null
				}
				return v, nil
			}
			return "", fmt.Errorf("unknown field %s", name)
		}
		got, err := value(field)
		if err == errMissingKey {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		switch {
		case strings.HasPrefix(rest, "== "):
			want, err := strconv.Unquote(strings.TrimPrefix(rest, "== "))
			if err != nil {
				return false, fmt.Errorf("bad literal in %q", clause)
			}
			if got != want {
				return false, nil
			}
		case rest == `!= ""`:
			if got == "" {
				return false, nil
			}
		case strings.HasPrefix(rest, "in [") && strings.HasSuffix(rest, "]"):
			in := false
			for _, lit := range strings.Split(strings.TrimSuffix(strings.TrimPrefix(rest, "in ["), "]"), ", ") {
				v, err := strconv.Unquote(lit)
				if err != nil {
					return false, fmt.Errorf("bad literal %q", lit)
				}
				in = in || v == got
			}
			if !in {
				return false, nil
			}
		default:
			return false, fmt.Errorf("cannot parse %q", clause)
		}
	}
	return true, nil
}

func (f *fakeMilvus) Delete(_ context.Context, r *milvuspb.DeleteRequest) (*milvuspb.MutationResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.coll(r.GetCollectionName())
	if err != nil {
		return &milvuspb.MutationResult{Status: fail(err.Error())}, nil
	}
	n := 0
	for id, row := range c.rows {
		m, err := match(r.GetExpr(), row)
		if err != nil {
			return &milvuspb.MutationResult{Status: fail(err.Error())}, nil
		}
		if m {
			delete(c.rows, id)
			n++
		}
	}
	return &milvuspb.MutationResult{Status: ok(), DeleteCnt: int64(n)}, nil
}

// fields encodes rows as the columns named in output.
func fields(rows []fakeRow, output []string) ([]*schemapb.FieldData, error) {
	var out []*schemapb.FieldData
	for _, name := range output {
		var col column.Column
		strs := func(get func(fakeRow) string) []string {
			v := make([]string, len(rows))
			for i, r := range rows {
				v[i] = get(r)
			}
			return v
		}
		ints := func(get func(fakeRow) int64) []int64 {
			v := make([]int64, len(rows))
			for i, r := range rows {
				v[i] = get(r)
			}
			return v
		}
		switch name {
		case FieldID:
			col = column.NewColumnVarChar(name, strs(func(r fakeRow) string { return r.id }))
		case FieldSource:
			col = column.NewColumnVarChar(name, strs(func(r fakeRow) string { return r.source }))
		case FieldTitle:
			col = column.NewColumnVarChar(name, strs(func(r fakeRow) string { return r.title }))
		case FieldSection:
			col = column.NewColumnVarChar(name, strs(func(r fakeRow) string { return r.section }))
		case FieldText:
			col = column.NewColumnVarChar(name, strs(func(r fakeRow) string { return r.text }))
		case FieldPage:
			col = column.NewColumnInt64(name, ints(func(r fakeRow) int64 { return r.page }))
		case FieldStart:
			col = column.NewColumnInt64(name, ints(func(r fakeRow) int64 { return r.start }))
		case FieldEnd:
			col = column.NewColumnInt64(name, ints(func(r fakeRow) int64 { return r.end }))
		case FieldMetadata:
			v := make([][]byte, len(rows))
			for i, r := range rows {
				v[i] = r.meta
			}
			col = column.NewColumnJSONBytes(name, v)
		default:
			return nil, fmt.Errorf("output field %s not served", name)
		}
		out = append(out, col.FieldData())
	}
	return out, nil
}

func (f *fakeMilvus) Query(_ context.Context, r *milvuspb.QueryRequest) (*milvuspb.QueryResults, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, err := f.coll(r.GetCollectionName())
	if err != nil {
		return &milvuspb.QueryResults{Status: fail(err.Error())}, nil
	}
	if !c.loaded {
		return &milvuspb.QueryResults{Status: fail("collection not loaded")}, nil
	}
	var rows []fakeRow
	for _, row := range c.rows {
		m, err := match(r.GetExpr(), row)
		if err != nil {
			return &milvuspb.QueryResults{Status: fail(err.Error())}, nil
		}
		if m {
			rows = append(rows, row)
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].id < rows[j].id })
	fd, err := fields(rows, r.GetOutputFields())
	if err != nil {
		return &milvuspb.QueryResults{Status: fail(err.Error())}, nil
	}
	return &milvuspb.QueryResults{Status: ok(), FieldsData: fd, CollectionName: r.GetCollectionName(), OutputFields: r.GetOutputFields()}, nil
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

type scored struct {
	row   fakeRow
	score float32
}

func (f *fakeMilvus) Search(_ context.Context, r *milvuspb.SearchRequest) (*milvuspb.SearchResults, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	hits, st := f.searchLocked(r.GetCollectionName(), r)
	if st != nil {
		return &milvuspb.SearchResults{Status: st}, nil
	}
	return results(r.GetCollectionName(), hits, r.GetOutputFields(), len(hits))
}

// HybridSearch runs each request and fuses the rankings with the RRF
// ranker's k: a row scores the sum of 1/(k+rank), ranks counted from 1.
func (f *fakeMilvus) HybridSearch(_ context.Context, r *milvuspb.HybridSearchRequest) (*milvuspb.SearchResults, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	params := map[string]string{}
	for _, kv := range r.GetRankParams() {
		params[kv.GetKey()] = kv.GetValue()
	}
	var rrf struct {
		K float64 `json:"k"`
	}
	if params["strategy"] != "rrf" || json.Unmarshal([]byte(params["params"]), &rrf) != nil {
		return &milvuspb.SearchResults{Status: fail("only the rrf ranker is served")}, nil
	}
	limit, _ := strconv.Atoi(params["limit"])
	fused := map[string]*scored{}
	for _, sub := range r.GetRequests() {
		hits, st := f.searchLocked(r.GetCollectionName(), sub)
		if st != nil {
			return &milvuspb.SearchResults{Status: st}, nil
		}
		for rank, h := range hits {
			if fused[h.row.id] == nil {
				fused[h.row.id] = &scored{row: h.row}
			}
			fused[h.row.id].score += float32(1 / (rrf.K + float64(rank+1)))
		}
	}
	var all []scored
	for _, h := range fused {
		all = append(all, *h)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		return all[i].row.id < all[j].row.id
	})
	all = all[:min(limit, len(all))]
	return results(r.GetCollectionName(), all, r.GetOutputFields(), limit)
}

func results(collection string, hits []scored, output []string, topk int) (*milvuspb.SearchResults, error) {
	rows := make([]fakeRow, len(hits))
	ids := make([]string, len(hits))
	scores := make([]float32, len(hits))
	for i, h := range hits {
		rows[i], ids[i], scores[i] = h.row, h.row.id, h.score
	}
	fd, err := fields(rows, output)
	if err != nil {
		return &milvuspb.SearchResults{Status: fail(err.Error())}, nil
	}
	return &milvuspb.SearchResults{Status: ok(), CollectionName: collection, Results: &schemapb.SearchResultData{
		NumQueries: 1, TopK: int64(topk), Topks: []int64{int64(len(hits))}, Scores: scores, FieldsData: fd,
		Ids: &schemapb.IDs{IdField: &schemapb.IDs_StrId{StrId: &schemapb.StringArray{Data: ids}}}}}, nil
}

// searchLocked ranks the rows of collection for one search request.
func (f *fakeMilvus) searchLocked(collection string, r *milvuspb.SearchRequest) ([]scored, *commonpb.Status) {
	c, err := f.coll(collection)
	if err != nil {
		return nil, fail(err.Error())
	}
	if !c.loaded {
		return nil, fail("collection not loaded")
	}
	params := map[string]string{}
	for _, kv := range r.GetSearchParams() {
		params[kv.GetKey()] = kv.GetValue()
	}
	topk, _ := strconv.Atoi(params["topk"])
	var phg commonpb.PlaceholderGroup
	if err := proto.Unmarshal(r.GetPlaceholderGroup(), &phg); err != nil || len(phg.GetPlaceholders()) != 1 || len(phg.GetPlaceholders()[0].GetValues()) != 1 {
		return nil, fail("one query expected")
	}
	ph := phg.GetPlaceholders()[0]
	var hits []scored
	switch field := params["anns_field"]; {
	case field == FieldDense && ph.GetType() == commonpb.PlaceholderType_FloatVector:
		b := ph.GetValues()[0]
		q := make([]float32, len(b)/4)
		for i := range q {
			q[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		for _, row := range c.rows {
			var d, nq, nr float64
			for i := range q {
				d += float64(q[i]) * float64(row.dense[i])
				nq += float64(q[i]) * float64(q[i])
				nr += float64(row.dense[i]) * float64(row.dense[i])
			}
			hits = append(hits, scored{row, float32(d / math.Sqrt(nq*nr))})
		}
	case field == FieldSparse && ph.GetType() == commonpb.PlaceholderType_VarChar:
		if c.indexes[FieldSparse]["metric_type"] != "BM25" {
			return nil, fail("sparse field has no BM25 index")
		}
		df := map[string]int{}
		total := 0
		for _, row := range c.rows {
			ws := words(row.text)
			total += len(ws)
			seen := map[string]bool{}
			for _, w := range ws {
				if !seen[w] {
					df[w]++
					seen[w] = true
				}
			}
		}
		n := float64(len(c.rows))
		avg := float64(total) / math.Max(n, 1)
		for _, row := range c.rows {
			ws := words(row.text)
			tf := map[string]float64{}
			for _, w := range ws {
				tf[w]++
			}
			var s float64
			for _, w := range words(string(ph.GetValues()[0])) {
				if tf[w] == 0 {
					continue
				}
				idf := math.Log(1 + (n-float64(df[w])+0.5)/(float64(df[w])+0.5))
				s += idf * tf[w] * 2.2 / (tf[w] + 1.2*(0.25+0.75*float64(len(ws))/avg))
			}
			if s > 0 {
				hits = append(hits, scored{row, float32(s)})
			}
		}
	default:
		return nil, fail("unsupported search on " + field)
	}
	kept := hits[:0]
	for _, h := range hits {
		m, err := match(r.GetDsl(), h.row)
		if err != nil {
			return nil, fail(err.Error())
		}
		if m {
			kept = append(kept, h)
		}
	}
	sort.Slice(kept, func(i, j int) bool {
		if kept[i].score != kept[j].score {
			return kept[i].score > kept[j].score
		}
		return kept[i].row.id < kept[j].row.id
	})
	return kept[:min(topk, len(kept))], nil
}
