package load

import (
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/ledongthuc/pdf"
)

// pdfPages lists the pages of the page tree in order, as the reader's
// Page finds them, but in one walk without recursion, visiting at most
// limit nodes (more than the file has objects means the tree leads back to
// itself) at most maxPDFNesting deep.
func pdfPages(pr *pdf.Reader, limit int64) ([]pdf.Page, error) {
	type node struct {
		v     pdf.Value
		depth int
	}
	var pages []pdf.Page
	stack := []node{{pr.Trailer().Key("Root").Key("Pages"), 0}}
	for visited := int64(0); len(stack) > 0; visited++ {
		if visited > limit {
			return nil, errors.New("the page tree has more nodes than the file has objects: it leads back to itself")
		}
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch n.v.Key("Type").Name() {
		case "Page":
			pages = append(pages, pdf.Page{V: n.v})
		case "Pages":
			if n.depth >= maxPDFNesting {
				return nil, fmt.Errorf("the page tree is deeper than %d", maxPDFNesting)
			}
			kids := n.v.Key("Kids")
			for i := kids.Len() - 1; i >= 0; i-- {
				stack = append(stack, node{kids.Index(i), n.depth + 1})
			}
		}
	}
	return pages, nil
}

// checkPDFPage decodes the streams the reader interprets for a page's text
// (its contents, and the ToUnicode CMaps of its fonts) and checks each
// with checkPDFStream; decoded counts the bytes against limit.
func checkPDFPage(p pdf.Page, decoded *int64, limit int64) error {
	var streams []pdf.Value
	var names []string
	switch c := p.V.Key("Contents"); c.Kind() {
	case pdf.Stream:
		streams, names = append(streams, c), append(names, "contents")
	case pdf.Array:
		for i := range c.Len() {
			if s := c.Index(i); s.Kind() == pdf.Stream {
				streams, names = append(streams, s), append(names, fmt.Sprintf("contents %d", i))
			}
		}
	}
	for _, name := range p.Fonts() {
		if cmap := p.Font(name).V.Key("ToUnicode"); cmap.Kind() == pdf.Stream {
			streams, names = append(streams, cmap), append(names, "ToUnicode CMap of font "+name)
		}
	}
	for i, strm := range streams {
		// The reader allocates the PNG predictor's rows before reading.
		filters, params := strm.Key("Filter"), strm.Key("DecodeParms")
		for i := range max(filters.Len(), 1) {
			p := params
			if filters.Kind() == pdf.Array {
				p = params.Index(i)
			}
			if c := p.Key("Columns").Int64(); p.Key("Predictor").Int64() == 12 && c > maxPDFColumns {
				return fmt.Errorf("%s: /Columns %d: rows wider than %d bytes", names[i], c, maxPDFColumns)
			}
		}
		b, _ := io.ReadAll(io.LimitReader(strm.Reader(), limit-*decoded+1))
		if *decoded += int64(len(b)); *decoded > limit {
			return fmt.Errorf("%s: the file's streams decompress to more than %d bytes", names[i], limit)
		}
		if err := checkPDFStream(b); err != nil {
			return fmt.Errorf("%s: %w", names[i], err)
		}
	}
	return nil
}

// pdfGuard is the io.ReaderAt the reader reads the file through. It
// bounds the bytes read, which a loop in the file's objects (a /Parent or
// /Prev leading back, an /Extends cycle) would read without end, and it
// looks at the stack on every read: the reader reads at least every 4 KiB
// it parses, so parsing that recursed too deep is caught before it can
// overflow the stack.
type pdfGuard struct {
	r      io.ReaderAt
	budget int64
	pcs    []uintptr
}

// errPDFGuard is what pdfGuard panics with; PDF recovers it.
type errPDFGuard struct{ msg string }

func (e errPDFGuard) Error() string { return e.msg }

// pdfGuardFrames is how many frames deep the reader may be when it reads:
// its parsing takes two frames per level of nesting, and it reads at most
// 4 KiB between checks.
const pdfGuardFrames = 4*maxPDFNesting + 200

func newPDFGuard(r io.ReaderAt, size int64) *pdfGuard {
	return &pdfGuard{r: r, budget: 64*size + 64<<20, pcs: make([]uintptr, pdfGuardFrames+1)}
}

func (g *pdfGuard) ReadAt(p []byte, off int64) (int, error) {
	if runtime.Callers(0, g.pcs) > pdfGuardFrames {
		panic(errPDFGuard{fmt.Sprintf("objects nest deeper than %d", maxPDFNesting)})
	}
	if g.budget -= int64(len(p)); g.budget < 0 {
		panic(errPDFGuard{"the reader read the file over and over: its objects lead back to each other"})
	}
	return g.r.ReadAt(p, off)
}
