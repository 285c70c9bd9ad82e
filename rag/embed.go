package rag

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"golang.org/x/sync/errgroup"

	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/retry"
)

// Embedder turns texts into vectors, one per text in order.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Model names the embedding model. A knowledge base records it and
	// refuses to mix vectors of different models; caches key on it.
	Model() string
}

// FeatureHasher is a lexical embedder that needs no model: each text
// becomes a vector of hashed features (the "hashing trick"), its lower-cased
// words weighted 1 and the character trigrams of each word weighted 0.5,
// each feature's count damped to 1+ln(count), signed by a second hash so
// that collisions cancel on average, and the vector scaled to unit length.
// Cosine similarity between two such vectors measures shared words and
// word parts, so it finds "indexing" for "index" where BM25 would not; it
// knows nothing of synonyms. It is the embedded default because no neural
// model can be downloaded where cube's tests run; use OpenAIEmbedder with a
// served model (serve.TEI or vLLM's embedding task) for semantic search.
type FeatureHasher struct {
	dims int
}

// maxHashedDims bounds FeatureHasher's dimensions. Each text becomes a
// dense vector of dims float32s, so an unbounded dims is an unbounded
// allocation per text (1<<40 asked for 4 TiB and the process was killed).
// Served embedding models stay far below it: small sentence encoders use
// 384 or 768 dimensions, the largest in common use 4,096.
const maxHashedDims = 1 << 16

// HashedFeatures returns a FeatureHasher making vectors of dims
// dimensions (384 matches common small sentence encoders). Embed refuses
// dims outside 1 to 65,536.
func HashedFeatures(dims int) *FeatureHasher { return &FeatureHasher{dims: dims} }

// Model returns "hashed-features-v1-<dims>".
func (h *FeatureHasher) Model() string {
	if h == nil {
		return ""
	}
	return fmt.Sprintf("hashed-features-v1-%d", h.dims)
}

// Embed hashes each text. A text without words is the zero vector.
func (h *FeatureHasher) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if h == nil {
		return nil, errors.New("embed: nil FeatureHasher: use rag.HashedFeatures")
	}
	if h.dims <= 0 {
		return nil, fmt.Errorf("embed: hashed features: dims: %d: must be positive", h.dims)
	}
	if h.dims > maxHashedDims {
		return nil, fmt.Errorf("embed: hashed features: dims: %d: must be at most %d", h.dims, maxHashedDims)
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = h.vector(t)
	}
	return out, nil
}

