package servetest_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/serve/servetest"
)

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func TestInferenceClient(t *testing.T) {
	s := servetest.New("qwen", servetest.Answer(func(p string) string { return "you said " + p }))
	t.Cleanup(s.Close)
	c, err := inference.NewClient(s.URL)
	require.NoError(t, err)
	ctx := t.Context()

	resp, err := c.Chat(ctx, inference.SystemMessage("be brief"), inference.UserMessage("one two"))
	require.NoError(t, err)
	assert.Equal(t, "qwen", resp.Model)
	assert.Equal(t, "you said one two", resp.Choices[0].Message.Content)
	assert.Equal(t, openai.FinishReasonStop, resp.Choices[0].FinishReason)
	assert.Equal(t, openai.Usage{PromptTokens: 4, CompletionTokens: 4, TotalTokens: 8}, resp.Usage)

	stream, err := c.ChatStream(ctx, inference.UserMessage("a b c"))
	require.NoError(t, err)
	var text strings.Builder
	var roles []string
	var finish openai.FinishReason
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		require.Len(t, chunk.Choices, 1)
		text.WriteString(chunk.Choices[0].Delta.Content)
		if chunk.Choices[0].Delta.Role != "" {
			roles = append(roles, chunk.Choices[0].Delta.Role)
		}
		if chunk.Choices[0].FinishReason != "" {
			finish = chunk.Choices[0].FinishReason
		}
	}
	stream.Close()
	assert.Equal(t, "you said a b c", text.String())
	assert.Equal(t, []string{"assistant"}, roles, "the role comes once, first")
	assert.Equal(t, openai.FinishReasonStop, finish)

	completion, err := c.Complete(ctx, "say")
	require.NoError(t, err)
	assert.Equal(t, "you said say", completion.Choices[0].Text)

	vectors, err := c.Embed(ctx, "red apple", "Apple red", "blue sky")
	require.NoError(t, err)
	require.Len(t, vectors, 3)
	assert.Equal(t, vectors[0], vectors[1], "a bag of words: order and case do not matter")
	assert.NotEqual(t, vectors[0], vectors[2])
	assert.Len(t, vectors[0], 16)

	assert.Equal(t, []string{"one two", "a b c", "say"}, s.Prompts())
	other, err := inference.NewClient(s.URL, inference.ServedModel("llama"))
	require.NoError(t, err)
	_, err = other.Chat(ctx, inference.UserMessage("x"))
	var apiErr *openai.APIError
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusNotFound, apiErr.HTTPStatusCode)
	assert.Equal(t, "The model `llama` does not exist.", apiErr.Message)
	last := s.Requests()[len(s.Requests())-1]
	assert.Equal(t, "llama", last.Model)
	assert.Equal(t, http.StatusNotFound, last.Status)
}

func TestGoOpenAIStreamWithUsage(t *testing.T) {
	s := servetest.New("qwen")
	t.Cleanup(s.Close)
	cfg := openai.DefaultConfig("")
	cfg.BaseURL = s.URL + "/v1"
	client := openai.NewClientWithConfig(cfg)
	stream, err := client.CreateChatCompletionStream(t.Context(), openai.ChatCompletionRequest{
		Model: "qwen", Stream: true, StreamOptions: &openai.StreamOptions{IncludeUsage: true},
		Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "hello there"}},
	})
	require.NoError(t, err)
	defer stream.Close()
	var text strings.Builder
	var usage *openai.Usage
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		for _, ch := range chunk.Choices {
			text.WriteString(ch.Delta.Content)
		}
		if chunk.Usage != nil {
			assert.Empty(t, chunk.Choices, "the usage chunk has no choices, as vLLM sends it")
			usage = chunk.Usage
		}
	}
	assert.Equal(t, "servetest: hello there", text.String())
	require.NotNil(t, usage)
	assert.Equal(t, openai.Usage{PromptTokens: 2, CompletionTokens: 3, TotalTokens: 5}, *usage)
}

