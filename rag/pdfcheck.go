package rag

import (
	"bytes"
	"compress/zlib"
	"encoding/ascii85"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"strconv"

	"github.com/ledongthuc/pdf"
)

// The PDF reader (github.com/ledongthuc/pdf) trusts the file it reads: it
// parses arrays, dictionaries and object definitions by recursion, so
// deep nesting overflows the stack, which kills the process; it follows
// object streams by recursion, so one stored in itself recurses without
// end; it loops over counts the file states (xref sizes, object stream
// lengths, CMap ranges) and sizes tables by them; and it reads an array
// left open at the end of a content stream forever, appending as it goes.
// LoadPDF therefore checks a file before the reader sees it (checkPDF),
// checks each content stream and ToUnicode CMap before the reader
// interprets it (checkPDFStream), walks the page tree itself, and gives the
// reader the file through pdfGuard, which bounds how much it reads and how
// deep its stack grows.
const (
	// maxPDFNesting bounds how deeply arrays, dictionaries and object
	// definitions nest. Real files nest a handful deep; the reader's
	// recursion stays well inside the stack at this depth.
	maxPDFNesting = 1000
	// maxPDFObjects is the largest object number PDF allows (ISO
	// 32000-1, annex C). The reader sizes its cross-reference table by the
	// object numbers a file states.
	maxPDFObjects = 8_388_607
	// maxPDFCMapCount bounds the counts a ToUnicode CMap gives its
	// ranges and characters (the format allows 100 per block), which the
	// reader loops over.
	maxPDFCMapCount = 1 << 16
	// maxPDFColumns bounds the PNG predictor's row width, which the
	// reader allocates.
	maxPDFColumns = 1 << 20
	// maxPDFDecoded bounds the bytes the streams a file's text comes from
	// decompress to, all together (a zip bomb is a few kilobytes), with
	// pdfDecodeLimit.
	maxPDFDecoded = 16 * MaxFileSize
)

// pdfDecodeLimit is what the streams of a file of size bytes may
// decompress to: 64 MiB and 100 times the file, at most maxPDFDecoded.
// Text compresses tenfold at best; a thousandfold is a bomb.
func pdfDecodeLimit(size int) int64 { return min(maxPDFDecoded, 64<<20+100*int64(size)) }

// pdfScan is the state of one file's check.
type pdfScan struct {
	data    []byte
	xref    map[int64]pdfXref
	decoded int64 // bytes decompressed so far, against pdfDecodeLimit
}

// pdfXref is one cross-reference entry: in the file at offset, or the
// index-th object of object stream stream.
type pdfXref struct {
	inStream bool
	offset   int64
	stream   int64
}

// checkPDF checks the file in data before the reader parses it: each
// cross-reference section reached from startxref, through /Prev, the way
// the reader follows them, states sizes and object numbers under
// maxPDFObjects and no more than the file could hold, with sane field
// widths; no object stream is kept in an object stream; and each object
// stream's objects nest at most maxPDFNesting deep and close every array.
// It also checks that nothing in the file outside streams nests deeper,
// for a clear error; pdfGuard catches what the reader parses anyway. A
// file the reader will refuse on its own (no header, no startxref) passes
// here and fails there.
func checkPDF(data []byte) error {
	s := &pdfScan{data: data, xref: map[int64]pdfXref{}}
	if err := s.nesting(); err != nil {
		return err
	}
	start, ok := pdfStartXref(data)
	if !ok {
		return nil
	}
	if err := s.xrefs(start); err != nil {
		return err
	}
	streams := map[int64]bool{}
	for _, num := range slices.Sorted(maps.Keys(s.xref)) {
		x := s.xref[num]
		if !x.inStream {
			continue
		}
		if in, ok := s.xref[x.stream]; ok && in.inStream {
			return fmt.Errorf("object %d is in object stream %d, which is itself in object stream %d: the reader would recurse without end", num, x.stream, in.stream)
		}
		streams[x.stream] = true
	}
	for _, num := range slices.Sorted(maps.Keys(streams)) {
		if err := s.objectStream(num); err != nil {
			return fmt.Errorf("object stream %d: %w", num, err)
		}
	}
	return nil
}

