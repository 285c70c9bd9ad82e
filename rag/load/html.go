package load

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"golang.org/x/net/html"
)

// blockElements are the HTML elements whose text starts on a new line.
var blockElements = map[string]bool{
	"address": true, "article": true, "aside": true, "blockquote": true, "br": true, "dd": true,
	"div": true, "dl": true, "dt": true, "fieldset": true, "figcaption": true, "figure": true,
	"footer": true, "form": true, "h1": true, "h2": true, "h3": true, "h4": true, "h5": true,
	"h6": true, "header": true, "hr": true, "li": true, "main": true, "nav": true, "ol": true,
	"p": true, "pre": true, "section": true, "table": true, "td": true, "th": true, "tr": true, "ul": true,
}

// HTML parses an HTML page with goquery (golang.org/x/net/html) and
// keeps its visible text, one line per block element, without scripts,
// styles and templates. Title is the <title>, or the first <h1>.
func HTML(source string, r io.Reader) ([]Document, error) {
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
