package load

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/ledongthuc/pdf"
)

// PDF reads the text layer of a PDF with github.com/ledongthuc/pdf, one
// Document per page that has text. Scanned pages without a text layer yield
// nothing (OCR is not done); encrypted files are an error. That library
// trusts the file (it recurses as deep as the file nests and loops as long
// as the file's counts say), so the file is read into memory and checked
// before the library parses it, and each page's content streams before
// the library interprets them: arrays, dictionaries and object definitions
// nested deeper than 1,000, an object stream kept in an object stream,
// counts beyond what the file could hold, an array left open at the end of
// a content stream and streams that decompress to more than 64 MiB and a
// hundred times the file (1 GiB at most) are errors, as are a library
// panic, a page tree that leads back to itself and reading the file over
// and over. A size that does not match what r holds, and a file cut short
// or followed by other data, are errors that say so.
func PDF(source string, r io.ReaderAt, size int64) (docs []Document, err error) {
	if err := checkSource("pdf", source); err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("load pdf %s: nil reader", source)
	}
	if size > MaxFileSize {
		return nil, fmt.Errorf("load pdf %s: %w", source, ErrTooLarge)
	}
	if err := checkSize(r, size); err != nil {
		return nil, fmt.Errorf("load pdf %s: %w", source, err)
	}
	data := make([]byte, size)
	if n, err := r.ReadAt(data, 0); n < len(data) {
		return nil, fmt.Errorf("load pdf %s: read %d of %d bytes: %w", source, n, size, cmp.Or(err, io.ErrUnexpectedEOF))
	}
	if err := pdfTrailer(data); err != nil {
		return nil, fmt.Errorf("load pdf %s: %w", source, err)
	}
	if err := checkPDF(data); err != nil {
		return nil, fmt.Errorf("load pdf %s: %w", source, err)
	}
	// The PDF library panics on some malformed files, and pdfGuard panics
	// to stop it; a loader must not.
	defer func() {
		if p := recover(); p != nil {
			docs, err = nil, fmt.Errorf("load pdf %s: malformed PDF: %v", source, p)
		}
	}()
	pr, err := pdf.NewReader(newPDFGuard(bytes.NewReader(data), size), size)
	if err != nil {
		return nil, fmt.Errorf("load pdf %s: %w", source, err)
	}
	pages, err := pdfPages(pr, maxObject(len(data)))
	if err != nil {
		return nil, fmt.Errorf("load pdf %s: %w", source, err)
	}
	var decoded int64
	for i, p := range pages {
		if err := checkPDFPage(p, &decoded, pdfDecodeLimit(len(data))); err != nil {
			return nil, fmt.Errorf("load pdf %s: page %d: %w", source, i+1, err)
		}
		t, err := p.GetPlainText(nil)
		if err != nil {
			return nil, fmt.Errorf("load pdf %s: page %d: %w", source, i+1, err)
		}
		if strings.TrimSpace(t) == "" {
			continue
		}
		docs = append(docs, Document{Source: source, Title: fmt.Sprintf("%s page %d", path.Base(source), i+1),
			Text: t, Page: i + 1, Metadata: meta("pdf")})
	}
	return docs, nil
}

// checkSize checks the size a loader of an io.ReaderAt was given against
// what r holds. The PDF and ZIP readers look for their trailer in the last
// bytes before size: given a size smaller than the file they miss it and
// say "missing %%EOF" or "not a valid zip file", which sends the caller
// looking at the file instead of the size; given one larger, the ZIP
// reader may still find its directory and read a file whose size is wrong.
func checkSize(r io.ReaderAt, size int64) error {
	if size < 0 {
		return fmt.Errorf("size: %d: must not be negative", size)
	}
	var b [1]byte
	if n, _ := r.ReadAt(b[:], size); n > 0 {
		return fmt.Errorf("size: %d is less than the input: there is data at byte %d (give the whole file's size)", size, size)
	}
	if size > 0 {
		if n, _ := r.ReadAt(b[:], size-1); n == 0 {
			return fmt.Errorf("size: %d is more than the input holds", size)
		}
	}
	return nil
}
