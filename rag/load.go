package rag

import (
	"archive/zip"
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/PuerkitoBio/goquery"
	"github.com/ledongthuc/pdf"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
	"golang.org/x/net/html"
)

// MaxFileSize bounds what one loader call reads (64 MiB): a larger input is
// an error rather than an unbounded allocation.
const MaxFileSize = 64 << 20

// ErrTooLarge is returned (wrapped) for an input over MaxFileSize.
var ErrTooLarge = errors.New("input larger than rag.MaxFileSize")

func readAll(r io.Reader) ([]byte, error) {
	if r == nil {
		return nil, errors.New("nil reader")
	}
	b, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, ErrTooLarge
	}
	return b, nil
}

func checkSource(format, source string) error {
	if strings.TrimSpace(source) == "" {
		return fmt.Errorf("load %s: source: required: the name chunks and citations carry", format)
	}
	return nil
}

func meta(format string) map[string]string { return map[string]string{"format": format} }

// readText reads r as UTF-8 text for the format's loader.
func readText(format, source string, r io.Reader) ([]byte, error) {
	if err := checkSource(format, source); err != nil {
		return nil, err
	}
	b, err := readAll(r)
	if err != nil {
		return nil, fmt.Errorf("load %s %s: %w", format, source, err)
	}
	if !utf8.Valid(b) {
		return nil, fmt.Errorf("load %s %s: not UTF-8 text", format, source)
	}
	return b, nil
}

// LoadText reads UTF-8 plain text as one Document. Invalid UTF-8 is an
// error: a binary file read as text would fill the index with noise.
func LoadText(source string, r io.Reader) ([]Document, error) {
	b, err := readText("text", source, r)
	if err != nil {
		return nil, err
	}
	return []Document{{Source: source, Text: string(b), Metadata: meta("text")}}, nil
}

// LoadMarkdown reads a Markdown file as one Document whose Title is its
// first heading. The text stays Markdown: MarkdownSplitter uses the headings
// to give each chunk its section path. Finding the headings takes time
// linear in the file: block quotes and lists nest at most 32 deep (a
// heading deeper in is text), and a heading's inline markup is parsed for
// its title only within a budget linear in the file (past it, the title is
// the heading as written).
func LoadMarkdown(source string, r io.Reader) ([]Document, error) {
	b, err := readText("markdown", source, r)
	if err != nil {
		return nil, err
	}
	title := ""
	if hs := markdownHeadings(b); len(hs) > 0 {
		title = hs[0].title
	}
	return []Document{{Source: source, Title: title, Text: string(b), Metadata: meta("markdown")}}, nil
}

// heading is one Markdown heading: its level, text and the byte range of
// its line in the source.
type heading struct {
	level      int
	title      string
	start, end int
}

// maxMarkdownNesting is how deep block quotes and list items nest in the
// Markdown the loaders and MarkdownSplitter read: markers past it are text
// of the innermost block, so a heading nested deeper is no heading.
// goldmark revisits every open container on every line and measures each
// line from its start, so unbounded nesting made parsing quadratic (a
// 100 kB line of ">" took 20 s); nothing written for people nests 32 deep.
const maxMarkdownNesting = 32

// titleMarkupBudget bounds the work of parsing the inline markup
// (emphasis, code spans, links) of a document's headings for their titles:
// goldmark's inline parser rescans to the end of the line or paragraph for
// each unclosed link, quadratic in a heading's length, so the squares of
// the lengths of the headings parsed sum to at most this much plus 1,024
// per byte of the document, and a heading past the budget's title is its
// text as written. Real headings are short; a README's first line of badges
// (600 bytes and more) is well within it.
const titleMarkupBudget = 1 << 24

// maxLinkRefLines bounds the paragraphs whose leading link reference
// definitions ("[id]: /url") are read: goldmark removes each definition
// from its paragraph by copying the lines after it, quadratic in a
// paragraph of definitions (1.6 MB of them took minutes). A longer
// paragraph keeps its definitions as text, which matters only when a
// setext underline follows it or a heading links to one of them.
const maxLinkRefLines = 256