// nesting checks everything outside stream data, read from the start.
func (s *pdfScan) nesting() error {
	l := &pdfLexer{b: s.data}
	var open []byte
	for {
		t := l.next()
		switch t.kind {
		case tokEOF:
			return nil
		case tokArrayOpen, tokDictOpen:
			open = append(open, t.kind)
			if len(open) > maxPDFNesting {
				return fmt.Errorf("arrays and dictionaries nest deeper than %d at byte %d", maxPDFNesting, t.off)
			}
		case tokArrayClose, tokDictClose:
			if len(open) > 0 && open[len(open)-1]+1 == t.kind {
				open = open[:len(open)-1]
			}
		case tokKeyword:
			if string(t.text) == "stream" {
				// Stream data is not PDF syntax: skip to its end.
				end := bytes.Index(s.data[l.pos:], []byte("endstream"))
				if end < 0 {
					return nil
				}
				l.pos += end + len("endstream")
				open = open[:0]
			}
		}
	}
}

// pdfTrailer says what is wrong with the end of a file that begins as a
// PDF but whose last 100 bytes, where the reader looks, hold no "%%EOF":
// too short to hold one, cut short, or followed by other data. The reader
// says "missing %%EOF" for all three.
func pdfTrailer(data []byte) error {
	if !bytes.HasPrefix(data, []byte("%PDF-")) {
		return nil // the reader refuses the header itself
	}
	if len(data) < 100 {
		return fmt.Errorf("%d bytes is too short for a PDF: the reader looks for the trailer in the last 100 bytes", len(data))
	}
	if bytes.HasSuffix(bytes.TrimRight(data[len(data)-100:], "\r\n\t "), []byte("%%EOF")) {
		return nil
	}
	last := bytes.LastIndex(data, []byte("%%EOF"))
	if last < 0 {
		return errors.New("no %%EOF at its end: the file is cut short (an interrupted copy or download)")
	}
	end := last + len("%%EOF")
	return fmt.Errorf("its last %%%%EOF ends at byte %d, %d bytes before the end: the reader looks for it in the last 100 bytes (data appended after the PDF)", end-1, len(data)-end)
}

// pdfStartXref finds the offset the last "startxref" line gives, where the
// reader finds it: on a line of its own in the last 100 bytes, before
// "%%EOF".
func pdfStartXref(data []byte) (int64, bool) {
	if len(data) < 100 {
		return 0, false
	}
	tail := bytes.TrimRight(data[len(data)-100:], "\r\n\t ")
	if !bytes.HasSuffix(tail, []byte("%%EOF")) {
		return 0, false
	}
	i := len(tail)
	for {
		i = bytes.LastIndex(tail[:i], []byte("startxref"))
		end := i + len("startxref")
		if i <= 0 || end >= len(tail) {
			return 0, false
		}
		if (tail[i-1] == '\n' || tail[i-1] == '\r') && (tail[end] == '\n' || tail[end] == '\r') {
			break
		}
	}
	l := &pdfLexer{b: data, pos: len(data) - 100 + i + len("startxref")}
	t := l.next()
	if t.kind != tokInt || t.num < 0 || t.num >= int64(len(data)) {
		return 0, false
	}
	return t.num, true
}

// maxObject is the highest object number a file of n bytes could hold:
// every object takes more than a couple of bytes.
func maxObject(n int) int64 { return min(maxPDFObjects, int64(n)/2+1024) }

// xrefs reads the cross-reference sections from start through /Prev.
func (s *pdfScan) xrefs(start int64) error {
	seen := map[int64]bool{}
	limit := maxObject(len(s.data))
	for off := start; ; {
		if seen[off] {
			return fmt.Errorf("cross-reference sections at byte %d and after lead back to each other", start)
		}
		seen[off] = true
		l := &pdfLexer{b: s.data, pos: int(off)}
		var trailer pdfDict
		if t := l.next(); t.kind == tokKeyword && string(t.text) == "xref" {
			var err error
			if trailer, err = s.xrefTable(l, limit); err != nil {
				return fmt.Errorf("cross-reference table at byte %d: %w", off, err)
			}
		} else {
			l.pos = int(off)
			v, err := l.object(true, true)
			if err != nil {
				return fmt.Errorf("cross-reference stream at byte %d: %w", off, err)
			}
			def, ok := v.(pdfObjDef)
			if !ok {
				return nil // the reader refuses it
			}
			strm, ok := def.obj.(pdfStream)
			if !ok {
				return nil
			}
			if err := s.xrefStream(strm, limit); err != nil {
				return fmt.Errorf("cross-reference stream at byte %d: %w", off, err)
			}
			trailer = strm.dict
		}
		prev, ok := trailer["Prev"].(int64)
		if !ok {
			return nil
		}
		if prev < 0 || prev >= int64(len(s.data)) {
			return nil // the reader fails reading there
		}
		off = prev
	}
}

