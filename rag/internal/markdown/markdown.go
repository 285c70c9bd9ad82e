package markdown

import (
	"bytes"
	"strings"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// Heading is one Markdown heading: its level, its title without inline
// markup, and the byte range [Start, End) of its line (and of a setext
// heading's underline) in the source; Start is -1 for an empty heading.
type Heading struct {
	Level      int
	Title      string
	Start, End int
}

// maxMarkdownNesting is how deep block quotes and list items nest in the
// Markdown that load.Markdown and rag.MarkdownSplitter read: markers past it are text
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

// Headings parses src with goldmark (CommonMark: fenced code,
// setext headings and HTML blocks are told apart from headings) and returns
// its headings in order. Its time grows linearly with src.
func Headings(src []byte) []Heading {
	// The titles are parsed in the document's context, where its link
	// reference definitions are.
	pc := parser.NewContext()
	doc := markdownBlocks.Parse(text.NewReader(src), parser.WithContext(pc))
	budget := titleMarkupBudget + 1024*int64(len(src))
	var out []Heading
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
		out = append(out, Heading{Level: h.Level, Title: headingTitle(h, src, pc, &budget), Start: start, End: end})
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
