package load

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
)

// CSV reads a CSV file with a header row as one Document per record:
// the text is "column: value" lines, so offsets count in that text
// (Offset is 0) and Metadata "line" holds the record's 1-based line in
// the file, "row" its 1-based number. The file is streamed: only a record
// longer than MaxFileSize is an error.
// Columns named in metadataColumns are also kept in Metadata, to filter on;
// naming a column the header lacks is an error.
func CSV(source string, r io.Reader, metadataColumns ...string) ([]Document, error) {
	if err := checkSource("csv", source); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("load csv %s: nil reader", source)
	}
	rr := &recordLimit{r: r}
	cr := csv.NewReader(rr)
	cr.FieldsPerRecord = 0
	header, err := cr.Read()
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load csv %s: header: %w", source, err)
	}
	var errs []error
	metaIndex := map[string]int{}
	for _, c := range metadataColumns {
		i := slices.Index(header, c)
		if i < 0 {
			errs = append(errs, fmt.Errorf("metadataColumns: %q is not a column of the header %q", c, header))
			continue
		}
		metaIndex[c] = i
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("load csv %s: %w", source, errors.Join(errs...))
	}
	var docs []Document
	for {
		rr.mark(cr.InputOffset())
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("load csv %s: %w", source, err)
		}
		line, _ := cr.FieldPos(0)
		var t strings.Builder
		for i, v := range rec {
			if strings.TrimSpace(v) == "" {
				continue
			}
			fmt.Fprintf(&t, "%s: %s\n", header[i], v)
		}
		m := meta("csv")
		for c, i := range metaIndex {
			m[c] = rec[i]
		}
		m["row"] = strconv.Itoa(len(docs) + 1)
		m["line"] = strconv.Itoa(line)
		docs = append(docs, Document{
			Source: source, Title: fmt.Sprintf("%s line %d", path.Base(source), line),
			Text: strings.TrimRight(t.String(), "\n"), Metadata: m,
		})
	}
	return docs, nil
}

// idKeys are the JSON keys, in order, whose value names a JSON line as a
// source of its own (see JSONL).
var idKeys = []string{"id", "_id", "doc_id"}

// JSONL reads JSON lines, one object per line, as one Document per line,
// streaming the file (only a line longer than MaxFileSize is an error).
// The text is the string field textField ("text" when empty); the
// object's other string, number and boolean fields go to Metadata, and a
// "title" field becomes Title. A line with a non-empty string or number
// under "id", "_id" or "doc_id" (the first it has, in that order) is a
// source of its own, "<source>#<id>", so a knowledge base replaces,
// deletes and cites each record by itself; lines without one share
// source. The text is the decoded JSON string, which the file does not
// hold byte for byte (escapes), so offsets count in the text (Offset is
// 0) and Metadata "line" holds the line's 1-based number in the file. A
// line that is not an object, or lacks the text field, is an error naming
// its line.
func JSONL(source string, r io.Reader, textField string) ([]Document, error) {
	if err := checkSource("jsonl", source); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("load jsonl %s: nil reader", source)
	}
	if textField == "" {
		textField = "text"
	}
	br := bufio.NewReader(r)
	var docs []Document
	var errs []error
	for n := 1; ; n++ {
		line, err := readLine(br)
		if err == io.EOF && len(line) == 0 {
			break
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("load jsonl %s: line %d: %w", source, n, err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var obj map[string]any
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n, err))
			continue
		}
		txt, ok := obj[textField].(string)
		if !ok {
			errs = append(errs, fmt.Errorf("line %d: %s: required string field", n, textField))
			continue
		}
		m := meta("jsonl")
		for k, v := range obj {
			if k == textField {
				continue
			}
			switch v := v.(type) {
			case string:
				m[k] = v
			case json.Number:
				m[k] = v.String()
			case bool:
				m[k] = strconv.FormatBool(v)
			}
		}
		src := source
		for _, k := range idKeys {
			if id, ok := m[k]; ok && k != textField && strings.TrimSpace(id) != "" {
				if _, isBool := obj[k].(bool); !isBool {
					src = source + "#" + id
					break
				}
			}
		}
		m["line"] = strconv.Itoa(n)
		title := m["title"]
		delete(m, "title")
		docs = append(docs, Document{Source: src, Title: title, Text: txt, Metadata: m})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("load jsonl %s: %w", source, errors.Join(errs...))
	}
	return docs, nil
}

// readLine reads one line, its "\n" included, refusing one longer than
// MaxFileSize without holding more of it.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		if len(line)+len(part) > MaxFileSize {
			return nil, ErrTooLarge
		}
		line = append(line, part...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// recordLimit passes a CSV file through, refusing to let one record (the
// bytes read since mark) grow past MaxFileSize.
type recordLimit struct {
	r          io.Reader
	read, from int64
}

func (l *recordLimit) mark(offset int64) { l.from = offset }

func (l *recordLimit) Read(p []byte) (int, error) {
	if l.read-l.from > MaxFileSize {
		return 0, ErrTooLarge
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	return n, err
}
