package rag

import "github.com/cubestudio/cube/rag/store"

// The store's types, under the names a knowledge base's users know them by.
// Package rag/store holds Local, the embedded store, and defines them.
type (
	// Record is a chunk with its vector; see store.Record.
	Record = store.Record
	// Hit is a chunk a search found, with its score; see store.Hit.
	Hit = store.Hit
	// Filter selects chunks by exact values; see store.Filter.
	Filter = store.Filter
	// Store keeps chunks and their vectors and searches them; see
	// store.Store. store.Local is the embedded default; package rag/milvus
	// holds a Milvus store.
	Store = store.Store
	// HybridSearcher is a Store that fuses the vector and the keyword
	// ranking itself; see store.HybridSearcher.
	HybridSearcher = store.HybridSearcher
	// Batch is one write of records and deletions; see store.Batch.
	Batch = store.Batch
	// StoreStats is what a store holds; see store.Stats.
	StoreStats = store.Stats
)
