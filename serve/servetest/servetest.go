package servetest

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// Option configures a Handler. The options are Answer, Embed, Score,
// ToolCalls, APIKey, EmbeddingSize and OwnedBy.
type Option interface {
	apply(*Handler)
}

type optionFunc func(*Handler)

func (f optionFunc) apply(h *Handler) { f(h) }

// Answer sets what the model answers: for a chat, f gets the content of the
// last user message; for a completion, the prompt. The default answers
// "servetest: " followed by the prompt.
func Answer(f func(prompt string) string) Option {
	return optionFunc(func(h *Handler) {
		if f != nil {
			h.answer = f
		}
	})
}

// Embed sets the vector of each input of /v1/embeddings and TEI's /embed.
// The default is a hashed bag of words of EmbeddingSize dimensions:
// deterministic, and texts that share words point the same way.
func Embed(f func(input string) []float32) Option {
	return optionFunc(func(h *Handler) {
		if f != nil {
			h.embed = f
		}
	})
}

// Score sets the relevance of a document to a query, for vLLM's score and
// rerank routes and TEI's /rerank. The default is the share of the query's
// words that the document contains, between 0 and 1.
func Score(f func(query, document string) float64) Option {
	return optionFunc(func(h *Handler) {
		if f != nil {
			h.score = f
		}
	})
}

// ToolCalls sets the tool calls the model makes: when a chat request
// offers tools and f returns calls, the answer carries them (finish reason
// "tool_calls", as vLLM answers with a tool parser on) instead of text. f
// gets the last user message and the tools offered; IDs left empty are
// filled in.
func ToolCalls(f func(prompt string, tools []openai.Tool) []openai.ToolCall) Option {
	return optionFunc(func(h *Handler) { h.toolCalls = f })
}

// APIKey makes the server require "Authorization: Bearer key" on every
// route but /health and /metrics, as vLLM does when started with
// --api-key; a request without it gets 401 and the body vLLM sends,
// {"error": "Unauthorized"}. An empty key requires nothing.
func APIKey(key string) Option {
	return optionFunc(func(h *Handler) { h.apiKey = key })
}

// EmbeddingSize sets the length of the default embedding vectors (16).
// Values below 1 are ignored.
func EmbeddingSize(n int) Option {
	return optionFunc(func(h *Handler) {
		if n > 0 {
			h.embeddingSize = n
		}
	})
}

// OwnedBy sets the owned_by field of /v1/models ("vllm", as vLLM reports).
func OwnedBy(owner string) Option {
	return optionFunc(func(h *Handler) { h.ownedBy = owner })
}

// Request is one request the server received, in the order received.
type Request struct {
	Method string
	Path   string
	// Model is the model the request named ("" when it named none).
	Model string
	// Prompt is what Answer was given (the last user message of a chat, the
	// prompt of a completion); for embeddings the inputs joined by "\n", for
	// scores and reranks the query.
	Prompt string
	// Body is the raw request body.
	Body []byte
	// Authorized reports whether the request carried the API key (true when
	// no key is required).
	Authorized bool
	// Status is the HTTP status the server answered with.
	Status int
}

// Failure makes the server misbehave, to test a client's retries and
// timeouts. It applies to the requests whose path starts with Path (every
// route when Path is empty), after Skip of them, for Times of them (every
// one when Times is 0).
type Failure struct {
	Path  string
	Skip  int
	Times int
	// Delay holds the answer back this long (or until the client gives
	// up); with Status 0 the request is then answered normally.
	Delay time.Duration
	// Status answers with this status and an OpenAI-shaped error body
	// instead of doing the work.
	Status int
	// RetryAfter sets the Retry-After header (in whole seconds) on the
	// failure's answer.
	RetryAfter time.Duration

	seen atomic.Int64
	hits atomic.Int64
}

// Hits returns how many requests the failure acted on.
func (f *Failure) Hits() int { return int(f.hits.Load()) }

