package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJourneyOffline runs the journey on the embedded defaults.
func TestJourneyOffline(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out, options{question: "What is the default GPU quota of a team, and who can raise it?"}))
	text := out.String()
	t.Log(text)
	assert.Contains(t, text, "ingest (first): 5 sources, 0 unchanged, 11 chunks added, 11 embedded\n")
	assert.Contains(t, text, "ingest (second): 5 sources, 5 unchanged, 0 chunks added, 0 embedded\n")
	assert.Contains(t, text, "stats: platform/handbook holds 5 sources, 11 chunks, embedded with hashed-features-v1-384\n")
	for _, mode := range []string{"keyword:", "vector :", "hybrid :"} {
		assert.Contains(t, text, mode+" runbooks/node-drain.txt")
	}
	assert.Contains(t, text, "A (extractive): The default quota is 8 GPUs per team; a team lead asks the platform group to raise it. [1]")
	assert.Contains(t, text, "  [1] gpu-quotas.md — GPU quotas (bytes 0-")
	assert.Contains(t, text, "after editing serving.md: 4 unchanged, 1 added, 3 deleted\n")
	assert.Contains(t, text, "deleted teams.csv (3 chunks); sources now: gpu-quotas.md runbooks/node-drain.txt runbooks/storage.html serving.md\n")
}

// TestJourneyWithAChatModel gives the journey an OpenAI-compatible
// endpoint: an httptest server following the chat completions API stands
// in for a served model, since none can run here.
func TestJourneyWithAChatModel(t *testing.T) {
	var prompt string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct{ Role, Content string }
		}
		require.NoError(t, json.NewDecoder(r.Body).Decode(&req))
		assert.Equal(t, "qwen-chat", req.Model)
		prompt = req.Messages[len(req.Messages)-1].Content
		_, _ = w.Write([]byte(`{"id":"1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Eight GPUs [1]; a team lead asks the platform group [1]."},"finish_reason":"stop"}]}`))
	}))
	t.Cleanup(srv.Close)
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out, options{chat: srv.URL, model: "qwen-chat", question: "What is the GPU quota?"}))
	assert.Contains(t, out.String(), "A (model): Eight GPUs [1]; a team lead asks the platform group [1].\n  [1] ")
	assert.True(t, strings.HasPrefix(prompt, "Sources:\n\n[1] "), prompt)
}
