package rag

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"

	"github.com/cubestudio/cube/rag/embed"
	"github.com/cubestudio/cube/rag/load"
	"github.com/cubestudio/cube/rag/store"
)

// Document is text a loader of package rag/load read from one source, with
// where it came from; see load.Document.
type Document = load.Document

// Chunk is a piece of a Document that is embedded, stored and retrieved;
// see store.Chunk.
type Chunk = store.Chunk

// ChunkID returns the ID of the n-th (0-based) chunk with this text in the
// source: the first 32 hex digits of SHA-256 over source, text and n. n
// tells apart identical passages in one source (a repeated footer); it
// counts only chunks with the same text, so inserting text elsewhere in a
// file does not change the IDs of the chunks that stay.
func ChunkID(source, text string, n int) string {
	h := sha256.New()
	h.Write([]byte(source))
	h.Write([]byte{0})
	h.Write([]byte(text))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(n)))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// assignIDs fills in deterministic IDs for chunks in order.
func assignIDs(chunks []Chunk) {
	seen := map[[2]string]int{}
	for i := range chunks {
		key := [2]string{chunks[i].Source, chunks[i].Text}
		n := seen[key]
		seen[key] = n + 1
		chunks[i].ID = ChunkID(chunks[i].Source, chunks[i].Text, n)
	}
}

// Embedder turns texts into vectors; see embed.Embedder. Package rag/embed
// holds cube's embedders.
type Embedder = embed.Embedder
