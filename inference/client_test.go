package inference_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/inference"
)

// fakeOpenAI is an httptest server that speaks the OpenAI API the way vLLM,
// SGLang and Ollama's /v1 do, following the published API reference
// (platform.openai.com/docs/api-reference): POST /v1/chat/completions (with
// "stream": true answered as text/event-stream "data: {chunk}" events ended
// by "data: [DONE]"), POST /v1/completions, POST /v1/embeddings and
// GET /v1/models, with the documented response objects ("chat.completion",
// "chat.completion.chunk", "text_completion", "list" of "embedding",
// "list" of "model") and the documented error object
// {"error": {"message", "type", "param", "code"}}. No real engine runs in
// tests, so this stands in for one.
type fakeOpenAI struct {
	*httptest.Server
	key    string   // required bearer token; "" accepts any request
	models []string // what /v1/models lists; requests for others get 404
	delay  time.Duration

	mu       sync.Mutex
	requests []fakeRequest
}

type fakeRequest struct {
	Method, Path, Authorization string
	Body                        map[string]any
}

func newFakeOpenAI(t *testing.T, key string, models ...string) *fakeOpenAI {
	t.Helper()
	f := startFakeOpenAI(key, models...)
	t.Cleanup(f.Close)
	return f
}

// startFakeOpenAI starts the fake for examples, which close it themselves.
func startFakeOpenAI(key string, models ...string) *fakeOpenAI {
	f := &fakeOpenAI{key: key, models: models}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

func (f *fakeOpenAI) recorded() []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeRequest(nil), f.requests...)
}

func (f *fakeOpenAI) fail(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": code,
	}})
}

