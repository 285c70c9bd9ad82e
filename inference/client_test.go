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
	"github.com/cubestudio/cube/serve/servetest"
)

// newServer starts servetest's OpenAI-compatible server of model (the
// routes and answers of a vLLM engine) for one test.
func newServer(t *testing.T, model string, opts ...servetest.Option) *servetest.Server {
	t.Helper()
	s := servetest.New(model, opts...)
	t.Cleanup(s.Close)
	return s
}

// body decodes the JSON body of a request the server received.
func body(t *testing.T, r servetest.Request) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &m), string(r.Body))
	return m
}

// echo answers what the user said.
func echo(prompt string) string { return "You said: " + prompt }

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
	s := newServer(t, "qwen-chat", servetest.APIKey("sk-test-123"), servetest.Answer(echo))
	c, err := inference.NewClient(s.URL, inference.ServedModel("qwen-chat"), inference.APIKey("sk-test-123"))
	require.NoError(t, err)

	resp, err := c.Chat(t.Context(), inference.SystemMessage("Be brief."), inference.AssistantMessage("Hi."), inference.UserMessage("ping"))
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	assert.Equal(t, "You said: ping", resp.Choices[0].Message.Content)
	assert.Equal(t, openai.ChatMessageRoleAssistant, resp.Choices[0].Message.Role)
	assert.Equal(t, openai.FinishReasonStop, resp.Choices[0].FinishReason)
	assert.Equal(t, 3, resp.Usage.CompletionTokens)
	assert.Equal(t, resp.Usage.PromptTokens+3, resp.Usage.TotalTokens)

	reqs := s.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "POST", reqs[0].Method)
	assert.Equal(t, "/v1/chat/completions", reqs[0].Path)
	assert.True(t, reqs[0].Authorized, "the key is sent as a bearer token")
	assert.Equal(t, "qwen-chat", reqs[0].Model)
	assert.Equal(t, []any{
		map[string]any{"role": "system", "content": "Be brief."},
		map[string]any{"role": "assistant", "content": "Hi."},
		map[string]any{"role": "user", "content": "ping"},
	}, body(t, reqs[0])["messages"])
}

func TestChatStreamEndsAtDone(t *testing.T) {
	s := newServer(t, "qwen-chat", servetest.Answer(func(string) string { return "Hello there" }))
	headers := &recordingTransport{}
	c, err := inference.NewClient(s.URL, inference.ServedModel("qwen-chat"), inference.HTTPClient(&http.Client{Transport: headers}))
	require.NoError(t, err)

	stream, err := c.ChatStream(t.Context(), inference.UserMessage("hello"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = stream.Close() })
	var text strings.Builder
	var finish openai.FinishReason
	chunks := 0
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		chunks++
		assert.Equal(t, "chat.completion.chunk", chunk.Object)
		text.WriteString(chunk.Choices[0].Delta.Content)
		if chunk.Choices[0].FinishReason != "" {
			finish = chunk.Choices[0].FinishReason
		}
	}
	assert.Equal(t, "Hello there", text.String())
	assert.Greater(t, chunks, 2, "the answer came in pieces")
	assert.Equal(t, openai.FinishReasonStop, finish)
	_, err = stream.Recv()
	assert.ErrorIs(t, err, io.EOF, "the stream stays finished after [DONE]")

	reqs := s.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, true, body(t, reqs[0])["stream"])
	assert.Equal(t, "qwen-chat", reqs[0].Model)
	assert.Equal(t, []string{""}, headers.authorization(), "no key, no Authorization header")
}

func TestComplete(t *testing.T) {
	s := newServer(t, "qwen-base", servetest.Answer(func(p string) string { return p + " world" }))
	c, err := inference.NewClient(s.URL, inference.ServedModel("qwen-base"))
	require.NoError(t, err)
	resp, err := c.Complete(t.Context(), "hello")
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	assert.Equal(t, "hello world", resp.Choices[0].Text)
	assert.Equal(t, "text_completion", resp.Object)
	reqs := s.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "/v1/completions", reqs[0].Path)
	assert.Equal(t, "qwen-base", reqs[0].Model)
	assert.Equal(t, "hello", reqs[0].Prompt)
}

