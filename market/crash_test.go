package market_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/market"
)

const crashWriterEnv = "CUBE_MARKET_CRASH_WRITER"

// runCrashWriter registers versions of "crash" in the file store at path
// until the process is killed, or stops after a thousand.
func runCrashWriter(path string) int {
	s, err := market.OpenFileStore(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	reg := market.NewRegistry(s)
	for range 1000 {
		if _, err := reg.Register(context.Background(), sampleVersion("crash")); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

func startWriter(t *testing.T, path string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashWriterEnv+"="+path)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	return cmd
}

// TestFileStoreSurvivesKilledWriters shares one file between this process
// and two writer processes, kills both with SIGKILL mid-stream, and checks
// the file: it opens, every version decodes, the numbers run 1..n without
// a gap or a repeat, and the next registration takes n+1.
func TestFileStoreSurvivesKilledWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.db")
	s, err := market.OpenFileStore(path)
	require.NoError(t, err)
	reg := market.NewRegistry(s)
	writers := []*exec.Cmd{startWriter(t, path), startWriter(t, path)}
	deadline := time.Now().Add(30 * time.Second)
	for {
		// This process writes too, between the other two.
		_, err := reg.Register(t.Context(), sampleVersion("crash"))
		require.NoError(t, err)
		vs, err := s.List(t.Context(), market.Filter{Model: "crash"})
		require.NoError(t, err)
		if len(vs) >= 60 || time.Now().After(deadline) {
			break
		}
	}
	for _, w := range writers {
		_ = w.Process.Kill()
		_ = w.Wait()
	}
	vs, err := s.List(t.Context(), market.Filter{Model: "crash"})
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(vs), 60, "the writers made progress")
	for i, v := range vs {
		require.Equal(t, i+1, v.Number, "numbers run without gaps")
		assert.Equal(t, sampleVersion("crash").Artifact, v.Artifact)
	}
	next, err := reg.Register(t.Context(), sampleVersion("crash"))
	require.NoError(t, err)
	assert.Equal(t, len(vs)+1, next.Number)
}