func (s *pdfScan) xrefTable(l *pdfLexer, limit int64) (pdfDict, error) {
	for {
		t := l.next()
		if t.kind == tokKeyword && string(t.text) == "trailer" {
			v, err := l.object(true, true)
			if err != nil {
				return nil, err
			}
			d, _ := v.(pdfDict)
			if size, ok := d["Size"].(int64); ok && size > limit {
				return nil, fmt.Errorf("/Size %d: more objects than a file of %d bytes holds", size, len(s.data))
			}
			return d, nil
		}
		n := l.next()
		if t.kind != tokInt || n.kind != tokInt {
			return nil, nil // the reader refuses it
		}
		if t.num < 0 || n.num < 0 || t.num > limit || n.num > limit-t.num {
			return nil, fmt.Errorf("section of %d objects from %d: more objects than a file of %d bytes holds", n.num, t.num, len(s.data))
		}
		for i := int64(0); i < n.num; i++ {
			off, gen, kind := l.next(), l.next(), l.next()
			if off.kind != tokInt || gen.kind != tokInt || kind.kind != tokKeyword {
				return nil, nil
			}
			if _, ok := s.xref[t.num+i]; !ok && string(kind.text) == "n" {
				s.xref[t.num+i] = pdfXref{offset: off.num}
			}
		}
	}
}

func (s *pdfScan) xrefStream(strm pdfStream, limit int64) error {
	d := strm.dict
	size, ok := d["Size"].(int64)
	if !ok {
		return nil // the reader refuses it
	}
	if size < 0 || size > limit {
		return fmt.Errorf("/Size %d: more objects than a file of %d bytes holds", size, len(s.data))
	}
	index := []any{int64(0), size}
	if ix, ok := d["Index"].([]any); ok {
		index = ix
	}
	w, ok := d["W"].([]any)
	if !ok || len(w) < 3 {
		return nil
	}
	var widths []int
	total := 0
	for _, x := range w {
		n, ok := x.(int64)
		if !ok || n < 0 || n > 8 {
			return fmt.Errorf("/W %v: field widths must be 0 to 8 bytes", w)
		}
		widths = append(widths, int(n))
		total += int(n)
	}
	for i := 0; i+1 < len(index); i += 2 {
		start, ok1 := index[i].(int64)
		n, ok2 := index[i+1].(int64)
		if !ok1 || !ok2 || start < 0 || n < 0 || start > limit || n > limit-start {
			return fmt.Errorf("/Index %v: more objects than a file of %d bytes holds", index, len(s.data))
		}
	}
	// The reader resolves /Length, /Filter and /DecodeParms of a
	// cross-reference stream before it has a table to resolve them in: a
	// reference is null.
	direct := func(v any) any {
		if _, ok := v.(pdfRef); ok {
			return nil
		}
		return v
	}
	data, err := s.streamData(strm, direct(d["Length"]), direct(d["Filter"]), direct(d["DecodeParms"]), direct)
	if err != nil || data == nil || total == 0 {
		return err
	}
	field := func(e []byte) int64 {
		var x int64
		for _, c := range e {
			x = x<<8 | int64(c)
		}
		return x
	}
	for i := 0; i+1 < len(index); i += 2 {
		start, n := index[i].(int64), index[i+1].(int64)
		for j := int64(0); j < n; j++ {
			if len(data) < total {
				return nil
			}
			e := data[:total]
			data = data[total:]
			typ := field(e[:widths[0]])
			if widths[0] == 0 {
				typ = 1
			}
			f2, f3 := field(e[widths[0]:widths[0]+widths[1]]), field(e[widths[0]+widths[1]:total])
			if _, ok := s.xref[start+j]; ok {
				continue
			}
			switch typ {
			case 1:
				s.xref[start+j] = pdfXref{offset: f2}
			case 2:
				s.xref[start+j] = pdfXref{inStream: true, stream: f2, offset: f3}
			}
		}
	}
	return nil
}

