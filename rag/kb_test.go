package rag

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/rag/embed"
	"github.com/cubestudio/cube/rag/split"
)

// corpusDir is the small corpus examples/rag bundles; cube's own writing.
const corpusDir = "../examples/rag/corpus"

func openCorpusKB(t *testing.T) *KnowledgeBase {
	t.Helper()
	kb, err := OpenLibrary(t.TempDir()).Open("platform", "handbook", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = kb.Close() })
	rep, err := kb.IngestDir(t.Context(), corpusDir)
	require.NoError(t, err)
	require.Equal(t, 5, rep.Sources, "5 files; the CSV's 3 rows are one source")
	return kb
}

func TestKnowledgeBaseRetrievesByEachMode(t *testing.T) {
	kb := openCorpusKB(t)
	ctx := t.Context()
	for _, mode := range []Mode{Hybrid, Vector, Keyword} {
		hits, err := kb.Retrieve(ctx, "how many GPUs does a team get by default", mode, TopK(3))
		require.NoError(t, err, mode)
		require.NotEmpty(t, hits, mode)
		assert.Equal(t, "gpu-quotas.md", hits[0].Chunk.Source, mode)
		if mode == Vector { // BM25 prefers "Checking usage": "how many GPUs the team uses"; the default hybrid leans to BM25 (Blend 0.4:0.6)
			assert.Equal(t, "GPU quotas", hits[0].Chunk.Section, mode)
		}
	}
	hits, err := kb.Retrieve(ctx, "mounted read-only datasets", TopK(1))
	require.NoError(t, err)
	assert.Equal(t, "runbooks/storage.html", hits[0].Chunk.Source)
	assert.Equal(t, "Shared storage", hits[0].Chunk.Title)

	hits, err = kb.Retrieve(ctx, "GPU", Where(Filter{"source": "teams.csv", "team": "vision"}), Keyword)
	require.NoError(t, err)
	assert.Empty(t, hits, "the CSV rows keep no team metadata: load.Dir keeps no columns")

	hits, err = kb.Retrieve(ctx, "GPU", Where(Filter{"section": "GPU quotas > Fractional GPUs"}))
	require.NoError(t, err)
	require.Len(t, hits, 1)
	assert.Contains(t, hits[0].Chunk.Text, "HAMi")

	hits, err = kb.Retrieve(ctx, "zebra xylophone", Keyword)
	require.NoError(t, err)
	assert.Empty(t, hits)
	hits, err = kb.Retrieve(ctx, "canary", MinScore(0.5), Vector)
	require.NoError(t, err)
	for _, h := range hits {
		assert.GreaterOrEqual(t, h.Score, 0.5)
	}
}

func TestRetrieveValidatesEveryOption(t *testing.T) {
	kb := openCorpusKB(t)
	_, err := kb.Retrieve(t.Context(), "x", TopK(0), Mode(9), RRF(-1, 0, -2), Candidates(-1),
		MinSimilarity(2), Where(Filter{"": "v"}))
	require.Error(t, err)
	for _, want := range []string{"topK: 0", "mode: Mode(9)", "rrf: weights -1 and 0", "rrf: k -2", "candidates: -1", "minSimilarity: 2", "where: filter"} {
		assert.Contains(t, err.Error(), want)
	}
	var nilKB *KnowledgeBase
	_, err = nilKB.Retrieve(t.Context(), "x")
	assert.ErrorContains(t, err, "nil")
	_, err = New("", nil, nil).Ingest(t.Context())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "name: required")
	assert.Contains(t, err.Error(), "store: required")
	assert.Contains(t, err.Error(), "embedder: required")
}

func TestFuseWeighsRanks(t *testing.T) {
	h := func(id string) Hit { return Hit{Chunk: Chunk{ID: id}} }
	got := fuse([]Hit{h("a"), h("b"), h("c")}, []Hit{h("c"), h("d")}, 1, 1, 60)
	assert.Equal(t, []string{"c", "a", "b", "d"}, hitIDs(got))
	assert.InDelta(t, 1.0/63+1.0/61, got[0].Score, 1e-12)
	// Weighting keywords 3:1 puts the keyword list's second above the vector list's first.
	got = fuse([]Hit{h("a"), h("b")}, []Hit{h("c"), h("d")}, 1, 3, 60)
	assert.Equal(t, []string{"c", "d", "a", "b"}, hitIDs(got))
}

