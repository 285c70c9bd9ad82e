package rag

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/cubestudio/cube/rag/embed"
	"github.com/cubestudio/cube/rag/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// faqPair is one question of an upstream FAQ and the answer under it.
type faqPair struct{ question, answer string }

var zlibQuestion = regexp.MustCompile(`^ ?\d+\. (.*)`)

// parseFAQ reads the XZ Utils FAQ ("Q:" and "A:" blocks) or the zlib FAQ
// ("N. question", the answer after the next blank line).
func parseFAQ(t *testing.T, path string) []faqPair {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var pairs []faqPair
	var q, a []string
	inAnswer := false
	flush := func() {
		if len(q) > 0 && len(a) > 0 {
			pairs = append(pairs, faqPair{strings.Join(strings.Fields(strings.Join(q, " ")), " "), strings.TrimSpace(strings.Join(a, "\n"))})
		}
		q, a, inAnswer = nil, nil, false
	}
	xz := strings.HasSuffix(path, "xz-faq.txt")
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case xz && strings.HasPrefix(line, "Q:"):
			flush()
			q = append(q, strings.TrimPrefix(line, "Q:"))
		case xz && strings.HasPrefix(line, "A:"):
			inAnswer = true
			a = append(a, strings.TrimPrefix(line, "A:"))
		case !xz && zlibQuestion.MatchString(line):
			flush()
			q = append(q, zlibQuestion.FindStringSubmatch(line)[1])
		case len(q) == 0:
			// the title and preamble
		case inAnswer:
			a = append(a, line)
		case strings.TrimSpace(line) == "":
			inAnswer = !xz // zlib: the answer starts after the blank line
		default:
			q = append(q, line) // the question goes on
		}
	}
	flush()
	return pairs
}

// TestRetrievalQualityOnUpstreamFAQs measures recall@10 and MRR on two
// FAQs that their projects wrote (testdata/faq): every answer is a
// document, every question a query, and the one relevant document of a
// question is the answer written under it. A chunk counts for the
// document it came from; a document's rank is that of its first chunk.
func TestRetrievalQualityOnUpstreamFAQs(t *testing.T) {
	var pairs []faqPair
	for _, f := range []string{"testdata/faq/xz-faq.txt", "testdata/faq/zlib-faq.txt"} {
		pairs = append(pairs, parseFAQ(t, f)...)
	}
	require.Equal(t, 62, len(pairs), "18 XZ and 44 zlib questions")
	assert.Equal(t, "What do the letters XZ mean?", pairs[0].question)
	assert.True(t, strings.HasPrefix(pairs[0].answer, "Nothing. They are just two letters"), pairs[0].answer)
	assert.Equal(t, "Is zlib Y2K-compliant?", pairs[18].question)
	assert.Equal(t, "Yes. zlib doesn't handle dates.", pairs[18].answer)
	kb := New("faq", openLocal(t, t.TempDir(), store.NoSync()), embed.HashedFeatures(384))
	docs := make([]Document, len(pairs))
	for i, p := range pairs {
		docs[i] = Document{Source: fmt.Sprintf("faq-%02d", i), Text: p.answer}
	}
	_, err := kb.Ingest(t.Context(), docs...)
	require.NoError(t, err)

	type result struct{ recall, mrr float64 }
	runs := []struct {
		name string
		opts []QueryOption
	}{
		{"bm25", []QueryOption{Keyword}},
		{"vector", []QueryOption{Vector}},
		{"hybrid", []QueryOption{Hybrid}},
		{"hybrid 1:2", []QueryOption{Hybrid, RRF(1, 2, DefaultRRFK)}},
	}
	results := map[string]result{}
	for _, run := range runs {
		var r result
		for i, p := range pairs {
			hits, err := kb.Retrieve(t.Context(), p.question, append(run.opts, TopK(30))...)
			require.NoError(t, err)
			want := fmt.Sprintf("faq-%02d", i)
			seen := map[string]bool{}
			rank := 0
			for _, h := range hits {
				if seen[h.Chunk.Source] {
					continue
				}
				seen[h.Chunk.Source] = true
				rank++
				if h.Chunk.Source == want {
					if rank <= 10 {
						r.recall++
					}
					r.mrr += 1 / float64(rank)
					break
				}
				if rank == 10 {
					break
				}
			}
		}
		r.recall /= float64(len(pairs))
		r.mrr /= float64(len(pairs))
		results[run.name] = r
		t.Logf("%-10s recall@10 %.3f  MRR@10 %.3f  (%d questions)", run.name, r.recall, r.mrr, len(pairs))
	}
	// Floors a little under the measured figures (see doc.go), so a
	// regression fails while the numbers stay honest.
	assert.GreaterOrEqual(t, results["bm25"].recall, 0.70)
	assert.GreaterOrEqual(t, results["vector"].recall, 0.60)
	assert.GreaterOrEqual(t, results["hybrid"].recall, 0.65)
	assert.GreaterOrEqual(t, results["bm25"].mrr, 0.45)
}
