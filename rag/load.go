package rag

import (
	"archive/zip"
	"bufio"
	"bytes"
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
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
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
// to give each chunk its section path.
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

// markdownHeadings parses src with goldmark (CommonMark: fenced code,
// setext headings and HTML blocks are told apart from headings) and returns
// its headings in order.
func markdownHeadings(src []byte) []heading {
	doc := goldmark.New().Parser().Parse(text.NewReader(src))
	var out []heading
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		h, ok := n.(*ast.Heading)
		if !ok || !entering {
			return ast.WalkContinue, nil
		}
		var title strings.Builder
		collectText(h, src, &title)
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
		out = append(out, heading{level: h.Level, title: strings.TrimSpace(title.String()), start: start, end: end})
		return ast.WalkSkipChildren, nil
	})
	return out
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
// nothing (OCR is not done); encrypted files are an error.
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
	// The PDF library panics on some malformed files; a loader must not.
	defer func() {
		if p := recover(); p != nil {
			docs, err = nil, fmt.Errorf("load pdf %s: malformed PDF: %v", source, p)
		}
	}()
	pr, err := pdf.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("load pdf %s: %w", source, err)
	}
	for i := 1; i <= pr.NumPage(); i++ {
		p := pr.Page(i)
		if p.V.IsNull() {
			continue
		}
		t, err := p.GetPlainText(nil)
		if err != nil {
			return nil, fmt.Errorf("load pdf %s: page %d: %w", source, i, err)
		}
		if strings.TrimSpace(t) == "" {
			continue
		}
		docs = append(docs, Document{Source: source, Title: fmt.Sprintf("%s page %d", path.Base(source), i),
			Text: t, Page: i, Metadata: meta("pdf")})
	}
	return docs, nil
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
// source is the name documents carry.
func LoadFile(name, source string) ([]Document, error) {
	format, ok := formats[strings.ToLower(filepath.Ext(name))]
	if !ok {
		return nil, fmt.Errorf("load %s: unknown extension %q", name, filepath.Ext(name))
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", format, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", format, err)
	}
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