// objectStream checks the objects of object stream num as the reader
// reads them: a count of pairs (number, offset) after which it looks for
// one, and each object at /First plus its offset.
func (s *pdfScan) objectStream(num int64) error {
	x, ok := s.xref[num]
	if !ok || x.offset <= 0 || x.offset >= int64(len(s.data)) {
		return nil // the reader finds no stream and fails
	}
	l := &pdfLexer{b: s.data, pos: int(x.offset)}
	v, err := l.object(true, true)
	if err != nil {
		return err
	}
	def, ok := v.(pdfObjDef)
	if !ok {
		return nil
	}
	strm, ok := def.obj.(pdfStream)
	if !ok {
		return nil
	}
	d := strm.dict
	n, ok1 := s.resolve(d["N"]).(int64)
	first, ok2 := s.resolve(d["First"]).(int64)
	if !ok1 || !ok2 {
		return errors.New("its /N and /First must be numbers in the file, not missing or in another object stream")
	}
	if n > maxObject(len(s.data)) {
		return fmt.Errorf("/N %d: more objects than a file of %d bytes holds", n, len(s.data))
	}
	for _, key := range []pdfName{"Filter", "DecodeParms"} {
		if s.resolve(d[key]) == errPDFUnresolved {
			return fmt.Errorf("its /%s is in another object stream", key)
		}
	}
	data, err := s.streamData(strm, s.resolve(d["Length"]), s.resolve(d["Filter"]), s.resolve(d["DecodeParms"]), s.resolve)
	if err != nil || data == nil || first <= 0 {
		return err
	}
	// Objects may overlap; bound the parsing to a few passes over the data.
	budget := 4*int64(len(data)) + 1<<20
	head := &pdfLexer{b: data}
	for i := int64(0); i < n; i++ {
		id, off := head.next(), head.next()
		if id.kind == tokEOF {
			return nil
		}
		if off.kind != tokInt || off.num < 0 || off.num >= int64(len(data))-first {
			continue
		}
		ol := &pdfLexer{b: data, pos: int(first + off.num), eofIsEnd: true}
		if _, err := ol.skim(true); err != nil {
			return fmt.Errorf("object at byte %d: %w", first+off.num, err)
		}
		if budget -= int64(ol.pos) - (first + off.num); budget < 0 {
			return errors.New("its objects overlap over and over")
		}
	}
	return nil
}

// errPDFUnresolved is what resolve returns for a reference it cannot
// follow: to an object in an object stream.
var errPDFUnresolved = errors.New("in an object stream")

// resolve follows a reference to an object in the file one step, as the
// reader's Key does; a reference to an object in an object stream gives
// errPDFUnresolved, to no object nil, anything else itself.
func (s *pdfScan) resolve(v any) any {
	ref, ok := v.(pdfRef)
	if !ok {
		return v
	}
	x, ok := s.xref[ref.num]
	if ok && x.inStream {
		return errPDFUnresolved
	}
	if !ok || x.offset <= 0 || x.offset >= int64(len(s.data)) {
		return nil
	}
	l := &pdfLexer{b: s.data, pos: int(x.offset)}
	def, err := l.object(true, true)
	if d, ok := def.(pdfObjDef); ok && err == nil {
		return d.obj
	}
	return nil
}

// streamData returns a stream's data decoded by the filters the reader
// knows (FlateDecode with no predictor or PNG Up, ASCII85Decode), nil for
// others; value resolves what a filter array holds. Without a length, the
// data runs to "endstream". The decoded bytes count against pdfDecodeLimit.
func (s *pdfScan) streamData(strm pdfStream, length, filter, params any, value func(any) any) ([]byte, error) {
	end := int64(len(s.data))
	if n, ok := length.(int64); ok {
		end = int64(strm.data) + min(max(n, 0), end-int64(strm.data))
	} else if i := bytes.Index(s.data[strm.data:], []byte("endstream")); i >= 0 {
		end = int64(strm.data + i)
	}
	var r io.Reader = bytes.NewReader(s.data[strm.data:end])
	names, ps := []any{filter}, []any{params}
	if a, ok := filter.([]any); ok {
		names, ps = a, nil
		if pa, ok := params.([]any); ok {
			ps = pa
		}
	}
	for i, f := range names {
		var p any
		if i < len(ps) {
			p = value(ps[i])
		}
		if f = value(f); f == errPDFUnresolved || p == errPDFUnresolved {
			return nil, errors.New("a filter of it is in an object stream")
		}
		if f == nil {
			continue
		}
		name, _ := f.(pdfName)
		pd, _ := p.(pdfDict)
		var err error
		if r, err = pdfFilter(r, string(name), pd); r == nil || err != nil {
			return nil, err
		}
	}
	limit := pdfDecodeLimit(len(s.data))
	b, err := io.ReadAll(io.LimitReader(r, limit-s.decoded+1))
	s.decoded += int64(len(b))
	if s.decoded > limit {
		return nil, fmt.Errorf("its streams decompress to more than %d bytes", limit)
	}
	if err != nil && len(b) == 0 {
		return nil, nil // the reader fails decoding it
	}
	return b, nil
}

