package rag

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// batchCorpus is 300 Markdown documents of about 30 chunks each: one
// Ingest of about 9,000 chunks, the size of the IngestDir that once left
// 3,971 chunks of an unacknowledged write behind after SIGKILL.
func batchCorpus() []Document {
	var docs []Document
	for i := range 300 {
		var b strings.Builder
		fmt.Fprintf(&b, "# Page %d\n\n", i)
		for p := range 30 {
			fmt.Fprintf(&b, "## Part %d\n\n%s\n\n", p, strings.Repeat(fmt.Sprintf("page%d part%d words about topic%d. ", i, p, (i*31+p)%97), 25))
		}
		docs = append(docs, Document{Source: fmt.Sprintf("page%03d.md", i), Text: b.String()})
	}
	return docs
}

func ingestOneBatchChild(dir string) {
	kb, err := OpenLibrary(dir).Open("t", "kb", nil)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("start")
	rep, err := kb.Ingest(context.Background(), batchCorpus()...)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("done", rep.Added)
	os.Exit(0)
}

// runBatchChild runs the one-Ingest child in dir, kills it delay after it
// starts ingesting (never, for a negative delay), and returns how long it
// ran after "start" and whether it finished.
func runBatchChild(t *testing.T, dir string, delay time.Duration) (time.Duration, bool) {
	t.Helper()
	exe, err := os.Executable()
	requirePrerequisite(t, err == nil, "the test binary cannot find itself to re-execute")
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), crashEnv+"=kbbatch", "RAG_CRASH_DIR="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	deadline := time.AfterFunc(3*time.Minute, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	var started time.Time
	finished := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "error"):
			_ = cmd.Process.Kill()
			t.Fatalf("child: %s", line)
		case line == "start":
			started = time.Now()
			if delay >= 0 {
				// SIGKILL: no deferred code, no flush, no close runs.
				time.AfterFunc(delay, func() { _ = cmd.Process.Kill() })
			}
		case strings.HasPrefix(line, "done"):
			finished = true
		}
	}
	_ = cmd.Wait()
	return time.Since(started), finished
}

// One Ingest of about 9,000 chunks is one write: killed with SIGKILL at
// points spread over its run, the reopened knowledge base holds none of
// it, or (killed after the commit reached the disk) all of it, never a
// part.
func TestCrashMidLargeIngestLeavesAllOrNothing(t *testing.T) {
	full, finished := runBatchChild(t, t.TempDir(), -1)
	require.True(t, finished)
	clean, err := OpenLibrary(t.TempDir()).Open("t", "kb", nil)
	require.NoError(t, err)
	_, err = clean.Ingest(t.Context(), batchCorpus()...)
	require.NoError(t, err)
	want, err := clean.Store().List(t.Context(), nil)
	require.NoError(t, err)
	require.NoError(t, clean.Close())
	points := 4
	if testing.Short() {
		points = 2
	}
	for i := 1; i <= points; i++ {
		delay := full * time.Duration(i) / time.Duration(points+1)
		dir := t.TempDir()
		_, finished := runBatchChild(t, dir, delay)
		kb, err := OpenLibrary(dir).Open("t", "kb", nil)
		require.NoError(t, err, "kill at %v: the knowledge base reopens", delay)
		got, err := kb.Store().List(t.Context(), nil)
		require.NoError(t, err)
		require.NoError(t, kb.Close())
		if finished {
			require.Equal(t, want, got)
			continue
		}
		if len(got) != 0 {
			require.Equal(t, want, got, "kill at %v of %v: a part of the write is visible", delay, full)
		}
		t.Logf("kill at %v of %v: %d of %d chunks after reopen", delay, full, len(got), len(want))
	}
}
