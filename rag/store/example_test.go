package store_test

import (
	"context"
	"fmt"
	"os"

	"github.com/cubestudio/cube/rag/store"
)

func ExampleOpen() {
	dir, err := os.MkdirTemp("", "store-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()

	s, err := store.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Upsert returns once the records are in the log and fsynced.
	err = s.Upsert(ctx,
		store.Record{Chunk: store.Chunk{ID: "a", Source: "quotas.md", Text: "GPU quota per team"}, Vector: []float32{1, 0}},
		store.Record{Chunk: store.Chunk{ID: "b", Source: "holidays.md", Text: "holiday calendar"}, Vector: []float32{0, 1}},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = s.Close()

	// The log is replayed on the next Open.
	s, err = store.Open(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	vec, _ := s.SearchVector(ctx, []float32{0.9, 0.1}, 1, nil)
	kw, _ := s.SearchKeyword(ctx, "holiday", 1, nil)
	only, _ := s.List(ctx, store.Filter{"source": "quotas.md"})
	fmt.Println(s.Count(), vec[0].Chunk.ID, kw[0].Chunk.ID, len(only))
	// Output: 2 a b 1
}

func ExampleOpen_options() {
	_, err := store.Open("", store.HNSW(store.HNSWParams{M: 1}), store.ExactBelow(-1))
	fmt.Println(err)
	// Output:
	// open store: dir: required
	// hnsw.M: 1: must be at least 2
	// exactBelow: -1: must not be negative
}