func (f *Failure) take(path string) bool {
	if !strings.HasPrefix(path, f.Path) {
		return false
	}
	n := f.seen.Add(1)
	if n <= int64(f.Skip) || (f.Times > 0 && n > int64(f.Skip+f.Times)) {
		return false
	}
	f.hits.Add(1)
	return true
}

// Handler is the OpenAI-compatible API of one served model as an
// http.Handler, for a server of one's own; New serves it on a local port.
// It is safe for concurrent use.
type Handler struct {
	model         string
	answer        func(string) string
	embed         func(string) []float32
	score         func(query, document string) float64
	toolCalls     func(string, []openai.Tool) []openai.ToolCall
	apiKey        string
	embeddingSize int
	ownedBy       string
	created       int64
	mux           *http.ServeMux

	mu       sync.Mutex
	requests []Request
	failures []*Failure

	running, waiting atomic.Int64
	promptTokens     atomic.Int64
	generatedTokens  atomic.Int64
	succeeded        atomic.Int64
}

// NewHandler returns the API of a model served under the name model.
func NewHandler(model string, opts ...Option) *Handler {
	h := &Handler{model: model, embeddingSize: 16, ownedBy: "vllm", created: time.Now().Unix()}
	h.answer = func(p string) string { return "servetest: " + p }
	h.embed = h.bagOfWords
	h.score = wordOverlap
	for _, o := range opts {
		if o != nil {
			o.apply(h)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /metrics", h.metrics)
	mux.HandleFunc("GET /v1/models", h.models)
	mux.HandleFunc("POST /v1/chat/completions", h.chat)
	mux.HandleFunc("POST /v1/completions", h.completions)
	mux.HandleFunc("POST /v1/embeddings", h.embeddings)
	// vLLM serves scores and reranks under these paths
	// (vllm/entrypoints/pooling/score/api_router.py).
	for _, p := range []string{"/score", "/v1/score"} {
		mux.HandleFunc("POST "+p, h.scores)
	}
	for _, p := range []string{"/rerank", "/v1/rerank", "/v2/rerank"} {
		mux.HandleFunc("POST "+p, h.rerank)
	}
	// Text Embeddings Inference's own routes (router/src/http/server.rs):
	// TEI answers /rerank too, but with its own shape; a TEI request names
	// "texts" where vLLM's names "documents", and rerank tells them apart.
	mux.HandleFunc("POST /embed", h.teiEmbed)
	h.mux = mux
	return h
}

// Model returns the served model name.
func (h *Handler) Model() string { return h.model }

// Requests returns the requests received so far, oldest first (health and
// metrics scrapes left out).
func (h *Handler) Requests() []Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Request, len(h.requests))
	copy(out, h.requests)
	return out
}

// Prompts returns the Prompt of every chat and completion received so far.
func (h *Handler) Prompts() []string {
	var out []string
	for _, r := range h.Requests() {
		if r.Path == "/v1/chat/completions" || r.Path == "/v1/completions" {
			out = append(out, r.Prompt)
		}
	}
	return out
}

// Inject adds a failure; it acts on the requests after this call. Keep the
// pointer to read its Hits.
func (h *Handler) Inject(f *Failure) {
	if f == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failures = append(h.failures, f)
}

// Queue sets the vllm:num_requests_waiting gauge of /metrics, the metric
// serve's autoscaling reads for vLLM, to test what reacts to it.
func (h *Handler) Queue(waiting int) { h.waiting.Store(int64(waiting)) }

