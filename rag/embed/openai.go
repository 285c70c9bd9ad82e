package embed

import (
	"context"
	"errors"
	"fmt"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"golang.org/x/sync/errgroup"

	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/retry"
)

// OpenAI embeds through any OpenAI-compatible /embeddings endpoint
// (vLLM's embedding task, Hugging Face text-embeddings-inference, Ollama)
// with go-openai, through a inference.Client. Texts go in batches of BatchSize,
// at most Parallelism batches at once; a batch answered 429 or 5xx (or not
// answered) is retried as the Retry policy says; and
// vectors are cached by model and content hash, so embedding unchanged text
// again costs no request.
type OpenAI struct {
	client      *inference.Client
	model       string
	batch       int
	parallelism int
	retry       retry.Policy
	cache       *Cache
}

// NewOpenAI returns an embedder that asks client's server for
// model's embeddings. Defaults: batches of 64, 4 batches at once, 3
// retries starting at 500ms and doubling
// (retry.Policy{Limit: 3, Backoff: 500 * time.Millisecond, Factor: 2}), a
// cache of 10,000 vectors.
func NewOpenAI(client *inference.Client, model string) *OpenAI {
	return &OpenAI{client: client, model: model, batch: 64, parallelism: 4,
		retry: defaultRetry(), cache: NewCache(10_000)}
}

// BatchSize sets how many texts go in one request.
func (e *OpenAI) BatchSize(n int) *OpenAI {
	if e != nil {
		e.batch = n
	}
	return e
}

// Parallelism sets how many requests are in flight at once.
func (e *OpenAI) Parallelism(n int) *OpenAI {
	if e != nil {
		e.parallelism = n
	}
	return e
}

// defaultRetry is OpenAI's retry policy unless Retry replaces it:
// three more attempts, 500ms before the first, doubling. A function, not a
// variable, so no caller can change every embedder's default.
func defaultRetry() retry.Policy {
	return retry.Policy{Limit: 3, Backoff: 500 * time.Millisecond, Factor: 2}
}

// Retry replaces the policy by which a batch answered 429 or 5xx, or not
// answered at all, is sent again. A zero Policy sends each batch once; a
// Factor of 0 keeps the wait constant, so write Factor 2 for doubling.
func (e *OpenAI) Retry(p retry.Policy) *OpenAI {
	if e != nil {
		e.retry = p
	}
	return e
}

// Cache replaces the vector cache; nil turns caching off. A cache may be
// shared by embedders: entries are keyed by model.
func (e *OpenAI) Cache(c *Cache) *OpenAI {
	if e != nil {
		e.cache = c
	}
	return e
}

// Model returns the model name requests carry.
func (e *OpenAI) Model() string {
	if e == nil {
		return ""
	}
	return e.model
}

func (e *OpenAI) validate() error {
	if e == nil {
		return errors.New("embed: nil OpenAI embedder: use embed.NewOpenAI")
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
func (e *OpenAI) Embed(ctx context.Context, texts []string) ([][]float32, error) {
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

func (e *OpenAI) embedBatch(ctx context.Context, batch []string) ([][]float32, error) {
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