// markdownBlocks is goldmark's CommonMark block parser, with block quotes
// and lists bounded to maxMarkdownNesting, link reference definitions to
// maxLinkRefLines, and without inline parsers: finding headings needs only
// the blocks, and titles are parsed apart.
var markdownBlocks = func() parser.Parser {
	blocks := parser.DefaultBlockParsers()
	for i, b := range blocks {
		switch bp := b.Value.(parser.BlockParser); bp {
		case parser.NewBlockquoteParser():
			blocks[i].Value = nestingLimit{BlockParser: bp}
		case parser.NewListParser():
			blocks[i].Value = nestingLimit{BlockParser: bp, list: true}
		}
	}
	return parser.NewParser(parser.WithBlockParsers(blocks...),
		parser.WithParagraphTransformers(util.Prioritized(boundedLinkRefs{}, 100)))
}()

// markdownInline parses a heading's text as one paragraph with goldmark's
// inline parsers; without other block parsers, "1. Intro" stays text.
var markdownInline = parser.NewParser(
	parser.WithBlockParsers(util.Prioritized(parser.NewParagraphParser(), 1000)),
	parser.WithInlineParsers(parser.DefaultInlineParsers()...))

// nestingLimit declines to open a block quote or list inside
// maxMarkdownNesting block quotes and list items; the line's markers are
// then read as text of the innermost block. A list item opens only in a
// list, so bounding lists bounds items.
type nestingLimit struct {
	parser.BlockParser
	list bool
}

func (l nestingLimit) Open(parent ast.Node, reader text.Reader, pc parser.Context) (ast.Node, parser.State) {
	// goldmark asks the list parser for a list in a list when an item ends
	// at the next item's marker; it declines and resets its state, so that
	// call always goes through.
	if _, inList := parent.(*ast.List); !(l.list && inList) && nesting(parent) >= maxMarkdownNesting {
		return nil, parser.NoChildren
	}
	return l.BlockParser.Open(parent, reader, pc)
}

// boundedLinkRefs reads the link reference definitions that begin a
// paragraph of at most maxLinkRefLines lines.
type boundedLinkRefs struct{}

func (boundedLinkRefs) Transform(p *ast.Paragraph, reader text.Reader, pc parser.Context) {
	if p.Lines().Len() <= maxLinkRefLines {
		parser.LinkReferenceParagraphTransformer.Transform(p, reader, pc)
	}
}

// nesting counts the block quotes and list items n is or is in. Walking up
// is cheap: no container opens deeper than maxMarkdownNesting.
func nesting(n ast.Node) int {
	depth := 0
	for ; n != nil; n = n.Parent() {
		switch n.(type) {
		case *ast.Blockquote, *ast.ListItem:
			depth++
		}
	}
	return depth
}

// markdownHeadings parses src with goldmark (CommonMark: fenced code,
// setext headings and HTML blocks are told apart from headings) and returns
// its headings in order. Its time grows linearly with src.
func markdownHeadings(src []byte) []heading {
	// The titles are parsed in the document's context, where its link
	// reference definitions are.
	pc := parser.NewContext()
	doc := markdownBlocks.Parse(text.NewReader(src), parser.WithContext(pc))
	budget := titleMarkupBudget + 1024*int64(len(src))
	var out []heading
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		h, ok := n.(*ast.Heading)
		if !ok || !entering {
			return ast.WalkContinue, nil
		}
		lines := h.Lines()
		start, end := -1, -1
		if lines.Len() > 0 {
			start, end = lines.At(0).Start, lines.At(lines.Len()-1).Stop
		}
		// The heading's line begins at the line start before its text (the
		// "#" marks) and, for setext headings, ends after the underline.
		if start >= 0 {
			for start > 0 && src[start-1] != '\n' {
				start--
			}
			for end < len(src) && src[end] != '\n' {
				end++
			}
			if h.Level <= 2 && end < len(src) {
				// A setext underline is the next line of = or -.
				next := end + 1
				stop := next
				for stop < len(src) && src[stop] != '\n' {
					stop++
				}
				if u := strings.TrimSpace(string(src[next:stop])); u != "" && strings.Trim(u, "=-") == "" && !strings.HasPrefix(strings.TrimSpace(string(src[start:end])), "#") {
					end = stop
				}
			}
		}
		out = append(out, heading{level: h.Level, title: headingTitle(h, src, pc, &budget), start: start, end: end})
		return ast.WalkSkipChildren, nil
	})
	return out
}