func TestReingestIsIdempotentAndChangesOnlyWhatChanged(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	for name, body := range map[string]string{"a.md": "# A\n\nalpha text", "b.md": "# B\n\nbeta text"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	store := openLocal(t, t.TempDir())
	counting := &countingEmbedder{inner: embed.HashedFeatures(64)}
	kb := New("t/kb", store, counting).Splitter(split.Markdown(split.Recursive(200, 0)))
	rep, err := kb.IngestDir(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, IngestReport{Sources: 2, Added: 2, Embedded: 2}, rep)
	size := store.LogBytes()

	rep, err = kb.IngestDir(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, IngestReport{Sources: 2, Unchanged: 2}, rep)
	assert.Equal(t, size, store.LogBytes(), "an unchanged corpus writes nothing")
	assert.Equal(t, 2, counting.texts)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.md"), []byte("# B\n\nbeta text\n\n## More\n\ngamma"), 0o644))
	rep, err = kb.IngestDir(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, IngestReport{Sources: 2, Unchanged: 1, Added: 1, Embedded: 1}, rep)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.md"), []byte("# B\n\ndelta"), 0o644))
	rep, err = kb.IngestDir(ctx, dir)
	require.NoError(t, err)
	assert.Equal(t, IngestReport{Sources: 2, Unchanged: 1, Added: 1, Deleted: 2, Embedded: 1}, rep)

	srcs, err := kb.Sources(ctx)
	require.NoError(t, err)
	assert.Equal(t, []SourceInfo{{Source: "a.md", Title: "A", Chunks: 1, Bytes: len("# A\n\nalpha text")}, {Source: "b.md", Title: "B", Chunks: 1, Bytes: len("# B\n\ndelta")}}, srcs)
	n, err := kb.DeleteSource(ctx, "a.md")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	st, err := kb.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, Stats{Name: "t/kb", Sources: 1, Chunks: 1, Bytes: len("# B\n\ndelta"), Embedder: "hashed-features-v1-64", Models: []string{"hashed-features-v1-64"}}, st)
}

type countingEmbedder struct {
	inner Embedder
	mu    sync.Mutex
	texts int
}

func (c *countingEmbedder) Model() string { return c.inner.Model() }
func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	c.texts += len(texts)
	c.mu.Unlock()
	return c.inner.Embed(ctx, texts)
}

func TestLibraryNamesAndRemembersTheEmbedder(t *testing.T) {
	root := t.TempDir()
	lib := OpenLibrary(root)
	kb, err := lib.Open("nlp", "docs", nil)
	require.NoError(t, err)
	require.NoError(t, kb.Close())
	_, err = lib.Open("nlp", "docs", embed.HashedFeatures(128))
	assert.ErrorContains(t, err, `embedder: "hashed-features-v1-128", but its chunks were embedded with "hashed-features-v1-384"`)
	kb2, err := lib.Open("vision", "papers", nil)
	require.NoError(t, err)
	require.NoError(t, kb2.Close())
	names, err := lib.List()
	require.NoError(t, err)
	assert.Equal(t, []string{"nlp/docs", "vision/papers"}, names)
	_, err = lib.Open("../x", "Bad Name", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `team: "../x"`)
	assert.Contains(t, err.Error(), `name: "Bad Name"`)
}

func TestExtractiveAnswerCitesItsSources(t *testing.T) {
	kb := openCorpusKB(t)
	a, err := kb.Answer(t.Context(), "What is the default GPU quota per team?")
	require.NoError(t, err)
	assert.True(t, a.Extractive)
	assert.Contains(t, a.Text, "The default quota is 8 GPUs per team; a team lead asks the platform group to raise it. [1]")
	require.NotEmpty(t, a.Citations)
	assert.Equal(t, 1, a.Citations[0].N)
	assert.Equal(t, "gpu-quotas.md", a.Citations[0].Source)
	assert.Equal(t, a.Sources[0].Chunk.ID, a.Citations[0].ChunkID)

	a, err = kb.Answer(t.Context(), "zebra xylophone", Keyword)
	require.NoError(t, err)
	assert.Equal(t, NoAnswer, a.Text)
	assert.Empty(t, a.Citations)
	_, err = kb.Answer(t.Context(), "  ")
	assert.ErrorContains(t, err, "question: required")
}

