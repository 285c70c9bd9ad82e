package load

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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