// headingTitle is the text of h without its inline markup, or as written
// when parsing the markup would exceed what is left of budget.
func headingTitle(h *ast.Heading, src []byte, pc parser.Context, budget *int64) string {
	var raw []byte
	lines := h.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		raw = append(raw, bytes.TrimSpace(seg.Value(src))...)
		raw = append(raw, '\n')
	}
	raw = bytes.TrimSpace(raw)
	work := int64(len(raw)) * int64(len(raw))
	if work > *budget {
		return strings.Join(strings.Fields(string(raw)), " ")
	}
	*budget -= work
	var title strings.Builder
	collectText(markdownInline.Parse(text.NewReader(raw), parser.WithContext(pc)), raw, &title)
	return strings.TrimSpace(title.String())
}

func collectText(n ast.Node, src []byte, b *strings.Builder) {
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(src))
			if t.SoftLineBreak() || t.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(t.Value)
		default:
			collectText(c, src, b)
		}
	}
}

// blockElements are the HTML elements whose text starts on a new line.
var blockElements = map[string]bool{
	"address": true, "article": true, "aside": true, "blockquote": true, "br": true, "dd": true,
	"div": true, "dl": true, "dt": true, "fieldset": true, "figcaption": true, "figure": true,
	"footer": true, "form": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true,
	"h6": true, "header": true, "hr": true, "li": true, "main": true, "nav": true, "ol": true,
	"p": true, "pre": true, "section": true, "table": true, "td": true, "th": true, "tr": true, "ul": true,
}

// LoadHTML parses an HTML page with goquery (golang.org/x/net/html) and
// keeps its visible text, one line per block element, without scripts,
// styles and templates. Title is the <title>, or the first <h1>.
func LoadHTML(source string, r io.Reader) ([]Document, error) {
	if err := checkSource("html", source); err != nil {
		return nil, err
	}
	b, err := readAll(r)
	if err != nil {
		return nil, fmt.Errorf("load html %s: %w", source, err)
	}
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("load html %s: %w", source, err)
	}
	title := strings.Join(strings.Fields(doc.Find("title").First().Text()), " ")
	doc.Find("script, style, noscript, template, head").Remove()
	if title == "" {
		title = strings.Join(strings.Fields(doc.Find("h1").First().Text()), " ")
	}
	var out strings.Builder
	for _, n := range doc.Nodes {
		htmlText(n, &out)
	}
	lines := strings.Split(out.String(), "\n")
	kept := lines[:0]
	for _, l := range lines {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			kept = append(kept, l)
		}
	}
	return []Document{{Source: source, Title: title, Text: strings.Join(kept, "\n"), Metadata: meta("html")}}, nil
}

