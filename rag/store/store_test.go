package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/rag/internal/lex"
)

// sourcesReference is BM25 over whole sources the textbook way: each
// source's live chunks matching f concatenated field by field into one
// document, document frequencies counted over sources, every source
// scored and sorted.
func sourcesReference(chunks []Chunk, w KeywordFields, query string, k int, f Filter) []SourceHit {
	w = w.withDefaults()
	tf := map[string]map[string]float64{}
	length := map[string]float64{}
	for _, c := range chunks {
		if tf[c.Source] == nil {
			tf[c.Source] = map[string]float64{}
		}
		for _, field := range []struct {
			text string
			w    float32
		}{{c.Text, w.Text}, {c.Title, w.Title}, {c.Section, w.Section}} {
			if field.w == 0 {
				continue
			}
			for _, t := range lex.Terms(field.text) {
				length[c.Source] += float64(field.w)
				if f.Match(&c) {
					tf[c.Source][t] += float64(field.w)
				}
			}
		}
	}
	total := 0.0
	for _, l := range length {
		total += l
	}
	n := float64(len(length))
	avg := total / n
	scores := map[string]float64{}
	seen := map[string]bool{}
	for _, t := range lex.Terms(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		df := 0.0
		for _, m := range tf {
			if m[t] > 0 {
				df++
			}
		}
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for src, m := range tf {
			if m[t] > 0 {
				scores[src] += idf * m[t] * (bm25K1 + 1) / (m[t] + bm25K1*(1-bm25B+bm25B*length[src]/avg))
			}
		}
	}
	var out []SourceHit
	for src, sc := range scores {
		out = append(out, SourceHit{src, sc})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Source < out[j].Source
	})
	return out[:min(k, len(out))]
}

// Keyword search over whole sources ranks as BM25 over each source's
// chunks put together does, after replacements and deletions, with and
// without a filter and field weights, and after a reopen from the
// checkpoint.
func TestSearchKeywordSourcesIsBM25OverWholeSources(t *testing.T) {
	ctx := t.Context()
	for round := range 4 {
		r := rand.New(rand.NewPCG(uint64(round), 9))
		words := func(n int) string {
			ws := make([]string, n)
			for i := range ws {
				ws[i] = fmt.Sprintf("w%d", r.IntN(80))
			}
			return strings.Join(ws, " ")
		}
		var fields KeywordFields
		if round%2 == 1 {
			fields = KeywordFields{Text: 1, Title: 2, Section: 0.5}
		}
		dir := t.TempDir()
		s, err := Open(dir, NoSync(), Keyword(fields))
		require.NoError(t, err)
		live := map[string]Chunk{}
		var recs []Record
		for i := range 400 {
			c := Chunk{ID: fmt.Sprint("c", i), Source: fmt.Sprint("s", r.IntN(40)), Title: words(2), Section: words(1), Text: words(1 + r.IntN(30)),
				Metadata: map[string]string{"team": fmt.Sprint(r.IntN(2))}}
			recs = append(recs, Record{Chunk: c, Vector: []float32{1, float32(i)}})
			live[c.ID] = c
		}
		require.NoError(t, s.Upsert(ctx, recs...))
		var b Batch
		for i := 0; i < 400; i += 9 {
			c := recs[i].Chunk
			c.Source, c.Text = fmt.Sprint("s", r.IntN(45)), words(8) // moved to another source, maybe a new one
			b.Upsert = append(b.Upsert, Record{Chunk: c, Vector: []float32{2, float32(i)}})
			live[c.ID] = c
			b.Delete = append(b.Delete, recs[i+1].Chunk.ID)
			delete(live, recs[i+1].Chunk.ID)
		}
		require.NoError(t, s.Apply(ctx, b))
		check := func(s *Local) {
			all := make([]Chunk, 0, len(live))
			for _, c := range live {
				all = append(all, c)
			}
			for q := range 40 {
				query, k := words(1+r.IntN(4)), 1+r.IntN(15)
				var f Filter
				if q%3 == 0 {
					f = Filter{"team": "1"}
				}
				got, err := s.SearchKeywordSources(ctx, query, k, f)
				require.NoError(t, err)
				want := sourcesReference(all, fields, query, k, f)
				require.Len(t, got, len(want), "round %d query %q", round, query)
				for i := range want {
					require.Equal(t, want[i].Source, got[i].Source, "round %d query %q filter %v hit %d", round, query, f, i)
					require.InDelta(t, want[i].Score, got[i].Score, 1e-6*want[i].Score)
				}
			}
		}
		check(s)
		require.NoError(t, s.Close())
		s, err = Open(dir, NoSync(), Keyword(fields))
		require.NoError(t, err)
		require.Positive(t, s.stateSaved)
		check(s)
		require.NoError(t, s.Close())
	}
	_, err := (&Local{}).SearchKeywordSources(ctx, "x", 0, nil)
	require.Error(t, err)
}