func (f *fakeOpenAI) serve(w http.ResponseWriter, r *http.Request) {
	req := fakeRequest{Method: r.Method, Path: r.URL.Path, Authorization: r.Header.Get("Authorization")}
	if r.Method == http.MethodPost {
		if err := json.NewDecoder(r.Body).Decode(&req.Body); err != nil {
			f.fail(w, http.StatusBadRequest, "invalid_request_error", "", "body is not JSON: "+err.Error())
			return
		}
	}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()

	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		}
	}
	if f.key != "" && req.Authorization != "Bearer "+f.key {
		f.fail(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "Incorrect API key provided.")
		return
	}
	if r.URL.Path == "/v1/models" && r.Method == http.MethodGet {
		data := make([]map[string]any, 0, len(f.models))
		for _, id := range f.models {
			data = append(data, map[string]any{"id": id, "object": "model", "created": 1700000000, "owned_by": "vllm"})
		}
		writeFakeJSON(w, map[string]any{"object": "list", "data": data})
		return
	}
	if r.Method != http.MethodPost {
		f.fail(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "method not allowed")
		return
	}
	model, _ := req.Body["model"].(string)
	known := false
	for _, m := range f.models {
		known = known || m == model
	}
	if !known {
		f.fail(w, http.StatusNotFound, "invalid_request_error", "model_not_found",
			fmt.Sprintf("The model `%s` does not exist.", model))
		return
	}
	usage := map[string]any{"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7}
	switch r.URL.Path {
	case "/v1/chat/completions":
		if stream, _ := req.Body["stream"].(bool); stream {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Cache-Control", "no-cache")
			flusher := w.(http.Flusher)
			for i, delta := range []map[string]any{
				{"role": "assistant", "content": ""}, {"content": "Hello"}, {"content": " there"}, {},
			} {
				choice := map[string]any{"index": 0, "delta": delta, "finish_reason": nil}
				if i == 3 {
					choice["finish_reason"] = "stop"
				}
				chunk, _ := json.Marshal(map[string]any{
					"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000,
					"model": model, "choices": []any{choice},
				})
				fmt.Fprintf(w, "data: %s\n\n", chunk)
				flusher.Flush()
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		last := ""
		if msgs, _ := req.Body["messages"].([]any); len(msgs) > 0 {
			last, _ = msgs[len(msgs)-1].(map[string]any)["content"].(string)
		}
		writeFakeJSON(w, map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": model,
			"choices": []any{map[string]any{
				"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "You said: " + last},
			}},
			"usage": usage,
		})
	case "/v1/completions":
		prompt, _ := req.Body["prompt"].(string)
		writeFakeJSON(w, map[string]any{
			"id": "cmpl-1", "object": "text_completion", "created": 1700000000, "model": model,
			"choices": []any{map[string]any{"index": 0, "text": prompt + " world", "logprobs": nil, "finish_reason": "length"}},
			"usage":   usage,
		})
	case "/v1/embeddings":
		inputs, _ := req.Body["input"].([]any)
		data := make([]any, 0, len(inputs))
		// Answer in reverse order: the API ties vectors to inputs by index.
		for i := len(inputs) - 1; i >= 0; i-- {
			s, _ := inputs[i].(string)
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": []float32{float32(len(s)), float32(i)}})
		}
		writeFakeJSON(w, map[string]any{"object": "list", "data": data, "model": model,
			"usage": map[string]any{"prompt_tokens": 3, "total_tokens": 3}})
	default:
		f.fail(w, http.StatusNotFound, "invalid_request_error", "", "no route "+r.URL.Path)
	}
}

func writeFakeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func TestNewClientEndpoint(t *testing.T) {
	for endpoint, want := range map[string]string{
		"http://qwen-chat:8000":             "http://qwen-chat:8000/v1",
		"http://qwen-chat:8000/":            "http://qwen-chat:8000/v1",
		"https://llm.example.com/v1/":       "https://llm.example.com/v1",
		"http://gateway/openai/v1":          "http://gateway/openai/v1",
		"http://ollama.ns.svc:11434/v1":     "http://ollama.ns.svc:11434/v1",
		"http://[::1]:8000":                 "http://[::1]:8000/v1",
		"http://mindie.default.svc.cluster": "http://mindie.default.svc.cluster/v1",
	} {
		c, err := inference.NewClient(endpoint, inference.ServedModel("m"))
		require.NoError(t, err, endpoint)
		assert.Equal(t, want, c.BaseURL(), endpoint)
		assert.Equal(t, "m", c.Model())
	}
}

func TestNewClientRejectsBadEndpoints(t *testing.T) {
	for endpoint, want := range map[string]string{
		"":                              "endpoint: Required value",
		"   ":                           "endpoint: Required value",
		"qwen-chat:8000":                `endpoint: Invalid value: "qwen-chat:8000": must be an http or https URL`,
		"ftp://host/v1":                 `endpoint: Invalid value: "ftp://host/v1": must be an http or https URL`,
		"http://":                       `endpoint: Invalid value: "http://": must name a host`,
		"not a url":                     `endpoint: Invalid value: "not a url": must be an http or https URL`,
		"http://:8000":                  `endpoint: Invalid value: "http://:8000": must name a host`,
		"http://host/v1?x=1":            `endpoint: Invalid value: "http://host/v1?x=1": must not have a query or fragment`,
		"http://host/v1#top":            `endpoint: Invalid value: "http://host/v1#top": must not have a query or fragment`,
		"http://host\x7f":               `endpoint: Invalid value: "http://host\x7f": not a URL`,
		"http://admin:s3cret@host:8000": `endpoint: Invalid value: "http://xxxxx@host:8000": must not carry credentials`,
		"http://admin:s3cret@host:port": `endpoint: Invalid value: "http://xxxxx@host:port": not a URL`, // does not parse: redacted all the same
	} {
		_, err := inference.NewClient(endpoint)
		require.Error(t, err, endpoint)
		assert.Contains(t, err.Error(), want, endpoint)
		assert.Contains(t, err.Error(), "new openai client: ")
		assert.NotContains(t, err.Error(), "s3cret")
	}
}

func TestNewClientReportsEveryBadOption(t *testing.T) {
	t.Setenv("CUBE_TEST_EMPTY_KEY", "")
	_, err := inference.NewClient("nope",
		inference.APIKeyFromEnv("CUBE_TEST_EMPTY_KEY"),
		inference.HTTPClient(nil),
		inference.RequestTimeout(-time.Second),
		inference.ServedModel(" qwen "),
	)
	require.Error(t, err)
	// One line per problem, each starting with the option it names, in the
	// order NewClient checks them.
	assert.Equal(t, []string{
		`new openai client: endpoint: Invalid value: "nope": must be an http or https URL`,
		`apiKeyFromEnv: Invalid value: "CUBE_TEST_EMPTY_KEY": environment variable is unset or empty`,
		"httpClient: Required value",
		`requestTimeout: Invalid value: "-1s": must be positive`,
		`servedModel: Invalid value: " qwen ": must not start or end with spaces`,
	}, strings.Split(err.Error(), "\n"))
	_, err = inference.NewClient("http://host", inference.APIKey("  "))
	require.EqualError(t, err, "new openai client: apiKey: Required value: an empty key would send no Authorization header")
}

func TestChatFillsTheModelAndKey(t *testing.T) {
	f := newFakeOpenAI(t, "sk-test-123", "qwen-chat")
	c, err := inference.NewClient(f.URL, inference.ServedModel("qwen-chat"), inference.APIKey("sk-test-123"))
	require.NoError(t, err)

	resp, err := c.Chat(t.Context(), inference.SystemMessage("Be brief."), inference.AssistantMessage("Hi."), inference.UserMessage("ping"))
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	assert.Equal(t, "You said: ping", resp.Choices[0].Message.Content)
	assert.Equal(t, openai.ChatMessageRoleAssistant, resp.Choices[0].Message.Role)
	assert.Equal(t, openai.FinishReasonStop, resp.Choices[0].FinishReason)
	assert.Equal(t, 7, resp.Usage.TotalTokens)

	reqs := f.recorded()
	require.Len(t, reqs, 1)
	assert.Equal(t, "POST", reqs[0].Method)
	assert.Equal(t, "/v1/chat/completions", reqs[0].Path)
	assert.Equal(t, "Bearer sk-test-123", reqs[0].Authorization)
	assert.Equal(t, "qwen-chat", reqs[0].Body["model"])
	assert.Equal(t, []any{
		map[string]any{"role": "system", "content": "Be brief."},
		map[string]any{"role": "assistant", "content": "Hi."},
		map[string]any{"role": "user", "content": "ping"},
	}, reqs[0].Body["messages"])
}

func TestChatStreamEndsAtDone(t *testing.T) {
	f := newFakeOpenAI(t, "", "qwen-chat")
	c, err := inference.NewClient(f.URL, inference.ServedModel("qwen-chat"))
	require.NoError(t, err)

	stream, err := c.ChatStream(t.Context(), inference.UserMessage("hello"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = stream.Close() })
	var text strings.Builder
	var finish openai.FinishReason
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		assert.Equal(t, "chat.completion.chunk", chunk.Object)
		text.WriteString(chunk.Choices[0].Delta.Content)
		if chunk.Choices[0].FinishReason != "" {
			finish = chunk.Choices[0].FinishReason
		}
	}
	assert.Equal(t, "Hello there", text.String())
	assert.Equal(t, openai.FinishReasonStop, finish)
	_, err = stream.Recv()
	assert.ErrorIs(t, err, io.EOF, "the stream stays finished after [DONE]")

	reqs := f.recorded()
	require.Len(t, reqs, 1)
	assert.Equal(t, true, reqs[0].Body["stream"])
	assert.Equal(t, "qwen-chat", reqs[0].Body["model"])
	assert.Empty(t, reqs[0].Authorization, "no key, no Authorization header")
}

