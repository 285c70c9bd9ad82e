package graph

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The local runner evaluates When the way Argo does (workflow/controller
// shouldExecute): placeholders are replaced by their values as text, then the
// text is parsed as a govaluate expression in which bare words are strings.
// This is the subset pipelines use: comparisons (== != < > <= >= =~ !~),
// !, && and ||, parentheses, numbers, 'quoted' or "quoted" strings, true and
// false.

type whenExpr interface {
	eval() (any, error)
}

type whenLiteral struct{ v any }

func (l whenLiteral) eval() (any, error) { return l.v, nil }

type whenNot struct{ x whenExpr }

func (n whenNot) eval() (any, error) {
	v, err := n.x.eval()
	if err != nil {
		return nil, err
	}
	b, ok := v.(bool)
	if !ok {
		return nil, fmt.Errorf("! needs a boolean, not %v", v)
	}
	return !b, nil
}

type whenBinary struct {
	op   string
	l, r whenExpr
}

func (b whenBinary) eval() (any, error) {
	l, err := b.l.eval()
	if err != nil {
		return nil, err
	}
	if b.op == "&&" || b.op == "||" {
		lb, ok := l.(bool)
		if !ok {
			return nil, fmt.Errorf("%s needs booleans, not %v", b.op, l)
		}
		if (b.op == "&&" && !lb) || (b.op == "||" && lb) {
			return lb, nil
		}
		r, err := b.r.eval()
		if err != nil {
			return nil, err
		}
		rb, ok := r.(bool)
		if !ok {
			return nil, fmt.Errorf("%s needs booleans, not %v", b.op, r)
		}
		return rb, nil
	}
	r, err := b.r.eval()
	if err != nil {
		return nil, err
	}
	switch b.op {
	case "==":
		return l == r, nil
	case "!=":
		return l != r, nil
	case "=~", "!~":
		ls, lok := l.(string)
		rs, rok := r.(string)
		if !lok || !rok {
			return nil, fmt.Errorf("%s needs strings", b.op)
		}
		re, err := regexp.Compile(rs)
		if err != nil {
			return nil, fmt.Errorf("bad pattern %q: %w", rs, err)
		}
		return re.MatchString(ls) == (b.op == "=~"), nil
	}
	var c int
	switch lv := l.(type) {
	case float64:
		rv, ok := r.(float64)
		if !ok {
			return nil, fmt.Errorf("cannot compare %v with %v", l, r)
		}
		c = cmpOrdered(lv, rv)
	case string:
		rv, ok := r.(string)
		if !ok {
			return nil, fmt.Errorf("cannot compare %v with %v", l, r)
		}
		c = strings.Compare(lv, rv)
	default:
		return nil, fmt.Errorf("cannot order %v", l)
	}
	switch b.op {
	case "<":
		return c < 0, nil
	case ">":
		return c > 0, nil
	case "<=":
		return c <= 0, nil
	}
	return c >= 0, nil
}

func cmpOrdered(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

type whenToken struct {
	kind string // "op", "(", ")", "lit"
	text string
	lit  any
}

func lexWhen(s string) ([]whenToken, error) {
	var toks []whenToken
	i := 0
	for i < len(s) {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			i++
		case ch == '(' || ch == ')':
			toks = append(toks, whenToken{kind: string(ch)})
			i++
		case ch == '\'' || ch == '"':
			end := strings.IndexByte(s[i+1:], ch)
			if end < 0 {
				return nil, fmt.Errorf("unterminated string at %d", i)
			}
			toks = append(toks, whenToken{kind: "lit", lit: s[i+1 : i+1+end]})
			i += end + 2
		case strings.ContainsRune("=!<>&|", rune(ch)):
			op := ""
			for _, cand := range []string{"==", "!=", "<=", ">=", "=~", "!~", "&&", "||", "<", ">", "!"} {
				if strings.HasPrefix(s[i:], cand) {
					op = cand
					break
				}
			}
			if op == "" {
				return nil, fmt.Errorf("invalid token %q at %d", s[i:i+1], i)
			}
			toks = append(toks, whenToken{kind: "op", text: op})
			i += len(op)
		case ch == '-' || ch == '.' || (ch >= '0' && ch <= '9'):
			j := i + 1
			for j < len(s) && (s[j] == '.' || (s[j] >= '0' && s[j] <= '9')) {
				j++
			}
			f, err := strconv.ParseFloat(s[i:j], 64)
			if err != nil {
				return nil, fmt.Errorf("invalid token %q at %d (hint: quote the value)", s[i:j], i)
			}
			if j < len(s) && isWordByte(s[j]) {
				return nil, fmt.Errorf("invalid token %q at %d (hint: quote the value)", s[i:], i)
			}
			toks = append(toks, whenToken{kind: "lit", lit: f})
			i = j
		case isWordByte(ch):
			j := i + 1
			for j < len(s) && (isWordByte(s[j]) || s[j] == '.' || (s[j] >= '0' && s[j] <= '9')) {
				j++
			}
			w := s[i:j]
			switch w {
			case "true":
				toks = append(toks, whenToken{kind: "lit", lit: true})
			case "false":
				toks = append(toks, whenToken{kind: "lit", lit: false})
			default:
				toks = append(toks, whenToken{kind: "lit", lit: w})
			}
			i = j
		default:
			return nil, fmt.Errorf("invalid token %q at %d (hint: quote the value)", s[i:i+1], i)
		}
	}
	return toks, nil
}

func isWordByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

type whenParser struct {
	toks []whenToken
	pos  int
}

// parseWhen parses an expression with its placeholders already replaced.
func parseWhen(s string) (whenExpr, error) {
	toks, err := lexWhen(s)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, errors.New("empty expression")
	}
	p := &whenParser{toks: toks}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, fmt.Errorf("unexpected %s", p.toks[p.pos].describe())
	}
	return e, nil
}