// checkpointCorpus writes n random chunks (titles, sections, metadata,
// duplicates), then replaces and deletes a tenth of them in a second batch.
func checkpointCorpus(t *testing.T, s *Local, r *rand.Rand, prefix string, n int) {
	t.Helper()
	words := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = fmt.Sprintf("w%d", r.IntN(300))
		}
		return strings.Join(ws, " ")
	}
	var recs []Record
	for i := range n {
		c := Chunk{ID: fmt.Sprintf("%s%04d", prefix, i), Source: fmt.Sprint("s", r.IntN(7)), Title: words(2),
			Section: words(r.IntN(3)), Text: words(1 + r.IntN(40)), Page: r.IntN(3), Start: i, End: i + 10}
		if r.IntN(3) == 0 {
			c.Metadata = map[string]string{"team": fmt.Sprint("t", r.IntN(3)), "lang": "en"}
		}
		recs = append(recs, Record{Chunk: c, Vector: []float32{float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64()), 1}})
	}
	require.NoError(t, s.Upsert(t.Context(), recs...))
	var b Batch
	for i := 0; i < n; i += 10 {
		c := recs[i].Chunk
		c.Text = words(5)
		b.Upsert = append(b.Upsert, Record{Chunk: c, Vector: []float32{1, 2, 3, float32(i)}})
		b.Delete = append(b.Delete, recs[i+1].Chunk.ID)
	}
	require.NoError(t, s.Apply(t.Context(), b))
}

// storeView is what a reader sees of a store: every chunk, keyword hits
// with their scores, exact vector hits, and the statistics.
func storeView(t *testing.T, s *Local) string {
	t.Helper()
	var out strings.Builder
	chunks, err := s.List(t.Context(), nil)
	require.NoError(t, err)
	fmt.Fprintln(&out, chunks)
	for q := range 20 {
		hits, err := s.SearchKeyword(t.Context(), fmt.Sprintf("w%d w%d w%d", q, q*7, q*13), 8, nil)
		require.NoError(t, err)
		for _, h := range hits {
			fmt.Fprintf(&out, "%s %.12g ", h.Chunk.ID, h.Score)
		}
		hits, err = s.SearchExact(t.Context(), []float32{float32(q), 1, -1, 0.5}, 5, Filter{"source": fmt.Sprint("s", q%7)})
		require.NoError(t, err)
		fmt.Fprintln(&out, hitIDs(hits))
	}
	st, err := s.Stats(t.Context())
	require.NoError(t, err)
	fmt.Fprintln(&out, st.Chunks, st.Sources, st.Dimensions, st.LogBytes)
	return out.String()
}

// A store reopened from its checkpoint and the writes after it (left as a
// crash leaves them: the store never closed) is the store a replay of the
// whole log gives: the same chunks, keyword scores to the bit, vector hits
// and statistics, under default and weighted keyword fields.
func TestCheckpointReopenIsTheFullReplay(t *testing.T) {
	for _, fields := range []KeywordFields{{}, {Text: 1, Title: 2, Section: 0.5}} {
		r := rand.New(rand.NewPCG(1, uint64(fields.Title)))
		dir := t.TempDir()
		s, err := Open(dir, NoSync(), Keyword(fields))
		require.NoError(t, err)
		checkpointCorpus(t, s, r, "a", 600)
		require.NoError(t, s.Close())
		_, err = os.Stat(filepath.Join(dir, stateName))
		require.NoError(t, err, "Close writes the checkpoint")

		s, err = Open(dir, NoSync(), Keyword(fields))
		require.NoError(t, err)
		require.Equal(t, s.log.size, s.stateSaved, "the checkpoint covers the whole log and is used")
		checkpointCorpus(t, s, r, "b", 300) // after the checkpoint
		require.NoError(t, s.Delete(t.Context(), "a0005", "b0007"))
		crashed := copyDir(t, dir, logName, stateName)
		replayed := copyDir(t, dir, logName)
		live := storeView(t, s)
		require.NoError(t, s.Close())

		fromCheckpoint, err := Open(crashed, NoSync(), Keyword(fields))
		require.NoError(t, err)
		assert.Greater(t, fromCheckpoint.stateSaved, int64(0), "the checkpoint is used")
		assert.Less(t, fromCheckpoint.stateSaved, fromCheckpoint.log.size, "and the log after it replayed")
		full, err := Open(replayed, NoSync(), Keyword(fields))
		require.NoError(t, err)
		assert.Zero(t, full.stateSaved)
		want := storeView(t, full)
		assert.Equal(t, want, live)
		assert.Equal(t, want, storeView(t, fromCheckpoint))
		// Both accept writes that reopen the same.
		for _, st := range []*Local{fromCheckpoint, full} {
			require.NoError(t, st.Upsert(t.Context(), rec("late", "s1", "w1 w2 late", 1, 1, 1, 1)))
		}
		assert.Equal(t, storeView(t, full), storeView(t, fromCheckpoint))
		require.NoError(t, fromCheckpoint.Close())
		require.NoError(t, full.Close())
	}
}

