package journeys

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// newClient returns a cube client on the cluster, in a fresh namespace.
func newClient(t *testing.T) (*testenv.Cluster, *cube.Client, string) {
	t.Helper()
	c := testenv.GetCluster(t)
	ns := c.Namespace(t)
	cl, err := cube.New(c.Config, cube.WithNamespace(ns))
	require.NoError(t, err)
	return c, cl, ns
}

// apply applies w and registers the release's deletion.
func apply(t *testing.T, c *cube.Client, w cube.Workload) *cube.Release {
	t.Helper()
	rel, err := c.Apply(t.Context(), w)
	require.NoError(t, err)
	return rel
}

// logsOf reads every pod's logs of the release, as Release.Logs merges them.
func logsOf(t *testing.T, rel *cube.Release, opts cube.LogOptions) string {
	t.Helper()
	r, err := rel.Logs(t.Context(), opts)
	require.NoError(t, err)
	defer r.Close()
	data, err := io.ReadAll(r)
	require.NoError(t, err)
	return string(data)
}

// linesOf returns the lines of logs that a pod whose name has prefix wrote.
func linesOf(logs, podPrefix string) []string {
	var out []string
	s := bufio.NewScanner(strings.NewReader(logs))
	for s.Scan() {
		if strings.HasPrefix(s.Text(), "["+podPrefix) {
			out = append(out, s.Text())
		}
	}
	return out
}

// waitFor is how long a journey may take on two busy cores.
const waitFor = 5 * time.Minute

// progress logs each status Wait reports.
func progress(t *testing.T) cube.WaitOption {
	return cube.OnProgress(func(s cube.Status) { t.Logf("status: %s", s) })
}
