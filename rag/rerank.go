package rag

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/cubestudio/cube/internal/urlcheck"
)

// Reranker scores texts for a query, one score per text in order; higher
// is more relevant.
type Reranker interface {
	Rerank(ctx context.Context, query string, texts []string) ([]float64, error)
}

// RerankAPI is the wire format of a rerank endpoint.
type RerankAPI int

const (
	// TEIRerank is Hugging Face text-embeddings-inference's POST /rerank:
	// {"query", "texts"} answered by [{"index", "score"}].
	TEIRerank RerankAPI = iota
	// CohereRerank is the Cohere-style POST /v1/rerank that vLLM, Jina and
	// others serve: {"model", "query", "documents", "top_n"} answered by
	// {"results": [{"index", "relevance_score"}]}.
	CohereRerank
)

// HTTPReranker calls a rerank endpoint over HTTP.
type HTTPReranker struct {
	endpoint string
	api      RerankAPI
	model    string
	apiKey   string
	client   *http.Client
}

// NewReranker returns a reranker for the server at endpoint (an http or
// https URL without the /rerank path) speaking api. model is sent with
// CohereRerank and ignored by TEI, which serves one model.
func NewReranker(endpoint string, api RerankAPI, model string) *HTTPReranker {
	return &HTTPReranker{endpoint: strings.TrimRight(endpoint, "/"), api: api, model: model, client: http.DefaultClient}
}

// APIKey sends key as a bearer token. It is never printed.
func (r *HTTPReranker) APIKey(key string) *HTTPReranker {
	if r != nil {
		r.apiKey = key
	}
	return r
}

// HTTPClient sends requests with c.
func (r *HTTPReranker) HTTPClient(c *http.Client) *HTTPReranker {
	if r != nil {
		r.client = c
	}
	return r
}

// String describes the reranker without its key.
func (r *HTTPReranker) String() string {
	if r == nil {
		return "rag.HTTPReranker(nil)"
	}
	return fmt.Sprintf("rag.HTTPReranker(%s, model %q)", urlcheck.Redact(r.endpoint), r.model)
}

func (r *HTTPReranker) validate() error {
	if r == nil {
		return errors.New("rerank: nil HTTPReranker: use rag.NewReranker")
	}
	var errs []error
	u, err := url.Parse(r.endpoint)
	if r.endpoint == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("endpoint: %q: must be an http or https URL", urlcheck.Redact(r.endpoint)))
	} else if u.User != nil {
		errs = append(errs, errors.New("endpoint: must not carry credentials: use APIKey"))
	}
	if r.api != TEIRerank && r.api != CohereRerank {
		errs = append(errs, fmt.Errorf("api: %d: must be rag.TEIRerank or rag.CohereRerank", r.api))
	}
	if r.api == CohereRerank && r.model == "" {
		errs = append(errs, errors.New("model: required by the Cohere-style API"))
	}
	if r.client == nil {
		errs = append(errs, errors.New("httpClient: required"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("rerank: %w", errors.Join(errs...))
	}
	return nil
}

// Rerank asks the server to score texts for query.
func (r *HTTPReranker) Rerank(ctx context.Context, query string, texts []string) ([]float64, error) {
	if err := r.validate(); err != nil {
		return nil, err
	}
	if len(texts) == 0 {
		return nil, nil
	}
	var body any
	path := "/rerank"
	if r.api == CohereRerank {
		path = "/v1/rerank"
		if strings.HasSuffix(r.endpoint, "/v1") {
			path = "/rerank"
		}
		body = map[string]any{"model": r.model, "query": query, "documents": texts, "top_n": len(texts)}
	} else {
		body = map[string]any{"query": query, "texts": texts, "raw_scores": false, "truncate": true}
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.endpoint+path, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("rerank: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if r.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+r.apiKey)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("rerank at %s: %w", r.endpoint, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("rerank at %s: %w", r.endpoint, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("rerank at %s: %s: %.200s", r.endpoint, resp.Status, raw)
	}
	type item struct {
		Index          int      `json:"index"`
		Score          *float64 `json:"score"`
		RelevanceScore *float64 `json:"relevance_score"`
	}
	var items []item
	if r.api == CohereRerank {
		var wrapped struct {
			Results []item `json:"results"`
		}
		err = json.Unmarshal(raw, &wrapped)
		items = wrapped.Results
	} else {
		err = json.Unmarshal(raw, &items)
	}
	if err != nil {
		return nil, fmt.Errorf("rerank at %s: decode answer: %w", r.endpoint, err)
	}
	scores := make([]float64, len(texts))
	seen := make([]bool, len(texts))
	for _, it := range items {
		s := it.Score
		if r.api == CohereRerank {
			s = it.RelevanceScore
		}
		if it.Index < 0 || it.Index >= len(texts) || seen[it.Index] || s == nil {
			return nil, fmt.Errorf("rerank at %s: answer has a bad or repeated index %d for %d texts", r.endpoint, it.Index, len(texts))
		}
		seen[it.Index] = true
		scores[it.Index] = *s
	}
	for i, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("rerank at %s: no score for text %d", r.endpoint, i)
		}
	}
	return scores, nil
}
