package rag

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cubestudio/cube/rag/internal/vecmath"
	"github.com/cubestudio/cube/rag/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The crash tests re-execute the test binary as a child that writes to a
// store and reports each acknowledged write on stdout; the parent kills it
// with SIGKILL mid-write, reopens the store, and checks that every
// acknowledged record is there, intact, and that nothing else is damaged.

const crashEnv = "RAG_CRASH_CHILD"

// crashVector is the vector record id is written with, so the parent can
// check each record it reads back.
func crashVector(id string) []float32 {
	v := make([]float32, 16)
	for i := range v {
		v[i] = float32(len(id)*31+i*7+int(id[len(id)-1])) + 1
	}
	vecmath.Normalize(v)
	return v
}

// TestMain runs the crash child when the crash tests start the binary as one.
func TestMain(m *testing.M) {
	if mode := os.Getenv(crashEnv); mode != "" {
		crashChild(mode, os.Getenv("RAG_CRASH_DIR"), os.Getenv("RAG_CRASH_ROUND"))
		os.Exit(3) // crashChild never returns
	}
	os.Exit(m.Run())
}

func crashChild(mode, dir, round string) {
	ctx := context.Background()
	switch mode {
	case "store":
		s, err := store.Open(dir)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		for b := 0; ; b++ {
			var recs []Record
			for j := range 20 {
				id := fmt.Sprintf("r%sb%d-%d", round, b, j)
				recs = append(recs, Record{Chunk: Chunk{ID: id, Source: fmt.Sprint("src", b%7), Text: strings.Repeat("word ", j+1) + id}, Vector: crashVector(id)})
			}
			if err := s.Upsert(ctx, recs...); err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			if b%5 == 4 {
				if err := s.Delete(ctx, fmt.Sprintf("r%sb%d-0", round, b-1)); err != nil {
					fmt.Println("error", err)
					os.Exit(2)
				}
			}
			fmt.Println("ack", b)
		}
	case "kb":
		kb, err := OpenLibrary(dir).Open("t", "kb", nil)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		docs := crashCorpus()
		for i, d := range docs {
			if _, err := kb.Ingest(ctx, d); err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
			fmt.Println("ack", i)
		}
		fmt.Println("done")
		os.Exit(0)
	case "kbbatch":
		ingestOneBatchChild(dir)
	}
}

func crashCorpus() []Document {
	var docs []Document
	for i := range 400 {
		docs = append(docs, Document{Source: fmt.Sprintf("doc%03d.md", i),
			Text: fmt.Sprintf("# Doc %d\n\n%s\n\n## Part two\n\n%s", i, strings.Repeat(fmt.Sprintf("alpha%d beta gamma. ", i), 80), strings.Repeat("delta epsilon. ", 60))})
	}
	return docs
}

// runAndKill starts the child, waits for acks acknowledged writes, kills
// it and returns the last acknowledged number (-1 if none).
func runAndKill(t *testing.T, mode, dir string, round, acks int) (last int, finished bool) {
	t.Helper()
	exe, err := os.Executable()
	requirePrerequisite(t, err == nil, "the test binary cannot find itself to re-execute")
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), crashEnv+"="+mode, "RAG_CRASH_DIR="+dir, fmt.Sprint("RAG_CRASH_ROUND=", round))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	last = -1
	sc := bufio.NewScanner(out)
	deadline := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "error") {
			t.Fatalf("child: %s", line)
		}
		if line == "done" {
			finished = true
			break
		}
		if n, ok := strings.CutPrefix(line, "ack "); ok {
			last, _ = strconv.Atoi(n)
			if last+1 >= acks {
				// SIGKILL: no deferred code, no flush, no close runs.
				require.NoError(t, cmd.Process.Kill())
				break
			}
		}
	}
	_ = cmd.Wait()
	return last, finished
}

func TestCrashMidIngestLosesNothingAcknowledged(t *testing.T) {
	dir := t.TempDir()
	var acked []int // the last acknowledged batch of each round
	for round, acks := range []int{15, 40, 7} {
		last, _ := runAndKill(t, "store", dir, round, acks)
		require.GreaterOrEqual(t, last, acks-1, "round %d", round)
		acked = append(acked, last)
		s, err := store.Open(dir)
		require.NoError(t, err, "round %d: the killed store reopens", round)
		chunks, err := s.List(t.Context(), nil)
		require.NoError(t, err)
		present := map[string]bool{}
		for _, c := range chunks {
			present[c.ID] = true
		}
		for r, last := range acked {
			for b := 0; b <= last; b++ {
				for j := range 20 {
					id := fmt.Sprintf("r%db%d-%d", r, b, j)
					if j == 0 && b%5 == 3 && b+1 <= last {
						assert.False(t, present[id], "round %d: %s was deleted before ack %d", round, id, b+1)
						continue
					}
					require.True(t, present[id], "round %d: acknowledged %s is missing", round, id)
				}
			}
		}
		// Every record read back is whole: its vector is the one written.
		for _, c := range chunks {
			hits, err := s.SearchExact(t.Context(), crashVector(c.ID), 1, Filter{"source": c.Source})
			require.NoError(t, err)
			require.NotEmpty(t, hits)
			assert.InDelta(t, 1, hits[0].Score, 1e-5, "round %d: %s", round, c.ID)
		}
		kw, err := s.SearchKeyword(t.Context(), "word", 5, nil)
		require.NoError(t, err)
		assert.Len(t, kw, 5)
		t.Logf("round %d: killed after ack %d; %d chunks on reopen", round, last, len(chunks))
		require.NoError(t, s.Close())
	}
}

func TestCrashMidKnowledgeBaseIngestThenReingestCompletes(t *testing.T) {
	dir := t.TempDir()
	last, finished := runAndKill(t, "kb", dir, 0, 25)
	require.False(t, finished, "the child was killed mid-ingest")
	kb, err := OpenLibrary(dir).Open("t", "kb", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = kb.Close() })
	srcs, err := kb.Sources(t.Context())
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(srcs), last+1, "every acknowledged source is there")

	docs := crashCorpus()
	rep, err := kb.Ingest(t.Context(), docs...)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, rep.Unchanged, last+1, "acknowledged sources are not ingested again")

	// The result is what a clean ingest gives.
	clean, err := OpenLibrary(t.TempDir()).Open("t", "kb", nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = clean.Close() })
	_, err = clean.Ingest(t.Context(), docs...)
	require.NoError(t, err)
	got, err := kb.Store().List(t.Context(), nil)
	require.NoError(t, err)
	want, err := clean.Store().List(t.Context(), nil)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}
