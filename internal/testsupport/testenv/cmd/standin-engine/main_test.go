package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/inference"
)

// The stand-in answers cube's own inference.Client the way an OpenAI-compatible
// engine does, with servetest's API: models, chat (plain and streamed),
// completions, embeddings, vLLM's metric names, and the API key from the
// environment variable the engine reads.
func TestStandinAnswersServeClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	t.Setenv("STANDIN_TEST_API_KEY", "sk-standin")
	go func() {
		_ = serveAPI([]string{"standin/echo", "--port", itoa(port), "--host", "127.0.0.1", "--tensor-parallel-size", "2", "--enforce-eager"}, "STANDIN_TEST_API_KEY")
	}()
	base := "http://127.0.0.1:" + itoa(port)
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond)

	anonymous, err := inference.NewClient(base, inference.ServedModel("standin/echo"))
	require.NoError(t, err)
	_, err = anonymous.Chat(t.Context(), inference.UserMessage("x"))
	require.Error(t, err, "the key from the environment is required")
	assert.Contains(t, err.Error(), "401")

	c, err := inference.NewClient(base, inference.APIKey("sk-standin"))
	require.NoError(t, err)
	ctx := t.Context()
	// No model named: the client asks /v1/models which one is served.
	resp, err := c.Chat(ctx, inference.UserMessage("hello there"))
	require.NoError(t, err)
	assert.Equal(t, "standin/echo", resp.Model)
	require.Len(t, resp.Choices, 1)
	assert.Equal(t, "standin: hello there", resp.Choices[0].Message.Content)
	assert.Equal(t, 2, resp.Usage.PromptTokens)

	stream, err := c.ChatStream(ctx, inference.UserMessage("one two three"))
	require.NoError(t, err)
	var text strings.Builder
	for {
		chunk, err := stream.Recv()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		for _, ch := range chunk.Choices {
			text.WriteString(ch.Delta.Content)
		}
	}
	stream.Close()
	assert.Equal(t, "standin: one two three", text.String())

	completion, err := c.Complete(ctx, "say")
	require.NoError(t, err)
	assert.Equal(t, "standin: say", completion.Choices[0].Text)

	vectors, err := c.Embed(ctx, "red apple", "red apple", "blue sky")
	require.NoError(t, err)
	require.Len(t, vectors, 3)
	assert.Equal(t, vectors[0], vectors[1], "deterministic")
	assert.NotEqual(t, vectors[0], vectors[2])
	assert.Len(t, vectors[0], 16)

	_, err = c.Chat(context.Background(), inference.UserMessage("x"))
	require.NoError(t, err)
	metrics, err := http.Get(base + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(metrics.Body)
	metrics.Body.Close()
	assert.Contains(t, string(body), `vllm:num_requests_waiting{model_name="standin/echo"} 0`)
	assert.Contains(t, string(body), `vllm:request_success_total{finished_reason="stop",model_name="standin/echo"} 5`)

	other, err := inference.NewClient(base, inference.ServedModel("not-served"), inference.APIKey("sk-standin"))
	require.NoError(t, err)
	_, err = other.Chat(ctx, inference.UserMessage("x"))
	require.Error(t, err, "a model the engine does not serve is refused")
	assert.Contains(t, err.Error(), "does not exist")
}

func itoa(n int) string { return strconv.Itoa(n) }
