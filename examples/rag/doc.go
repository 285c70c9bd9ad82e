// Command rag is cube's knowledge-base journey: a team's handbook (the
// small corpus bundled in corpus/: Markdown, plain text, HTML and CSV)
// is loaded, split, embedded and stored in the embedded crash-safe store,
// ingested a second time to show that unchanged files cost nothing,
// searched by keyword, vector and hybrid retrieval, and asked a question
// whose answer cites its sources. Then one file changes and another is
// deleted, and the knowledge base follows.
//
// It needs no network: vectors come from the hashed-feature embedder and
// the answer is extractive. Given an OpenAI-compatible endpoint (a model
// served by serve.VLLM, Ollama's /v1), the answer is written by that model:
//
//	go run ./examples/rag
//	go run ./examples/rag -chat http://localhost:8000 -model qwen-chat
//	go run ./examples/rag -question "How do I drain a GPU node?"
package main
