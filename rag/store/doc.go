// Local, opened with Open, is the embedded store of package rag. It keeps every chunk in
// memory and appends every write to one log file of checksummed frames
// (CRC-32C), fsynced before Upsert or Delete returns: a process killed
// mid-ingest loses nothing that was acknowledged. On open the log is
// replayed; a last frame cut short (the write a crash interrupted, never
// acknowledged) is cut off, and only when its bytes are a prefix of a frame
// as appends write them: its length, operation and, when at most three
// bytes are missing, its checksum must agree. Anything else is damage, a
// damaged last frame or a length that runs past the end over more frames
// included: Open returns ErrCorrupt with the frame's offset and truncates
// nothing. The tests flip, cut and delete every byte of a small log and
// check that a cut log keeps every whole frame and anything else is
// refused. Compact rewrites the log beside the old one and renames it
// over. A flock keeps a second process out. The tests kill a re-executed
// child with SIGKILL mid-write, three times over, and find every
// acknowledged record whole.
//
// Vector search is exact below ExactBelow chunks (5,000) and goes through
// an HNSW graph (M 16, efConstruction 100, efSearch 64) above; the graph is
// built on the first search that needs it (or by BuildIndex) and saved
// beside the log, a checked cache that Open reuses while it matches.
// Deleted chunks stay in the graph as routing nodes and never come back
// as hits. Keyword search is BM25 (k1 1.2, b 0.75) over lower-cased
// words, without stemming. A Filter matches source, title, section or
// metadata values exactly; a filtered graph search that finds fewer than k
// matches falls back to an exact scan of the matching chunks.
//
//	s, err := store.Open("/var/lib/kbs/nlp/handbook", store.ExactBelow(10_000))
//	kb := rag.New("handbook", s, embed.HashedFeatures(384))
//
// Chunk, Record, Hit, Filter, Store and HybridSearcher are defined here and
// known in package rag by the same names; package rag/milvus implements
// Store on Milvus.
package store
