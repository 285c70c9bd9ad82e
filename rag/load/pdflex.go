package load

import (
	"errors"
	"fmt"
	"strconv"
)

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
