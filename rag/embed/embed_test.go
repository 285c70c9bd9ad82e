package embed

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/rag/internal/vecmath"
	"github.com/cubestudio/cube/retry"
)

func TestHashedFeaturesAreUnitLengthDeterministicAndLexical(t *testing.T) {
	h := HashedFeatures(384)
	assert.Equal(t, "hashed-features-v1-384", h.Model())
	vs, err := h.Embed(t.Context(), []string{"GPU quota per team", "gpu quotas of a team", "the weather in Lisbon", ""})
	require.NoError(t, err)
	again, _ := h.Embed(t.Context(), []string{"GPU quota per team"})
	assert.Equal(t, vs[0], again[0])
	assert.InDelta(t, 1, float64(vecmath.Dot(vs[0], vs[0])), 1e-5)
	assert.Greater(t, vecmath.Dot(vs[0], vs[1]), vecmath.Dot(vs[0], vs[2])+0.3, "shared words and trigrams (quota/quotas) are near")
	assert.Equal(t, make([]float32, 384), vs[3])

	_, err = HashedFeatures(0).Embed(t.Context(), []string{"x"})
	assert.ErrorContains(t, err, "dims: 0")
	var nilHasher *FeatureHasher
	_, err = nilHasher.Embed(t.Context(), nil)
	assert.ErrorContains(t, err, "nil FeatureHasher")
}

// embeddingServer follows the OpenAI /v1/embeddings API: each input gets
// the vector [len(input), index-in-request]. fail answers the first n
// requests with the given status.
type embeddingServer struct {
	*httptest.Server
	requests, inFlight, maxInFlight atomic.Int32
	failStatus                      int
	failures                        atomic.Int32
	mu                              sync.Mutex
	batches                         []int
}

