package store

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cubestudio/cube/internal/testsupport/ci"
	"github.com/cubestudio/cube/rag/internal/vecmath"
	"github.com/stretchr/testify/require"
)

// The crash test re-executes the test binary as a child that writes large
// batches to a store and prints each acknowledged one; the parent kills it
// with SIGKILL at a random moment, many times over the same store, and
// checks after each kill that every batch is there whole or not at all.

const (
	crashEnv     = "STORE_CRASH_CHILD"
	crashBatch   = 1500 // records per batch
	crashDeletes = 100  // of the previous batch's records, deleted by each batch
	crashDims    = 32
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashEnv); dir != "" {
		crashChild(dir, os.Getenv("STORE_CRASH_ROUND"))
		os.Exit(3)
	}
	os.Exit(m.Run())
}

func crashID(round, batch, j int) string { return fmt.Sprintf("r%db%d-%d", round, batch, j) }

func crashVec(id string) []float32 {
	v := make([]float32, crashDims)
	h := uint64(14695981039346656037)
	for _, c := range []byte(id) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	r := rand.New(rand.NewPCG(h, 1))
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	vecmath.Normalize(v)
	return v
}

func crashChild(dir, roundArg string) {
	round, _ := strconv.Atoi(roundArg)
	s, err := Open(dir)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	for b := 0; ; b++ {
		var batch Batch
		for j := range crashBatch {
			id := crashID(round, b, j)
			batch.Upsert = append(batch.Upsert, Record{Chunk: Chunk{ID: id, Source: fmt.Sprint("src", j%50),
				Text: fmt.Sprintf("round %d batch %d record %d %s", round, b, j, strings.Repeat("padding ", 128))}, Vector: crashVec(id)})
		}
		if b > 0 {
			for j := range crashDeletes {
				batch.Delete = append(batch.Delete, crashID(round, b-1, j))
			}
		}
		if err := s.Apply(context.Background(), batch); err != nil {
			fmt.Println("error", err)
			os.Exit(2)
		}
		fmt.Println("ack", b)
		if b%3 == 2 {
			// A checkpoint now and then, so that kills also land while
			// one is written and reopens resume from one.
			s.mu.Lock()
			err := s.saveState()
			s.mu.Unlock()
			if err != nil {
				fmt.Println("error", err)
				os.Exit(2)
			}
		}
	}
}

// killAfter starts the child for round, kills it delay after its first
// acknowledgement and returns the last batch it acknowledged.
func killAfter(t *testing.T, dir string, round int, delay time.Duration) int {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		ci.Skip(t, "the test binary cannot find itself to re-execute")
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), crashEnv+"="+dir, fmt.Sprint("STORE_CRASH_ROUND=", round))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	deadline := time.AfterFunc(2*time.Minute, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	last := -1
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "error") {
			_ = cmd.Process.Kill()
			t.Fatalf("child: %s", line)
		}
		if n, ok := strings.CutPrefix(line, "ack "); ok {
			if last < 0 {
				// SIGKILL: no deferred code, no flush, no close runs.
				time.AfterFunc(delay, func() { _ = cmd.Process.Kill() })
			}
			last, _ = strconv.Atoi(n)
		}
	}
	_ = cmd.Wait()
	return last
}

// After SIGKILL at random moments of a stream of 1,500-record batches
// (each with deletions of the batch before), the reopened store holds a
// prefix of the batches, each whole: every acknowledged batch, at most
// one batch more (written but killed before it was acknowledged), and of
// no batch a part. Every vector read back is the one written. The kills
// land on the same store, so later rounds also replay logs that earlier
// kills cut.
func TestCrashMidBatchLeavesEachBatchWholeOrAbsent(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 4))
	rounds := 8
	if testing.Short() {
		rounds = 3
	}
	applied := map[int]int{} // batches of each round found on reopen
	cuts, resumed := 0, 0
	for round := range rounds {
		last := killAfter(t, dir, round, time.Duration(r.IntN(150))*time.Millisecond)
		before, err := os.Stat(filepath.Join(dir, logName))
		require.NoError(t, err)
		s, err := Open(dir, NoSync(), ExactBelow(1<<30))
		require.NoError(t, err, "round %d: the killed store reopens", round)
		if s.LogBytes() < before.Size() {
			cuts++ // the kill tore a batch, which Open cut off
		}
		if s.stateSaved > 0 {
			resumed++
		}
		chunks, err := s.List(t.Context(), nil)
		require.NoError(t, err)
		present := map[string]bool{}
		for _, c := range chunks {
			present[c.ID] = true
		}
		for rr := 0; rr <= round; rr++ {
			// Batches of round rr found: a prefix 0..n-1.
			n := 0
			for present[crashID(rr, n, crashBatch-1)] {
				n++
			}
			if rr == round {
				require.GreaterOrEqual(t, n, last+1, "round %d: every acknowledged batch is there", round)
				require.LessOrEqual(t, n, last+2, "round %d: at most the batch being written when killed", round)
				applied[rr] = n
			} else {
				require.Equal(t, applied[rr], n, "round %d: round %d's batches are as found before", round, rr)
			}
			for b := 0; b < n+2; b++ {
				for j := range crashBatch {
					want := b < n && (j >= crashDeletes || b+1 >= n)
					if present[crashID(rr, b, j)] != want {
						t.Fatalf("round %d: %s present %v, want %v: batch %d of round %d is %d of %d batches found",
							round, crashID(rr, b, j), !want, want, b, rr, b, n)
					}
				}
			}
		}
		require.Len(t, chunks, len(present))
		for i := 0; i < len(chunks); i += 97 {
			c := chunks[i]
			hits, err := s.SearchExact(t.Context(), crashVec(c.ID), 1, Filter{"source": c.Source})
			require.NoError(t, err)
			require.Equal(t, c.ID, hits[0].Chunk.ID)
			require.InDelta(t, 1, hits[0].Score, 1e-5)
		}
		t.Logf("round %d: acknowledged %d batches, found %d (%d chunks in the store)", round, last+1, applied[round], len(chunks))
		require.NoError(t, s.Close())
	}
	// A batch goes to the file in 1 MiB writes, so a kill rarely lands
	// between two of them; TestOpenTellsATornTailFromDamage cuts a batch at
	// every byte.
	t.Logf("%d of %d kills tore a batch; %d reopens resumed from a checkpoint", cuts, rounds, resumed)
	require.Positive(t, resumed, "a reopen resumed from a checkpoint")
}