func (t whenToken) describe() string {
	switch t.kind {
	case "op":
		return strconv.Quote(t.text)
	case "lit":
		return fmt.Sprintf("%v", t.lit)
	}
	return strconv.Quote(t.kind)
}

func (p *whenParser) peekOp(ops ...string) string {
	if p.pos < len(p.toks) && p.toks[p.pos].kind == "op" {
		for _, o := range ops {
			if p.toks[p.pos].text == o {
				return o
			}
		}
	}
	return ""
}

func (p *whenParser) or() (whenExpr, error) { return p.chain("||", p.and) }

func (p *whenParser) and() (whenExpr, error) { return p.chain("&&", p.not) }

// chain parses operands joined by a left-associative operator.
func (p *whenParser) chain(op string, operand func() (whenExpr, error)) (whenExpr, error) {
	l, err := operand()
	if err != nil {
		return nil, err
	}
	for p.peekOp(op) != "" {
		p.pos++
		r, err := operand()
		if err != nil {
			return nil, err
		}
		l = whenBinary{op, l, r}
	}
	return l, nil
}

func (p *whenParser) not() (whenExpr, error) {
	if p.peekOp("!") != "" {
		p.pos++
		x, err := p.not()
		if err != nil {
			return nil, err
		}
		return whenNot{x}, nil
	}
	return p.cmp()
}

func (p *whenParser) cmp() (whenExpr, error) {
	l, err := p.primary()
	if err != nil {
		return nil, err
	}
	if op := p.peekOp("==", "!=", "<", ">", "<=", ">=", "=~", "!~"); op != "" {
		p.pos++
		r, err := p.primary()
		if err != nil {
			return nil, err
		}
		return whenBinary{op, l, r}, nil
	}
	return l, nil
}

func (p *whenParser) primary() (whenExpr, error) {
	if p.pos >= len(p.toks) {
		return nil, errors.New("unexpected end of expression")
	}
	t := p.toks[p.pos]
	switch t.kind {
	case "lit":
		p.pos++
		return whenLiteral{t.lit}, nil
	case "(":
		p.pos++
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		if p.pos >= len(p.toks) || p.toks[p.pos].kind != ")" {
			return nil, errors.New("missing )")
		}
		p.pos++
		return e, nil
	}
	return nil, fmt.Errorf("unexpected %s", t.describe())
}

// EvalWhen evaluates an expression whose placeholders are replaced.
func EvalWhen(s string) (bool, error) {
	e, err := parseWhen(s)
	if err != nil {
		return false, fmt.Errorf("invalid when expression %q: %w", s, err)
	}
	v, err := e.eval()
	if err != nil {
		return false, fmt.Errorf("evaluate when expression %q: %w", s, err)
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("when expression %q is %v, not a boolean", s, v)
	}
	return b, nil
}