func htmlText(n *html.Node, b *strings.Builder) {
	switch n.Type {
	case html.TextNode:
		b.WriteString(n.Data)
		return
	case html.ElementNode:
		if blockElements[n.Data] {
			b.WriteByte('\n')
			defer b.WriteByte('\n')
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		htmlText(c, b)
	}
}

// LoadCSV reads a CSV file with a header row as one Document per record:
// the text is "column: value" lines, Offset the record's byte offset.
// Columns named in metadataColumns are also kept in Metadata, to filter on;
// naming a column the header lacks is an error.
func LoadCSV(source string, r io.Reader, metadataColumns ...string) ([]Document, error) {
	if err := checkSource("csv", source); err != nil {
		return nil, err
	}
	b, err := readAll(r)
	if err != nil {
		return nil, fmt.Errorf("load csv %s: %w", source, err)
	}
	cr := csv.NewReader(bytes.NewReader(b))
	cr.FieldsPerRecord = 0
	header, err := cr.Read()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load csv %s: header: %w", source, err)
	}
	var errs []error
	metaIndex := map[string]int{}
	for _, c := range metadataColumns {
		i := slices.Index(header, c)
		if i < 0 {
			errs = append(errs, fmt.Errorf("metadataColumns: %q is not a column of the header %q", c, header))
			continue
		}
		metaIndex[c] = i
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("load csv %s: %w", source, errors.Join(errs...))
	}
	var docs []Document
	for {
		offset := int(cr.InputOffset())
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("load csv %s: %w", source, err)
		}
		line, _ := cr.FieldPos(0)
		var t strings.Builder
		for i, v := range rec {
			if strings.TrimSpace(v) == "" {
				continue
			}
			fmt.Fprintf(&t, "%s: %s\n", header[i], v)
		}
		m := meta("csv")
		for c, i := range metaIndex {
			m[c] = rec[i]
		}
		m["row"] = strconv.Itoa(len(docs) + 1)
		docs = append(docs, Document{
			Source: source, Title: fmt.Sprintf("%s line %d", path.Base(source), line),
			Text: strings.TrimRight(t.String(), "\n"), Offset: offset, Metadata: m,
		})
	}
	return docs, nil
}

// LoadJSONL reads JSON lines, one object per line, as one Document per
// line. The text is the string field textField ("text" when empty); the
// object's other string, number and boolean fields go to Metadata, and a
// "title" field becomes Title. A line that is not an object, or lacks the
// text field, is an error naming its line.
func LoadJSONL(source string, r io.Reader, textField string) ([]Document, error) {
	if err := checkSource("jsonl", source); err != nil {
		return nil, err
	}
	if textField == "" {
		textField = "text"
	}
	b, err := readAll(r)
	if err != nil {
		return nil, fmt.Errorf("load jsonl %s: %w", source, err)
	}
	var docs []Document
	var errs []error
	offset := 0
	for n, line := range bytes.SplitAfter(b, []byte("\n")) {
		start := offset
		offset += len(line)
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal(line, &obj); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n+1, err))
			continue
		}
		txt, ok := obj[textField].(string)
		if !ok {
			errs = append(errs, fmt.Errorf("line %d: %s: required string field", n+1, textField))
			continue
		}
		m := meta("jsonl")
		for k, v := range obj {
			if k == textField {
				continue
			}
			switch v := v.(type) {
			case string:
				m[k] = v
			case float64:
				m[k] = strconv.FormatFloat(v, 'g', -1, 64)
			case bool:
				m[k] = strconv.FormatBool(v)
			}
		}
		title := m["title"]
		delete(m, "title")
		docs = append(docs, Document{Source: source, Title: title, Text: txt, Offset: start, Metadata: m})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("load jsonl %s: %w", source, errors.Join(errs...))
	}
	return docs, nil
}