func TestComplete(t *testing.T) {
	f := newFakeOpenAI(t, "", "qwen-base")
	c, err := inference.NewClient(f.URL, inference.ServedModel("qwen-base"))
	require.NoError(t, err)
	resp, err := c.Complete(t.Context(), "hello")
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	assert.Equal(t, "hello world", resp.Choices[0].Text)
	assert.Equal(t, "text_completion", resp.Object)
	reqs := f.recorded()
	require.Len(t, reqs, 1)
	assert.Equal(t, "/v1/completions", reqs[0].Path)
	assert.Equal(t, "qwen-base", reqs[0].Body["model"])
	assert.Equal(t, "hello", reqs[0].Body["prompt"])
}

func TestEmbedKeepsInputOrder(t *testing.T) {
	f := newFakeOpenAI(t, "", "bge-m3")
	c, err := inference.NewClient(f.URL, inference.ServedModel("bge-m3"))
	require.NoError(t, err)
	vecs, err := c.Embed(t.Context(), "a", "bbb", "cc")
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{1, 0}, {3, 1}, {2, 2}}, vecs)
	reqs := f.recorded()
	require.Len(t, reqs, 1)
	assert.Equal(t, "/v1/embeddings", reqs[0].Path)
	assert.Equal(t, []any{"a", "bbb", "cc"}, reqs[0].Body["input"])

	vecs, err = c.Embed(t.Context())
	require.NoError(t, err)
	assert.Nil(t, vecs)
	assert.Len(t, f.recorded(), 1, "no inputs, no request")
}

