package load

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// The PDF reader (github.com/ledongthuc/pdf) trusts the file it reads: it
// parses arrays, dictionaries and object definitions by recursion, so
// deep nesting overflows the stack, which kills the process; it follows
// object streams by recursion, so one stored in itself recurses without
// end; it loops over counts the file states (xref sizes, object stream
// lengths, CMap ranges) and sizes tables by them; and it reads an array
// left open at the end of a content stream forever, appending as it goes.
// PDF therefore checks a file before the reader sees it (checkPDF),
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
