package journeys

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/kinds"
)

// NewClient returns a cube client on the cluster, in a fresh namespace,
// that reads every kind cube builds (kinds.All).
func NewClient(t testing.TB) (*testenv.Cluster, *cube.Client, string) {
	t.Helper()
	c := testenv.GetCluster(t)
	ns := c.Namespace(t)
	cl, err := cube.New(c.Config, cube.Namespace(ns), cube.Kinds(kinds.All()...))
	if err != nil {
		t.Fatal(err)
	}
	return c, cl, ns
}

// Apply applies w in the client's namespace.
func Apply(t testing.TB, c *cube.Client, w cube.Workload) *cube.Release {
	t.Helper()
	rel, err := c.Apply(t.Context(), w)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// Succeeds waits for the release to succeed, failing fast on pods that
// cannot start, and returns its logs; a release that does not succeed
// fails the test with its error and its logs.
func Succeeds(t testing.TB, rel *cube.Release) string {
	t.Helper()
	st, err := rel.Wait(t.Context(), cube.Succeeded, cube.Timeout(WaitFor), cube.FailOnStuckPods, Progress(t))
	logs := LogsOf(t, rel)
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	if st.Phase != cube.Succeeded {
		t.Fatalf("phase %s, want Succeeded\n%s", st.Phase, logs)
	}
	return logs
}

// LogsOf reads every pod's logs of the release, as Release.Logs merges them.
func LogsOf(t testing.TB, rel *cube.Release, opts ...cube.LogOption) string {
	t.Helper()
	r, err := rel.Logs(t.Context(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// LinesOf returns the lines of logs that a pod whose name has prefix wrote.
func LinesOf(logs, podPrefix string) []string {
	var out []string
	s := bufio.NewScanner(strings.NewReader(logs))
	for s.Scan() {
		if strings.HasPrefix(s.Text(), "["+podPrefix) {
			out = append(out, s.Text())
		}
	}
	return out
}

// WaitFor is how long a journey may take on two busy cores.
const WaitFor = 5 * time.Minute

// Progress logs each status Wait reports.
func Progress(t testing.TB) cube.WaitOption {
	return cube.OnProgress(func(s cube.Status) { t.Logf("status: %s", s) })
}