func TestEmbedRejectsMismatchedAnswers(t *testing.T) {
	for name, body := range map[string]string{
		"index out of range": `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1]},{"object":"embedding","index":5,"embedding":[1]}]}`,
		"duplicate index":    `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[1]},{"object":"embedding","index":0,"embedding":[2]}]}`,
		"missing vector":     `{"object":"list","data":[{"object":"embedding","index":1,"embedding":[1]}]}`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, body)
		}))
		t.Cleanup(srv.Close)
		c, err := inference.NewClient(srv.URL, inference.ServedModel("e"))
		require.NoError(t, err)
		_, err = c.Embed(t.Context(), "x", "y")
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "embed with e: server", name)
	}
}

func TestModelIsDiscoveredOnce(t *testing.T) {
	f := newFakeOpenAI(t, "", "Qwen/Qwen2.5-7B-Instruct")
	c, err := inference.NewClient(f.URL)
	require.NoError(t, err)
	assert.Empty(t, c.Model())

	_, err = c.Chat(t.Context(), inference.UserMessage("a"))
	require.NoError(t, err)
	_, err = c.Complete(t.Context(), "b")
	require.NoError(t, err)
	assert.Equal(t, "Qwen/Qwen2.5-7B-Instruct", c.Model())

	var paths []string
	for _, r := range f.recorded() {
		paths = append(paths, r.Method+" "+r.Path)
	}
	assert.Equal(t, []string{"GET /v1/models", "POST /v1/chat/completions", "POST /v1/completions"}, paths)
}

func TestModelDiscoveryNeedsExactlyOneModel(t *testing.T) {
	for _, models := range [][]string{nil, {"a", "b"}} {
		f := newFakeOpenAI(t, "", models...)
		c, err := inference.NewClient(f.URL)
		require.NoError(t, err)
		_, err = c.Chat(t.Context(), inference.UserMessage("x"))
		require.ErrorIs(t, err, inference.ErrNoModel)
		assert.Contains(t, err.Error(), fmt.Sprintf("lists %d models", len(models)))
		_, err = c.ChatStream(t.Context(), inference.UserMessage("x"))
		require.ErrorIs(t, err, inference.ErrNoModel)
		_, err = c.Complete(t.Context(), "x")
		require.ErrorIs(t, err, inference.ErrNoModel)
		_, err = c.Embed(t.Context(), "x")
		require.ErrorIs(t, err, inference.ErrNoModel)
	}
	f := newFakeOpenAI(t, "right-key", "m")
	c, err := inference.NewClient(f.URL, inference.APIKey("wrong-key"))
	require.NoError(t, err)
	_, err = c.Chat(t.Context(), inference.UserMessage("x"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "chat: list models at "+f.URL+"/v1")
}

func TestServerErrorsKeepTheirType(t *testing.T) {
	f := newFakeOpenAI(t, "sk-right", "qwen-chat")
	c, err := inference.NewClient(f.URL, inference.ServedModel("qwen-chat"), inference.APIKey("sk-wrong"))
	require.NoError(t, err)

	calls := map[string]func() error{
		"chat":     func() error { _, err := c.Chat(t.Context(), inference.UserMessage("x")); return err },
		"stream":   func() error { _, err := c.ChatStream(t.Context(), inference.UserMessage("x")); return err },
		"complete": func() error { _, err := c.Complete(t.Context(), "x"); return err },
		"embed":    func() error { _, err := c.Embed(t.Context(), "x"); return err },
	}
	for name, call := range calls {
		err := call()
		var apiErr *openai.APIError
		require.ErrorAs(t, err, &apiErr, name)
		assert.Equal(t, http.StatusUnauthorized, apiErr.HTTPStatusCode, name)
		assert.Equal(t, "invalid_api_key", apiErr.Code, name)
		assert.NotContains(t, err.Error(), "sk-wrong", name)
		assert.NotContains(t, err.Error(), "sk-right", name)
	}

	c, err = inference.NewClient(f.URL, inference.ServedModel("llama"), inference.APIKey("sk-right"))
	require.NoError(t, err)
	_, err = c.Chat(t.Context(), inference.UserMessage("x"))
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusNotFound, apiErr.HTTPStatusCode)
	assert.Contains(t, err.Error(), "chat with llama: ")
}

