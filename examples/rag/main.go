package main

import (
	"context"
	"embed"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/rag"
)

//go:embed corpus
var corpus embed.FS

type options struct {
	chat, model, apiKeyEnv, question string
}

func main() {
	var o options
	flag.StringVar(&o.chat, "chat", "", "an OpenAI-compatible endpoint that writes the answer (extractive without)")
	flag.StringVar(&o.model, "model", "", "the served model name (default: the only one the endpoint lists)")
	flag.StringVar(&o.apiKeyEnv, "api-key-env", "", "environment variable holding the endpoint's API key")
	flag.StringVar(&o.question, "question", "What is the default GPU quota of a team, and who can raise it?", "the question to answer")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, o); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer, o options) error {
	work, err := os.MkdirTemp("", "cube-rag-journey")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	docs := filepath.Join(work, "docs")
	sub, _ := fs.Sub(corpus, "corpus")
	if err := os.CopyFS(docs, sub); err != nil {
		return err
	}

	// 1. A knowledge base of team "platform", on the embedded defaults.
	kb, err := rag.OpenLibrary(filepath.Join(work, "kbs")).Open("platform", "handbook", nil)
	if err != nil {
		return err
	}
	defer kb.Close()
	if o.chat != "" {
		opts := []inference.ClientOption{}
		if o.model != "" {
			opts = append(opts, inference.ServedModel(o.model))
		}
		if o.apiKeyEnv != "" {
			opts = append(opts, inference.APIKeyFromEnv(o.apiKeyEnv))
		}
		client, err := inference.NewClient(o.chat, opts...)
		if err != nil {
			return err
		}
		kb.Chat(client)
	}

	// 2. Ingest, twice: the second run finds every source unchanged.
	for _, pass := range []string{"first", "second"} {
		rep, err := kb.IngestDir(ctx, docs)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "ingest (%s): %d sources, %d unchanged, %d chunks added, %d embedded\n",
			pass, rep.Sources, rep.Unchanged, rep.Added, rep.Embedded)
	}
	st, err := kb.Stats(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "stats: %s holds %d sources, %d chunks, embedded with %s\n", st.Name, st.Sources, st.Chunks, st.Embedder)

	// 3. Retrieve by each mode.
	for _, mode := range []rag.Mode{rag.Keyword, rag.Vector, rag.Hybrid} {
		hits, err := kb.Retrieve(ctx, "drain a node before maintenance", mode, rag.TopK(2))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-7s:", mode)
		for _, h := range hits {
			fmt.Fprintf(out, " %s (%.3f)", h.Chunk.Source, h.Score)
		}
		fmt.Fprintln(out)
	}

	// 4. Answer with citations.
	a, err := kb.Answer(ctx, o.question, rag.TopK(3))
	if err != nil {
		return err
	}
	kind := "model"
	if a.Extractive {
		kind = "extractive"
	}
	fmt.Fprintf(out, "\nQ: %s\nA (%s): %s\n", o.question, kind, a.Text)
	for _, c := range a.Citations {
		where := c.Source
		if c.Section != "" {
			where += " — " + c.Section
		}
		fmt.Fprintf(out, "  [%d] %s (bytes %d-%d)\n", c.N, where, c.Start, c.End)
	}

	// 5. A file changes and another goes away.
	if err := os.WriteFile(filepath.Join(docs, "serving.md"), []byte("# Serving a model\n\nModels are served with SGLang on port 30000.\n"), 0o644); err != nil {
		return err
	}
	rep, err := kb.IngestDir(ctx, docs)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nafter editing serving.md: %d unchanged, %d added, %d deleted\n", rep.Unchanged, rep.Added, rep.Deleted)
	n, err := kb.DeleteSource(ctx, "teams.csv")
	if err != nil {
		return err
	}
	srcs, err := kb.Sources(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "deleted teams.csv (%d chunks); sources now:", n)
	for _, s := range srcs {
		fmt.Fprintf(out, " %s", s.Source)
	}
	fmt.Fprintln(out)
	return nil
}
