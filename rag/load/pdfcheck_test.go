package load

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testPDF writes PDF files for the tests. Object n's body is objs[n-1];
// the objects listed in packed go compressed into object stream
// packedIn; with packed or xrefStream set, the cross-reference section is
// a stream (its own object, after the others), else a table.
type testPDF struct {
	objs       []string
	packed     []int
	packedIn   int
	objStmN    int // the object stream's /N, when not 0
	xrefStream bool
	// trailer is added to the trailer (or cross-reference stream)
	// dictionary; xrefDict replaces the generated /Size /W /Index.
	trailer  string
	xrefDict string
}

func flate(b []byte) []byte {
	var out bytes.Buffer
	w := zlib.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func streamObj(dict string, data []byte) string {
	return fmt.Sprintf("<< %s /Length %d >>\nstream\n%s\nendstream", dict, len(data), data)
}

func (p testPDF) bytes() []byte {
	objs := slices.Clone(p.objs)
	if len(p.packed) > 0 {
		var head, body strings.Builder
		for _, n := range p.packed {
			fmt.Fprintf(&head, "%d %d ", n, body.Len())
			body.WriteString(objs[n-1] + "\n")
		}
		data := flate([]byte(head.String() + body.String()))
		n := len(p.packed)
		if p.objStmN != 0 {
			n = p.objStmN
		}
		objs[p.packedIn-1] = streamObj(fmt.Sprintf("/Type /ObjStm /N %d /First %d /Filter /FlateDecode", n, head.Len()), data)
	}
	var b bytes.Buffer
	b.WriteString("%PDF-1.5\n")
	offsets := make([]int, len(objs)+1)
	for i, o := range objs {
		if slices.Contains(p.packed, i+1) {
			continue
		}
		offsets[i+1] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	if !p.xrefStream && len(p.packed) == 0 {
		fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
		for _, off := range offsets[1:] {
			fmt.Fprintf(&b, "%010d 00000 n \n", off)
		}
		fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R %s >>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, p.trailer, xref)
		return b.Bytes()
	}
	self := len(objs) + 1
	var entries []byte
	entries = append(entries, 0, 0, 0, 0, 0, 0xFF, 0xFF)
	for n := 1; n <= len(objs); n++ {
		if i := slices.Index(p.packed, n); i >= 0 {
			entries = append(entries, 2)
			entries = binary.BigEndian.AppendUint32(entries, uint32(p.packedIn))
			entries = binary.BigEndian.AppendUint16(entries, uint16(i))
		} else {
			entries = append(entries, 1)
			entries = binary.BigEndian.AppendUint32(entries, uint32(offsets[n]))
			entries = binary.BigEndian.AppendUint16(entries, 0)
		}
	}
	entries = append(entries, 1)
	entries = binary.BigEndian.AppendUint32(entries, uint32(xref))
	entries = binary.BigEndian.AppendUint16(entries, 0)
	dict := p.xrefDict
	if dict == "" {
		dict = fmt.Sprintf("/Size %d /W [1 4 2]", self+1)
	}
	fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", self, streamObj("/Type /XRef /Root 1 0 R "+dict+" "+p.trailer, entries))
	fmt.Fprintf(&b, "startxref\n%d\n%%%%EOF\n", xref)
	return b.Bytes()
}

// onePage is a catalog, a page tree, one page with content, and a font.
func onePage(content string) []string {
	return []string{
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>",
		streamObj("/Filter /FlateDecode", flate([]byte(content))),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	}
}

// loadPDFWithin loads b, failing the test if that takes over 10 seconds
// (the reader looped on some of these files forever).
func loadPDFWithin(t *testing.T, b []byte) ([]Document, error) {
	t.Helper()
	type result struct {
		docs []Document
		err  error
	}
	done := make(chan result, 1)
	go func() {
		docs, err := PDF("hostile.pdf", bytes.NewReader(b), int64(len(b)))
		done <- result{docs, err}
	}()
	select {
	case r := <-done:
		return r.docs, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("PDF did not return within 10 s")
		return nil, nil
	}
}

// The files the builder writes load, in both cross-reference forms.
func TestTestPDFsLoad(t *testing.T) {
	for _, p := range []testPDF{
		{objs: onePage("BT /F1 12 Tf (Hello in a table) Tj ET")},
		{objs: onePage("BT /F1 12 Tf (Hello in a stream) Tj ET"), xrefStream: true},
		{objs: append(onePage("BT /F1 12 Tf (Hello packed) Tj ET"), ""), packed: []int{1, 2, 3, 5}, packedIn: 6},
	} {
		docs, err := loadPDFWithin(t, p.bytes())
		require.NoError(t, err)
		require.Len(t, docs, 1)
		assert.Contains(t, docs[0].Text, "Hello")
	}
}

// Every way this package knows to crash, hang or exhaust the reader is an
// error naming what is wrong.
func TestLoadPDFRefusesHostileFiles(t *testing.T) {
	deep := func(n int, open, close string) string { return strings.Repeat(open, n) + strings.Repeat(close, n) }
	pages := onePage("BT /F1 12 Tf (x) Tj ET")
	withKids := func(kids string) []string {
		o := slices.Clone(pages)
		o[1] = "<< /Type /Pages /Kids " + kids + " /Count 1 >>"
		return o
	}
	cases := []struct {
		name string
		file []byte
		want string
	}{{
		// A 10 MB file of nested arrays overflowed the reader's stack,
		// which killed the process.
		name: "arrays nested five million deep",
		file: testPDF{objs: withKids("[3 0 R " + deep(5_000_000, "[", "]") + "]")}.bytes(),
		want: "arrays and dictionaries nest deeper than 1000",
	}, {
		// The same, hidden from a reading from the start inside a stream's
		// data, where the cross-reference table points: the reader parses
		// it, and pdfGuard stops it.
		name: "arrays nested deep where only the cross-reference table points",
		file: func() []byte {
			hidden := "7 0 obj\n" + deep(1_000_000, "[", "]") + "\nendobj\n"
			o := withKids("[3 0 R 7 0 R]")
			o = append(o, streamObj("", []byte(hidden)), "null")
			b := testPDF{objs: o}.bytes()
			at := bytes.Index(b, []byte(hidden))
			entry := bytes.LastIndex(b, []byte(" 00000 n \n"))
			require.Positive(t, at)
			return slices.Concat(b[:entry-10], fmt.Appendf(nil, "%010d", at), b[entry:])
		}(),
		want: "malformed PDF: objects nest deeper than 1000",
	}, {
		name: "dictionaries nested deep",
		file: testPDF{objs: withKids("[3 0 R] /X " + deep(100_000, "<< /A ", ">>"))}.bytes(),
		want: "nest deeper than 1000",
	}, {
		name: "object definitions nested deep in an object stream",
		file: testPDF{objs: append(withKids("[3 0 R] /X 6 0 R"), strings.Repeat("6 0 obj ", 100_000), ""),
			packed: []int{6}, packedIn: 7}.bytes(),
		want: "object stream 7: object at byte",
	}, {
		name: "arrays nested deep in a compressed content stream",
		file: testPDF{objs: onePage("BT " + deep(1_000_000, "[", "]") + " TJ ET")}.bytes(),
		want: "page 1: contents: objects nest deeper than 1000 at byte 1003",
	}, {
		// The reader appended to the array forever and ran out of memory.
		name: "an array left open at the end of a content stream",
		file: testPDF{objs: onePage("BT /F1 12 Tf [(Hello) -20 (world)")}.bytes(),
		want: "page 1: contents: an array is still open at the end",
	}, {
		name: "a ToUnicode CMap that asks for a billion characters",
		file: testPDF{objs: func() []string {
			o := slices.Clone(pages)
			o[4] = "<< /Type /Font /Subtype /Type0 /BaseFont /X /Encoding /Identity-H /ToUnicode 6 0 R >>"
			return append(o, streamObj("/Filter /FlateDecode", flate([]byte("/CIDInit /ProcSet findresource begin begincmap 1000000000 beginbfchar endbfchar endcmap"))))
		}()}.bytes(),
		want: "page 1: ToUnicode CMap of font F1: a CMap count of 1000000000",
	}, {
		// The reader resolved the object stream's own entry, which pointed
		// to the object stream, until the stack overflowed.
		name: "an object stream stored in itself",
		file: func() []byte {
			b := testPDF{objs: append(slices.Clone(pages), ""), packed: []int{1, 2}, packedIn: 6}.bytes()
			// Make object 6's own entry say it is in object stream 6.
			return rewriteXrefEntry(t, b, 6, 2, 6)
		}(),
		want: "is in object stream 6, which is itself in object stream 6",
	}, {
		name: "a cross-reference stream claiming a billion objects",
		file: testPDF{objs: pages, xrefStream: true, xrefDict: "/Size 1000000000 /W [1 4 2]"}.bytes(),
		want: "/Size 1000000000: more objects than a file of",
	}, {
		name: "a cross-reference table starting at object four billion",
		file: func() []byte {
			b := testPDF{objs: pages}.bytes()
			return bytes.Replace(b, []byte("xref\n0 6\n"), []byte("xref\n4000000000 6\n"), 1)
		}(),
		want: "section of 6 objects from 4000000000",
	}, {
		name: "a cross-reference stream with 2 GiB entries",
		file: testPDF{objs: pages, xrefStream: true, xrefDict: "/Size 7 /W [1 2147483647 2]"}.bytes(),
		want: "field widths must be 0 to 8 bytes",
	}, {
		name: "an object stream of a billion objects",
		file: testPDF{objs: append(slices.Clone(pages), ""), packed: []int{1, 2}, packedIn: 6, objStmN: 1_000_000_000}.bytes(),
		want: "/N 1000000000: more objects than a file of",
	}, {
		name: "a page tree whose kids lead back to it",
		file: testPDF{objs: withKids("[3 0 R 2 0 R]")}.bytes(),
		want: "",
	}, {
		name: "a PNG predictor four billion bytes wide",
		file: testPDF{objs: func() []string {
			o := slices.Clone(pages)
			o[3] = streamObj("/Filter /FlateDecode /DecodeParms << /Predictor 12 /Columns 4000000000 >>", flate([]byte("BT ET")))
			return o
		}()}.bytes(),
		want: "/Columns 4000000000: rows wider than",
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := loadPDFWithin(t, c.file)
			require.Error(t, err)
			t.Log(err)
			assert.Contains(t, err.Error(), "load pdf hostile.pdf: ")
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

// rewriteXrefEntry sets object num's entry in the cross-reference stream
// (W [1 4 2], from object 0) to type typ in field f2.
func rewriteXrefEntry(t *testing.T, b []byte, num int, typ byte, f2 uint32) []byte {
	t.Helper()
	x := bytes.LastIndex(b, []byte("/Type /XRef"))
	i := bytes.Index(b[x:], []byte(">>\nstream\n"))
	require.Positive(t, i)
	at := x + i + len(">>\nstream\n") + 7*num
	b = slices.Clone(b)
	b[at] = typ
	binary.BigEndian.PutUint32(b[at+1:], f2)
	return b
}

// A size that does not match the file, and a file cut short or followed
// by more than the reader looks past, are reported as what they are: the
// PDF reader says "missing %%EOF" for all of them.
func TestLoadPDFSaysSizeProblems(t *testing.T) {
	b := makePDF("Hello")
	eof := bytes.LastIndex(b, []byte("%%EOF")) + len("%%EOF")
	for _, c := range []struct {
		name string
		data []byte
		size int64
		want string
	}{
		{"smaller", b, int64(len(b)) - 40, fmt.Sprintf("size: %d is less than the input: there is data at byte %d", len(b)-40, len(b)-40)},
		{"larger", b, int64(len(b)) + 10, fmt.Sprintf("size: %d is more than the input holds", len(b)+10)},
		{"truncated", b[:len(b)-40], int64(len(b)) - 40, "no %%EOF at its end: the file is cut short"},
		{"trailing", append(slices.Clone(b), bytes.Repeat([]byte("x"), 200)...), int64(len(b)) + 200, fmt.Sprintf("last %%%%EOF ends at byte %d, %d bytes before the end", eof-1, len(b)+200-eof)},
		{"tiny", b[:60], 60, "60 bytes is too short for a PDF"},
	} {
		_, err := PDF("m.pdf", bytes.NewReader(c.data), c.size)
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
		assert.NotContains(t, err.Error(), "missing %%EOF", c.name)
	}
}

// The other loaders that take a size say the same of it: a ZIP reader
// given too small a size says "not a valid zip file".
func TestLoadDOCXSaysSizeProblems(t *testing.T) {
	b := makeDOCX(t, "Hello")
	_, err := DOCX("d.docx", bytes.NewReader(b), int64(len(b))-10)
	assert.ErrorContains(t, err, fmt.Sprintf("load docx d.docx: size: %d is less than the input", len(b)-10))
	_, err = DOCX("d.docx", bytes.NewReader(b), int64(len(b))+10)
	assert.ErrorContains(t, err, fmt.Sprintf("load docx d.docx: size: %d is more than the input holds", len(b)+10))
}

func TestLoadMarkdownTitleIsFirstHeading(t *testing.T) {
	docs, err := Markdown("guide.md", strings.NewReader("intro\n\n```\n# not a heading\n```\n\nSetext Title\n===\n\n## Next\n"))
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, "Setext Title", docs[0].Title)
	assert.Equal(t, "markdown", docs[0].Metadata["format"])
}

func TestLoadHTMLKeepsVisibleTextByBlock(t *testing.T) {
	page := `<html><head><title>Quota  guide</title><style>p{}</style></head>
<body><script>var x = "hidden";</script><h1>Quotas</h1><p>A team gets <b>8 GPUs</b>.</p><ul><li>one</li><li>two</li></ul></body></html>`
	docs, err := HTML("q.html", strings.NewReader(page))
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, "Quota guide", docs[0].Title)
	assert.Equal(t, "Quotas\nA team gets 8 GPUs.\none\ntwo", docs[0].Text)
}

func TestLoadCSVOneDocumentPerRowWithLines(t *testing.T) {
	in := "name,team,note\nqwen,nlp,\"chat model,\nmultiline\"\nbge,search,embeddings\n"
	docs, err := CSV("models.csv", strings.NewReader(in), "team")
	require.NoError(t, err)
	require.Len(t, docs, 2)
	assert.Equal(t, "name: qwen\nteam: nlp\nnote: chat model,\nmultiline", docs[0].Text)
	assert.Equal(t, "nlp", docs[0].Metadata["team"])
	assert.Equal(t, 0, docs[0].Offset, "the text is rebuilt from the row: offsets count in it")
	assert.Equal(t, "2", docs[0].Metadata["line"])
	assert.Equal(t, "4", docs[1].Metadata["line"])
	assert.Equal(t, "2", docs[1].Metadata["row"])
	assert.Equal(t, "models.csv line 4", docs[1].Title)

	_, err = CSV("models.csv", strings.NewReader(in), "owner", "size")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"owner"`)
	assert.Contains(t, err.Error(), `"size"`)
}

func TestLoadJSONL(t *testing.T) {
	in := "{\"text\":\"first\",\"title\":\"One\",\"lang\":\"en\",\"n\":3}\n\n{\"text\":\"second\"}\n"
	docs, err := JSONL("d.jsonl", strings.NewReader(in), "")
	require.NoError(t, err)
	require.Len(t, docs, 2)
	assert.Equal(t, "One", docs[0].Title)
	assert.Equal(t, map[string]string{"format": "jsonl", "lang": "en", "n": "3", "line": "1"}, docs[0].Metadata)
	assert.Equal(t, "3", docs[1].Metadata["line"])
	assert.Equal(t, []string{"d.jsonl", "d.jsonl"}, []string{docs[0].Source, docs[1].Source}, "lines without an id share the file's source")

	_, err = JSONL("d.jsonl", strings.NewReader("[1]\n{\"body\":1}\n"), "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "line 1")
	assert.Contains(t, err.Error(), "line 2: text: required")
}

func TestLoadDOCX(t *testing.T) {
	b := makeDOCX(t, "#Runbook", "Restart the pod.", "Then check the logs & metrics.")
	docs, err := DOCX("run.docx", bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, "Runbook", docs[0].Title)
	assert.Equal(t, "Runbook\nRestart the pod.\nThen check the logs & metrics.", docs[0].Text)

	_, err = DOCX("bad.docx", bytes.NewReader([]byte("PK no zip")), 9)
	assert.ErrorContains(t, err, "load docx bad.docx")
}

func TestLoadPDFOneDocumentPerPage(t *testing.T) {
	b := makePDF("Hello from page one", "Second page text")
	docs, err := PDF("m.pdf", bytes.NewReader(b), int64(len(b)))
	require.NoError(t, err)
	require.Len(t, docs, 2)
	assert.Equal(t, 1, docs[0].Page)
	assert.Contains(t, docs[0].Text, "Hello from page one")
	assert.Equal(t, 2, docs[1].Page)
	assert.Contains(t, docs[1].Text, "Second page text")

	_, err = PDF("junk.pdf", bytes.NewReader([]byte("%PDF-1.4 junk")), 13)
	assert.ErrorContains(t, err, "load pdf junk.pdf")
}

func TestLoadersRequireASource(t *testing.T) {
	_, err := Text(" ", strings.NewReader("x"))
	assert.ErrorContains(t, err, "source: required")
	_, err = Text("a.txt", nil)
	assert.ErrorContains(t, err, "nil reader")
	_, err = Text("bin", bytes.NewReader([]byte{0xff, 0xfe}))
	assert.ErrorContains(t, err, "not UTF-8")
	_, err = PDF("p.pdf", nil, 0)
	assert.ErrorContains(t, err, "nil reader")
}

func TestLoadDirWalksKnownFormatsAndReportsEveryFailure(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		require.NoError(t, writeFile(dir, name, []byte(body)))
	}
	write("a.md", "# A\ntext")
	write("sub/b.txt", "bee")
	write("sub/c.jsonl", "not json\n")
	write("sub/d.csv", "x\n\"unterminated\n")
	write(".hidden/e.txt", "hidden")
	write("f.bin", "ignored")
	docs, err := Dir(t.Context(), dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "load jsonl sub/c.jsonl")
	assert.Contains(t, err.Error(), "load csv sub/d.csv")
	var sources []string
	for _, d := range docs {
		sources = append(sources, d.Source)
	}
	assert.Equal(t, []string{"a.md", "sub/b.txt"}, sources)
}

func TestLoadJSONLLinesWithAnIDAreTheirOwnSources(t *testing.T) {
	in := `{"id":"a-1","text":"first"}` + "\n" + `{"_id":7,"text":"second"}` + "\n" +
		`{"doc_id":"x","id":12345678901234567890,"text":"third"}` + "\n" + `{"id":true,"text":"no id"}` + "\n" +
		`{"id":"","text":"empty id"}` + "\n" + `{"text":"plain"}`
	docs, err := JSONL("d.jsonl", strings.NewReader(in), "")
	require.NoError(t, err)
	var sources []string
	for _, d := range docs {
		sources = append(sources, d.Source)
	}
	assert.Equal(t, []string{"d.jsonl#a-1", "d.jsonl#7", "d.jsonl#12345678901234567890", "d.jsonl", "d.jsonl", "d.jsonl"}, sources,
		"the id keys in order; a large number keeps every digit; a boolean or empty id is no id")
}

// TestLoadJSONLOffsetsCountInTheDecodedText splits a line whose text has
// escapes: the file does not hold the text byte for byte, so a chunk's
// offsets must index the document's Text, which they do.
func TestLoadJSONLOffsetsCountInTheDecodedText(t *testing.T) {
	in := `{"text":"caf\u00e9 \"quoted\"\nsecond line"}` + "\n"
	docs, err := JSONL("d.jsonl", strings.NewReader(in), "")
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, "café \"quoted\"\nsecond line", docs[0].Text)
	assert.Equal(t, 0, docs[0].Offset)
}

// TestLoadStreamsLargeText reads text and Markdown past the piece size:
// no refusal, pieces cut at line ends (Markdown before a heading) whose
// offsets put them back together into the file.
func TestLoadStreamsLargeText(t *testing.T) {
	defer func(n int) { pieceSize = n }(pieceSize)
	pieceSize = 64
	var b strings.Builder
	for i := 0; b.Len() < 1000; i++ {
		fmt.Fprintf(&b, "# Part %d\n\nThe quota of team %d is %d GPUs, é.\n\n", i, i, i%8)
	}
	in := b.String()
	for _, load := range []func(string, io.Reader) ([]Document, error){Text, Markdown} {
		docs, err := load("big", strings.NewReader(in))
		require.NoError(t, err)
		require.Greater(t, len(docs), 10)
		var joined strings.Builder
		for _, d := range docs {
			require.LessOrEqual(t, len(d.Text), pieceSize)
			require.Equal(t, joined.Len(), d.Offset)
			require.True(t, strings.HasSuffix(d.Text, "\n"), "%q", d.Text)
			joined.WriteString(d.Text)
		}
		assert.Equal(t, in, joined.String())
		if docs[0].Metadata["format"] == "markdown" {
			for _, d := range docs {
				assert.Equal(t, "Part 0", d.Title)
				assert.True(t, strings.HasPrefix(d.Text, "# Part"), "%q", d.Text)
			}
		}
	}
	// A line longer than a piece is cut inside it, never inside a character.
	docs, err := Text("long", strings.NewReader(strings.Repeat("é", 100)))
	require.NoError(t, err)
	for _, d := range docs {
		assert.True(t, utf8.ValidString(d.Text))
	}
}

// TestLoadRefusesOnlyARecordOverTheLimit streams a JSON lines file and a
// CSV file whose second record is larger than MaxFileSize.
func TestLoadRefusesOnlyARecordOverTheLimit(t *testing.T) {
	huge := strings.Repeat("x", MaxFileSize+1)
	_, err := JSONL("d.jsonl", io.MultiReader(strings.NewReader(`{"text":"ok"}`+"\n"+`{"text":"`), strings.NewReader(huge)), "")
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "line 2")
	_, err = CSV("d.csv", io.MultiReader(strings.NewReader("a\nok\n"), strings.NewReader(huge)))
	require.ErrorIs(t, err, ErrTooLarge)
}
