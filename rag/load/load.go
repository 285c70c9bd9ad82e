package load

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/cubestudio/cube/rag/internal/markdown"
)

// MaxFileSize bounds what a loader holds of its input at once (64 MiB).
// HTML, PDF and DOCX are parsed whole, so a larger file of those formats
// is an error rather than an unbounded allocation. Text, Markdown, CSV and
// JSON lines are streamed and have no size limit: a text or Markdown file
// larger than MaxFileSize becomes several Documents of at most
// MaxFileSize each, cut at a line end, and only one CSV record or JSON
// line longer than MaxFileSize is an error.
const MaxFileSize = 64 << 20

// ErrTooLarge is returned (wrapped) for an input, record or line over
// MaxFileSize.
var ErrTooLarge = errors.New("input larger than load.MaxFileSize")

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

// pieceSize is the largest Document Text and Markdown make; a variable so
// tests can stream a small file in pieces.
var pieceSize = MaxFileSize

// readPieces reads r in pieces of at most pieceSize bytes, each cut after
// the last line end it holds (Markdown: before the last heading line when
// there is one past its first half, so a section stays whole) and never
// inside a UTF-8 character, and calls fn with each piece and its offset.
func readPieces(r io.Reader, markdownCut bool, fn func(piece []byte, offset int) error) error {
	if r == nil {
		return errors.New("nil reader")
	}
	buf := make([]byte, 0, min(pieceSize, 1<<20))
	offset := 0
	eof := false
	for !eof || len(buf) > 0 {
		for !eof && len(buf) < pieceSize {
			if len(buf) == cap(buf) {
				buf = append(buf, 0)[:len(buf)]
			}
			n, err := r.Read(buf[len(buf):min(cap(buf), pieceSize)])
			buf = buf[:len(buf)+n]
			if err == io.EOF {
				eof = true
			} else if err != nil {
				return err
			}
		}
		cut := len(buf)
		if !eof {
			cut = pieceCut(buf, markdownCut)
		}
		if err := fn(buf[:cut], offset); err != nil {
			return err
		}
		offset += cut
		rest := copy(buf, buf[cut:])
		buf = buf[:rest]
	}
	return nil
}

// pieceCut is where a full piece ends: after a heading's preceding line
// end (Markdown, past the middle), else after the last line end, else at
// the last UTF-8 character start.
func pieceCut(b []byte, markdownCut bool) int {
	if markdownCut {
		if i := bytes.LastIndex(b, []byte("\n#")); i >= len(b)/2 {
			return i + 1
		}
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return i + 1
	}
	i := len(b) - 1
	for i > 0 && !utf8.RuneStart(b[i]) {
		i--
	}
	if i > 0 && !utf8.FullRune(b[i:]) {
		return i
	}
	return len(b)
}

func checkSource(format, source string) error {
	if strings.TrimSpace(source) == "" {
		return fmt.Errorf("load %s: source: required: the name chunks and citations carry", format)
	}
	return nil
}

func meta(format string) map[string]string { return map[string]string{"format": format} }

// Text reads UTF-8 plain text as one Document, or, past MaxFileSize,
// one per piece of at most MaxFileSize cut at a line end, each with its
// Offset. Invalid UTF-8 is an error: a binary file read as text would fill
// the index with noise.
func Text(source string, r io.Reader) ([]Document, error) {
	return readTextual("text", source, r, func(b []byte, offset int) Document {
		return Document{Source: source, Text: string(b), Offset: offset, Metadata: meta("text")}
	})
}

// readTextual streams r in pieces and makes a Document of each.
func readTextual(format, source string, r io.Reader, doc func(b []byte, offset int) Document) ([]Document, error) {
	if err := checkSource(format, source); err != nil {
		return nil, err
	}
	var docs []Document
	err := readPieces(r, format == "markdown", func(b []byte, offset int) error {
		if !utf8.Valid(b) {
			return errors.New("not UTF-8 text")
		}
		docs = append(docs, doc(b, offset))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load %s %s: %w", format, source, err)
	}
	if len(docs) == 0 {
		docs = append(docs, doc(nil, 0))
	}
	return docs, nil
}

// Markdown reads a Markdown file as one Document whose Title is its
// first heading, or, past MaxFileSize, one per piece of at most
// MaxFileSize cut before a heading where one is near the end of the piece
// (else at a line end), each with the file's title and its Offset. The
// text stays Markdown: MarkdownSplitter uses the headings to give each
// chunk its section path. Finding the headings takes time linear in the
// file: block quotes and lists nest at most 32 deep (a heading deeper in
// is text), and a heading's inline markup is parsed for its title only
// within a budget linear in the file (past it, the title is the heading as
// written).
func Markdown(source string, r io.Reader) ([]Document, error) {
	title, first := "", true
	return readTextual("markdown", source, r, func(b []byte, offset int) Document {
		if first {
			if hs := markdown.Headings(b); len(hs) > 0 {
				title = hs[0].Title
			}
			first = false
		}
		return Document{Source: source, Title: title, Text: string(b), Offset: offset, Metadata: meta("markdown")}
	})
}
