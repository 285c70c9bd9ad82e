package yamlenc

import (
	"bytes"
	"encoding/json"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Document appends the YAML document yaml.v2 writes for the
// unstructured content obj, byte for byte, and reports whether it could:
// it knows the shapes the unstructured converter makes (maps with string
// keys, slices, strings, int64, float64, bool, nil) and the strings that
// need no line folding, escapes or block scalars. For anything else it
// returns false, leaving the output as it was (cube.Render then asks yaml.v2).
// yaml.v2 queues every event of a document in a slice it never trims,
// which made its allocations the bulk of Render;
// TestAppendYAMLMatchesYAMLv2 holds the two outputs equal.
func (w *Writer) Document(obj map[string]any) bool {
	start := len(w.buf)
	if len(obj) == 0 {
		w.buf = append(w.buf, "{}\n"...)
		return true
	}
	if !w.mapping(obj, 0, false) {
		w.buf = w.buf[:start]
		return false
	}
	return true
}

// Writer holds the output and the keys of the mappings being written, a
// stack in one slice. Writers live in a pool (Get, Release): they are
// scratch space, nothing in them outlives a call.
type Writer struct {
	buf     []byte
	keys    []string
	json    bytes.Buffer
	enc     *json.Encoder // writes to json
	members []jsonMember
}

var writers = sync.Pool{New: func() any {
	w := new(Writer)
	w.enc = json.NewEncoder(&w.json)
	w.enc.SetEscapeHTML(false)
	return w
}}

// Get returns an empty Writer from a pool; Release gives it back.
func Get() *Writer { return writers.Get().(*Writer) }

// Append appends b, already YAML (a separator, yaml.v2's output), to the
// output.
func (w *Writer) Append(b []byte) { w.buf = append(w.buf, b...) }

// Bytes returns the output; it is valid until Release.
func (w *Writer) Bytes() []byte { return w.buf }

// Release empties w and puts it back in the pool.
func (w *Writer) Release() {
	w.buf, w.keys, w.members = w.buf[:0], w.keys[:0], w.members[:0]
	w.json.Reset()
	writers.Put(w)
}

// mapping writes the block mapping m at indent; inline means the first
// key goes on the current line (after "- ").
func (w *Writer) mapping(m map[string]any, indent int, inline bool) bool {
	base := len(w.keys)
	for k := range m {
		w.keys = append(w.keys, k)
	}
	defer func() { w.keys = w.keys[:base] }()
	if !sortYAMLKeys(w.keys[base:]) {
		return false
	}
	var ok bool
	for i := base; i < base+len(m); i++ {
		k := w.keys[i] // by index: nested mappings may move w.keys
		if i > base || !inline {
			w.buf = appendIndent(w.buf, indent)
		}
		if w.buf, ok = appendString(w.buf, k, true); !ok {
			return false
		}
		w.buf = append(w.buf, ':')
		if !w.value(m[k], indent, false) {
			return false
		}
	}
	return true
}

func (w *Writer) sequence(s []any, indent int, inline bool) bool {
	for i, item := range s {
		if i > 0 || !inline {
			w.buf = appendIndent(w.buf, indent)
		}
		w.buf = append(w.buf, '-')
		if !w.value(item, indent, true) {
			return false
		}
	}
	return true
}

// value writes v after a mapping's "key:" or a sequence's "-" at indent,
// through the end of its line or block. yaml.v2 writes the items of a
// sequence in a mapping at the mapping's indent, and the first key of a
// mapping in a sequence on the item's line.
func (w *Writer) value(v any, indent int, item bool) bool {
	var ok bool
	switch v := v.(type) {
	case map[string]any:
		if len(v) == 0 {
			w.buf = append(w.buf, " {}\n"...)
			return true
		}
		if item {
			w.buf = append(w.buf, ' ')
		} else {
			w.buf = append(w.buf, '\n')
		}
		return w.mapping(v, indent+2, item)
	case []any:
		if len(v) == 0 {
			w.buf = append(w.buf, " []\n"...)
			return true
		}
		if item {
			w.buf = append(w.buf, ' ')
			return w.sequence(v, indent+2, true)
		}
		w.buf = append(w.buf, '\n')
		return w.sequence(v, indent, false)
	default:
		w.buf = append(w.buf, ' ')
		w.buf, ok = appendScalar(w.buf, v)
		w.buf = append(w.buf, '\n')
		return ok
	}
}

func appendIndent(buf []byte, n int) []byte {
	for range n {
		buf = append(buf, ' ')
	}
	return buf
}

func appendScalar(buf []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case string:
		return appendString(buf, v, false)
	case bool:
		return strconv.AppendBool(buf, v), true
	case int64:
		return strconv.AppendInt(buf, v, 10), true
	case int:
		return strconv.AppendInt(buf, int64(v), 10), true
	case float64:
		switch {
		case math.IsInf(v, 1):
			return append(buf, ".inf"...), true
		case math.IsInf(v, -1):
			return append(buf, "-.inf"...), true
		case math.IsNaN(v):
			return append(buf, ".nan"...), true
		}
		return strconv.AppendFloat(buf, v, 'g', -1, 64), true
	case nil:
		return append(buf, "null"...), true
	}
	return buf, false
}

