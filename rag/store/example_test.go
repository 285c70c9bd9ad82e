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

// Apply writes records and deletions as one batch: visible at once, and
// after a crash there whole or not at all. Stats and SearchExact are on
// the Store interface.
func ExampleLocal_Apply() {
	dir, err := os.MkdirTemp("", "store-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	local, err := store.Open(dir, store.Keyword(store.KeywordFields{Title: 2}))
	if err != nil {
		fmt.Println(err)
		return
	}
	var s store.Store = local
	defer s.Close()
	_ = s.Upsert(ctx, store.Record{Chunk: store.Chunk{ID: "old", Source: "quotas.md", Text: "GPU quota"}, Vector: []float32{1, 0}})
	err = s.Apply(ctx, store.Batch{
		Upsert: []store.Record{
			{Chunk: store.Chunk{ID: "q1", Source: "quotas.md", Title: "Quotas", Text: "GPU quota per team"}, Vector: []float32{1, 0}},
			{Chunk: store.Chunk{ID: "h1", Source: "holidays.md", Title: "Holidays", Text: "the calendar"}, Vector: []float32{0, 1}},
		},
		Delete: []string{"old"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	st, _ := s.Stats(ctx)
	fmt.Println(st.Chunks, st.Sources, st.Dimensions, st.Index)
	exact, _ := s.SearchExact(ctx, []float32{0.2, 1}, 1, nil)
	kw, _ := s.SearchKeyword(ctx, "holidays", 1, nil) // found by its title
	fmt.Println(exact[0].Chunk.ID, kw[0].Chunk.ID)
	// Output:
	// 2 2 2 Exact
	// h1 h1
}