func TestAPIKey(t *testing.T) {
	s := servetest.New("qwen", servetest.APIKey("sk-right"))
	t.Cleanup(s.Close)

	wrong, err := inference.NewClient(s.URL, inference.ServedModel("qwen"), inference.APIKey("sk-wrong"))
	require.NoError(t, err)
	_, err = wrong.Chat(t.Context(), inference.UserMessage("x"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "401")
	assert.NotContains(t, err.Error(), "sk-right")

	code, body := post(t, s.URL+"/v1/embeddings", `{"model":"qwen","input":"x"}`)
	assert.Equal(t, http.StatusUnauthorized, code)
	assert.JSONEq(t, `{"error":"Unauthorized"}`, body)

	right, err := inference.NewClient(s.URL, inference.APIKey("sk-right"))
	require.NoError(t, err)
	resp, err := right.Chat(t.Context(), inference.UserMessage("x"))
	require.NoError(t, err)
	assert.Equal(t, "servetest: x", resp.Choices[0].Message.Content)

	code, _ = get(t, s.URL+"/health")
	assert.Equal(t, http.StatusOK, code, "probes need no key")
	var authorized []bool
	for _, r := range s.Requests() {
		authorized = append(authorized, r.Authorized)
	}
	assert.Equal(t, []bool{false, false, true, true}, authorized) // chat, embeddings, models, chat
}

func TestFailures(t *testing.T) {
	s := servetest.New("qwen")
	t.Cleanup(s.Close)
	throttle := &servetest.Failure{Path: "/v1/chat/completions", Skip: 1, Times: 2, Status: http.StatusTooManyRequests, RetryAfter: 1500 * time.Millisecond}
	s.Inject(throttle)
	body := `{"model":"qwen","messages":[{"role":"user","content":"x"}]}`
	var codes []int
	for range 4 {
		resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == http.StatusTooManyRequests {
			assert.Equal(t, "2", resp.Header.Get("Retry-After"), "rounded up to whole seconds")
		}
		resp.Body.Close()
	}
	assert.Equal(t, []int{200, 429, 429, 200}, codes)
	assert.Equal(t, 2, throttle.Hits())
	code, _ := post(t, s.URL+"/v1/embeddings", `{"model":"qwen","input":"x"}`)
	assert.Equal(t, http.StatusOK, code, "another path is not affected")

	slow := &servetest.Failure{Path: "/v1/embeddings", Delay: time.Second}
	s.Inject(slow)
	c, err := inference.NewClient(s.URL, inference.ServedModel("qwen"), inference.RequestTimeout(100*time.Millisecond))
	require.NoError(t, err)
	began := time.Now()
	_, err = c.Embed(t.Context(), "x")
	require.Error(t, err)
	assert.Less(t, time.Since(began), 900*time.Millisecond, "the client gave up before the delay ended")

	down := &servetest.Failure{Path: "/health", Status: http.StatusServiceUnavailable}
	s.Inject(down)
	code, _ = get(t, s.URL+"/health")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	code, _ = get(t, s.URL+"/metrics")
	assert.Equal(t, http.StatusOK, code)
}

func TestScoresAndReranks(t *testing.T) {
	s := servetest.New("bge-reranker")
	t.Cleanup(s.Close)
	scores := func(body string) []float64 {
		t.Helper()
		code, out := post(t, s.URL+"/score", body)
		require.Equal(t, http.StatusOK, code, out)
		var resp servetest.ScoreResponse
		require.NoError(t, json.Unmarshal([]byte(out), &resp))
		assert.Equal(t, "list", resp.Object)
		var got []float64
		for i, d := range resp.Data {
			assert.Equal(t, i, d.Index)
			assert.Equal(t, "score", d.Object)
			got = append(got, d.Score)
		}
		return got
	}
	assert.Equal(t, []float64{0.5, 1, 0}, scores(`{"model":"bge-reranker","text_1":"red apple","text_2":["red","apple red","sky"]}`), "1:N")
	assert.Equal(t, []float64{1, 0}, scores(`{"text_1":["red","sky"],"text_2":["red car","apple"]}`), "N:N, no model named")
	assert.Equal(t, []float64{1}, scores(`{"queries":"sky","documents":["blue sky"]}`))

	code, out := post(t, s.URL+"/v1/score", `{"text_1":["a","b"],"text_2":["a","b","c"]}`)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, out, "text_1 and text_2")

	for _, path := range []string{"/rerank", "/v1/rerank", "/v2/rerank"} {
		code, out := post(t, s.URL+path, `{"query":"red apple","documents":["sky","red","red apple"]}`)
		require.Equal(t, http.StatusOK, code, out)
		var resp servetest.RerankResponse
		require.NoError(t, json.Unmarshal([]byte(out), &resp))
		require.Len(t, resp.Results, 3, "top_n 0 keeps every document")
		assert.Equal(t, []int{2, 1, 0}, []int{resp.Results[0].Index, resp.Results[1].Index, resp.Results[2].Index}, path)
		assert.Equal(t, "red apple", resp.Results[0].Document.Text)
	}
	code, _ = post(t, s.URL+"/rerank", `{"model":"other","query":"q","documents":["d"]}`)
	assert.Equal(t, http.StatusNotFound, code)

	// TEI's /rerank and /embed.
	code, out = post(t, s.URL+"/rerank", `{"query":"red apple","texts":["sky","red apple"],"return_text":true}`)
	require.Equal(t, http.StatusOK, code, out)
	var ranks []servetest.TEIRank
	require.NoError(t, json.Unmarshal([]byte(out), &ranks))
	require.Len(t, ranks, 2)
	assert.Equal(t, 1, ranks[0].Index)
	assert.Equal(t, 1.0, ranks[0].Score)
	require.NotNil(t, ranks[0].Text)
	assert.Equal(t, "red apple", *ranks[0].Text)
	code, out = post(t, s.URL+"/embed", `{"inputs":["a","a b"]}`)
	require.Equal(t, http.StatusOK, code, out)
	var vectors [][]float32
	require.NoError(t, json.Unmarshal([]byte(out), &vectors))
	require.Len(t, vectors, 2)
	assert.Len(t, vectors[0], 16)
	code, _ = post(t, s.URL+"/embed", `{"inputs":[]}`)
	assert.Equal(t, http.StatusUnprocessableEntity, code)
}

