package load

import (
	"archive/zip"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// DOCX reads the paragraphs of a Word (Office Open XML) document: the
// ZIP container is opened with archive/zip and word/document.xml decoded
// with encoding/xml, since no maintained DOCX reader with a free licence is
// available as a Go module here. Each paragraph becomes a line; the first
// paragraph styled Title or Heading1 becomes Title.
func DOCX(source string, r io.ReaderAt, size int64) ([]Document, error) {
	if err := checkSource("docx", source); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("load docx %s: nil reader", source)
	}
	if size > MaxFileSize {
		return nil, fmt.Errorf("load docx %s: %w", source, ErrTooLarge)
	}
	if err := checkSize(r, size); err != nil {
		return nil, fmt.Errorf("load docx %s: %w", source, err)
	}
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return nil, fmt.Errorf("load docx %s: %w", source, err)
	}
	f, err := zr.Open("word/document.xml")
	if err != nil {
		return nil, fmt.Errorf("load docx %s: no word/document.xml: %w", source, err)
	}
	defer f.Close()
	dec := xml.NewDecoder(io.LimitReader(f, MaxFileSize))
	var paras []string
	var cur strings.Builder
	var style, title string
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("load docx %s: word/document.xml: %w", source, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch t.Name.Local {
			case "t":
				inText = true
			case "tab":
				cur.WriteByte('\t')
			case "br", "cr":
				cur.WriteByte('\n')
			case "pStyle":
				for _, a := range t.Attr {
					if a.Name.Local == "val" {
						style = a.Value
					}
				}
			case "p":
				cur.Reset()
				style = ""
			}
		case xml.EndElement:
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				p := strings.TrimSpace(cur.String())
				if p != "" {
					paras = append(paras, p)
					if title == "" && (style == "Title" || style == "Heading1") {
						title = p
					}
				}
				cur.Reset()
			}
		case xml.CharData:
			if inText {
				cur.Write(t)
			}
		}
	}
	if len(paras) == 0 {
		return nil, nil
	}
	return []Document{{Source: source, Title: title, Text: strings.Join(paras, "\n"), Metadata: meta("docx")}}, nil
}