func newEmbeddingServer(t *testing.T, failStatus, failures int) *embeddingServer {
	s := &embeddingServer{failStatus: failStatus}
	s.failures.Store(int32(failures))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		n := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for {
			m := s.maxInFlight.Load()
			if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		if r.URL.Path != "/v1/embeddings" {
			http.NotFound(w, r)
			return
		}
		if s.failures.Add(-1) >= 0 {
			w.WriteHeader(s.failStatus)
			_, _ = w.Write([]byte(`{"error":{"message":"busy","type":"server_error"}}`))
			return
		}
		var req struct {
			Input []string `json:"input"`
			Model string   `json:"model"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "bge-small" {
			http.Error(w, `{"error":{"message":"bad request"}}`, 400)
			return
		}
		s.mu.Lock()
		s.batches = append(s.batches, len(req.Input))
		s.mu.Unlock()
		type item struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		resp := struct {
			Object string `json:"object"`
			Data   []item `json:"data"`
			Model  string `json:"model"`
		}{Object: "list", Model: req.Model}
		for i := len(req.Input) - 1; i >= 0; i-- { // out of order, as servers may
			resp.Data = append(resp.Data, item{"embedding", i, []float32{float32(len(req.Input[i])), float32(i)}})
		}
		_ = json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(s.Close)
	return s
}

func newServeClient(t *testing.T, url string) *inference.Client {
	c, err := inference.NewClient(url)
	require.NoError(t, err)
	return c
}

func TestOpenAIEmbedderBatchesBoundsConcurrencyAndCaches(t *testing.T) {
	srv := newEmbeddingServer(t, 0, 0)
	e := NewOpenAI(newServeClient(t, srv.URL), "bge-small").BatchSize(3).Parallelism(2)
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee", "ffffff", "g"}
	vs, err := e.Embed(t.Context(), texts)
	require.NoError(t, err)
	for i, v := range vs {
		assert.Equal(t, float32(len(texts[i])), v[0], "vector %d is its own text's", i)
	}
	assert.Equal(t, int32(3), srv.requests.Load())
	assert.ElementsMatch(t, []int{3, 3, 1}, srv.batches)
	assert.LessOrEqual(t, srv.maxInFlight.Load(), int32(2))

	_, err = e.Embed(t.Context(), append(texts, "new"))
	require.NoError(t, err)
	assert.Equal(t, int32(4), srv.requests.Load(), "only the new text is sent")
	hits, _ := e.cache.Stats()
	assert.Equal(t, 7, hits)
}

func TestOpenAIEmbedderRetriesOverloadAndServerErrors(t *testing.T) {
	for _, status := range []int{http.StatusTooManyRequests, http.StatusServiceUnavailable} {
		srv := newEmbeddingServer(t, status, 2)
		e := NewOpenAI(newServeClient(t, srv.URL), "bge-small").Retry(retry.Policy{Limit: 2, Backoff: time.Millisecond, Factor: 2})
		vs, err := e.Embed(t.Context(), []string{"x"})
		require.NoError(t, err, "status %d", status)
		assert.Equal(t, []float32{1, 0}, vs[0])
		assert.Equal(t, int32(3), srv.requests.Load())
	}
	srv := newEmbeddingServer(t, http.StatusServiceUnavailable, 5)
	_, err := NewOpenAI(newServeClient(t, srv.URL), "bge-small").Retry(retry.Policy{Limit: 1, Backoff: time.Millisecond, Factor: 2}).Embed(t.Context(), []string{"x"})
	assert.ErrorContains(t, err, "attempt 2")

	bad := newEmbeddingServer(t, http.StatusBadRequest, 5)
	_, err = NewOpenAI(newServeClient(t, bad.URL), "bge-small").Retry(retry.Policy{Limit: 3, Backoff: time.Millisecond, Factor: 2}).Embed(t.Context(), []string{"x"})
	require.Error(t, err)
	assert.Equal(t, int32(1), bad.requests.Load(), "a 400 is not retried")
}

func TestOpenAIEmbedderValidation(t *testing.T) {
	_, err := NewOpenAI(nil, "").BatchSize(0).Parallelism(-1).Retry(retry.Policy{Limit: -1, Backoff: -time.Second}).Embed(t.Context(), []string{"x"})
	require.Error(t, err)
	for _, want := range []string{"client: required", "model: required", "batchSize: 0", "parallelism: -1", "retry.limit: -1: must not be negative", "retry.backoff: -1s: must not be negative"} {
		assert.Contains(t, err.Error(), want)
	}
	var nilEmbedder *OpenAI
	_, err = nilEmbedder.Embed(t.Context(), nil)
	assert.ErrorContains(t, err, "nil OpenAI embedder")
}

// The default policy is the one the embedder had before it took a
// retry.Policy: three retries, 500ms before the first, doubling.
func TestOpenAIDefaultRetryDoublesFromHalfASecond(t *testing.T) {
	p := NewOpenAI(nil, "m").retry
	assert.Equal(t, 3, p.Limit)
	assert.Equal(t, []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second},
		[]time.Duration{p.Delay(1), p.Delay(2), p.Delay(3)})
	assert.NoError(t, p.Err())
}

// TestHashedFeaturesAreBitIdentical embeds the same text 50 times, in
// separate calls and in one batch, and compares the bits: before features
// were summed in text order, map order gave 21 distinct vectors of 50.
func TestHashedFeaturesAreBitIdentical(t *testing.T) {
	h := HashedFeatures(64) // few dimensions: many features collide, so summation order shows
	text := "TrimSpace returns a slice of the string s, with all leading and trailing white space removed, " +
		"as defined by Unicode; trimming, trims, trimmed, spaces and spacing collide in 64 dimensions."
	batch := make([]string, 50)
	for i := range batch {
		batch[i] = text
	}
	first, err := h.Embed(t.Context(), []string{text})
	require.NoError(t, err)
	bits := func(v []float32) []uint32 {
		out := make([]uint32, len(v))
		for i, x := range v {
			out[i] = math.Float32bits(x)
		}
		return out
	}
	want := bits(first[0])
	for i := 0; i < 50; i++ {
		again, err := h.Embed(t.Context(), []string{text})
		require.NoError(t, err)
		require.Equal(t, want, bits(again[0]), "call %d", i)
	}
	vs, err := h.Embed(t.Context(), batch)
	require.NoError(t, err)
	for i, v := range vs {
		require.Equal(t, want, bits(v), "batch item %d", i)
	}
}
