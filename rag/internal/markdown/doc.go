// Package markdown finds the headings of Markdown text with goldmark's
// CommonMark parser, in time linear in the text however it nests, for the
// Markdown loader (a document's title) and the Markdown splitter (a chunk's
// section path) of package rag.
package markdown
