package rag

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"strconv"

	"github.com/cubestudio/cube/rag/embed"
	"github.com/cubestudio/cube/rag/load"
)

// Document is text a loader of package rag/load read from one source, with
// where it came from; see load.Document.
type Document = load.Document

// Chunk is a piece of a Document that is embedded, stored and retrieved.
type Chunk struct {
	// ID is derived from the source and the text (see ChunkID): the same
	// text from the same source always gets the same ID, so re-ingesting
	// unchanged text rewrites nothing.
	ID     string
	Source string
	Title  string
	// Section is the path of Markdown headings above the chunk,
	// "Install > Debian"; "" outside Markdown.
	Section string
	Page    int
	// Start and End are the chunk's byte offsets in the source (see
	// Document.Offset): Text == source[Start:End] for stored-text formats.
	Start, End int
	Text       string
	Metadata   map[string]string
}

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

// clone returns a copy of c that shares no map with it.
func (c Chunk) clone() Chunk {
	c.Metadata = maps.Clone(c.Metadata)
	return c
}

// Embedder turns texts into vectors; see embed.Embedder. Package rag/embed
// holds cube's embedders.
type Embedder = embed.Embedder