// A checkpoint is never trusted blindly: a torn tail after it is cut, a
// checkpoint of another log of the same length, of the log before
// compaction, a damaged one and one for other keyword weights are
// ignored, and damage in the log it covers is reported, not hidden.
func TestCheckpointIsUsedOnlyForTheLogItDescribes(t *testing.T) {
	ctx := t.Context()
	build := func(text string) string {
		dir := t.TempDir()
		s, err := Open(dir, NoSync())
		require.NoError(t, err)
		for i := range 50 {
			require.NoError(t, s.Upsert(ctx, rec(fmt.Sprint("c", i), fmt.Sprint("s", i%3), fmt.Sprintf("%s %d", text, i), 1, float32(i), 0, 1)))
		}
		require.NoError(t, s.Close())
		return dir
	}
	reopen := func(dir string, opts ...LocalOption) (*Local, string) {
		s, err := Open(dir, append([]LocalOption{NoSync()}, opts...)...)
		require.NoError(t, err)
		view := storeView(t, s)
		return s, view
	}
	fullView := func(dir string, opts ...LocalOption) string {
		s, view := reopen(copyDir(t, dir, logName), opts...)
		require.NoError(t, s.Close())
		return view
	}

	t.Run("torn tail after it", func(t *testing.T) {
		dir := build("alpha")
		s, _ := reopen(dir)
		require.NoError(t, s.Upsert(ctx, rec("x", "s", "alpha x", 1, 1, 0, 1), rec("y", "s", "alpha y", 1, 2, 0, 1)))
		acked := s.log.size
		require.NoError(t, s.Upsert(ctx, rec("z", "s", "alpha z", 1, 3, 0, 1), rec("w", "s", "alpha w", 1, 4, 0, 1)))
		crashed := copyDir(t, dir, logName, stateName)
		require.NoError(t, s.Close())
		log, err := os.ReadFile(filepath.Join(crashed, logName))
		require.NoError(t, err)
		// The last batch torn: its commit and part of a record missing.
		require.NoError(t, os.WriteFile(filepath.Join(crashed, logName), log[:len(log)-30], 0o644))
		s, view := reopen(crashed)
		assert.Positive(t, s.stateSaved, "the checkpoint is used")
		assert.Equal(t, acked, s.log.size, "the torn batch is cut, and nothing acknowledged")
		assert.Equal(t, 52, s.Count())
		require.NoError(t, s.Close())
		assert.Equal(t, fullView(crashed), view)
	})
	t.Run("another log of the same length", func(t *testing.T) {
		a, b := build("alpha"), build("gamma")
		require.NoError(t, os.Rename(filepath.Join(a, stateName), filepath.Join(b, stateName)))
		s, view := reopen(b)
		assert.Zero(t, s.stateSaved, "the checkpoint of another log is ignored")
		require.NoError(t, s.Close())
		assert.Equal(t, fullView(b), view)
		assert.Contains(t, view, "gamma 7")
		assert.NotContains(t, view, "alpha")
	})
	t.Run("the log before compaction", func(t *testing.T) {
		dir := build("alpha")
		old, err := os.ReadFile(filepath.Join(dir, stateName))
		require.NoError(t, err)
		s, _ := reopen(dir)
		require.NoError(t, s.Delete(ctx, "c1", "c2", "c3"))
		require.NoError(t, s.Compact(ctx))
		require.NoError(t, s.Upsert(ctx, rec("c51", "s", "alpha 51", 1, 51, 0, 1)))
		require.NoError(t, s.Close())
		require.NoError(t, os.WriteFile(filepath.Join(dir, stateName), old, 0o644))
		s, view := reopen(dir)
		assert.Zero(t, s.stateSaved, "a checkpoint of the log before compaction is ignored")
		assert.Equal(t, 48, s.Count())
		require.NoError(t, s.Close())
		assert.Equal(t, fullView(dir), view)
	})
	t.Run("damaged", func(t *testing.T) {
		dir := build("alpha")
		path := filepath.Join(dir, stateName)
		good, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, at := range []int{3, len(good) / 3, len(good) / 2, len(good) - 2} {
			bad := append([]byte(nil), good...)
			bad[at] ^= 0x10
			require.NoError(t, os.WriteFile(path, bad, 0o644))
			s, view := reopen(dir)
			assert.Zero(t, s.stateSaved, "a checkpoint damaged at byte %d is ignored", at)
			require.NoError(t, s.Close())
			assert.Equal(t, fullView(dir), view)
		}
		require.NoError(t, os.WriteFile(path, good[:len(good)/2], 0o644))
		s, _ := reopen(dir)
		assert.Zero(t, s.stateSaved, "a checkpoint cut short is ignored")
		require.NoError(t, s.Close())
	})
	t.Run("other keyword weights", func(t *testing.T) {
		dir := build("alpha")
		weighted := Keyword(KeywordFields{Text: 1, Title: 3})
		s, view := reopen(dir, weighted)
		assert.Zero(t, s.stateSaved, "a checkpoint for other weights is ignored")
		require.NoError(t, s.Close())
		assert.Equal(t, fullView(dir, weighted), view)
	})
	t.Run("damage in the log it covers", func(t *testing.T) {
		dir := build("alpha")
		path := filepath.Join(dir, logName)
		log, err := os.ReadFile(path)
		require.NoError(t, err)
		log[len(log)/2] ^= 0x01
		require.NoError(t, os.WriteFile(path, log, 0o644))
		_, err = Open(dir, NoSync())
		assert.ErrorIs(t, err, ErrCorrupt, "damage under a checkpoint is reported")
		after, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, log, after, "and the log is left as it was")
	})
}

