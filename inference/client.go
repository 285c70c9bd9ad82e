package inference

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/cubestudio/cube/internal/urlcheck"
)

// ErrNoModel is returned (wrapped) when a Client has no served model name
// and the server does not list exactly one model to default to.
var ErrNoModel = errors.New("no served model")

// Client talks to an OpenAI-compatible inference server: vLLM, SGLang,
// Ollama's /v1, TGI's Messages API, MindIE. It embeds the go-openai client,
// so every call that library offers is available; the helper methods Chat,
// ChatStream, Complete and Embed fill in the served model name.
//
// A Client is safe for concurrent use.
type Client struct {
	*openai.Client

	baseURL string

	mu    sync.Mutex
	model string
}

// errNilReceiver is what a nil or zero Client's requests return.
var errNilReceiver = errors.New("inference: a nil or zero Client has no server: make it with inference.NewClient")

// ClientOption configures NewClient.
type ClientOption interface {
	applyClient(*clientOptions)
}

type clientOptions struct {
	model      string
	apiKey     string
	apiKeyEnv  string
	keySet     bool
	httpClient *http.Client
	httpSet    bool
	timeout    time.Duration
	timeoutSet bool
}

type clientOptionFunc func(*clientOptions)

func (f clientOptionFunc) applyClient(o *clientOptions) { f(o) }

// ServedModel presets the model name requests carry (vLLM
// --served-model-name, an Ollama tag such as "qwen2.5:7b"). Without it the
// client asks the server's /v1/models on first use and takes the only
// model listed.
func ServedModel(name string) ClientOption {
	return clientOptionFunc(func(o *clientOptions) { o.model = name })
}

// APIKey sends key as a bearer token (vLLM --api-key). The key is never
// printed: not in errors, not by String.
func APIKey(key string) ClientOption {
	return clientOptionFunc(func(o *clientOptions) { o.apiKey, o.apiKeyEnv, o.keySet = key, "", true })
}

// APIKeyFromEnv reads the bearer token from environment variable name when
// NewClient runs; an unset or empty variable is an error.
func APIKeyFromEnv(name string) ClientOption {
	return clientOptionFunc(func(o *clientOptions) { o.apiKey, o.apiKeyEnv, o.keySet = "", name, true })
}

// HTTPClient sends requests with c (for TLS settings, proxies, tracing
// transports). NewClient does not modify c.
func HTTPClient(c *http.Client) ClientOption {
	return clientOptionFunc(func(o *clientOptions) { o.httpClient, o.httpSet = c, true })
}

// RequestTimeout bounds each request, including the reading of a streamed
// response (http.Client's Timeout); use a context deadline to bound a
// single call instead. Split.RequestTimeout is the same bound at the
// gateway.
func RequestTimeout(d time.Duration) ClientOption {
	return clientOptionFunc(func(o *clientOptions) { o.timeout, o.timeoutSet = d, true })
}

// NewClient returns a client for the OpenAI-compatible server at endpoint,
// an http or https URL. An endpoint without a path gets "/v1"
// ("http://qwen-chat:8000" → "http://qwen-chat:8000/v1"); one with a path is
// used as given, for gateways that mount the API elsewhere
// ("http://gateway/openai/v1"). Every invalid argument is reported at once:
// the error joins one line per problem, each starting with the option it
// concerns ("endpoint: ", "requestTimeout: ").
func NewClient(endpoint string, opts ...ClientOption) (*Client, error) {
	var o clientOptions
	for _, opt := range opts {
		opt.applyClient(&o)
	}
	var errs []error
	base, err := baseURL(endpoint)
	if err != nil {
		errs = append(errs, err)
	}
	key := o.apiKey
	if o.apiKeyEnv != "" {
		key = os.Getenv(o.apiKeyEnv)
		if key == "" {
			errs = append(errs, invalid("apiKeyFromEnv", o.apiKeyEnv,
				"environment variable is unset or empty"))
		}
	} else if o.keySet && strings.TrimSpace(key) == "" {
		errs = append(errs, required("apiKey", "an empty key would send no Authorization header"))
	}
	if o.httpSet && o.httpClient == nil {
		errs = append(errs, required("httpClient", ""))
	}
	if o.timeoutSet && o.timeout <= 0 {
		errs = append(errs, invalid("requestTimeout", o.timeout.String(), "must be positive"))
	}
	if o.model != "" && strings.TrimSpace(o.model) != o.model {
		errs = append(errs, invalid("servedModel", o.model, "must not start or end with spaces"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("new openai client: %w", errors.Join(errs...))
	}

	httpClient := &http.Client{}
	if o.httpClient != nil {
		copied := *o.httpClient
		httpClient = &copied
	}
	if o.timeoutSet {
		httpClient.Timeout = o.timeout
	}
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = base
	cfg.HTTPClient = httpClient
	return &Client{Client: openai.NewClientWithConfig(cfg), baseURL: base, model: o.model}, nil
}

// baseURL validates endpoint and returns the API base URL.
func baseURL(endpoint string) (string, error) {
	const path = "endpoint"
	if strings.TrimSpace(endpoint) == "" {
		return "", required(path, "the URL of an OpenAI-compatible server, such as http://qwen-chat:8000")
	}
	// Messages quote the endpoint as given, except for its user
	// information, whether or not it parses.
	shown := urlcheck.Redact(endpoint)
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", invalid(path, shown, "not a URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", invalid(path, shown, "must be an http or https URL")
	case u.User != nil:
		return "", invalid(path, shown, "must not carry credentials: use APIKey or APIKeyFromEnv")
	case u.Host == "" || u.Hostname() == "":
		return "", invalid(path, shown, "must name a host")
	case u.RawQuery != "" || u.Fragment != "":
		return "", invalid(path, shown, "must not have a query or fragment")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = ""
	if u.Path == "" {
		u.Path = "/v1"
	}
	return u.String(), nil
}

// optionError is one invalid argument of NewClient. Its text names the
// option first, in the words Kubernetes field errors use, so a message reads
// the same whether a serve or a label builder or NewClient produced it.
type optionError struct {
	field, value, detail string
	required             bool
}

func required(field, detail string) error {
	return &optionError{field: field, detail: detail, required: true}
}

func invalid(field, value, detail string) error {
	return &optionError{field: field, value: value, detail: detail}
}

func (e *optionError) Error() string {
	var b strings.Builder
	b.WriteString(e.field)
	if e.required {
		b.WriteString(": Required value")
	} else {
		fmt.Fprintf(&b, ": Invalid value: %q", e.value)
	}
	if e.detail != "" {
		b.WriteString(": " + e.detail)
	}
	return b.String()
}

// BaseURL returns the API base URL requests go to, such as
// "http://qwen-chat:8000/v1".
func (c *Client) BaseURL() string {
	if c == nil {
		return ""
	}
	return c.baseURL
}

// Model returns the served model name the helpers send: the ServedModel
// option, or what the server listed once a helper has asked; "" before that.
func (c *Client) Model() string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.model
}

// String describes the client without its API key.
func (c *Client) String() string {
	if c == nil {
		return "inference.Client(nil)"
	}
	return fmt.Sprintf("inference.Client(%s, model %q)", c.baseURL, c.Model())
}

// resolveModel returns the served model name, asking /v1/models once when
// none was given.
func (c *Client) resolveModel(ctx context.Context) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.model != "" {
		return c.model, nil
	}
	list, err := c.ListModels(ctx)
	if err != nil {
		return "", fmt.Errorf("list models at %s: %w", c.baseURL, err)
	}
	ids := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		ids = append(ids, m.ID)
	}
	if len(ids) != 1 {
		return "", fmt.Errorf("%w: %s lists %d models %v; set one with inference.ServedModel", ErrNoModel, c.baseURL, len(ids), ids)
	}
	c.model = ids[0]
	return c.model, nil
}