// pdfFilter decodes r as the reader does; nil for a filter it does not
// know or parameters it refuses.
func pdfFilter(r io.Reader, name string, params pdfDict) (io.Reader, error) {
	switch name {
	case "FlateDecode":
		zr, err := zlib.NewReader(r)
		if err != nil {
			return nil, nil
		}
		pred, ok := params["Predictor"]
		if !ok || pred == nil {
			return zr, nil
		}
		if p, _ := pred.(int64); p != 12 {
			return nil, nil
		}
		columns, _ := params["Columns"].(int64)
		if columns < 0 || columns > maxPDFColumns {
			return nil, fmt.Errorf("/Columns %d: rows wider than %d bytes", columns, maxPDFColumns)
		}
		return &pngUp{r: zr, prev: make([]byte, columns+1), row: make([]byte, columns+1)}, nil
	case "ASCII85Decode":
		if len(params) > 0 {
			return nil, nil
		}
		return ascii85.NewDecoder(ascii85Only{r}), nil
	}
	return nil, nil
}

// pngUp undoes the PNG Up predictor, row by row.
type pngUp struct {
	r         io.Reader
	prev, row []byte
	pending   []byte
}

func (p *pngUp) Read(b []byte) (int, error) {
	for len(p.pending) == 0 {
		if _, err := io.ReadFull(p.r, p.row); err != nil {
			return 0, err
		}
		if p.row[0] != 2 {
			return 0, errors.New("not PNG Up")
		}
		for i := range p.row {
			p.prev[i] += p.row[i]
		}
		p.pending = p.prev[1:]
	}
	n := copy(b, p.pending)
	p.pending = p.pending[n:]
	return n, nil
}

// ascii85Only drops what is not an ASCII85 digit, as the reader does.
type ascii85Only struct{ r io.Reader }

func (a ascii85Only) Read(b []byte) (int, error) {
	n, err := a.r.Read(b)
	for i, c := range b[:n] {
		if c < '!' || c > 'u' {
			b[i] = ' '
		}
	}
	return n, err
}

// checkPDFStream checks a content stream or ToUnicode CMap, decoded, as
// the reader interprets it: operands and operators from the start, each
// operand parsed as an object without references. Arrays and
// dictionaries nest at most maxPDFNesting deep, no array is open at the
// end (the reader would read on forever), and in a CMap no count exceeds
// maxPDFCMapCount.
func checkPDFStream(data []byte) error {
	l := &pdfLexer{b: data, eofIsEnd: true}
	cmap := false
	var biggest int64
	for {
		t := l.next()
		switch t.kind {
		case tokEOF:
			if cmap && biggest > maxPDFCMapCount {
				return fmt.Errorf("a CMap count of %d: more than %d", biggest, maxPDFCMapCount)
			}
			return nil
		case tokArrayOpen, tokDictOpen:
			l.pos = t.off
			if _, err := l.skim(false); err != nil {
				return err
			}
		case tokInt:
			biggest = max(biggest, t.num)
		case tokKeyword:
			switch string(t.text) {
			case "begincodespacerange", "beginbfchar", "beginbfrange":
				cmap = true
			}
		}
	}
}

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

// errPDFGuard is what pdfGuard panics with; LoadPDF recovers it.
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

// The lexer follows the reader's (lex.go): the same white space,
// delimiters, comments, strings and keywords, so that it sees the tokens
// the reader will.
type pdfLexer struct {
	b   []byte
	pos int
	// eofIsEnd says the reader reads this data to its end and stops (an
	// object or content stream) rather than failing there (the file).
	eofIsEnd bool
	unread   []pdfTok
}

type pdfTok struct {
	kind byte
	off  int
	text []byte
	num  int64
}

const (
	tokEOF byte = iota
	tokBad
	tokKeyword
	tokInt
	tokReal
	tokName
	tokString
	tokArrayOpen
	tokArrayClose // tokArrayOpen+1
	tokDictOpen
	tokDictClose // tokDictOpen+1
)

