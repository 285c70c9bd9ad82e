package load

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"strings"
	"testing"
)

// makeDOCX builds a minimal Word document with the given paragraphs; a
// paragraph starting with "#" is styled Heading1.
func makeDOCX(t testing.TB, paras ...string) []byte {
	t.Helper()
	var body strings.Builder
	for _, p := range paras {
		style := ""
		if strings.HasPrefix(p, "#") {
			p = strings.TrimPrefix(p, "#")
			style = `<w:pPr><w:pStyle w:val="Heading1"/></w:pPr>`
		}
		var escaped bytes.Buffer
		_ = xml.EscapeText(&escaped, []byte(p))
		fmt.Fprintf(&body, `<w:p>%s<w:r><w:t xml:space="preserve">%s</w:t></w:r></w:p>`, style, escaped.String())
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create("word/document.xml")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`+
		`<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>%s</w:body></w:document>`, body.String())
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// makePDF builds a PDF with one page per text, each drawn in Helvetica,
// with a correct cross-reference table.
func makePDF(pages ...string) []byte {
	var objs []string
	n := len(pages)
	// 1: catalog, 2: pages, 3: font, then page i at 4+2i and its content at 5+2i.
	kids := make([]string, n)
	for i := range pages {
		kids[i] = fmt.Sprintf("%d 0 R", 4+2*i)
	}
	objs = append(objs, "<< /Type /Catalog /Pages 2 0 R >>",
		fmt.Sprintf("<< /Type /Pages /Kids [%s] /Count %d >>", strings.Join(kids, " "), n),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
	for i, p := range pages {
		stream := fmt.Sprintf("BT /F1 12 Tf 72 720 Td (%s) Tj ET", p)
		objs = append(objs,
			fmt.Sprintf("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>", 5+2*i),
			fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", len(stream), stream))
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.Bytes()
}

func writeFile(dir, name string, b []byte) error {
	p := dir + "/" + name
	if err := os.MkdirAll(p[:strings.LastIndex(p, "/")], 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}
