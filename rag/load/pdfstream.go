package load

import (
	"bytes"
	"compress/zlib"
	"encoding/ascii85"
	"errors"
	"fmt"
	"io"
)

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