// stopWords are English function words; the hasher weighs them a tenth
// of other words, since it has no corpus statistics (as BM25's IDF) to
// learn that they carry no topic.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about above after again all also am an and any are as at be because been
		before being between both but by can could did do does doing down during each few for from further had
		has have having he her here hers him his how i if in into is it its itself just me more most my no nor
		not now of off on once only or other our ours out over own same she should so some such than that the
		their theirs them then there these they this those through to too under until up very was we were what
		when where which while who whom why will with would you your yours`) {
		stopWords[w] = true
	}
}

func (h *FeatureHasher) vector(text string) []float32 {
	counts := map[string]float64{}
	for _, w := range terms(text) {
		if stopWords[w] {
			counts["w:"+w] += 0.1
			continue
		}
		counts["w:"+w]++
		if len(w) > 3 {
			p := "^" + w + "$"
			for i := 0; i+3 <= len(p); i++ {
				counts["t:"+p[i:i+3]] += 0.5
			}
		}
	}
	v := make([]float32, h.dims)
	for f, c := range counts {
		hf := fnv.New64a()
		hf.Write([]byte(f))
		sum := hf.Sum64()
		weight := 1 + math.Log(c)
		if c < 1 { // stop words only
			weight = c
		}
		if f[0] == 't' {
			weight = 0.5 * (1 + math.Log(2*c))
		}
		if sum>>63 == 1 {
			weight = -weight
		}
		v[sum%uint64(h.dims)] += float32(weight)
	}
	normalize(v)
	return v
}

// normalize scales v to unit length in place and reports whether it had any.
func normalize(v []float32) bool {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return false
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
	return true
}

// OpenAIEmbedder embeds through any OpenAI-compatible /embeddings endpoint
// (vLLM's embedding task, Hugging Face text-embeddings-inference, Ollama)
// with go-openai, through a inference.Client. Texts go in batches of BatchSize,
// at most Parallelism batches at once; a batch answered 429 or 5xx (or not
// answered) is retried as the Retry policy says; and
// vectors are cached by model and content hash, so embedding unchanged text
// again costs no request.
type OpenAIEmbedder struct {
	client      *inference.Client
	model       string
	batch       int
	parallelism int
	retry       retry.Policy
	cache       *EmbeddingCache
}

// NewOpenAIEmbedder returns an embedder that asks client's server for
// model's embeddings. Defaults: batches of 64, 4 batches at once, 3
// retries starting at 500ms and doubling
// (retry.Policy{Limit: 3, Backoff: 500 * time.Millisecond, Factor: 2}), a
// cache of 10,000 vectors.
func NewOpenAIEmbedder(client *inference.Client, model string) *OpenAIEmbedder {
	return &OpenAIEmbedder{client: client, model: model, batch: 64, parallelism: 4,
		retry: defaultRetry(), cache: NewEmbeddingCache(10_000)}
}

// BatchSize sets how many texts go in one request.
func (e *OpenAIEmbedder) BatchSize(n int) *OpenAIEmbedder {
	if e != nil {
		e.batch = n
	}
	return e
}

// Parallelism sets how many requests are in flight at once.
func (e *OpenAIEmbedder) Parallelism(n int) *OpenAIEmbedder {
	if e != nil {
		e.parallelism = n
	}
	return e
}

// defaultRetry is OpenAIEmbedder's retry policy unless Retry replaces it:
// three more attempts, 500ms before the first, doubling. A function, not a
// variable, so no caller can change every embedder's default.
func defaultRetry() retry.Policy {
	return retry.Policy{Limit: 3, Backoff: 500 * time.Millisecond, Factor: 2}
}

// Retry replaces the policy by which a batch answered 429 or 5xx, or not
// answered at all, is sent again. A zero Policy sends each batch once; a
// Factor of 0 keeps the wait constant, so write Factor 2 for doubling.
func (e *OpenAIEmbedder) Retry(p retry.Policy) *OpenAIEmbedder {
	if e != nil {
		e.retry = p
	}
	return e
}

// Cache replaces the vector cache; nil turns caching off. A cache may be
// shared by embedders: entries are keyed by model.
func (e *OpenAIEmbedder) Cache(c *EmbeddingCache) *OpenAIEmbedder {
	if e != nil {
		e.cache = c
	}
	return e
}

// Model returns the model name requests carry.
func (e *OpenAIEmbedder) Model() string {
	if e == nil {
		return ""
	}
	return e.model
}

func (e *OpenAIEmbedder) validate() error {
	if e == nil {
		return errors.New("embed: nil OpenAIEmbedder: use rag.NewOpenAIEmbedder")
	}
	var errs []error
	if e.client == nil {
		errs = append(errs, errors.New("client: required: a inference.Client for the embedding server"))
	}
	if e.model == "" {
		errs = append(errs, errors.New("model: required: the served embedding model's name"))
	}
	if e.batch <= 0 {
		errs = append(errs, fmt.Errorf("batchSize: %d: must be positive", e.batch))
	}
	if e.parallelism <= 0 {
		errs = append(errs, fmt.Errorf("parallelism: %d: must be positive", e.parallelism))
	}
	for _, p := range e.retry.Problems() {
		errs = append(errs, fmt.Errorf("retry.%s: %s: %s", p.Field, p.Value, p.Detail))
	}
	if len(errs) > 0 {
		return fmt.Errorf("embed: %w", errors.Join(errs...))
	}
	return nil
}

// Embed returns one vector per text, in order, from the cache where it can.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := e.validate(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	var missing []int
	for i, t := range texts {
		if v, ok := e.cache.get(e.model, t); ok {
			out[i] = v
			continue
		}
		missing = append(missing, i)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(e.parallelism)
	for start := 0; start < len(missing); start += e.batch {
		idx := missing[start:min(start+e.batch, len(missing))]
		g.Go(func() error {
			batch := make([]string, len(idx))
			for j, i := range idx {
				batch[j] = texts[i]
			}
			vecs, err := e.embedBatch(gctx, batch)
			if err != nil {
				return err
			}
			for j, i := range idx {
				out[i] = vecs[j]
				e.cache.put(e.model, texts[i], vecs[j])
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

func (e *OpenAIEmbedder) embedBatch(ctx context.Context, batch []string) ([][]float32, error) {
	var resp openai.EmbeddingResponse
	attempts := 0
	err := retry.Do(ctx, e.retry, func(err error) bool { return retryable(err) && ctx.Err() == nil },
		func(ctx context.Context) error {
			attempts++
			var err error
			resp, err = e.client.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{Model: openai.EmbeddingModel(e.model), Input: batch})
			return err
		})
	if err != nil {
		return nil, fmt.Errorf("embed %d texts with %s (attempt %d): %w", len(batch), e.model, attempts, err)
	}
	return vectorsOf(resp, len(batch), e.model)
}

func vectorsOf(resp openai.EmbeddingResponse, n int, model string) ([][]float32, error) {
	out := make([][]float32, n)
	for _, d := range resp.Data {
		if d.Index < 0 || d.Index >= n || out[d.Index] != nil {
			return nil, fmt.Errorf("embed with %s: server answered index %d for %d texts", model, d.Index, n)
		}
		out[d.Index] = d.Embedding
	}
	for i, v := range out {
		if len(v) == 0 {
			return nil, fmt.Errorf("embed with %s: server sent no vector for text %d", model, i)
		}
		if len(v) != len(out[0]) {
			return nil, fmt.Errorf("embed with %s: text %d got %d dimensions, text 0 got %d", model, i, len(v), len(out[0]))
		}
	}
	return out, nil
}

// retryable says whether err is worth sending the request again: the
// server was overloaded (429), failed (5xx), or never answered.
func retryable(err error) bool {
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode == 429 || apiErr.HTTPStatusCode >= 500
	}
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return reqErr.HTTPStatusCode == 429 || reqErr.HTTPStatusCode >= 500 || reqErr.HTTPStatusCode == 0
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// EmbeddingCache keeps the most recently used vectors, keyed by model and
// the SHA-256 of the text. It is safe for concurrent use; a nil cache
// caches nothing.
type EmbeddingCache struct {
	mu      sync.Mutex
	max     int
	entries map[string]*list.Element
	order   *list.List
	hits    int
	misses  int
}

type cacheEntry struct {
	key string
	vec []float32
}

// NewEmbeddingCache returns a cache holding up to maxEntries vectors.
func NewEmbeddingCache(maxEntries int) *EmbeddingCache {
	return &EmbeddingCache{max: maxEntries, entries: map[string]*list.Element{}, order: list.New()}
}

// Stats returns how many lookups found a vector and how many did not.
func (c *EmbeddingCache) Stats() (hits, misses int) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

func (c *EmbeddingCache) get(model, text string) ([]float32, bool) {
	if c == nil || c.entries == nil {
		return nil, false
	}
	key := contentHash(model, text)
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		c.misses++
		return nil, false
	}
	c.hits++
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).vec, true
}

func (c *EmbeddingCache) put(model, text string, vec []float32) {
	if c == nil || c.entries == nil || c.max <= 0 {
		return
	}
	key := contentHash(model, text)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.order.MoveToFront(el)
		return
	}
	c.entries[key] = c.order.PushFront(&cacheEntry{key: key, vec: vec})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*cacheEntry).key)
	}
}
