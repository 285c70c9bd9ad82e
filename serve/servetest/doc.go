// Package servetest is an OpenAI-compatible server for tests: it answers
// the routes a vLLM engine serves, in process, so that code that talks to
// a model (through package inference, go-openai or plain HTTP) can be
// tested without a GPU.
//
//	s := servetest.New("qwen-chat",
//		servetest.Answer(func(prompt string) string { return "Paris" }),
//		servetest.APIKey("sk-test"))
//	defer s.Close()
//	c, err := inference.NewClient(s.URL, inference.APIKey("sk-test"))
//	resp, err := c.Chat(ctx, inference.UserMessage("Capital of France?"))
//	// resp.Choices[0].Message.Content == "Paris"; s.Requests() holds the request.
//
// # Routes
//
//   - GET /v1/models lists the one model; a request that names another
//     model gets 404, as from vLLM.
//   - POST /v1/chat/completions answers with Answer(last user message),
//     streamed as server-sent events when "stream" is true, in vLLM's
//     order: a role chunk, content chunks, a chunk with the finish reason,
//     the usage chunk when stream_options.include_usage asks for it, then
//     "data: [DONE]". With ToolCalls, a request that offers tools can be
//     answered with tool calls instead of text.
//   - POST /v1/completions answers a string prompt with Answer(prompt).
//   - POST /v1/embeddings returns Embed(input) for each input.
//   - POST /score and /v1/score, /rerank, /v1/rerank and /v2/rerank answer
//     as vLLM's pooling routes do (vllm/entrypoints/pooling/score), with
//     Score(query, document).
//   - POST /embed and /rerank with "texts" answer as Text Embeddings
//     Inference does (router/src/http/types.rs at v1.9.3), the engine
//     serve.TEI runs.
//   - GET /health answers 200; GET /metrics writes Prometheus text with
//     vLLM's metric names, among them vllm:num_requests_waiting, the one
//     serve's autoscaling reads (set it with Handler.Queue).
//
// Answers are deterministic: the defaults echo the prompt, embed a hashed
// bag of words and score by shared words, so a test can assert on them.
//
// # Checking and breaking
//
// Requests returns every request received (path, model, prompt, body,
// whether it carried the key, the status answered). APIKey requires a
// bearer token on every route but /health and /metrics. Inject makes the
// server fail: a status (429, 503, …, with Retry-After), a delay, or both,
// for some requests of a path:
//
//	f := &servetest.Failure{Path: "/v1/chat", Status: 503, Times: 2}
//	s.Inject(f)
//	// the next two chats get 503; f.Hits() counts them
//
// NewHandler returns the same API as an http.Handler for a server of one's
// own; cube's test cluster runs it in its stand-in engine image, so the
// objects serve renders are probed by the same code.
package servetest
