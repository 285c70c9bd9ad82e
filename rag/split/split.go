package split

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cubestudio/cube/rag/internal/markdown"
	"github.com/cubestudio/cube/rag/load"
	"github.com/cubestudio/cube/rag/store"
)

// Splitter cuts documents into chunks. Split gives every chunk its ID
// (see ChunkID), so the chunks of one source must be split in one call.
type Splitter interface {
	Split(docs ...load.Document) ([]store.Chunk, error)
}

// DefaultSeparators returns where RecursiveSplitter cuts, in order of
// preference: paragraphs, lines, sentences, words, and as a last resort
// anywhere between two characters. Each call returns a new slice.
func DefaultSeparators() []string {
	return []string{"\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " ", ""}
}

// RecursiveSplitter cuts text at the first separator that makes the pieces
// short enough, recursing with the next separator into pieces that are
// still too long, then packs consecutive pieces into chunks of at most Size
// units, each starting with up to Overlap units of the previous one's end.
// A chunk is always a contiguous byte range of its document: Chunk.Text is
// the document's text between Start and End, with surrounding whitespace
// trimmed.
type RecursiveSplitter struct {
	size, overlap int
	separators    []string
	length        func(string) int
	lengthName    string
}

// Recursive returns a splitter making chunks of at most size runes that
// overlap by up to overlap runes.
func Recursive(size, overlap int) *RecursiveSplitter {
	return &RecursiveSplitter{size: size, overlap: overlap, separators: DefaultSeparators(),
		length: utf8.RuneCountInString, lengthName: "runes"}
}

// Separators replaces the separators, in order of preference; "" means
// between any two characters and, when given, should come last.
func (s *RecursiveSplitter) Separators(seps ...string) *RecursiveSplitter {
	if s == nil {
		return nil
	}
	s.separators = append([]string(nil), seps...)
	return s
}

// Length replaces how size and overlap are measured (runes by default),
// for instance a tokenizer's count; a chunk's length is the sum of its
// pieces' lengths.
func (s *RecursiveSplitter) Length(fn func(string) int) *RecursiveSplitter {
	if s == nil {
		return nil
	}
	s.length, s.lengthName = fn, "length"
	return s
}

func (s *RecursiveSplitter) validate() error {
	if s == nil {
		return errors.New("split: nil RecursiveSplitter: use split.Recursive")
	}
	var errs []error
	if s.size <= 0 {
		errs = append(errs, fmt.Errorf("size: %d: must be positive", s.size))
	}
	if s.overlap < 0 || (s.size > 0 && s.overlap >= s.size) {
		errs = append(errs, fmt.Errorf("overlap: %d: must be at least 0 and less than size %d", s.overlap, s.size))
	}
	if len(s.separators) == 0 {
		errs = append(errs, errors.New("separators: at least one is required"))
	}
	if s.length == nil {
		errs = append(errs, errors.New("length: required"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("split: %w", errors.Join(errs...))
	}
	return nil
}

// Split cuts each document and returns its chunks in order.
func (s *RecursiveSplitter) Split(docs ...load.Document) ([]store.Chunk, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	var out []store.Chunk
	for _, d := range docs {
		out = append(out, s.split(d)...)
	}
	assignIDs(out)
	return out, nil
}

type span struct{ start, end, n int }

func (s *RecursiveSplitter) split(d load.Document) []store.Chunk {
	var pieces []span
	s.pieces(d.Text, 0, len(d.Text), 0, &pieces)
	var chunks []store.Chunk
	emit := func(win []span) {
		start, end := win[0].start, win[len(win)-1].end
		for start < end {
			r, w := utf8.DecodeRuneInString(d.Text[start:end])
			if !unicode.IsSpace(r) {
				break
			}
			start += w
		}
		for end > start {
			r, w := utf8.DecodeLastRuneInString(d.Text[start:end])
			if !unicode.IsSpace(r) {
				break
			}
			end -= w
		}
		if start == end {
			return
		}
		chunks = append(chunks, chunkOf(d, start, end))
	}
	var win []span
	winLen := 0
	for _, p := range pieces {
		if winLen+p.n > s.size && len(win) > 0 {
			emit(win)
			keep, kept := 0, 0
			for i := len(win) - 1; i >= 0 && kept+win[i].n <= s.overlap; i-- {
				kept += win[i].n
				keep++
			}
			win = win[len(win)-keep:]
			winLen = kept
			for len(win) > 0 && winLen+p.n > s.size {
				winLen -= win[0].n
				win = win[1:]
			}
		}
		win = append(win, p)
		winLen += p.n
	}
	if len(win) > 0 {
		emit(win)
	}
	return chunks
}

// chunkOf returns the chunk of d's text between byte offsets start and end.
func chunkOf(d load.Document, start, end int) store.Chunk {
	return store.Chunk{
		Source: d.Source, Title: d.Title, Section: d.Section, Page: d.Page,
		Start: d.Offset + start, End: d.Offset + end, Text: d.Text[start:end],
		Metadata: maps.Clone(d.Metadata),
	}
}

// pieces appends to out the spans of text[start:end] cut at separators
// from index sep on, each at most s.size long unless it is one character.
func (s *RecursiveSplitter) pieces(text string, start, end, sep int, out *[]span) {
	n := s.length(text[start:end])
	if n <= s.size || sep >= len(s.separators) {
		if start < end {
			*out = append(*out, span{start, end, n})
		}
		return
	}
	sepText := s.separators[sep]
	if sepText == "" {
		for i := start; i < end; {
			_, w := utf8.DecodeRuneInString(text[i:end])
			*out = append(*out, span{i, i + w, s.length(text[i : i+w])})
			i += w
		}
		return
	}
	if !strings.Contains(text[start:end], sepText) {
		s.pieces(text, start, end, sep+1, out)
		return
	}
	// The separator stays at the end of the piece before it, so pieces
	// concatenate back to the text.
	for i := start; i < end; {
		j := strings.Index(text[i:end], sepText)
		next := end
		if j >= 0 {
			next = i + j + len(sepText)
		}
		s.pieces(text, i, next, sep+1, out)
		i = next
	}
}

// MarkdownSplitter cuts Markdown at its headings (parsed with goldmark, so
// a "#" line inside a code fence is not a heading), gives each chunk the
// path of headings above it as Section ("Install > Debian"), and splits
// each section further with the inner splitter. The heading line stays at
// the start of its section's first chunk. Block quotes and lists nest at
// most 32 deep (a heading deeper in is text), which keeps the parse linear
// in the document's length.
type MarkdownSplitter struct {
	inner *RecursiveSplitter
}

// Markdown returns a header-aware splitter that cuts sections with inner.
func Markdown(inner *RecursiveSplitter) *MarkdownSplitter {
	return &MarkdownSplitter{inner: inner}
}

// Split cuts each document at its headings, then each section with the
// inner splitter.
func (m *MarkdownSplitter) Split(docs ...load.Document) ([]store.Chunk, error) {
	if m == nil {
		return nil, errors.New("split: nil MarkdownSplitter: use split.Markdown")
	}
	if m.inner == nil {
		return nil, errors.New("split: markdown: inner: required, such as split.Recursive(1000, 100)")
	}
	if err := m.inner.validate(); err != nil {
		return nil, err
	}
	var out []store.Chunk
	for _, d := range docs {
		hs := markdown.Headings([]byte(d.Text))
		type frame struct {
			level int
			title string
		}
		var stack []frame
		prev := 0
		section := d.Section
		flush := func(end int) {
			if end <= prev {
				return
			}
			sub := d
			sub.Text = d.Text[prev:end]
			sub.Offset = d.Offset + prev
			sub.Section = section
			out = append(out, m.inner.split(sub)...)
		}
		for _, h := range hs {
			if h.Start < prev {
				continue
			}
			flush(h.Start)
			prev = h.Start
			for len(stack) > 0 && stack[len(stack)-1].level >= h.Level {
				stack = stack[:len(stack)-1]
			}
			stack = append(stack, frame{h.Level, h.Title})
			titles := make([]string, len(stack))
			for i, f := range stack {
				titles[i] = f.title
			}
			section = strings.Join(titles, " > ")
		}
		flush(len(d.Text))
	}
	assignIDs(out)
	return out, nil
}

// Tokenizer cuts text into the byte pieces of its tokens, which concatenate
// back to the text. The rag/bpe package has OpenAI's cl100k_base and
// o200k_base encodings, bundled for offline use.
type Tokenizer interface {
	Tokens(text string) ([]string, error)
}

// TokenSplitter cuts text into windows of at most Size tokens that overlap
// by Overlap tokens, so every chunk fits an embedding model's input limit
// exactly (the limit is in the model's tokens; use the encoding closest to
// the model's). A window boundary that falls inside a UTF-8 character moves
// to the character's start.
type TokenSplitter struct {
	tok           Tokenizer
	size, overlap int
}

// Tokens returns a splitter making chunks of at most size tokens of tok,
// overlapping by overlap tokens.
func Tokens(tok Tokenizer, size, overlap int) *TokenSplitter {
	return &TokenSplitter{tok: tok, size: size, overlap: overlap}
}

// Split cuts each document into token windows.
func (t *TokenSplitter) Split(docs ...load.Document) ([]store.Chunk, error) {
	if t == nil {
		return nil, errors.New("split: nil TokenSplitter: use split.Tokens")
	}
	var errs []error
	if t.tok == nil {
		errs = append(errs, errors.New("tokenizer: required, such as bpe.CL100kBase()"))
	}
	if t.size <= 0 {
		errs = append(errs, fmt.Errorf("size: %d: must be positive", t.size))
	}
	if t.overlap < 0 || (t.size > 0 && t.overlap >= t.size) {
		errs = append(errs, fmt.Errorf("overlap: %d: must be at least 0 and less than size %d", t.overlap, t.size))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("split: tokens: %w", errors.Join(errs...))
	}
	var out []store.Chunk
	for _, d := range docs {
		pieces, err := t.tok.Tokens(d.Text)
		if err != nil {
			return nil, fmt.Errorf("split: tokens: %s: %w", d.Source, err)
		}
		offsets := make([]int, len(pieces)+1)
		for i, p := range pieces {
			if !strings.HasPrefix(d.Text[offsets[i]:], p) {
				return nil, fmt.Errorf("split: tokens: %s: the tokenizer's pieces do not spell the text at byte %d", d.Source, offsets[i])
			}
			offsets[i+1] = offsets[i] + len(p)
		}
		if offsets[len(pieces)] != len(d.Text) {
			return nil, fmt.Errorf("split: tokens: %s: the tokenizer's pieces cover %d of %d bytes", d.Source, offsets[len(pieces)], len(d.Text))
		}
		for i := 0; i < len(pieces); i += t.size - t.overlap {
			j := min(i+t.size, len(pieces))
			start, end := runeStart(d.Text, offsets[i]), runeStart(d.Text, offsets[j])
			if j == len(pieces) {
				end = len(d.Text)
			}
			if strings.TrimSpace(d.Text[start:end]) != "" && start < end {
				out = append(out, chunkOf(d, start, end))
			}
			if j == len(pieces) {
				break
			}
		}
	}
	assignIDs(out)
	return out, nil
}

// runeStart moves byte offset i back to the start of the character it is in.
func runeStart(s string, i int) int {
	for i > 0 && i < len(s) && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// ChunkID returns the ID of the n-th (0-based) chunk with this text in the
// source: the first 32 hex digits of SHA-256 over source, text and n. n
// tells apart identical passages in one source (a repeated footer); it
// counts only chunks with the same text, so inserting text elsewhere in a
// file does not change the IDs of the chunks that stay.
func ChunkID(source, text string, n int) string {
	h := sha256.New()
	h.Write([]byte(source))
	h.Write([]byte{0})
	h.Write([]byte(text))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(n)))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// assignIDs fills in deterministic IDs for chunks in order.
func assignIDs(chunks []store.Chunk) {
	seen := map[[2]string]int{}
	for i := range chunks {
		key := [2]string{chunks[i].Source, chunks[i].Text}
		n := seen[key]
		seen[key] = n + 1
		chunks[i].ID = ChunkID(chunks[i].Source, chunks[i].Text, n)
	}
}
