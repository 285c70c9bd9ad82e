package labeltest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Model is a stand-in OpenAI-compatible server (the shapes of OpenAI's
// /v1/models, /v1/chat/completions and /v1/embeddings, which vLLM and the
// other engines behind inference.Client follow). Answer decides each chat
// answer from the last user message; Embed each input's vector.
type Model struct {
	*httptest.Server
	Name string

	mu      sync.Mutex
	prompts []string
}

// NewModel starts a stand-in model named name. answer may be nil (chat
// answers "{}"); embed may be nil (embeddings are refused with 404).
func NewModel(name string, answer func(prompt string) string, embed func(input string) []float32) *Model {
	m := &Model{Name: name}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []map[string]any{{"id": name, "object": "model", "owned_by": "cube"}}})
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != name {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": "bad request or unknown model", "type": "invalid_request_error"}})
			return
		}
		prompt := ""
		for _, msg := range req.Messages {
			if msg.Role == "user" {
				prompt = msg.Content
			}
		}
		m.mu.Lock()
		m.prompts = append(m.prompts, prompt)
		m.mu.Unlock()
		content := "{}"
		if answer != nil {
			content = answer(prompt)
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": name,
			"choices": []map[string]any{{"index": 0, "message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": len(strings.Fields(prompt)), "completion_tokens": len(strings.Fields(content)), "total_tokens": 0},
		})
	})
	mux.HandleFunc("POST /v1/embeddings", func(w http.ResponseWriter, r *http.Request) {
		if embed == nil {
			http.NotFound(w, r)
			return
		}
		var req struct {
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"message": err.Error()}})
			return
		}
		data := make([]map[string]any, len(req.Input))
		for i, in := range req.Input {
			data[i] = map[string]any{"object": "embedding", "index": i, "embedding": embed(in)}
		}
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "model": name, "data": data})
	})
	m.Server = httptest.NewServer(mux)
	return m
}

// Prompts returns the user prompts received so far.
func (m *Model) Prompts() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.prompts...)
}
