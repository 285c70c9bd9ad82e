// Package inference is a client for OpenAI-compatible inference servers:
// vLLM, SGLang, Ollama's /v1, TGI's Messages API, MindIE and Text Embeddings
// Inference, whether package serve deployed them or not. It embeds the
// go-openai client, so every call of that library is available; Chat,
// ChatStream, Complete and Embed fill in the served model name.
//
//	c, err := inference.NewClient("http://qwen-chat-api.team-a:8000",
//		inference.APIKeyFromEnv("QWEN_API_KEY"))
//	resp, err := c.Chat(ctx, inference.UserMessage("Hello"))
//
// It needs no Kubernetes client: a knowledge base or a labeling backend
// imports it without the workload builders.
package inference
