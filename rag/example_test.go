package rag_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/cubestudio/cube/rag"
	"github.com/cubestudio/cube/rag/embed"
	"github.com/cubestudio/cube/rag/load"
	"github.com/cubestudio/cube/rag/store"
)

// A knowledge base on the embedded defaults: hashed-feature vectors, BM25,
// the crash-safe local store, extractive answers.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "kb")
	defer os.RemoveAll(dir)

	kb, err := rag.OpenLibrary(dir).Open("platform", "handbook", nil)
	if err != nil {
		log.Fatal(err)
	}
	defer kb.Close()
	docs, _ := load.Markdown("quotas.md", strings.NewReader(
		"# GPU quotas\n\nThe default quota is 8 GPUs per team.\n\n## Raising it\n\nA team lead asks the platform group to raise the GPU quota.\n"))
	rep, _ := kb.Ingest(ctx, docs...)
	fmt.Printf("added %d chunks\n", rep.Added)
	rep, _ = kb.Ingest(ctx, docs...)
	fmt.Printf("again: %d unchanged, %d embedded\n", rep.Unchanged, rep.Embedded)

	a, err := kb.Answer(ctx, "Who asks for a higher GPU quota?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.Text)
	for _, c := range a.Citations {
		fmt.Printf("[%d] %s — %s, bytes %d-%d\n", c.N, c.Source, c.Section, c.Start, c.End)
	}
	// Output:
	// added 2 chunks
	// again: 1 unchanged, 0 embedded
	// A team lead asks the platform group to raise the GPU quota. [1] The default quota is 8 GPUs per team. [2]
	// [1] quotas.md — GPU quotas > Raising it, bytes 53-127
	// [2] quotas.md — GPU quotas, bytes 0-51
}

func ExampleKnowledgeBase_Retrieve() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "store")
	defer os.RemoveAll(dir)
	store, _ := store.Open(dir)
	kb := rag.New("docs", store, embed.HashedFeatures(256))
	defer kb.Close()
	_, _ = kb.Ingest(ctx,
		rag.Document{Source: "drain.txt", Text: "Cordon the node, then drain it so jobs can checkpoint."},
		rag.Document{Source: "serve.txt", Text: "vLLM serves models on port 8000."},
	)
	for _, mode := range []rag.Mode{rag.Keyword, rag.Vector, rag.Hybrid} {
		hits, _ := kb.Retrieve(ctx, "how do I drain a node", mode, rag.TopK(1))
		fmt.Println(mode, hits[0].Chunk.Source)
	}
	_, err := kb.Retrieve(ctx, "x", rag.TopK(0), rag.RRF(-1, 1, 60))
	fmt.Println(err)
	// Output:
	// keyword drain.txt
	// vector drain.txt
	// hybrid drain.txt
	// retrieve: topK: 0: must be positive
	// rrf: weights -1 and 1: must not be negative and not both zero
}

// Ten documents, not ten chunks: a long page's many matching chunks come
// back as one source with its best passages.
func ExampleKnowledgeBase_RetrieveDocuments() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "store")
	defer os.RemoveAll(dir)
	store, _ := store.Open(dir)
	kb := rag.New("docs", store, embed.HashedFeatures(256))
	defer kb.Close()
	page := "# GPU quotas\n\nEach team has a GPU quota.\n\n## Raising the quota\n\nAsk the platform group to raise the GPU quota.\n\n" +
		"## Fractional GPUs\n\nA fractional GPU counts against the quota by its share.\n"
	docs, _ := load.Markdown("quotas.md", strings.NewReader(page))
	_, _ = kb.Ingest(ctx, docs...)
	_, _ = kb.Ingest(ctx, rag.Document{Source: "storage.txt", Text: "Each team has a storage quota of 10 TiB."})

	found, err := kb.RetrieveDocuments(ctx, "raise the GPU quota of a team", rag.TopK(2), rag.Passages(2))
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range found {
		fmt.Printf("%s (%d passages), best: %s\n", d.Source, len(d.Passages), d.Passages[0].Chunk.Section)
	}
	// Output:
	// quotas.md (2 passages), best: GPU quotas > Raising the quota
	// storage.txt (1 passages), best:
}