// yamlWidth is yaml.v2's line width: past it, it folds scalars at spaces.
const yamlWidth = 80

// appendString writes s as yaml.v2 would in block context (key: as a
// simple mapping key): plain when it reads back as the same string,
// single-quoted when only indicators forbid plain, double-quoted when it
// would read back as another type. It declines what needs more than that:
// characters outside printable ASCII (line breaks, tabs, Unicode), keys
// too long to be simple, and text long enough for yaml.v2 to fold.
func appendString(buf []byte, s string, key bool) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return buf, false
		}
	}
	if key && len(s) > 128 {
		return buf, false
	}
	str, known := resolvesToString(s)
	if !known {
		return buf, false
	}
	start := len(buf)
	switch {
	case !str:
		buf = append(buf, '"')
		for i := 0; i < len(s); i++ {
			if s[i] == '"' || s[i] == '\\' {
				buf = append(buf, '\\')
			}
			buf = append(buf, s[i])
		}
		buf = append(buf, '"')
	case plainAllowed(s):
		buf = append(buf, s...)
	default:
		buf = append(buf, '\'')
		for i := 0; i < len(s); i++ {
			if s[i] == '\'' {
				buf = append(buf, '\'')
			}
			buf = append(buf, s[i])
		}
		buf = append(buf, '\'')
	}
	if strings.IndexByte(s, ' ') >= 0 {
		lineStart := bytes.LastIndexByte(buf[:start], '\n') + 1
		if len(buf)-lineStart > yamlWidth {
			return buf, false
		}
	}
	return buf, true
}

// plainAllowed is yaml.v2's emitter test for a plain scalar in block
// context (yaml_emitter_analyze_scalar), for printable ASCII.
func plainAllowed(s string) bool {
	if s == "" || s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	if strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...") {
		return false
	}
	blankAfter := func(i int) bool { return i+1 >= len(s) || s[i+1] == ' ' }
	switch s[0] {
	case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	case '?', ':', '-':
		if blankAfter(0) {
			return false
		}
	}
	for i := 1; i < len(s); i++ {
		switch {
		case s[i] == ':' && blankAfter(i):
			return false
		case s[i] == '#' && s[i-1] == ' ':
			return false
		}
	}
	return true
}

// numberRunes are the characters of every number yaml.v2 resolves: signs,
// digits, '_', '.', exponents, and base prefixes with hexadecimal digits.
const numberRunes = "+-0123456789_.eEoOxXbBaAcCdDfF"

// yamlStyleFloat is yaml.v2's (resolve.go).
var yamlStyleFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// resolvesToString ports yaml.v2's resolve for an untagged plain scalar:
// str is whether s reads back as a string. known is false for the forms
// this port leaves to yaml.v2 (timestamps, base-60 floats).
func resolvesToString(s string) (str, known bool) {
	if s == "" {
		return false, true // null
	}
	switch c := s[0]; {
	case strings.IndexByte("yYnNtTfFoO~", c) >= 0:
		switch s {
		case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
			"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
			"~", "null", "Null", "NULL":
			return false, true
		}
		return true, true
	case c == '.':
		switch s {
		case ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF":
			return false, true
		}
		_, err := strconv.ParseFloat(s, 64)
		return err != nil, true
	case c == '+' || c == '-' || c >= '0' && c <= '9':
		switch s {
		case "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF":
			return false, true
		}
		if strings.IndexByte(s, ':') >= 0 || looksLikeTimestamp(s) {
			return false, false
		}
		if strings.IndexFunc(s, func(r rune) bool { return !strings.ContainsRune(numberRunes, r) }) >= 0 {
			return true, true // no number has that character: spare strconv its errors
		}
		plain := strings.ReplaceAll(s, "_", "")
		if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
			return false, true
		}
		if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
			return false, true
		}
		if yamlStyleFloat.MatchString(plain) {
			if _, err := strconv.ParseFloat(plain, 64); err == nil {
				return false, true
			}
		}
		if rest, ok := strings.CutPrefix(plain, "0b"); ok {
			if _, err := strconv.ParseUint(rest, 2, 64); err == nil {
				return false, true
			}
		} else if rest, ok := strings.CutPrefix(plain, "-0b"); ok {
			if _, err := strconv.ParseInt("-"+rest, 2, 64); err == nil {
				return false, true
			}
		}
		return true, true
	}
	return true, true
}