func TestMetrics(t *testing.T) {
	s := servetest.New("qwen")
	t.Cleanup(s.Close)
	c, err := inference.NewClient(s.URL, inference.ServedModel("qwen"))
	require.NoError(t, err)
	_, err = c.Chat(t.Context(), inference.UserMessage("one two three"))
	require.NoError(t, err)
	s.Queue(7)
	code, body := get(t, s.URL+"/metrics")
	require.Equal(t, http.StatusOK, code)
	for _, line := range []string{
		`vllm:num_requests_waiting{model_name="qwen"} 7`,
		`vllm:num_requests_running{model_name="qwen"} 0`,
		`vllm:prompt_tokens_total{model_name="qwen"} 3`,
		`vllm:generation_tokens_total{model_name="qwen"} 4`,
		`vllm:request_success_total{finished_reason="stop",model_name="qwen"} 1`,
	} {
		assert.Contains(t, body, line+"\n")
	}
	assert.Empty(t, s.Requests()[1:], "scrapes are not recorded") // only the chat
}

func TestToolCalls(t *testing.T) {
	s := servetest.New("qwen", servetest.ToolCalls(func(prompt string, tools []openai.Tool) []openai.ToolCall {
		if !strings.Contains(prompt, "weather") {
			return nil
		}
		return []openai.ToolCall{{Function: openai.FunctionCall{Name: tools[0].Function.Name, Arguments: `{"city":"Paris"}`}}}
	}))
	t.Cleanup(s.Close)
	c, err := inference.NewClient(s.URL, inference.ServedModel("qwen"))
	require.NoError(t, err)
	tools := []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "get_weather"}}}
	req := func(prompt string, stream bool) openai.ChatCompletionRequest {
		return openai.ChatCompletionRequest{Model: "qwen", Tools: tools, Stream: stream,
			Messages: []openai.ChatCompletionMessage{inference.UserMessage(prompt)}}
	}

	resp, err := c.CreateChatCompletion(t.Context(), req("weather in Paris?", false))
	require.NoError(t, err)
	assert.Equal(t, openai.FinishReasonToolCalls, resp.Choices[0].FinishReason)
	require.Len(t, resp.Choices[0].Message.ToolCalls, 1)
	call := resp.Choices[0].Message.ToolCalls[0]
	assert.Equal(t, "get_weather", call.Function.Name)
	assert.Equal(t, `{"city":"Paris"}`, call.Function.Arguments)
	assert.Equal(t, openai.ToolTypeFunction, call.Type)
	assert.NotEmpty(t, call.ID)
	assert.Empty(t, resp.Choices[0].Message.Content)

	resp, err = c.CreateChatCompletion(t.Context(), req("hello", false))
	require.NoError(t, err)
	assert.Equal(t, "servetest: hello", resp.Choices[0].Message.Content, "no call: a text answer")
	assert.Empty(t, resp.Choices[0].Message.ToolCalls)

	stream, err := c.CreateChatCompletionStream(t.Context(), req("weather?", true))
	require.NoError(t, err)
	defer stream.Close()
	var streamed []openai.ToolCall
	var finish openai.FinishReason
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		streamed = append(streamed, chunk.Choices[0].Delta.ToolCalls...)
		if chunk.Choices[0].FinishReason != "" {
			finish = chunk.Choices[0].FinishReason
		}
	}
	require.Len(t, streamed, 1)
	require.NotNil(t, streamed[0].Index)
	assert.Equal(t, 0, *streamed[0].Index)
	assert.Equal(t, "get_weather", streamed[0].Function.Name)
	assert.Equal(t, openai.FinishReasonToolCalls, finish)
}