func pdfSpace(c byte) bool {
	return c == 0 || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' '
}

func pdfDelim(c byte) bool {
	switch c {
	case '<', '>', '(', ')', '[', ']', '{', '}', '/', '%':
		return true
	}
	return false
}

func (l *pdfLexer) next() pdfTok {
	if n := len(l.unread); n > 0 {
		t := l.unread[n-1]
		l.unread = l.unread[:n-1]
		return t
	}
	for l.pos < len(l.b) {
		if c := l.b[l.pos]; pdfSpace(c) {
			l.pos++
		} else if c == '%' {
			for l.pos < len(l.b) && l.b[l.pos] != '\r' && l.b[l.pos] != '\n' {
				l.pos++
			}
		} else {
			break
		}
	}
	start := l.pos
	if l.pos >= len(l.b) {
		return pdfTok{kind: tokEOF, off: start}
	}
	c := l.b[l.pos]
	l.pos++
	switch c {
	case '<':
		if l.pos < len(l.b) && l.b[l.pos] == '<' {
			l.pos++
			return pdfTok{kind: tokDictOpen, off: start}
		}
		for l.pos < len(l.b) && l.b[l.pos] != '>' {
			l.pos++
		}
		l.pos = min(l.pos+1, len(l.b))
		return pdfTok{kind: tokString, off: start}
	case '>':
		if l.pos < len(l.b) && l.b[l.pos] == '>' {
			l.pos++
			return pdfTok{kind: tokDictClose, off: start}
		}
		return pdfTok{kind: tokBad, off: start}
	case '(':
		for depth := 1; l.pos < len(l.b) && depth > 0; l.pos++ {
			switch l.b[l.pos] {
			case '\\':
				l.pos++
			case '(':
				depth++
			case ')':
				depth--
			}
		}
		l.pos = min(l.pos, len(l.b))
		return pdfTok{kind: tokString, off: start}
	case '[':
		return pdfTok{kind: tokArrayOpen, off: start}
	case ']':
		return pdfTok{kind: tokArrayClose, off: start}
	case '{', '}', ')':
		return pdfTok{kind: tokBad, off: start}
	}
	for l.pos < len(l.b) && !pdfDelim(l.b[l.pos]) && !pdfSpace(l.b[l.pos]) {
		l.pos++
	}
	text := l.b[start:l.pos]
	if c == '/' {
		return pdfTok{kind: tokName, off: start, text: text[1:]}
	}
	digits := text
	if digits[0] == '+' || digits[0] == '-' {
		digits = digits[1:]
	}
	dots, number := 0, len(digits) > 0
	for _, c := range digits {
		if c == '.' {
			dots++
		} else if c < '0' || c > '9' {
			number = false
		}
	}
	switch {
	case number && dots == 0:
		n, err := strconv.ParseInt(string(text), 10, 64)
		if err != nil {
			return pdfTok{kind: tokBad, off: start} // the reader fails on it
		}
		return pdfTok{kind: tokInt, off: start, text: text, num: n}
	case number && dots == 1:
		return pdfTok{kind: tokReal, off: start, text: text}
	}
	return pdfTok{kind: tokKeyword, off: start, text: text}
}

// Parsed values: nil, int64, pdfName, a string's or keyword's bytes,
// []any, pdfDict, pdfRef, pdfObjDef, pdfStream.
type (
	pdfName   string
	pdfDict   map[pdfName]any
	pdfRef    struct{ num, gen int64 }
	pdfObjDef struct {
		num int64
		obj any
	}
	pdfStream struct {
		dict pdfDict
		data int // where its data starts
	}
)

// object parses one object as the reader's readObject does, building its
// value; skim does the same without the value.
func (l *pdfLexer) object(refs, streams bool) (any, error) {
	return l.parse(refs, streams, true)
}

func (l *pdfLexer) skim(refs bool) (int, error) {
	start := l.pos
	_, err := l.parse(refs, false, false)
	return l.pos - start, err
}