// looksLikeTimestamp is yaml.v2's first test for a timestamp: four digits
// and a dash.
func looksLikeTimestamp(s string) bool {
	return len(s) > 4 && s[4] == '-' && strings.IndexFunc(s[:4], func(r rune) bool { return r < '0' || r > '9' }) < 0
}

// sortYAMLKeys sorts keys in yaml.v2's order (sorter.go) and reports
// whether that order is certain. yaml.v2 puts letters after every other
// character and compares runs of digits as numbers; the latter makes its
// order intransitive for some keys ("100m" < "1e" < "67" < "100m"), and
// then what it writes depends on the map's iteration order. Without a
// digit where two neighbours first differ, its order is the plain
// lexicographic one below, which is transitive.
func sortYAMLKeys(keys []string) bool {
	slices.SortFunc(keys, compareYAMLKeys[string])
	for i := 1; i < len(keys); i++ {
		if differAtDigit(keys[i-1], keys[i]) {
			return false
		}
	}
	return true
}

// differAtDigit reports whether a digit is where a and b first differ.
func differAtDigit[S string | []byte](a, b S) bool {
	j := 0
	for j < len(a) && j < len(b) && a[j] == b[j] {
		j++
	}
	return j < len(a) && isDigit(a[j]) || j < len(b) && isDigit(b[j])
}

// compareYAMLKeys is yaml.v2's key order for ASCII keys that do not first
// differ at a digit.
func compareYAMLKeys[S string | []byte](a, b S) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			return yamlKeyRank(a[i]) - yamlKeyRank(b[i])
		}
	}
	return len(a) - len(b)
}

func yamlKeyRank(c byte) int {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
		return 256 + int(c)
	}
	return int(c)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// jsonMember is one member of a JSON object being written: the key and
// value as offsets in the JSON.
type jsonMember struct {
	keyStart, keyEnd, valueStart, valueEnd int
}

// FromJSON appends the document of obj as Document does for its
// unstructured content, reading obj's JSON encoding instead (the same
// fields, the same values: the unstructured converter follows the JSON
// tags and marshalers) and dropping what cube.ToUnstructured drops: the
// status and creationTimestamp: null. It declines, leaving the output as
// it was, what Document declines and strings with JSON escapes.
func (w *Writer) FromJSON(obj any) bool {
	w.json.Reset()
	if err := w.enc.Encode(obj); err != nil {
		return false
	}
	data := bytes.TrimSuffix(w.json.Bytes(), []byte("\n"))
	start := len(w.buf)
	if len(data) == 0 || data[0] != '{' || !w.jsonMappingValue(data, 0, 0, true) {
		w.buf = w.buf[:start]
		return false
	}
	return true
}

// jsonMappingValue writes the JSON object at data[at] as a top-level
// document (top) or, after a key, as its value.
func (w *Writer) jsonMappingValue(data []byte, at, indent int, top bool) bool {
	base, n, ok := w.collect(data, at, top)
	defer func() { w.members = w.members[:base] }()
	switch {
	case !ok:
		return false
	case n == 0:
		if top {
			w.buf = append(w.buf, "{}\n"...)
		} else {
			w.buf = append(w.buf, " {}\n"...)
		}
		return true
	}
	if !top {
		w.buf = append(w.buf, '\n')
	}
	return w.jsonMembers(data, base, n, indent, false)
}

// collect pushes the members of the JSON object at data[at] onto
// w.members, sorted as yaml.v2 sorts keys, leaving out creationTimestamp:
// null (and, at the top, the status).
func (w *Writer) collect(data []byte, at int, top bool) (base, n int, ok bool) {
	base = len(w.members)
	i := at + 1
	for i < len(data) && data[i] != '}' {
		if data[i] == ',' {
			i++
		}
		keyEnd := skipJSON(data, i)
		if keyEnd < 0 || data[i] != '"' || keyEnd >= len(data) || data[keyEnd] != ':' {
			return base, 0, false
		}
		m := jsonMember{keyStart: i + 1, keyEnd: keyEnd - 1, valueStart: keyEnd + 1}
		if m.valueEnd = skipJSON(data, m.valueStart); m.valueEnd < 0 {
			return base, 0, false
		}
		i = m.valueEnd
		key, value := data[m.keyStart:m.keyEnd], data[m.valueStart:m.valueEnd]
		if bytes.IndexByte(key, '\\') >= 0 {
			return base, 0, false
		}
		if string(key) == "creationTimestamp" && string(value) == "null" || top && string(key) == "status" {
			continue
		}
		w.members = append(w.members, m)
	}
	members := w.members[base:]
	slices.SortFunc(members, func(a, b jsonMember) int {
		return compareYAMLKeys(data[a.keyStart:a.keyEnd], data[b.keyStart:b.keyEnd])
	})
	for j := 1; j < len(members); j++ {
		if differAtDigit(data[members[j-1].keyStart:members[j-1].keyEnd], data[members[j].keyStart:members[j].keyEnd]) {
			return base, 0, false
		}
	}
	return base, len(members), true
}

