// Package embed turns texts into vectors for package rag. Embedder is what
// a knowledge base needs (rag.Embedder is the same interface).
//
// No neural model can be downloaded where cube is tested, so the embedded
// default is FeatureHasher (HashedFeatures), a lexical embedder named for
// what it is: hashed word and character-trigram features (English stop
// words weighed a tenth), unit length, of 1 to 65,536 dimensions. It finds
// shared words and word parts, not synonyms.
//
// OpenAI (NewOpenAI) reaches any OpenAI-compatible /embeddings endpoint
// (vLLM's embedding task, text-embeddings-inference, Ollama) through an
// inference.Client, in batches, with bounded parallelism, retries by a
// retry.Policy on 429, 5xx and lost connections, and a Cache keyed by model
// and content hash.
//
//	c, err := inference.NewClient("http://bge-m3.team-a:8080")
//	e := embed.NewOpenAI(c, "BAAI/bge-m3").Retry(retry.Policy{Limit: 5, Backoff: time.Second, Factor: 2})
//	kb := rag.New("handbook", store, e)
package embed
