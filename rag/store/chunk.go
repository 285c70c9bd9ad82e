package store

import "maps"

// Chunk is a piece of a document (rag.Document) that is embedded, stored
// and retrieved.
type Chunk struct {
	// ID is derived from the source and the text (see rag.ChunkID): the same
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
	// rag.Document.Offset): Text == source[Start:End] for stored-text formats.
	Start, End int
	Text       string
	Metadata   map[string]string
}

// clone returns a copy of c that shares no map with it.
func (c Chunk) clone() Chunk {
	c.Metadata = maps.Clone(c.Metadata)
	return c
}

// Equal reports whether a and b have the same fields and metadata; a store
// skips rewriting a chunk equal to the one it holds, and a knowledge base
// re-embeds only chunks that changed.
func (a Chunk) Equal(b Chunk) bool {
	if a.ID != b.ID || a.Source != b.Source || a.Title != b.Title || a.Section != b.Section ||
		a.Page != b.Page || a.Start != b.Start || a.End != b.End || a.Text != b.Text || len(a.Metadata) != len(b.Metadata) {
		return false
	}
	for k, v := range a.Metadata {
		if w, ok := b.Metadata[k]; !ok || w != v {
			return false
		}
	}
	return true
}
