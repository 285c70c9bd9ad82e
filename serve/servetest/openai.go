package servetest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

func contextWith(r *http.Request, entry *Request) context.Context {
	return context.WithValue(r.Context(), requestKey{}, entry)
}

// notePrompt records what the request asked, for Requests.
func notePrompt(r *http.Request, prompt string) {
	if e, ok := r.Context().Value(requestKey{}).(*Request); ok {
		e.Prompt = prompt
	}
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return false
	}
	return true
}

func (h *Handler) models(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Object string         `json:"object"`
		Data   []openai.Model `json:"data"`
	}{"list", []openai.Model{{ID: h.model, Object: "model", OwnedBy: h.ownedBy, Root: h.model, CreatedAt: h.created}}})
}

func (h *Handler) chat(w http.ResponseWriter, r *http.Request) {
	var req openai.ChatCompletionRequest
	if !decode(w, r, &req) || !h.checkModel(w, req.Model) {
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "messages: at least one message is required")
		return
	}
	h.running.Add(1)
	defer h.running.Add(-1)
	last, prompt := "", 0
	for _, m := range req.Messages {
		text := m.Content
		for _, part := range m.MultiContent {
			text += part.Text
		}
		prompt += words(text)
		if m.Role == openai.ChatMessageRoleUser {
			last = text
		}
	}
	notePrompt(r, last)
	var calls []openai.ToolCall
	if h.toolCalls != nil && len(req.Tools) > 0 {
		calls = h.toolCalls(last, req.Tools)
		for i := range calls {
			if calls[i].ID == "" {
				calls[i].ID = fmt.Sprintf("chatcmpl-tool-%x", fnv64(fmt.Sprint(i, calls[i].Function.Name, calls[i].Function.Arguments)))
			}
			if calls[i].Type == "" {
				calls[i].Type = openai.ToolTypeFunction
			}
		}
	}
	answer := ""
	finish := openai.FinishReasonStop
	if len(calls) > 0 {
		finish = openai.FinishReasonToolCalls
	} else {
		answer = h.answer(last)
	}
	usage := openai.Usage{PromptTokens: prompt, CompletionTokens: words(answer), TotalTokens: prompt + words(answer)}
	h.promptTokens.Add(int64(usage.PromptTokens))
	h.generatedTokens.Add(int64(usage.CompletionTokens))
	h.succeeded.Add(1)
	id := fmt.Sprintf("chatcmpl-%x", fnv64(answer))
	if !req.Stream {
		writeJSON(w, http.StatusOK, openai.ChatCompletionResponse{
			ID: id, Object: "chat.completion", Created: h.created, Model: h.model,
			Choices: []openai.ChatCompletionChoice{{Index: 0, Message: openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, Content: answer, ToolCalls: calls}, FinishReason: finish}},
			Usage:   usage,
		})
		return
	}
	// As vLLM streams (vllm/entrypoints/openai/chat_completion/serving.py):
	// server-sent events, "data: <chunk>\n\n", the first delta carrying the
	// role, then the content piece by piece, a last chunk with the finish
	// reason, the usage chunk when stream_options.include_usage asks for it,
	// and "data: [DONE]".
	chunk := func(delta openai.ChatCompletionStreamChoiceDelta, finish openai.FinishReason) openai.ChatCompletionStreamResponse {
		return openai.ChatCompletionStreamResponse{ID: id, Object: "chat.completion.chunk", Created: h.created, Model: h.model,
			Choices: []openai.ChatCompletionStreamChoice{{Index: 0, Delta: delta, FinishReason: finish}}}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	send := func(v any) {
		data, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", data)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	send(chunk(openai.ChatCompletionStreamChoiceDelta{Role: openai.ChatMessageRoleAssistant}, ""))
	for _, piece := range strings.SplitAfter(answer, " ") {
		if piece != "" {
			send(chunk(openai.ChatCompletionStreamChoiceDelta{Content: piece}, ""))
		}
	}
	for i, call := range calls {
		call.Index = &i
		send(chunk(openai.ChatCompletionStreamChoiceDelta{ToolCalls: []openai.ToolCall{call}}, ""))
	}
	send(chunk(openai.ChatCompletionStreamChoiceDelta{}, finish))
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
		send(openai.ChatCompletionStreamResponse{ID: id, Object: "chat.completion.chunk", Created: h.created, Model: h.model,
			Choices: []openai.ChatCompletionStreamChoice{}, Usage: &usage})
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

func (h *Handler) completions(w http.ResponseWriter, r *http.Request) {
	var req openai.CompletionRequest
	if !decode(w, r, &req) || !h.checkModel(w, req.Model) {
		return
	}
	prompt, ok := req.Prompt.(string)
	if !ok {
		writeError(w, http.StatusBadRequest, "prompt: servetest answers a prompt that is one string")
		return
	}
	notePrompt(r, prompt)
	h.running.Add(1)
	defer h.running.Add(-1)
	text := h.answer(prompt)
	usage := openai.Usage{PromptTokens: words(prompt), CompletionTokens: words(text), TotalTokens: words(prompt) + words(text)}
	h.promptTokens.Add(int64(usage.PromptTokens))
	h.generatedTokens.Add(int64(usage.CompletionTokens))
	h.succeeded.Add(1)
	writeJSON(w, http.StatusOK, openai.CompletionResponse{
		ID: fmt.Sprintf("cmpl-%x", fnv64(text)), Object: "text_completion", Created: h.created, Model: h.model,
		Choices: []openai.CompletionChoice{{Text: text, FinishReason: "stop"}},
		Usage:   &usage,
	})
}

// inputs reads an input that is one string or a list of strings, the two
// forms OpenAI's embeddings and TEI's /embed take.
func inputs(raw json.RawMessage) ([]string, bool) {
	var list []string
	if err := json.Unmarshal(raw, &list); err == nil {
		return list, len(list) > 0
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		return []string{one}, true
	}
	return nil, false
}

func (h *Handler) embeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if !decode(w, r, &req) || !h.checkModel(w, req.Model) {
		return
	}
	in, ok := inputs(req.Input)
	if !ok {
		writeError(w, http.StatusBadRequest, "input: must be a string or a non-empty list of strings")
		return
	}
	notePrompt(r, strings.Join(in, "\n"))
	resp := openai.EmbeddingResponse{Object: "list", Model: openai.EmbeddingModel(h.model)}
	for i, text := range in {
		resp.Data = append(resp.Data, openai.Embedding{Object: "embedding", Embedding: h.embed(text), Index: i})
		resp.Usage.PromptTokens += words(text)
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	h.promptTokens.Add(int64(resp.Usage.PromptTokens))
	h.succeeded.Add(1)
	writeJSON(w, http.StatusOK, resp)
}

// metrics writes the Prometheus text exposition with vLLM's metric names
// (vllm/v1/metrics/loggers.py): vllm:num_requests_waiting is the one
// serve's autoscaling reads (serve/vllm.go); the others are what a
// dashboard reads beside it.
func (h *Handler) metrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	label := fmt.Sprintf(`{model_name=%q}`, h.model)
	fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running%s %d\n", label, h.running.Load())
	fmt.Fprintf(w, "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting%s %d\n", label, h.waiting.Load())
	fmt.Fprintf(w, "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc%s 0\n", label)
	fmt.Fprintf(w, "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total%s %d\n", label, h.promptTokens.Load())
	fmt.Fprintf(w, "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total%s %d\n", label, h.generatedTokens.Load())
	fmt.Fprintf(w, "# TYPE vllm:request_success_total counter\nvllm:request_success_total{finished_reason=\"stop\",model_name=%q} %d\n", h.model, h.succeeded.Load())
}
