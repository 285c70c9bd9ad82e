// Package load reads a team's documents into rag.Document values (the same
// type, load.Document): Text, Markdown, HTML (goquery), CSV (one document
// per row), JSONL (one per line), PDF (the text layer, one document per
// page, with github.com/ledongthuc/pdf; scanned pages without text yield
// nothing, there is no OCR) and DOCX (paragraphs of word/document.xml, read
// with archive/zip and encoding/xml because no maintained, freely licensed
// DOCX reader is served as a Go module here). Each keeps the source, title,
// page and byte offsets. Dir walks a tree; File reads regular files only,
// so a named pipe is an error, not a read that never returns.
//
//	docs, err := load.Dir(ctx, "docs/")
//	rep, err := kb.Ingest(ctx, docs...)
//
// Every loader is fuzzed and returns an error, never panics, on malformed
// input, and the PDF and Markdown loaders are bounded on hostile input: a
// PDF is checked before the PDF library reads it (nesting deeper than
// 1,000, object streams inside object streams, counts past what the file
// holds, decompression bombs are errors), and Markdown block quotes and
// lists nest at most 32 deep, so parsing takes time linear in the input.
// Text, Markdown, CSV and JSON lines are streamed, so a file of any size
// loads (a text or Markdown file past MaxFileSize in pieces); HTML, PDF
// and DOCX are parsed whole and refused past MaxFileSize. A JSON line with
// an id ("id", "_id" or "doc_id") is a source of its own,
// "file.jsonl#id".
package load
