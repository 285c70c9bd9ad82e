// Local, opened with Open, is the embedded store of package rag. It keeps every chunk in
// memory and appends every write to one log file of checksummed frames
// (CRC-32C), fsynced once per write before Upsert, Delete or Apply
// returns: a process killed mid-ingest loses nothing that was
// acknowledged. A write of several records is a batch, its frames
// followed by a commit frame, and replay applies a batch only at its
// commit: after a crash a batch is there whole or not at all, never in
// part (Apply; a knowledge base's Ingest is one batch). On open the log is
// replayed; a torn tail (the write a crash interrupted, never
// acknowledged) is cut off, and only when its bytes are a prefix of what
// an append writes: its length, operation and, when at most three bytes
// are missing, its checksum must agree. Anything else is damage, a
// damaged last frame or a length that runs past the end over more frames
// included: Open returns ErrCorrupt with the frame's offset and truncates
// nothing. The tests flip, cut and delete every byte of a small log and
// check that a cut log keeps every whole write and anything else is
// refused, and kill a re-executed child with SIGKILL at random moments of
// a stream of 1,500-record batches and find each batch whole or absent.
// Compact rewrites the log beside the old one and renames it over. A
// flock keeps a second process out.
//
// Close and BuildIndex also write a checkpoint beside the log: the
// chunks, vectors and keyword index as the log up to its end gives them.
// Open reads it and replays only the log after it (at 100,000 chunks of
// real text: 0.5 to 0.9 s of CPU against 3.1 s in the same run), and uses it only
// while the log still begins with the bytes it was taken from (their
// offset and CRC-32C, checked over the whole prefix, which also finds
// damage there): a checkpoint that is damaged, stale (the log compacted,
// replaced or cut) or for other keyword weights is ignored and the whole
// log replayed. A torn tail after it is cut by the rule above.
//
// Vector search is exact below ExactBelow chunks (5,000). From there a
// background goroutine builds an HNSW graph (M 16, efConstruction 200) on
// every core and inserts new chunks as they arrive; no search waits for
// it: until the graph exists search is exact, and chunks it has not
// reached yet are scanned exactly beside it. While writes follow each
// other closer than 20 ms (a bulk load) the indexer waits, so that it
// does not slow them, and catches up in the pause after them. BuildIndex
// waits for it. Search through the graph uses efSearch 512, which found
// 0.967 and 0.954 of the exact top 10 (two sets of 200 questions) at
// 100,000 chunks of real text (Go's documentation, comments and code,
// embedded with rag/embed's offline default); see HNSWParams and the
// package rag documentation for the measurements. The graph is saved
// beside the log on BuildIndex and Close, a checked cache that Open
// reuses while it matches. Deleted chunks stay in the graph as routing
// nodes and never come back as hits.
// A Filter matches source, title, section or metadata values exactly; a
// filtered graph search that finds fewer than k matches falls back to an
// exact scan of the matching chunks.
//
// Keyword search is BM25 (k1 1.2, b 0.75) over lower-cased words, without
// stemming, through an inverted index: posting lists scored term at a
// time into a dense accumulator, the k best kept in a bounded heap. It
// returns exactly what scoring every chunk and sorting would (a property
// test holds it to that on random corpora). It reads the text and the
// title by default; Keyword (KeywordFields) sets the fields and their
// weights (BM25F). SearchKeywordSources (SourceSearcher) ranks whole
// sources by BM25 from the same index, each source's chunks taken
// together as one document.
//
// Stats reports the chunks, sources, vector dimensions and the index's
// state; SearchExact is the exact scan the graph is measured against.
// Both are on the Store interface.
//
//	s, err := store.Open("/var/lib/kbs/nlp/handbook", store.ExactBelow(10_000))
//	kb := rag.New("handbook", s, embed.HashedFeatures(384))
//
// Chunk, Record, Hit, Filter, Batch, Stats, Store and HybridSearcher are
// defined here and known in package rag by the same names (Stats as
// StoreStats); package rag/milvus implements Store on Milvus.
package store
