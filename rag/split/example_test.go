package split_test

import (
	"fmt"

	"github.com/cubestudio/cube/rag/bpe"
	"github.com/cubestudio/cube/rag/load"
	"github.com/cubestudio/cube/rag/split"
)

func ExampleRecursive() {
	chunks, _ := split.Recursive(40, 15).Split(load.Document{Source: "a.txt",
		Text: "Pods run on nodes. Nodes have GPUs.\n\nQuotas cap GPUs per team. Slices count as one GPU."})
	for _, c := range chunks {
		fmt.Printf("%d-%d %q\n", c.Start, c.End, c.Text)
	}
	// Output:
	// 0-35 "Pods run on nodes. Nodes have GPUs."
	// 37-62 "Quotas cap GPUs per team."
	// 63-87 "Slices count as one GPU."
}

func ExampleMarkdown() {
	chunks, _ := split.Markdown(split.Recursive(500, 0)).Split(load.Document{Source: "serve.md",
		Text: "# Serving\n\nvLLM on port 8000.\n\n## Canary\n\nTen percent first.\n"})
	for _, c := range chunks {
		fmt.Printf("%s: %q\n", c.Section, c.Text)
	}
	// Output:
	// Serving: "# Serving\n\nvLLM on port 8000."
	// Serving > Canary: "## Canary\n\nTen percent first."
}

func ExampleTokens() {
	chunks, _ := split.Tokens(bpe.CL100kBase(), 8, 2).Split(load.Document{Source: "t.txt",
		Text: "Kubernetes schedules pods onto nodes that have free GPUs."})
	for _, c := range chunks {
		fmt.Printf("%q\n", c.Text)
	}
	// Output:
	// "Kubernetes schedules pods onto nodes that have"
	// " that have free GPUs."
}
