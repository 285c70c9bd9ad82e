package rag

import (
	"context"
	"fmt"
	"testing"

	"github.com/cubestudio/cube/rag/embed"
	"github.com/cubestudio/cube/rag/split"
	"github.com/cubestudio/cube/rag/store"
	"github.com/philippgille/chromem-go"
)

// BenchmarkIngest measures a knowledge base's ingest with the embedder
// stubbed (vectors hashed from text, no network): loading is excluded,
// splitting, diffing, the log write and its fsync are included. The
// baseline does the same splitting and embedding and stores the vectors in
// an in-memory chromem-go collection: no log, no diff, no durability, the
// floor that cube's bookkeeping is measured against.
func BenchmarkIngest(b *testing.B) {
	docs := crashCorpus()[:100]
	for _, sync := range []bool{true, false} {
		b.Run(fmt.Sprint("cube/fsync=", sync), func(b *testing.B) {
			b.ReportAllocs()
			chunks := 0
			for i := 0; i < b.N; i++ {
				var opts []store.LocalOption
				if !sync {
					opts = append(opts, store.NoSync())
				}
				store, err := store.Open(b.TempDir(), opts...)
				if err != nil {
					b.Fatal(err)
				}
				kb := New("b", store, embed.HashedFeatures(384))
				rep, err := kb.Ingest(context.Background(), docs...)
				if err != nil {
					b.Fatal(err)
				}
				chunks += rep.Added
				_ = kb.Close()
			}
			b.ReportMetric(float64(chunks)/b.Elapsed().Seconds(), "chunks/s")
		})
	}
	b.Run("baseline/chromem", func(b *testing.B) {
		b.ReportAllocs()
		ctx := context.Background()
		splitter, embedder := split.Markdown(split.Recursive(1000, 150)), embed.HashedFeatures(384)
		chunks := 0
		for i := 0; i < b.N; i++ {
			cs, err := splitter.Split(docs...)
			if err != nil {
				b.Fatal(err)
			}
			ids, texts := make([]string, len(cs)), make([]string, len(cs))
			for j, c := range cs {
				ids[j], texts[j] = c.ID, c.Text
			}
			vecs, err := embedder.Embed(ctx, texts)
			if err != nil {
				b.Fatal(err)
			}
			col, err := chromem.NewDB().CreateCollection("b", nil, func(context.Context, string) ([]float32, error) {
				return nil, fmt.Errorf("not used: embeddings are given")
			})
			if err != nil {
				b.Fatal(err)
			}
			if err := col.Add(ctx, ids, vecs, nil, texts); err != nil {
				b.Fatal(err)
			}
			chunks += len(cs)
		}
		b.ReportMetric(float64(chunks)/b.Elapsed().Seconds(), "chunks/s")
	})
}