// parse reads one object without recursion: a stack of open arrays,
// dictionaries and object definitions, as deep as the reader's would be.
// refs and streams say whether "n g R", "n g obj" and "<<...>> stream" are
// read as the reader reads them in the file and in object streams, or
// not, as in content streams. Where the reader would fail (and stop), parse
// stops too, without an error.
func (l *pdfLexer) parse(refs, streams, build bool) (any, error) {
	type frame struct {
		kind  byte // tokArrayOpen, tokDictOpen, or 'o' for an object definition
		arr   []any
		dict  pdfDict
		key   pdfName
		inKey bool // a dictionary's next token is a key
		num   int64
	}
	var stack []frame
	deeper := func(t pdfTok) error {
		if len(stack) >= maxPDFNesting {
			return fmt.Errorf("objects nest deeper than %d at byte %d", maxPDFNesting, t.off)
		}
		return nil
	}
	for {
		// Read one value, or open a container and go round again.
		var v any
		t := l.next()
		n := len(stack)
		switch {
		case n > 0 && stack[n-1].kind == tokArrayOpen && t.kind == tokArrayClose:
			v = stack[n-1].arr
			stack = stack[:n-1]
		case n > 0 && stack[n-1].kind == tokDictOpen && stack[n-1].inKey:
			if t.kind == tokEOF && !l.eofIsEnd || t.kind != tokEOF && t.kind != tokDictClose && t.kind != tokName {
				return nil, nil
			}
			if t.kind == tokName {
				stack[n-1].key, stack[n-1].inKey = pdfName(t.text), false
				continue
			}
			v = stack[n-1].dict
			stack = stack[:n-1]
			if streams && t.kind == tokDictClose {
				if s := l.next(); s.kind != tokKeyword || string(s.text) != "stream" {
					l.unread = append(l.unread, s)
				} else {
					// The data starts after the end of the line.
					switch {
					case l.pos < len(l.b) && l.b[l.pos] == '\r':
						l.pos++
						if l.pos < len(l.b) && l.b[l.pos] == '\n' {
							l.pos++
						}
					case l.pos < len(l.b) && l.b[l.pos] == '\n':
						l.pos++
					default:
						return nil, nil
					}
					d, _ := v.(pdfDict)
					v = pdfStream{dict: d, data: l.pos}
				}
			}
		default:
			switch t.kind {
			case tokEOF:
				if l.eofIsEnd {
					for _, f := range stack {
						if f.kind == tokArrayOpen {
							return nil, errors.New("an array is still open at the end, which the reader would read on forever")
						}
					}
				}
				return nil, nil
			case tokArrayOpen, tokDictOpen:
				if err := deeper(t); err != nil {
					return nil, err
				}
				f := frame{kind: t.kind, inKey: true}
				if build && t.kind == tokDictOpen {
					f.dict = pdfDict{}
				}
				stack = append(stack, f)
				continue
			case tokDictClose:
				v = nil // the reader's object ends at a stray ">>"
			case tokInt:
				v = t.num
				if !refs || t.num < 0 || t.num > 1<<32-1 {
					break
				}
				t2 := l.next()
				if t2.kind == tokInt && t2.num >= 0 && t2.num <= 1<<16-1 {
					t3 := l.next()
					if t3.kind == tokKeyword && string(t3.text) == "R" {
						v = pdfRef{t.num, t2.num}
						break
					}
					if t3.kind == tokKeyword && string(t3.text) == "obj" {
						if err := deeper(t); err != nil {
							return nil, err
						}
						stack = append(stack, frame{kind: 'o', num: t.num})
						continue
					}
					l.unread = append(l.unread, t3)
				}
				l.unread = append(l.unread, t2)
			case tokKeyword:
				switch string(t.text) {
				case "null":
				case "true":
					v = true
				case "false":
					v = false
				default:
					return nil, nil // an operator where an object belongs
				}
			case tokName:
				v = pdfName(t.text)
			case tokString, tokReal:
				if build {
					v = t.text
				}
			default:
				return nil, nil
			}
		}
		// Give the value to the container it is in.
		for {
			n := len(stack)
			if n == 0 {
				return v, nil
			}
			top := &stack[n-1]
			if top.kind == tokArrayOpen {
				if build {
					top.arr = append(top.arr, v)
				}
				break
			}
			if top.kind == tokDictOpen {
				if build {
					top.dict[top.key] = v
				}
				top.inKey = true
				break
			}
			// An object definition holds one object, then "endobj"
			// unless it is a stream.
			stack = stack[:n-1]
			if _, isStream := v.(pdfStream); !isStream {
				if e := l.next(); e.kind != tokKeyword || string(e.text) != "endobj" {
					return nil, nil
				}
			}
			v = pdfObjDef{num: top.num, obj: v}
		}
	}
}
