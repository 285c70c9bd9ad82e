package load

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/cubestudio/cube/rag/internal/markdown"
)

// MaxFileSize bounds what one loader call reads (64 MiB): a larger input is
// an error rather than an unbounded allocation.
const MaxFileSize = 64 << 20

// ErrTooLarge is returned (wrapped) for an input over MaxFileSize.
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

// Text reads UTF-8 plain text as one Document. Invalid UTF-8 is an
// error: a binary file read as text would fill the index with noise.
func Text(source string, r io.Reader) ([]Document, error) {
	b, err := readText("text", source, r)
	if err != nil {
		return nil, err
	}
	return []Document{{Source: source, Text: string(b), Metadata: meta("text")}}, nil
}

// Markdown reads a Markdown file as one Document whose Title is its
// first heading. The text stays Markdown: MarkdownSplitter uses the headings
// to give each chunk its section path. Finding the headings takes time
// linear in the file: block quotes and lists nest at most 32 deep (a
// heading deeper in is text), and a heading's inline markup is parsed for
// its title only within a budget linear in the file (past it, the title is
// the heading as written).
func Markdown(source string, r io.Reader) ([]Document, error) {
	b, err := readText("markdown", source, r)
	if err != nil {
		return nil, err
	}
	title := ""
	if hs := markdown.Headings(b); len(hs) > 0 {
		title = hs[0].Title
	}
	return []Document{{Source: source, Title: title, Text: string(b), Metadata: meta("markdown")}}, nil
}