// recorder keeps the status a handler wrote.
type recorder struct {
	http.ResponseWriter
	status int
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.ResponseWriter.Write(b)
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

type requestKey struct{}

// ServeHTTP serves the API.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/health" || r.URL.Path == "/metrics" {
		// Probes and scrapes are neither recorded nor authorized; a
		// failure acts on them only when its Path names them.
		if h.fail(w, r, true) {
			return
		}
		h.mux.ServeHTTP(w, r)
		return
	}
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := &recorder{ResponseWriter: w}
	entry := &Request{Method: r.Method, Path: r.URL.Path, Body: body, Authorized: h.authorized(r)}
	var head struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &head)
	entry.Model = head.Model
	defer func() {
		entry.Status = rec.status
		h.mu.Lock()
		h.requests = append(h.requests, *entry)
		h.mu.Unlock()
	}()

	if !entry.Authorized {
		writeJSON(rec, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
		return
	}
	if h.fail(rec, r, false) {
		return
	}
	h.mux.ServeHTTP(rec, r.WithContext(contextWith(r, entry)))
}

// fail applies the injected failures; it reports whether one answered.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, probe bool) bool {
	h.mu.Lock()
	failures := append([]*Failure(nil), h.failures...)
	h.mu.Unlock()
	for _, f := range failures {
		if (probe && f.Path == "") || !f.take(r.URL.Path) {
			continue
		}
		if f.Delay > 0 {
			select {
			case <-time.After(f.Delay):
			case <-r.Context().Done():
				return true
			}
		}
		if f.Status != 0 {
			if f.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(int((f.RetryAfter+time.Second-1)/time.Second)))
			}
			writeError(w, f.Status, "injected failure")
			return true
		}
	}
	return false
}

func (h *Handler) authorized(r *http.Request) bool {
	if h.apiKey == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(h.apiKey)) == 1
}

// Server is a Handler served on a local port by net/http/httptest: URL is
// the endpoint to give a client (inference.NewClient(s.URL), or go-openai
// with s.URL+"/v1").
type Server struct {
	*httptest.Server
	*Handler
}

// New starts a server of model on a local port, as httptest.NewServer
// does; Close it when done (in a test, t.Cleanup(s.Close)).
//
//	s := servetest.New("qwen", servetest.Answer(func(p string) string { return "42" }))
//	defer s.Close()
//	c, _ := inference.NewClient(s.URL)
func New(model string, opts ...Option) *Server {
	h := NewHandler(model, opts...)
	return &Server{Server: httptest.NewServer(h), Handler: h}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError is the error body of vLLM's ErrorResponse
// (vllm/entrypoints/openai/engine/protocol.py): message, type, param and
// the status as code.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

func writeError(w http.ResponseWriter, status int, message string) {
	typ := strings.ReplaceAll(http.StatusText(status), " ", "") + "Error"
	writeJSON(w, status, struct {
		Error apiError `json:"error"`
	}{apiError{Message: message, Type: typ, Code: status}})
}

// checkModel refuses a model other than the served one, as vLLM does with
// 404; a request that names no model is served (vLLM's pooling routes make
// the model optional).
func (h *Handler) checkModel(w http.ResponseWriter, model string) bool {
	if model != "" && model != h.model {
		writeError(w, http.StatusNotFound, fmt.Sprintf("The model `%s` does not exist.", model))
		return false
	}
	return true
}

func words(s string) int { return len(strings.Fields(s)) }

func fnv64(s string) uint64 {
	f := fnv.New64a()
	f.Write([]byte(s))
	return f.Sum64()
}

func (h *Handler) bagOfWords(in string) []float32 {
	v := make([]float32, h.embeddingSize)
	for _, word := range strings.Fields(strings.ToLower(in)) {
		v[fnv64(word)%uint64(h.embeddingSize)]++
	}
	return v
}

func wordOverlap(query, document string) float64 {
	q := strings.Fields(strings.ToLower(query))
	if len(q) == 0 {
		return 0
	}
	doc := map[string]bool{}
	for _, w := range strings.Fields(strings.ToLower(document)) {
		doc[w] = true
	}
	n := 0
	for _, w := range q {
		if doc[w] {
			n++
		}
	}
	return float64(n) / float64(len(q))
}