// LoadPDF reads the text layer of a PDF with github.com/ledongthuc/pdf, one
// Document per page that has text. Scanned pages without a text layer yield
// nothing (OCR is not done); encrypted files are an error. That library
// trusts the file (it recurses as deep as the file nests and loops as long
// as the file's counts say), so the file is read into memory and checked
// before the library parses it, and each page's content streams before
// the library interprets them: arrays, dictionaries and object definitions
// nested deeper than 1,000, an object stream kept in an object stream,
// counts beyond what the file could hold, an array left open at the end of
// a content stream and streams that decompress to more than 64 MiB and a
// hundred times the file (1 GiB at most) are errors, as are a library
// panic, a page tree that leads back to itself and reading the file over
// and over. A size that does not match what r holds, and a file cut short
// or followed by other data, are errors that say so.
func LoadPDF(source string, r io.ReaderAt, size int64) (docs []Document, err error) {
	if err := checkSource("pdf", source); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("load pdf %s: nil reader", source)
	}
	if size > MaxFileSize {
		return nil, fmt.Errorf("load pdf %s: %w", source, ErrTooLarge)
	}
	if err := checkSize(r, size); err != nil {
		return nil, fmt.Errorf("load pdf %s: %w", source, err)
	}
	data := make([]byte, size)
	if n, err := r.ReadAt(data, 0); n < len(data) {
		return nil, fmt.Errorf("load pdf %s: read %d of %d bytes: %w", source, n, size, cmp.Or(err, io.ErrUnexpectedEOF))
	}
	if err := pdfTrailer(data); err != nil {
		return nil, fmt.Errorf("load pdf %s: %w", source, err)
	}
	if err := checkPDF(data); err != nil {
		return nil, fmt.Errorf("load pdf %s: %w", source, err)
	}
	// The PDF library panics on some malformed files, and pdfGuard panics
	// to stop it; a loader must not.
	defer func() {
		if p := recover(); p != nil {
			docs, err = nil, fmt.Errorf("load pdf %s: malformed PDF: %v", source, p)
		}
	}()
	pr, err := pdf.NewReader(newPDFGuard(bytes.NewReader(data), size), size)
	if err != nil {
		return nil, fmt.Errorf("load pdf %s: %w", source, err)
	}
	pages, err := pdfPages(pr, maxObject(len(data)))
	if err != nil {
		return nil, fmt.Errorf("load pdf %s: %w", source, err)
	}
	var decoded int64
	for i, p := range pages {
		if err := checkPDFPage(p, &decoded, pdfDecodeLimit(len(data))); err != nil {
			return nil, fmt.Errorf("load pdf %s: page %d: %w", source, i+1, err)
		}
		t, err := p.GetPlainText(nil)
		if err != nil {
			return nil, fmt.Errorf("load pdf %s: page %d: %w", source, i+1, err)
		}
		if strings.TrimSpace(t) == "" {
			continue
		}
		docs = append(docs, Document{Source: source, Title: fmt.Sprintf("%s page %d", path.Base(source), i+1),
			Text: t, Page: i + 1, Metadata: meta("pdf")})
	}
	return docs, nil
}

// checkSize checks the size a loader of an io.ReaderAt was given against
// what r holds. The PDF and ZIP readers look for their trailer in the last
// bytes before size: given a size smaller than the file they miss it and
// say "missing %%EOF" or "not a valid zip file", which sends the caller
// looking at the file instead of the size; given one larger, the ZIP
// reader may still find its directory and read a file whose size is wrong.
func checkSize(r io.ReaderAt, size int64) error {
	if size < 0 {
		return fmt.Errorf("size: %d: must not be negative", size)
	}
	var b [1]byte
	if n, _ := r.ReadAt(b[:], size); n > 0 {
		return fmt.Errorf("size: %d is less than the input: there is data at byte %d (give the whole file's size)", size, size)
	}
	if size > 0 {
		if n, _ := r.ReadAt(b[:], size-1); n == 0 {
			return fmt.Errorf("size: %d is more than the input holds", size)
		}
	}
	return nil
}

// LoadDOCX reads the paragraphs of a Word (Office Open XML) document: the
// ZIP container is opened with archive/zip and word/document.xml decoded
// with encoding/xml, since no maintained DOCX reader with a free licence is
// available as a Go module here. Each paragraph becomes a line; the first
// paragraph styled Title or Heading1 becomes Title.
func LoadDOCX(source string, r io.ReaderAt, size int64) ([]Document, error) {
	if err := checkSource("docx", source); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("load docx %s: nil reader", source)
	}
	if size > MaxFileSize {
		return nil, fmt.Errorf("load docx %s: %w", source, ErrTooLarge)
	}
	if err := checkSize(r, size); err != nil {
		return nil, fmt.Errorf("load docx %s: %w", source, err)
	}
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("load docx %s: %w", source, err)
	}
	f, err := zr.Open("word/document.xml")
	if err != nil {
		return nil, fmt.Errorf("load docx %s: no word/document.xml: %w", source, err)
	}
	defer f.Close()
	dec := xml.NewDecoder(io.LimitReader(f, MaxFileSize))
	var paras []string
	var cur strings.Builder
	var style, title string
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("load docx %s: word/document.xml: %w", source, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "t":
				inText = true
			case "tab":
				cur.WriteByte('\t')
			case "br", "cr":
				cur.WriteByte('\n')
			case "pStyle":
				for _, a := range t.Attr {
					if a.Name.Local == "val" {
						style = a.Value
					}
				}
			case "p":
				cur.Reset()
				style = ""
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				p := strings.TrimSpace(cur.String())
				if p != "" {
					paras = append(paras, p)
					if title == "" && (style == "Title" || style == "Heading1") {
						title = p
					}
				}
				cur.Reset()
			}
		case xml.CharData:
			if inText {
				cur.Write(t)
			}
		}
	}
	if len(paras) == 0 {
		return nil, nil
	}
	return []Document{{Source: source, Title: title, Text: strings.Join(paras, "\n"), Metadata: meta("docx")}}, nil
}

