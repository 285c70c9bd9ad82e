package load

import (
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
// the text is "column: value" lines, Offset the record's byte offset.
// Columns named in metadataColumns are also kept in Metadata, to filter on;
// naming a column the header lacks is an error.
func CSV(source string, r io.Reader, metadataColumns ...string) ([]Document, error) {
	if err := checkSource("csv", source); err != nil {
		return nil, err
	}
	b, err := readAll(r)
	if err != nil {
		return nil, fmt.Errorf("load csv %s: %w", source, err)
	}
	cr := csv.NewReader(bytes.NewReader(b))
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
		offset := int(cr.InputOffset())
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
		docs = append(docs, Document{
			Source: source, Title: fmt.Sprintf("%s line %d", path.Base(source), line),
			Text: strings.TrimRight(t.String(), "\n"), Offset: offset, Metadata: m,
		})
	}
	return docs, nil
}

// JSONL reads JSON lines, one object per line, as one Document per
// line. The text is the string field textField ("text" when empty); the
// object's other string, number and boolean fields go to Metadata, and a
// "title" field becomes Title. A line that is not an object, or lacks the
// text field, is an error naming its line.
func JSONL(source string, r io.Reader, textField string) ([]Document, error) {
	if err := checkSource("jsonl", source); err != nil {
		return nil, err
	}
	if textField == "" {
		textField = "text"
	}
	b, err := readAll(r)
	if err != nil {
		return nil, fmt.Errorf("load jsonl %s: %w", source, err)
	}
	var docs []Document
	var errs []error
	offset := 0
	for n, line := range bytes.SplitAfter(b, []byte("\n")) {
		start := offset
		offset += len(line)
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal(line, &obj); err != nil {
			errs = append(errs, fmt.Errorf("line %d: %w", n+1, err))
			continue
		}
		txt, ok := obj[textField].(string)
		if !ok {
			errs = append(errs, fmt.Errorf("line %d: %s: required string field", n+1, textField))
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
			case float64:
				m[k] = strconv.FormatFloat(v, 'g', -1, 64)
			case bool:
				m[k] = strconv.FormatBool(v)
			}
		}
		title := m["title"]
		delete(m, "title")
		docs = append(docs, Document{Source: source, Title: title, Text: txt, Offset: start, Metadata: m})
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("load jsonl %s: %w", source, errors.Join(errs...))
	}
	return docs, nil
}
