package proc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cubestudio/cube/internal/proc"
)

func job(containers ...any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch/v1", "kind": "Job",
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": containers}}},
	}}
}

func ExampleCommand() {
	argv, env := proc.Command(job(
		map[string]any{"name": "sidecar", "image": "busybox"},
		map[string]any{"name": "train", "image": "python", "command": []any{"python", "train.py"}, "args": []any{"--lr", "0.1"},
			"env": []any{map[string]any{"name": "SEED", "value": "1"}}},
	))
	fmt.Println(argv, env[0].Name, env[0].Value)
	ray := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"entrypoint": "python tune.py"}}}
	fmt.Println(proc.Command(ray))
	// Output:
	// [python train.py --lr 0.1] SEED 1
	// [sh -c python tune.py] []
}

func TestRun(t *testing.T) {
	log, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })

	err = proc.Run(t.Context(), []string{"sh", "-c", `echo out; echo err >&2; echo "$X"; exit 3`}, []string{"X=from-env"}, log)
	var exit interface{ ExitCode() int }
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, 3, exit.ExitCode())
	b, err := os.ReadFile(log.Name())
	require.NoError(t, err)
	assert.Equal(t, "out\nerr\nfrom-env\n", string(b))

	// A process that cannot start is a StartError, which retry policies tell
	// from a failure.
	var se *proc.StartError
	require.ErrorAs(t, proc.Run(t.Context(), []string{"/nonexistent/cube-test-binary"}, nil, log), &se)
	require.ErrorAs(t, proc.Run(t.Context(), nil, nil, log), &se)
	assert.EqualError(t, se, "no command to run")
}

// TestRunCancel checks that ending the context kills the process and what
// it started: Run returns at once, not when the background sleep ends.
func TestRunCancel(t *testing.T) {
	log, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	began := time.Now()
	err = proc.Run(ctx, []string{"sh", "-c", "sleep 30 & sleep 30; wait"}, nil, log)
	require.Error(t, err)
	var se *proc.StartError
	assert.False(t, errors.As(err, &se), "a killed process started")
	assert.Less(t, time.Since(began), 4*time.Second, "the process group was not killed")
}