func TestAPIKeyFromEnv(t *testing.T) {
	t.Setenv("CUBE_TEST_VLLM_KEY", "sk-from-env")
	f := newFakeOpenAI(t, "sk-from-env", "m")
	c, err := inference.NewClient(f.URL, inference.ServedModel("m"), inference.APIKeyFromEnv("CUBE_TEST_VLLM_KEY"))
	require.NoError(t, err)
	_, err = c.Chat(t.Context(), inference.UserMessage("x"))
	require.NoError(t, err)
	assert.Equal(t, "Bearer sk-from-env", f.recorded()[0].Authorization)

	// The later of APIKey and APIKeyFromEnv wins.
	c, err = inference.NewClient(f.URL, inference.ServedModel("m"), inference.APIKeyFromEnv("CUBE_TEST_UNSET_VAR"), inference.APIKey("sk-from-env"))
	require.NoError(t, err)
	_, err = c.Chat(t.Context(), inference.UserMessage("x"))
	require.NoError(t, err)
}

func TestClientNeverPrintsTheKey(t *testing.T) {
	c, err := inference.NewClient("http://qwen-chat:8000", inference.ServedModel("qwen"), inference.APIKey("sk-secret-value"))
	require.NoError(t, err)
	for _, format := range []string{"%v", "%+v", "%s", "%#v"} {
		assert.NotContains(t, fmt.Sprintf(format, c), "sk-secret-value", format)
	}
	assert.Equal(t, `inference.Client(http://qwen-chat:8000/v1, model "qwen")`, c.String())
}

// countingTransport counts requests on their way through a caller's client.
type countingTransport struct {
	mu sync.Mutex
	n  int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func TestHTTPClientAndTimeout(t *testing.T) {
	f := newFakeOpenAI(t, "", "m")
	transport := &countingTransport{}
	mine := &http.Client{Transport: transport}
	c, err := inference.NewClient(f.URL, inference.ServedModel("m"), inference.HTTPClient(mine), inference.RequestTimeout(5*time.Second))
	require.NoError(t, err)
	_, err = c.Chat(t.Context(), inference.UserMessage("x"))
	require.NoError(t, err)
	assert.Equal(t, 1, transport.n, "requests go through the caller's transport")
	assert.Zero(t, mine.Timeout, "the caller's client is not modified")

	f.delay = 2 * time.Second
	slow, err := inference.NewClient(f.URL, inference.ServedModel("m"), inference.RequestTimeout(50*time.Millisecond))
	require.NoError(t, err)
	start := time.Now()
	_, err = slow.Chat(t.Context(), inference.UserMessage("x"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Client.Timeout exceeded")
	assert.Less(t, time.Since(start), time.Second)
}