// smallLog writes a log of a few writes (single puts, a batch of two, a
// delete, a last put) and returns its bytes and the offset after each
// write (a standalone frame, or a batch's commit), the header first.
func smallLog(t *testing.T) ([]byte, []int) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir, NoSync())
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, s.Upsert(ctx, rec("a", "s", "alpha", 1, 0, 0)))
	require.NoError(t, s.Upsert(ctx, rec("b", "s", "beta", 0, 1, 0), rec("c", "t", "gamma", 0, 0, 1)))
	require.NoError(t, s.Delete(ctx, "a"))
	require.NoError(t, s.Upsert(ctx, rec("d", "t", "delta", 1, 1, 0)))
	require.NoError(t, s.Close())
	good, err := os.ReadFile(filepath.Join(dir, logName))
	require.NoError(t, err)
	// A write is whole after a standalone frame or a batch's commit.
	ends := []int{len(logMagic)}
	for off := len(logMagic); off < len(good); {
		n := int(binary.LittleEndian.Uint32(good[off:]))
		op := good[off+8]
		off += 8 + n
		if op != opPutPart && op != opDeletePart {
			ends = append(ends, off)
		}
	}
	require.Equal(t, len(good), ends[len(ends)-1])
	require.Len(t, ends, 5)
	return good, ends
}

// replayedChunks decodes the whole frames of log up to end, without the
// replay under test, and returns the chunks left, by ID.
func replayedChunks(t *testing.T, log []byte, end int) []Chunk {
	t.Helper()
	live := map[string]Chunk{}
	for off := len(logMagic); off < end; {
		n := int(binary.LittleEndian.Uint32(log[off:]))
		op, err := decodeOp(log[off+8 : off+8+n])
		require.NoError(t, err)
		switch op.op {
		case opPut:
			live[op.record.Chunk.ID] = op.record.Chunk
		case opDelete:
			for _, id := range op.ids {
				delete(live, id)
			}
		}
		off += 8 + n
	}
	var out []Chunk
	for _, c := range live {
		out = append(out, c)
	}
	sortChunks(out)
	return out
}

