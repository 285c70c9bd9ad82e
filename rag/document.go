package rag

import (
	"github.com/cubestudio/cube/rag/embed"
	"github.com/cubestudio/cube/rag/load"
	"github.com/cubestudio/cube/rag/split"
	"github.com/cubestudio/cube/rag/store"
)

// Document is text a loader of package rag/load read from one source, with
// where it came from; see load.Document.
type Document = load.Document

// Chunk is a piece of a Document that is embedded, stored and retrieved;
// see store.Chunk. Package rag/split cuts documents into chunks.
type Chunk = store.Chunk

// Splitter cuts documents into chunks; see split.Splitter.
type Splitter = split.Splitter

// Embedder turns texts into vectors; see embed.Embedder. Package rag/embed
// holds cube's embedders.
type Embedder = embed.Embedder
