package load

// Document is text a loader read from one source, with where it came from.
// A loader returns one Document per file, or per page (PDF), row (CSV),
// line (JSON lines) or piece of a text or Markdown file larger than
// MaxFileSize.
type Document struct {
	// Source names where the text came from: a path relative to the loaded
	// directory, a URL, or any name the caller gives. Chunks keep it, answers
	// cite it, and a knowledge base replaces or deletes by it.
	Source string
	// Title is the document's title: a Markdown file's first heading, an
	// HTML <title>, a PDF's page label; "" when the format has none.
	Title string
	// Text is the document's text.
	Text string
	// Section is the heading path the text sits under, "Install > Debian";
	// MarkdownSplitter fills it in for each section it splits.
	Section string
	// Page is the 1-based page of a PDF, 0 for formats without pages.
	Page int
	// Offset is the byte offset of Text in the source file for the formats
	// whose Text is a stretch of the file as stored (text and Markdown, read
	// in pieces past MaxFileSize, each with its offset), so that a chunk's
	// Start and End index the file. Where Text is built from what the file
	// holds (HTML, PDF and DOCX text is extracted, a CSV row becomes
	// "column: value" lines, a JSON line's text is a decoded JSON string)
	// Offset is 0 and chunk offsets count in Text; Page (PDF) or
	// Metadata "line" (CSV, JSON lines) says where in the file it is.
	Offset int
	// Metadata holds more facts to filter on (the CSV columns and JSON
	// fields a loader was asked to keep, "format").
	Metadata map[string]string
}
