package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Record is a chunk with its vector, as a Store keeps it.
type Record struct {
	Chunk  Chunk
	Vector []float32
}

// Hit is a chunk a search found, with its score: cosine similarity for
// vector search, BM25 for keyword search, the fused RRF score for hybrid
// search, the reranker's score after a rerank.
type Hit struct {
	Chunk Chunk
	Score float64
}

// Store keeps chunks and their vectors and searches them. Local is the
// embedded default; a Milvus store implements the same interface.
type Store interface {
	// Upsert adds records, replacing those with the same chunk ID; when it
	// returns nil the records are durable.
	Upsert(ctx context.Context, records ...Record) error
	// Delete removes the chunks with these IDs; unknown IDs are ignored.
	Delete(ctx context.Context, ids ...string) error
	// List returns the chunks that match f, ordered by source and offset.
	List(ctx context.Context, f Filter) ([]Chunk, error)
	// SearchVector returns the k chunks most similar to vector that match f.
	SearchVector(ctx context.Context, vector []float32, k int, f Filter) ([]Hit, error)
	// SearchKeyword returns the k chunks that match f ranked by BM25 for query.
	SearchKeyword(ctx context.Context, query string, k int, f Filter) ([]Hit, error)
	// Apply writes a batch atomically where the store can: see Batch.
	Apply(ctx context.Context, b Batch) error
	// SearchExact returns the k chunks most similar to vector that match
	// f by comparing with every chunk, without the approximate index: the
	// reference an index's recall is measured against.
	SearchExact(ctx context.Context, vector []float32, k int, f Filter) ([]Hit, error)
	// Stats reports what the store holds and the state of its index.
	Stats(ctx context.Context) (Stats, error)
	// Close releases the store.
	Close() error
}

// Batch is one write of records and deletions. Local applies it
// atomically: after a crash either all of it is there or none, and a
// search sees it whole or not at all; deletions apply after the records.
// A store that cannot (Milvus) says so in its Apply.
type Batch struct {
	Upsert []Record
	Delete []string
}

// Stats is what a store holds and how far its vector index is.
type Stats struct {
	Chunks  int // live chunks
	Sources int // distinct sources among them; -1 when the store cannot count them (Milvus)
	// Dimensions of the vectors; 0 while the store is empty.
	Dimensions int
	// Index is how vector search runs now; Indexed is how many live chunks
	// the approximate index covers (search scans the others exactly).
	Index   IndexState
	Indexed int
	// LogBytes is the size of the store's log on disk; 0 for a remote
	// store.
	LogBytes int64
}

// IndexState says how vector search runs.
type IndexState string

// The index states.
const (
	// IndexExact: no approximate index (the store is below ExactBelow):
	// every search compares with every chunk.
	IndexExact IndexState = "Exact"
	// IndexBuilding: the graph is being built or catching up with recent
	// writes; meanwhile search is exact over what it does not cover.
	IndexBuilding IndexState = "Building"
	// IndexReady: the graph covers every chunk.
	IndexReady IndexState = "Ready"
	// IndexRemote: a server keeps the index (Milvus).
	IndexRemote IndexState = "Remote"
)

// HybridSearcher is a Store that fuses the vector and the keyword ranking
// itself, by unweighted reciprocal rank fusion with rank constant rrfK
// (Milvus's HybridSearch with its RRF ranker). Retrieve uses it for hybrid
// search when both weights are equal and no MinSimilarity is set, and
// fuses the two lists itself otherwise.
type HybridSearcher interface {
	SearchHybrid(ctx context.Context, vector []float32, query string, k int, f Filter, rrfK int) ([]Hit, error)
}

// Filter selects chunks by exact values: the keys "source", "title" and
// "section" match those fields, any other key matches the chunk's
// Metadata. A chunk matches when every key does; the empty filter matches
// every chunk.
type Filter map[string]string

// Validate reports an empty key.
func (f Filter) Validate() error {
	for k := range f {
		if strings.TrimSpace(k) == "" {
			return errors.New("filter: an empty key matches nothing; use \"source\", \"title\", \"section\" or a metadata key")
		}
	}
	return nil
}

// Match reports whether c matches every key of f.
func (f Filter) Match(c *Chunk) bool {
	for k, want := range f {
		var got string
		var ok bool
		switch k {
		case "source":
			got, ok = c.Source, true
		case "title":
			got, ok = c.Title, true
		case "section":
			got, ok = c.Section, true
		default:
			got, ok = c.Metadata[k]
		}
		if !ok || got != want {
			return false
		}
	}
	return true
}

// String renders f in a stable order, for messages.
func (f Filter) String() string {
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, f[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func sortChunks(cs []Chunk) {
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].Source != cs[j].Source {
			return cs[i].Source < cs[j].Source
		}
		if cs[i].Page != cs[j].Page {
			return cs[i].Page < cs[j].Page
		}
		if cs[i].Start != cs[j].Start {
			return cs[i].Start < cs[j].Start
		}
		return cs[i].ID < cs[j].ID
	})
}
