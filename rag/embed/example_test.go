package embed_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cubestudio/cube/rag/embed"
	"github.com/cubestudio/cube/retry"
)

func ExampleHashedFeatures() {
	h := embed.HashedFeatures(384)
	vs, err := h.Embed(context.Background(), []string{"GPU quota per team", "the GPU quotas of teams", "holiday calendar"})
	if err != nil {
		fmt.Println(err)
		return
	}
	cos := func(a, b []float32) (s float32) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	fmt.Println(h.Model(), len(vs[0]))
	fmt.Println("related closer than unrelated:", cos(vs[0], vs[1]) > cos(vs[0], vs[2]))
	// Output:
	// hashed-features-v1-384 384
	// related closer than unrelated: true
}

func ExampleOpenAI_Retry() {
	// Without a client the embedder reports every problem at once, the
	// retry policy's under its field names.
	_, err := embed.NewOpenAI(nil, "bge-m3").
		Retry(retry.Policy{Limit: -1, Backoff: time.Second, MaxBackoff: time.Millisecond}).
		Embed(context.Background(), []string{"x"})
	fmt.Println(err)
	// Output:
	// embed: client: required: a inference.Client for the embedding server
	// retry.limit: -1: must not be negative
	// retry.maxBackoff: 1ms: must not be below backoff (1s)
}
