// Package split cuts documents into the chunks package rag embeds and
// stores. Recursive cuts at paragraphs, lines, sentences, words and
// characters, in that order, and packs pieces into chunks of a size with
// an overlap;
// Markdown cuts at headings first (goldmark's CommonMark parser, so a "#"
// in a code fence is no heading) and records the heading path as
// store.Chunk.Section; Tokens cuts windows of exactly n tokens of a real BPE
// tokenizer, OpenAI's cl100k_base or o200k_base from package rag/bpe, which
// works offline. A chunk is always its document's bytes between Start and
// End. Chunk IDs are hashes of source, text and the text's occurrence
// number (ChunkID), so unchanged text keeps its ID.
//
//	chunks, err := split.Markdown(split.Recursive(1000, 150)).Split(docs...)
package split