// SystemMessage builds a chat message with the system prompt.
func SystemMessage(content string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleSystem, Content: content}
}

// UserMessage builds a chat message from the user.
func UserMessage(content string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: content}
}

// AssistantMessage builds a chat message from the assistant, for history.
func AssistantMessage(content string) openai.ChatCompletionMessage {
	return openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: content}
}

// Chat sends messages to /chat/completions with the served model and
// returns the whole answer. For sampling settings, tools or response
// formats, call CreateChatCompletion with Model() filled in.
func (c *Client) Chat(ctx context.Context, messages ...openai.ChatCompletionMessage) (openai.ChatCompletionResponse, error) {
	if c == nil || c.Client == nil {
		return openai.ChatCompletionResponse{}, errNilReceiver
	}
	model, err := c.resolveModel(ctx)
	if err != nil {
		return openai.ChatCompletionResponse{}, fmt.Errorf("chat: %w", err)
	}
	resp, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: model, Messages: slices.Clone(messages)})
	if err != nil {
		return resp, fmt.Errorf("chat with %s: %w", model, err)
	}
	return resp, nil
}

// ChatStream sends messages with stream=true and returns the stream of
// server-sent chunks; Recv returns io.EOF after the server's "data: [DONE]".
// Close the stream when done.
func (c *Client) ChatStream(ctx context.Context, messages ...openai.ChatCompletionMessage) (*openai.ChatCompletionStream, error) {
	if c == nil || c.Client == nil {
		return nil, errNilReceiver
	}
	model, err := c.resolveModel(ctx)
	if err != nil {
		return nil, fmt.Errorf("chat stream: %w", err)
	}
	stream, err := c.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{
		Model: model, Messages: slices.Clone(messages), Stream: true,
	})
	if err != nil {
		return nil, fmt.Errorf("chat stream with %s: %w", model, err)
	}
	return stream, nil
}

// Complete sends prompt to the legacy /completions endpoint, which vLLM,
// SGLang and Ollama still serve for base models.
func (c *Client) Complete(ctx context.Context, prompt string) (openai.CompletionResponse, error) {
	if c == nil || c.Client == nil {
		return openai.CompletionResponse{}, errNilReceiver
	}
	model, err := c.resolveModel(ctx)
	if err != nil {
		return openai.CompletionResponse{}, fmt.Errorf("complete: %w", err)
	}
	resp, err := c.CreateCompletion(ctx, openai.CompletionRequest{Model: model, Prompt: prompt})
	if err != nil {
		return resp, fmt.Errorf("complete with %s: %w", model, err)
	}
	return resp, nil
}

// Embed returns one vector per input, in input order, from /embeddings.
func (c *Client) Embed(ctx context.Context, inputs ...string) ([][]float32, error) {
	if len(inputs) == 0 {
		return nil, nil
	}
	model, err := c.resolveModel(ctx)
	if err != nil {
		return nil, fmt.Errorf("embed: %w", err)
	}
	resp, err := c.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{
		Model: openai.EmbeddingModel(model), Input: slices.Clone(inputs),
	})
	if err != nil {
		return nil, fmt.Errorf("embed with %s: %w", model, err)
	}
	out := make([][]float32, len(inputs))
	for _, e := range resp.Data {
		if e.Index < 0 || e.Index >= len(inputs) || out[e.Index] != nil {
			return nil, fmt.Errorf("embed with %s: server answered index %d for %d inputs", model, e.Index, len(inputs))
		}
		out[e.Index] = e.Embedding
	}
	for i, v := range out {
		if v == nil {
			return nil, fmt.Errorf("embed with %s: server sent no vector for input %d", model, i)
		}
	}
	return out, nil
}