// jsonMembers writes n collected members from w.members[base] as a block
// mapping at indent, as mapping does.
func (w *Writer) jsonMembers(data []byte, base, n, indent int, inline bool) bool {
	var ok bool
	for i := base; i < base+n; i++ {
		m := w.members[i] // by index: nested objects may move w.members
		if i > base || !inline {
			w.buf = appendIndent(w.buf, indent)
		}
		if w.buf, ok = appendString(w.buf, string(data[m.keyStart:m.keyEnd]), true); !ok {
			return false
		}
		w.buf = append(w.buf, ':')
		switch data[m.valueStart] {
		case '{':
			ok = w.jsonMappingValue(data, m.valueStart, indent+2, false)
		case '[':
			if data[m.valueStart+1] == ']' {
				w.buf = append(w.buf, " []\n"...)
				continue
			}
			w.buf = append(w.buf, '\n')
			ok = w.jsonSequence(data, m.valueStart, indent, false)
		default:
			w.buf = append(w.buf, ' ')
			ok = w.jsonScalar(data[m.valueStart:m.valueEnd])
			w.buf = append(w.buf, '\n')
		}
		if !ok {
			return false
		}
	}
	return true
}

// jsonSequence writes the JSON array at data[at] as sequence does.
func (w *Writer) jsonSequence(data []byte, at, indent int, inline bool) bool {
	var ok bool
	first := true
	for i := at + 1; i < len(data) && data[i] != ']'; {
		if data[i] == ',' {
			i++
		}
		end := skipJSON(data, i)
		if end < 0 {
			return false
		}
		if !first || !inline {
			w.buf = appendIndent(w.buf, indent)
		}
		first = false
		w.buf = append(w.buf, '-')
		switch data[i] {
		case '{':
			base, n, collected := w.collect(data, i, false)
			switch {
			case !collected:
				ok = false
			case n == 0:
				w.buf = append(w.buf, " {}\n"...)
				ok = true
			default:
				w.buf = append(w.buf, ' ')
				ok = w.jsonMembers(data, base, n, indent+2, true)
			}
			w.members = w.members[:base]
		case '[':
			if data[i+1] == ']' {
				w.buf = append(w.buf, " []\n"...)
				ok = true
				break
			}
			w.buf = append(w.buf, ' ')
			ok = w.jsonSequence(data, i, indent+2, true)
		default:
			w.buf = append(w.buf, ' ')
			ok = w.jsonScalar(data[i:end])
			w.buf = append(w.buf, '\n')
		}
		if !ok {
			return false
		}
		i = end
	}
	return true
}

// jsonScalar writes a JSON string, number, boolean or null as
// appendScalar writes the value the unstructured converter makes of it:
// integers as they are, other numbers as float64.
func (w *Writer) jsonScalar(raw []byte) bool {
	var ok bool
	switch raw[0] {
	case '"':
		s := raw[1 : len(raw)-1]
		if bytes.IndexByte(s, '\\') >= 0 {
			return false
		}
		w.buf, ok = appendString(w.buf, string(s), false)
		return ok
	case 'n', 't', 'f':
		w.buf = append(w.buf, raw...) // null, true, false
		return true
	}
	if bytes.ContainsAny(raw, ".eE") {
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return false
		}
		w.buf, ok = appendScalar(w.buf, f)
		return ok
	}
	if _, err := strconv.ParseInt(string(raw), 10, 64); err != nil {
		return false // beyond int64: the converter's business
	}
	w.buf = append(w.buf, raw...)
	return true
}

// skipJSON returns the end of the compact JSON value at data[i], -1 when
// it is not one.
func skipJSON(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		for j := i + 1; j < len(data); j++ {
			switch data[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end := skipJSON(data, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(data) && data[j] != ',' && data[j] != '}' && data[j] != ']' {
		j++
	}
	return j
}