// Every byte of a small log flipped, cut off after, or deleted: a log that
// is a prefix of the one written (a crash cut it) opens with every whole
// frame and loses only the frame cut short; any other change is
// ErrCorrupt and the file is left as it was, so no frame that was whole
// is ever cut.
func TestOpenTellsATornTailFromDamage(t *testing.T) {
	good, ends := smallLog(t)
	dir := t.TempDir()
	path := filepath.Join(dir, logName)
	cases := 0
	check := func(what string, log []byte) {
		t.Helper()
		cases++
		require.NoError(t, os.WriteFile(path, log, 0o644))
		s, err := Open(dir, NoSync())
		after, rerr := os.ReadFile(path)
		require.NoError(t, rerr)
		if !bytes.HasPrefix(good, log) {
			require.ErrorIs(t, err, ErrCorrupt, "%s: not a prefix of the log written, so damaged", what)
			require.Equal(t, log, after, "%s: a damaged log is left as it was", what)
			return
		}
		require.NoError(t, err, "%s: a cut log opens", what)
		require.NoError(t, s.Close())
		// Every frame whole in the cut log is there; only the one cut short
		// is gone from the file.
		end := len(logMagic)
		for _, e := range ends {
			if e <= len(log) {
				end = e
			}
		}
		require.Equal(t, good[:end], after, "%s: the file keeps every whole frame", what)
		s, err = Open(dir, NoSync())
		require.NoError(t, err)
		got, err := s.List(t.Context(), nil)
		require.NoError(t, err)
		require.NoError(t, s.Close())
		require.Equal(t, replayedChunks(t, good, end), got, "%s", what)
	}
	for n := range len(good) + 1 {
		check(fmt.Sprintf("cut to %d bytes", n), good[:n])
	}
	for i := range good {
		for _, mask := range []byte{0x01, 0x80, 0xFF} {
			b := slices.Clone(good)
			b[i] ^= mask
			check(fmt.Sprintf("byte %d ^ %#x", i, mask), b)
		}
		for _, n := range []int{1, 2, 3} {
			if i+n <= len(good) {
				check(fmt.Sprintf("bytes %d to %d deleted", i, i+n), slices.Concat(good[:i], good[i+n:]))
			}
		}
	}
	t.Logf("%d logs of %d frames, %d bytes", cases, len(ends)-1, len(good))

	// The damage that once lost everything: two bytes of the first frame's
	// length flipped, so that it runs past the end of the log.
	b := slices.Clone(good)
	b[len(logMagic)+1] ^= 0xFF
	b[len(logMagic)+2] ^= 0x0F
	require.Greater(t, int(binary.LittleEndian.Uint32(b[len(logMagic):])), len(good))
	require.NoError(t, os.WriteFile(path, b, 0o644))
	_, err := Open(dir)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, fmt.Sprintf("frame at byte 8 of %d: its length", len(good)))
	assert.ErrorContains(t, err, "runs past the end, but the record it begins, of 3 dimensions, is")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, b, after, "nothing truncated")
}

// bm25Reference scores every live chunk from scratch, the textbook way:
// it reads the chunks' fields again, counts document frequencies and
// lengths itself, and sorts every scored chunk. It shares nothing with
// the inverted index but the tokenizer.
func bm25Reference(chunks []Chunk, w KeywordFields, query string, k int, f Filter) []Hit {
	w = w.withDefaults()
	type doc struct {
		c   Chunk
		tf  map[string]float64
		len float64
	}
	docs := make([]doc, 0, len(chunks))
	df := map[string]float64{}
	total := 0.0
	for _, c := range chunks {
		d := doc{c: c, tf: map[string]float64{}}
		for _, field := range []struct {
			text string
			w    float32
		}{{c.Text, w.Text}, {c.Title, w.Title}, {c.Section, w.Section}} {
			if field.w == 0 {
				continue
			}
			for _, t := range lex.Terms(field.text) {
				// float32 accumulation, as an index of weighted frequencies keeps them
				d.tf[t] = float64(float32(d.tf[t]) + field.w)
				d.len = float64(float32(d.len) + field.w)
			}
		}
		for t := range d.tf {
			df[t]++
		}
		total += d.len
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		return nil
	}
	avg := total / float64(len(docs))
	if avg == 0 {
		avg = 1
	}
	var terms []string
	for _, t := range lex.Terms(query) {
		if !slices.Contains(terms, t) {
			terms = append(terms, t)
		}
	}
	var hits []Hit
	for _, d := range docs {
		if !f.Match(&d.c) {
			continue
		}
		score, matched := 0.0, false
		for _, t := range terms {
			tf := d.tf[t]
			if tf == 0 {
				continue
			}
			n := df[t]
			idf := math.Log(1 + (float64(len(docs))-n+0.5)/(n+0.5))
			score += idf * tf * (1.2 + 1) / (tf + 1.2*(1-0.75+0.75*d.len/avg))
			matched = true
		}
		if matched {
			hits = append(hits, Hit{Chunk: d.c, Score: score})
		}
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Chunk.ID, b.Chunk.ID)
	})
	return hits[:min(k, len(hits))]
}

