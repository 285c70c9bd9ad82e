// Package rag is cube's private knowledge base: it loads a team's
// documents, splits them into chunks, embeds and stores them, retrieves by
// vector, keyword or hybrid search, and answers questions with numbered
// citations that map back to chunks and sources. It runs in-process and
// deploys nothing; the models it calls (embeddings, reranker, chat) are
// served by package serve and reached through serve.Client.
//
//	kb, err := rag.OpenLibrary("/var/lib/kbs").Open("nlp", "handbook", nil)
//	rep, err := kb.IngestDir(ctx, "docs/")           // again: rep.Unchanged, nothing embedded
//	hits, err := kb.Retrieve(ctx, "GPU quota", rag.TopK(5), rag.Where(rag.Filter{"source": "quotas.md"}))
//	kb.Chat(client)                                   // a *serve.Client; without it answers are extractive
//	a, err := kb.Answer(ctx, "Who raises the GPU quota?")
//	// a.Text "... [1]", a.Citations[0].Source, .Section, .Start, .End
//
// # Loading
//
// LoadText, LoadMarkdown, LoadHTML (goquery), LoadCSV (one document per
// row), LoadJSONL (one per line), LoadPDF (the text layer, one document per
// page, with github.com/ledongthuc/pdf; scanned pages without text yield
// nothing, there is no OCR) and LoadDOCX (paragraphs of word/document.xml,
// read with archive/zip and encoding/xml because no maintained,
// freely licensed DOCX reader is served as a Go module here) each keep the
// source, title, page and byte offsets. LoadDir walks a tree. Every loader
// is fuzzed and returns an error, never panics, on malformed input.
//
// # Splitting
//
// Recursive cuts at paragraphs, lines, sentences, words and characters, in
// that order, and packs pieces into chunks of a size with an overlap;
// Markdown cuts at headings first (goldmark's CommonMark parser, so a "#"
// in a code fence is no heading) and records the heading path as
// Chunk.Section; Tokens cuts windows of exactly n tokens of a real BPE
// tokenizer, OpenAI's cl100k_base or o200k_base from package rag/bpe, which
// works offline. A chunk is always its document's bytes between Start and
// End. Chunk IDs are hashes of source, text and the text's occurrence
// number, so unchanged text keeps its ID.
//
// # Embedding
//
// No neural model can be downloaded where cube is tested, so the embedded
// default is FeatureHasher, a lexical embedder named for what it is:
// hashed word and character-trigram features (English stop words weighed a
// tenth), unit length. It finds shared words and word parts, not synonyms.
// OpenAIEmbedder reaches any OpenAI-compatible /embeddings endpoint (vLLM's
// embedding task, text-embeddings-inference, Ollama) through go-openai, in
// batches, with bounded concurrency, retries with doubling backoff on 429,
// 5xx and lost connections, and a cache keyed by model and content hash.
//
// # Storing
//
// Local, opened with Open, is the embedded store. It keeps every chunk in
// memory and appends every write to one log file of checksummed frames
// (CRC-32C), fsynced before Upsert or Delete returns: a process killed
// mid-ingest loses nothing that was acknowledged. On open the log is
// replayed; a frame cut short or failing its checksum at the end of the
// file (the write a crash interrupted) is cut off, damage before the end
// is ErrCorrupt. Compact rewrites the log beside the old one and renames it
// over. A flock keeps a second process out. The tests kill a re-executed
// child with SIGKILL mid-write, three times over, and find every
// acknowledged record whole.
//
// Vector search is exact below ExactBelow chunks (5,000) and goes through
// an HNSW graph (M 16, efConstruction 100, efSearch 64) above; the graph is
// built on the first search that needs it (or by BuildIndex) and saved
// beside the log, a checked cache that Open reuses while it matches. Deleted chunks stay in the graph as routing nodes and never come
// back as hits. Keyword search is BM25 (k1 1.2, b 0.75) over lower-cased
// words, without stemming. A Filter matches source, title, section or
// metadata values exactly; a filtered graph search that finds fewer than k
// matches falls back to an exact scan of the matching chunks.
//
// # Retrieving
//
// Retrieve runs Vector, Keyword or Hybrid (the default) search. Hybrid is
// weighted reciprocal rank fusion: a chunk scores
// wv/(60+rank in the vector list) + wk/(60+rank in the keyword list), with
// wv = wk = 1 unless RRF sets them; each list contributes
// max(4·TopK, 20) candidates. Rerank rescores the fused candidates through
// text-embeddings-inference's /rerank or a Cohere-style /v1/rerank.
// MinScore and MinSimilarity set thresholds, Where a filter.
//
// # Answering
//
// Answer puts the hits into a prompt as numbered sources (SystemPrompt,
// Prompt), asks the chat model through serve.Client, streaming with
// AnswerStream, with History for a conversation, and maps every "[n]" in
// the reply to a Citation of chunk n: its source, section, page and byte
// range. Without a chat model the answer is extractive: the sentence of
// each of the first three hits that shares most words with the question.
//
// # Knowledge bases
//
// A KnowledgeBase re-ingests idempotently: a source whose chunks are all
// stored writes and embeds nothing; a changed source embeds only its new
// chunks and drops the ones that are gone. DeleteSource, Sources and Stats
// manage it; a Library keeps knowledge bases per team on disk and refuses
// to reopen one with a different embedding model.
//
// # Measurements
//
// Retrieval quality, on text nobody on cube wrote: the XZ Utils FAQ
// (public domain) and the zlib FAQ (zlib license) from Debian, bundled in
// testdata/faq. Each answer is a document, each of the 62 questions a
// query, and a question's one relevant document is the answer its authors
// wrote under it (TestRetrievalQualityOnUpstreamFAQs):
//
//	             recall@10  MRR@10
//	BM25           0.726    0.546
//	vector         0.774    0.535   (FeatureHasher, 384 dimensions)
//	hybrid 1:1     0.726    0.590
//	hybrid 1:2     0.742    0.572   (keywords weighed twice)
//
// The stop-word weighting of FeatureHasher was added after a first
// measurement gave vector search 0.677 and hybrid 0.694.
//
// Latency and memory at 100,000 chunks × 384 dimensions
// (BenchmarkSearch100k: exact, HNSW and chromem-go v0.7.0 in one run, one
// core, top 10). The vectors are 1,000 overlapping topics (each coordinate
// the topic's plus noise of twice its spread); the 200 queries are new
// points of the same topics; recall@10 is against the exact top 10. The
// machine was shared with other builds, so p99 mostly measures waiting for
// the CPU and absolute times are pessimistic; the ratios were measured side
// by side:
//
//	                   p50      p99     recall@10
//	exact scan       59.8 ms  796 ms    1.000
//	HNSW ef 64        2.5 ms   76 ms    0.962     41× faster than chromem-go at p50
//	HNSW ef 128       2.3 ms   9.6 ms   0.990
//	HNSW ef 256       5.2 ms   69 ms    0.992
//	chromem-go       101 ms   840 ms    1.000     (exhaustive; our exact scan is 1.7× faster)
//
// The store held 218 MiB of heap for the 100,000 chunks. Ingest with the
// embedder stubbed runs at 132,000 chunks/s without fsync and before the
// graph; building the graph took 334 s on one contended core. The graph is
// saved beside the log by BuildIndex and Close and reused by the next Open
// when it matches the log, so a restart does not pay that again. A knowledge
// base's ingest (split, diff, embed with FeatureHasher, store) runs at
// about 2,200 chunks/s with an fsync per source and 8,200 without
// (BenchmarkIngest).
//
//	go test -run '^$' -bench Search100k -benchtime 200x -cpu 1 -benchmem ./rag/
//
// # Not done
//
// The Milvus store (github.com/milvus-io/milvus/client/v2, tested against a
// gRPC server implementing MilvusService) is not written yet, nor the
// deploy side: an embedding server and a reranker through serve (a
// text-embeddings-inference engine) and Milvus settings from a Secret.
package rag