func TestEmbed(t *testing.T) {
	s := newServer(t, "bge-m3", servetest.Embed(func(in string) []float32 { return []float32{float32(len(in))} }))
	c, err := inference.NewClient(s.URL, inference.ServedModel("bge-m3"))
	require.NoError(t, err)
	vecs, err := c.Embed(t.Context(), "a", "bbb", "cc")
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{1}, {3}, {2}}, vecs)
	reqs := s.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "/v1/embeddings", reqs[0].Path)
	assert.Equal(t, []any{"a", "bbb", "cc"}, body(t, reqs[0])["input"])

	vecs, err = c.Embed(t.Context())
	require.NoError(t, err)
	assert.Nil(t, vecs)
	assert.Len(t, s.Requests(), 1, "no inputs, no request")
}

// TestEmbedKeepsInputOrder: the API ties each vector to its input by
// index, not by position in the answer.
func TestEmbedKeepsInputOrder(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"object":"list","model":"e","data":[`+
			`{"object":"embedding","index":2,"embedding":[2]},`+
			`{"object":"embedding","index":0,"embedding":[0]},`+
			`{"object":"embedding","index":1,"embedding":[1]}]}`)
	}))
	t.Cleanup(srv.Close)
	c, err := inference.NewClient(srv.URL, inference.ServedModel("e"))
	require.NoError(t, err)
	vecs, err := c.Embed(t.Context(), "x", "y", "z")
	require.NoError(t, err)
	assert.Equal(t, [][]float32{{0}, {1}, {2}}, vecs)
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
	s := newServer(t, "Qwen/Qwen2.5-7B-Instruct")
	c, err := inference.NewClient(s.URL)
	require.NoError(t, err)
	assert.Empty(t, c.Model())

	_, err = c.Chat(t.Context(), inference.UserMessage("a"))
	require.NoError(t, err)
	_, err = c.Complete(t.Context(), "b")
	require.NoError(t, err)
	assert.Equal(t, "Qwen/Qwen2.5-7B-Instruct", c.Model())

	var paths []string
	for _, r := range s.Requests() {
		paths = append(paths, r.Method+" "+r.Path+" "+r.Model)
	}
	assert.Equal(t, []string{
		"GET /v1/models ",
		"POST /v1/chat/completions Qwen/Qwen2.5-7B-Instruct",
		"POST /v1/completions Qwen/Qwen2.5-7B-Instruct",
	}, paths)
}

func TestModelDiscoveryNeedsExactlyOneModel(t *testing.T) {
	// A server that lists no model or two (a gateway in front of several
	// engines): the client cannot guess which one is meant.
	for _, models := range []string{``, `{"id":"a","object":"model"},{"id":"b","object":"model"}`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/models" {
				http.Error(w, "only /v1/models expected", http.StatusTeapot)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"object":"list","data":[`+models+`]}`)
		}))
		t.Cleanup(srv.Close)
		n := strings.Count(models, `"id"`)
		c, err := inference.NewClient(srv.URL)
		require.NoError(t, err)
		_, err = c.Chat(t.Context(), inference.UserMessage("x"))
		require.ErrorIs(t, err, inference.ErrNoModel)
		assert.Contains(t, err.Error(), fmt.Sprintf("lists %d models", n))
		_, err = c.ChatStream(t.Context(), inference.UserMessage("x"))
		require.ErrorIs(t, err, inference.ErrNoModel)
		_, err = c.Complete(t.Context(), "x")
		require.ErrorIs(t, err, inference.ErrNoModel)
		_, err = c.Embed(t.Context(), "x")
		require.ErrorIs(t, err, inference.ErrNoModel)
	}
	s := newServer(t, "m", servetest.APIKey("right-key"))
	c, err := inference.NewClient(s.URL, inference.APIKey("wrong-key"))
	require.NoError(t, err)
	_, err = c.Chat(t.Context(), inference.UserMessage("x"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "chat: list models at "+s.URL+"/v1")
}