// chatServer follows the OpenAI /v1/chat/completions API, streaming with
// server-sent events when asked; it answers with reply and keeps the last
// request's messages.
func chatServer(t *testing.T, reply string) (*httptest.Server, *[]openai.ChatCompletionMessage) {
	var mu sync.Mutex
	var last []openai.ChatCompletionMessage
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		var req openai.ChatCompletionRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		mu.Lock()
		last = req.Messages
		mu.Unlock()
		if !req.Stream {
			_ = json.NewEncoder(w).Encode(openai.ChatCompletionResponse{ID: "c1", Object: "chat.completion", Model: req.Model,
				Choices: []openai.ChatCompletionChoice{{Message: openai.ChatCompletionMessage{Role: "assistant", Content: reply}, FinishReason: "stop"}}})
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, word := range strings.SplitAfter(reply, " ") {
			b, _ := json.Marshal(openai.ChatCompletionStreamResponse{ID: "c1", Object: "chat.completion.chunk", Model: req.Model,
				Choices: []openai.ChatCompletionStreamChoice{{Delta: openai.ChatCompletionStreamChoiceDelta{Content: word}}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, &last
}

func TestAnswerThroughAChatModelMapsCitations(t *testing.T) {
	kb := openCorpusKB(t)
	srv, last := chatServer(t, "Teams get 8 GPUs [1], and a slice counts as one GPU [1, 2]. See [9].")
	client, err := inference.NewClient(srv.URL, inference.ServedModel("qwen-chat"))
	require.NoError(t, err)
	kb.Chat(client)
	history := []openai.ChatCompletionMessage{inference.UserMessage("hi"), inference.AssistantMessage("hello")}

	a, err := kb.Answer(t.Context(), "What is the GPU quota?", TopK(2), History(history...))
	require.NoError(t, err)
	assert.False(t, a.Extractive)
	require.Len(t, a.Sources, 2)
	assert.Equal(t, []int{1, 2}, []int{a.Citations[0].N, a.Citations[1].N}, "[9] is out of range and ignored")
	assert.Equal(t, a.Sources[1].Chunk.Source, a.Citations[1].Source)
	msgs := *last
	require.Len(t, msgs, 4)
	assert.Equal(t, SystemPrompt, msgs[0].Content)
	assert.Equal(t, history, msgs[1:3])
	assert.Equal(t, Prompt("What is the GPU quota?", a.Sources), msgs[3].Content)

	var streamed strings.Builder
	sa, err := kb.AnswerStream(t.Context(), "What is the GPU quota?", func(s string) error {
		streamed.WriteString(s)
		return nil
	}, TopK(2))
	require.NoError(t, err)
	assert.Equal(t, a.Text, sa.Text)
	assert.Equal(t, a.Text, streamed.String())
	assert.Equal(t, a.Citations, sa.Citations)
}

func TestRerankEndpoints(t *testing.T) {
	var gotAuth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		var req map[string]any
		_ = json.NewDecoder(r.Body).Decode(&req)
		switch r.URL.Path {
		case "/rerank": // TEI: prefers texts mentioning "canary"
			var out []map[string]any
			for i, tx := range req["texts"].([]any) {
				s := 0.1
				if strings.Contains(tx.(string), "canary") {
					s = 0.9
				}
				out = append(out, map[string]any{"index": i, "score": s})
			}
			_ = json.NewEncoder(w).Encode(out)
		case "/v1/rerank":
			if req["model"] != "bge-reranker" {
				http.Error(w, "model", 400)
				return
			}
			var out []map[string]any
			for i := range req["documents"].([]any) {
				out = append(out, map[string]any{"index": i, "relevance_score": float64(i)})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"results": out})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	kb := openCorpusKB(t)
	hits, err := kb.Retrieve(t.Context(), "model traffic", TopK(1), Rerank(NewReranker(srv.URL, TEIRerank, "").APIKey("s3cret")))
	require.NoError(t, err)
	require.Len(t, hits, 1)
	assert.Contains(t, hits[0].Chunk.Text, "canary")
	assert.InDelta(t, 0.9, hits[0].Score, 1e-9)
	assert.Equal(t, "Bearer s3cret", gotAuth)

	r := NewReranker(srv.URL, CohereRerank, "bge-reranker").APIKey("s3cret")
	scores, err := r.Rerank(t.Context(), "q", []string{"a", "b", "c"})
	require.NoError(t, err)
	assert.Equal(t, []float64{0, 1, 2}, scores)
	assert.NotContains(t, r.String(), "s3cret")

	_, err = NewReranker("ftp://x", RerankAPI(7), "").HTTPClient(nil).Rerank(t.Context(), "q", []string{"a"})
	require.Error(t, err)
	for _, want := range []string{"endpoint: \"ftp://x\"", "api: 7", "httpClient: required"} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = NewReranker(srv.URL+"/nowhere", TEIRerank, "").Rerank(t.Context(), "q", []string{"a"})
	assert.ErrorContains(t, err, "404")

	// A password in the endpoint is refused and never shown, whether the
	// URL parses or not (a port that is no number does not).
	for _, endpoint := range []string{"http://rm:s3cret@reranker:8080", "http://rm:s3cret@reranker:port"} {
		r := NewReranker(endpoint, TEIRerank, "")
		_, err = r.Rerank(t.Context(), "q", []string{"a"})
		require.Error(t, err, endpoint)
		assert.NotContains(t, err.Error(), "s3cret", endpoint)
		assert.NotContains(t, r.String(), "s3cret", endpoint)
	}
}

func TestPromptNumbersSourcesWithWhereTheyComeFrom(t *testing.T) {
	got := Prompt("Who raises it?", []Hit{
		{Chunk: Chunk{Source: "q.md", Section: "Quotas > Raising", Text: "A team lead asks.\n"}},
		{Chunk: Chunk{Source: "m.pdf", Page: 3, Text: "Page text."}},
	})
	assert.Equal(t, "Sources:\n\n[1] q.md — Quotas > Raising\nA team lead asks.\n\n[2] m.pdf, page 3\nPage text.\n\nQuestion: Who raises it?", got)
}

func TestIngestSkipsChunksWithoutWords(t *testing.T) {
	kb := New("t/kb", openLocal(t, t.TempDir()), embed.HashedFeatures(64)).Splitter(split.Markdown(split.Recursive(12, 0)))
	rep, err := kb.Ingest(t.Context(), Document{Source: "a.md", Text: "# Title\n\n---\n\n***\n\nsome words"})
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Added)
	cs, err := kb.Store().List(t.Context(), nil)
	require.NoError(t, err)
	require.Len(t, cs, 2)
	assert.Equal(t, "# Title", cs[0].Text)
	assert.Equal(t, "some words", cs[1].Text)
}
