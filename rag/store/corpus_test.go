package store

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cubestudio/cube/internal/testsupport/ci"
	"github.com/cubestudio/cube/rag/embed"
	"github.com/cubestudio/cube/rag/internal/lex"
	"github.com/stretchr/testify/require"
)

// goCorpus returns up to n chunks of real text from the Go distribution
// this test runs with: $GOROOT/doc and the doc comments of $GOROOT/src
// first, then, to reach n, its code, cut at line ends into pieces of about
// 600 bytes. The source is the file's path relative to GOROOT, the title
// its base name.
func goCorpus(t testing.TB, n int) []Chunk {
	t.Helper()
	corpusMu.Lock()
	defer corpusMu.Unlock()
	if len(corpusAll) < n && !corpusFull {
		root := runtimeGOROOT()
		if _, err := os.Stat(filepath.Join(root, "src", "go", "doc")); err != nil {
			ci.Skip(t, "the Go distribution's sources ($GOROOT/src), the benchmark's text")
		}
		var prose, code []Chunk
		add := func(dst *[]Chunk, rel string, lines []string) {
			var b strings.Builder
			part := 0
			flush := func() {
				if len(lex.Terms(b.String())) >= 5 {
					*dst = append(*dst, Chunk{ID: fmt.Sprintf("%s#%d", rel, part), Source: rel, Title: filepath.Base(rel), Text: b.String()})
					part++
				}
				b.Reset()
			}
			for _, l := range lines {
				if b.Len()+len(l) > 600 && b.Len() > 0 {
					flush()
				}
				b.WriteString(l)
				b.WriteByte('\n')
			}
			flush()
		}
		_ = filepath.WalkDir(filepath.Join(root, "doc"), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			b, err := os.ReadFile(p)
			if err == nil {
				rel, _ := filepath.Rel(root, p)
				add(&prose, rel, strings.Split(string(b), "\n"))
			}
			return nil
		})
		_ = filepath.WalkDir(filepath.Join(root, "src"), func(p string, d fs.DirEntry, err error) error {
			if len(prose) >= n {
				return fs.SkipAll // enough for a small corpus: prose only
			}
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.Contains(p, "testdata") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			var comments, rest []string
			for _, l := range strings.Split(string(b), "\n") {
				if c, ok := strings.CutPrefix(strings.TrimSpace(l), "//"); ok {
					comments = append(comments, strings.TrimSpace(c))
				} else if strings.TrimSpace(l) != "" {
					rest = append(rest, l)
				}
			}
			add(&prose, rel, comments)
			add(&code, rel+"(code)", rest)
			return nil
		})
		corpusFull = len(prose) < n
		corpusAll = append(prose, code...)
		// IDs are unique: a file's prose and code parts differ in source.
	}
	return corpusAll[:min(n, len(corpusAll))]
}

var (
	corpusMu   sync.Mutex
	corpusAll  []Chunk
	corpusFull bool // the walk read every file
)

func runtimeGOROOT() string {
	if r := os.Getenv("GOROOT"); r != "" {
		return r
	}
	return runtime.GOROOT()
}

// embedChunks embeds texts with rag/embed's default offline embedder, on
// every core.
func embedChunks(t testing.TB, texts []string) [][]float32 {
	t.Helper()
	e := embed.HashedFeatures(384)
	out := make([][]float32, len(texts))
	parallel(len(texts), func(i int) {
		vs, err := e.Embed(context.Background(), texts[i:i+1])
		if err != nil {
			panic(err)
		}
		out[i] = vs[0]
	})
	return out
}

// corpusQueries draws q short questions from the corpus: 2 to 5 words
// (not stop words) of a random chunk, in order.
func corpusQueries(chunks []Chunk, q int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 11))
	var out []string
	for len(out) < q {
		c := chunks[r.IntN(len(chunks))]
		var ws []string
		for _, w := range lex.Terms(c.Text) {
			if !lex.Stop(w) && len(w) > 2 {
				ws = append(ws, w)
			}
		}
		if len(ws) < 3 {
			continue
		}
		start := r.IntN(len(ws))
		n := 2 + r.IntN(4)
		pick := ws[start:min(len(ws), start+n)]
		if len(pick) < 2 {
			continue
		}
		out = append(out, strings.Join(slices.Clone(pick), " "))
	}
	return out
}

// The default HNSW parameters find at least 0.94 of the exact top 10 on
// real text embedded with the default offline embedder (6,000 chunks of
// Go's documentation and comments, queries drawn from them), the graph
// built in parallel in the background while the store is written. The
// parallel build links nodes in whatever order the workers reach them,
// so the recall differs from one build to the next: 0.949 to 0.962 over
// seven builds of this corpus (2026-12-06), one of them in CI below the
// bar of 0.95 this test had. The bar sits under that spread; a graph
// whose neighbour selection or search broke falls far below it.
func TestHNSWRecallOnRealTextEmbeddings(t *testing.T) {
	n := 6_000
	if testing.Short() {
		n = 3_000
	}
	chunks := goCorpus(t, n)
	require.Len(t, chunks, n)
	texts := make([]string, len(chunks))
	for i, c := range chunks {
		texts[i] = c.Text
	}
	vecs := embedChunks(t, texts)
	s := openLocal(t, t.TempDir(), NoSync(), ExactBelow(1000))
	ctx := t.Context()
	for i := 0; i < n; i += 2000 {
		recs := make([]Record, 0, 2000)
		for j := i; j < min(n, i+2000); j++ {
			recs = append(recs, Record{Chunk: chunks[j], Vector: vecs[j]})
		}
		require.NoError(t, s.Upsert(ctx, recs...))
	}
	require.NoError(t, s.BuildIndex())
	st, err := s.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, IndexReady, st.Index)
	require.Equal(t, n, st.Indexed)
	qs := corpusQueries(chunks, 200, 1)
	qv := embedChunks(t, qs)
	total := 0.0
	for _, q := range qv {
		exact, err := s.SearchExact(ctx, q, 10, nil)
		require.NoError(t, err)
		approx, err := s.SearchVector(ctx, q, 10, nil)
		require.NoError(t, err)
		total += recallTies(exact, approx)
	}
	recall := total / float64(len(qv))
	t.Logf("recall@10 %.3f over %d chunks (efSearch %d)", recall, n, s.params.EfSearch)
	require.GreaterOrEqual(t, recall, 0.94)
}

// recallTies is recall@k that counts a hit tied with the exact k-th (real
// text has duplicate chunks, whose vectors are equal) as found: which of
// equal chunks the exact scan keeps is arbitrary.
func recallTies(exact, approx []Hit) float64 {
	if len(exact) == 0 {
		return 1
	}
	want := map[string]bool{}
	for _, h := range exact {
		want[h.Chunk.ID] = true
	}
	kth := exact[len(exact)-1].Score
	n := 0
	for _, h := range approx {
		if want[h.Chunk.ID] || h.Score >= kth-1e-6 {
			n++
		}
	}
	return float64(min(n, len(exact))) / float64(len(exact))
}