func TestServerErrorsKeepTheirStatus(t *testing.T) {
	s := newServer(t, "qwen-chat", servetest.APIKey("sk-right"))
	c, err := inference.NewClient(s.URL, inference.ServedModel("qwen-chat"), inference.APIKey("sk-wrong"))
	require.NoError(t, err)

	calls := map[string]func() error{
		"chat":     func() error { _, err := c.Chat(t.Context(), inference.UserMessage("x")); return err },
		"stream":   func() error { _, err := c.ChatStream(t.Context(), inference.UserMessage("x")); return err },
		"complete": func() error { _, err := c.Complete(t.Context(), "x"); return err },
		"embed":    func() error { _, err := c.Embed(t.Context(), "x"); return err },
	}
	for name, call := range calls {
		err := call()
		require.Error(t, err, name)
		assert.Equal(t, http.StatusUnauthorized, httpStatus(err), "%s: %v", name, err)
		assert.NotContains(t, err.Error(), "sk-wrong", name)
		assert.NotContains(t, err.Error(), "sk-right", name)
	}

	// vLLM's error object for a model it does not serve keeps its type.
	c, err = inference.NewClient(s.URL, inference.ServedModel("llama"), inference.APIKey("sk-right"))
	require.NoError(t, err)
	_, err = c.Chat(t.Context(), inference.UserMessage("x"))
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusNotFound, apiErr.HTTPStatusCode)
	assert.Contains(t, apiErr.Message, "The model `llama` does not exist.")
	assert.Contains(t, err.Error(), "chat with llama: ")
}

// httpStatus is the status of the server's answer that err carries, as
// go-openai reports it: an APIError when the body is OpenAI's error object,
// a RequestError otherwise (vLLM answers a bad key with {"error":
// "Unauthorized"}), which wraps the APIError it failed to decode.
func httpStatus(err error) int {
	var reqErr *openai.RequestError
	if errors.As(err, &reqErr) {
		return reqErr.HTTPStatusCode
	}
	var apiErr *openai.APIError
	if errors.As(err, &apiErr) {
		return apiErr.HTTPStatusCode
	}
	return 0
}

func TestAPIKeyFromEnv(t *testing.T) {
	t.Setenv("CUBE_TEST_VLLM_KEY", "sk-from-env")
	s := newServer(t, "m", servetest.APIKey("sk-from-env"))
	c, err := inference.NewClient(s.URL, inference.ServedModel("m"), inference.APIKeyFromEnv("CUBE_TEST_VLLM_KEY"))
	require.NoError(t, err)
	_, err = c.Chat(t.Context(), inference.UserMessage("x"))
	require.NoError(t, err)
	assert.True(t, s.Requests()[0].Authorized)

	// The later of APIKey and APIKeyFromEnv wins.
	c, err = inference.NewClient(s.URL, inference.ServedModel("m"), inference.APIKeyFromEnv("CUBE_TEST_UNSET_VAR"), inference.APIKey("sk-from-env"))
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

// recordingTransport records the Authorization header of the requests on
// their way through a caller's client.
type recordingTransport struct {
	mu    sync.Mutex
	auths []string
}

func (c *recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.auths = append(c.auths, r.Header.Get("Authorization"))
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (c *recordingTransport) authorization() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.auths...)
}

func TestHTTPClientAndTimeout(t *testing.T) {
	s := newServer(t, "m")
	transport := &recordingTransport{}
	mine := &http.Client{Transport: transport}
	c, err := inference.NewClient(s.URL, inference.ServedModel("m"), inference.HTTPClient(mine), inference.RequestTimeout(5*time.Second))
	require.NoError(t, err)
	_, err = c.Chat(t.Context(), inference.UserMessage("x"))
	require.NoError(t, err)
	assert.Len(t, transport.authorization(), 1, "requests go through the caller's transport")
	assert.Zero(t, mine.Timeout, "the caller's client is not modified")

	s.Inject(&servetest.Failure{Path: "/v1/chat/completions", Delay: 2 * time.Second})
	slow, err := inference.NewClient(s.URL, inference.ServedModel("m"), inference.RequestTimeout(50*time.Millisecond))
	require.NoError(t, err)
	start := time.Now()
	_, err = slow.Chat(t.Context(), inference.UserMessage("x"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Client.Timeout exceeded")
	assert.Less(t, time.Since(start), time.Second)
}