// On random corpora (a Zipf vocabulary, so some words are in most chunks
// and many in few; duplicate chunks, so scores tie), with random
// replacements and deletions, random field weights and filters, the
// inverted index returns exactly the reference's top k: the same chunks
// in the same order with the same scores.
func TestKeywordIndexMatchesExhaustiveBM25(t *testing.T) {
	ctx := t.Context()
	for round := range 6 {
		r := rand.New(rand.NewPCG(uint64(round), 7))
		vocab := 50 + r.IntN(400)
		zipf := rand.NewZipf(rand.New(rand.NewPCG(uint64(round), 8)), 1.2, 2, uint64(vocab-1))
		words := func(n int) string {
			ws := make([]string, n)
			for i := range ws {
				ws[i] = fmt.Sprintf("w%d", zipf.Uint64())
			}
			return strings.Join(ws, " ")
		}
		var fields KeywordFields
		if round%2 == 1 {
			fields = KeywordFields{Text: 1, Title: float32(r.IntN(4)) + 0.5, Section: float32(r.IntN(3))}
		}
		s := openLocal(t, t.TempDir(), NoSync(), Keyword(fields))
		live := map[string]Chunk{}
		n := 300 + r.IntN(700)
		var recs []Record
		for i := range n {
			c := Chunk{ID: fmt.Sprintf("c%04d", i), Source: fmt.Sprint("s", r.IntN(5)),
				Title: words(1 + r.IntN(3)), Section: words(r.IntN(3)), Text: words(1 + r.IntN(60))}
			if i > 0 && r.IntN(10) == 0 {
				c.Text = recs[r.IntN(len(recs))].Chunk.Text // a duplicate: ties
			}
			recs = append(recs, Record{Chunk: c, Vector: []float32{1, float32(i)}})
			live[c.ID] = c
		}
		require.NoError(t, s.Upsert(ctx, recs...))
		// Replace and delete some, in another batch.
		var b Batch
		for i := range n / 10 {
			c := recs[r.IntN(n)].Chunk
			c.Text = words(1 + r.IntN(30))
			if slices.ContainsFunc(b.Upsert, func(x Record) bool { return x.Chunk.ID == c.ID }) {
				continue
			}
			b.Upsert = append(b.Upsert, Record{Chunk: c, Vector: []float32{2, float32(i)}})
			live[c.ID] = c
		}
		for range n / 10 {
			id := recs[r.IntN(n)].Chunk.ID
			b.Delete = append(b.Delete, id)
			delete(live, id)
		}
		b.Delete = slices.Compact(slices.Sorted(slices.Values(b.Delete)))
		require.NoError(t, s.Apply(ctx, b))
		all := make([]Chunk, 0, len(live))
		for _, c := range live {
			all = append(all, c)
		}
		for q := range 60 {
			query := words(1 + r.IntN(6))
			if q%7 == 0 {
				query += " unknownword W3" // unknown and upper-case words
			}
			k := 1 + r.IntN(20)
			var f Filter
			if q%3 == 0 {
				f = Filter{"source": fmt.Sprint("s", r.IntN(5))}
			}
			got, err := s.SearchKeyword(ctx, query, k, f)
			require.NoError(t, err)
			want := bm25Reference(all, fields, query, k, f)
			require.Equal(t, hitIDs(want), hitIDs(got), "round %d query %q k %d filter %v", round, query, k, f)
			for i := range want {
				require.InDelta(t, want[i].Score, got[i].Score, 1e-9*want[i].Score, "round %d query %q hit %d", round, query, i)
			}
		}
	}
}