// Formats maps the file extensions LoadFile and LoadDir read to the
// format's name.
var formats = map[string]string{
	".txt": "text", ".text": "text", ".md": "markdown", ".markdown": "markdown",
	".html": "html", ".htm": "html", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
	".pdf": "pdf", ".docx": "docx",
}

// LoadFile reads the file at name with the loader its extension selects
// (.txt .text .md .markdown .html .htm .csv .jsonl .ndjson .pdf .docx);
// source is the name documents carry. It reads regular files only (a
// symbolic link is followed): a named pipe, device, socket or directory is
// an error, found without waiting on it, since a pipe with no writer would
// block the read forever and a device need never end. LoadFile takes no
// context because a regular file's read cannot wait on anyone; LoadDir
// checks its context between files.
func LoadFile(name, source string) ([]Document, error) {
	format, ok := formats[strings.ToLower(filepath.Ext(name))]
	if !ok {
		return nil, fmt.Errorf("load %s: unknown extension %q", name, filepath.Ext(name))
	}
	f, st, err := openRegular(name)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", format, err)
	}
	defer f.Close()
	switch format {
	case "text":
		return LoadText(source, bufio.NewReader(f))
	case "markdown":
		return LoadMarkdown(source, bufio.NewReader(f))
	case "html":
		return LoadHTML(source, bufio.NewReader(f))
	case "csv":
		return LoadCSV(source, bufio.NewReader(f))
	case "jsonl":
		return LoadJSONL(source, bufio.NewReader(f), "")
	case "pdf":
		return LoadPDF(source, f, st.Size())
	default:
		return LoadDOCX(source, f, st.Size())
	}
}

// openRegular opens name for reading if it is a regular file. It looks
// before opening and, since the file can change in between, again at what
// it opened, which it opens without blocking on a named pipe.
func openRegular(name string) (*os.File, fs.FileInfo, error) {
	st, err := os.Stat(name)
	if err != nil {
		return nil, nil, err
	}
	if err := regular(name, st); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	if st, err = f.Stat(); err == nil {
		err = regular(name, st)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

func regular(name string, st fs.FileInfo) error {
	m := st.Mode()
	kind := ""
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	default:
		kind = "irregular (" + m.Type().String() + ")"
	}
	return fmt.Errorf("%s: is %s, not a regular file", name, kind)
}

// LoadDir walks the directory tree at root and loads every file with a
// known extension (see LoadFile), skipping hidden files and directories.
// Each document's Source is its slash-separated path relative to root.
// Files are read in lexical order; every file that fails is reported,
// joined, together with the documents of the files that loaded.
func LoadDir(ctx context.Context, root string) ([]Document, error) {
	var names []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			if _, ok := formats[strings.ToLower(filepath.Ext(p))]; ok {
				names = append(names, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load dir %s: %w", root, err)
	}
	sort.Strings(names)
	var docs []Document
	var errs []error
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return docs, err
		}
		rel, err := filepath.Rel(root, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d, err := LoadFile(name, filepath.ToSlash(rel))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		docs = append(docs, d...)
	}
	return docs, errors.Join(errs...)
}
