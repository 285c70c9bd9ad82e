package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cubestudio/cube"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the current output")

// Assert compares got with testdata/name; with -update it writes got there
// first.
func Assert(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v: run go test -update to create %s", err, path)
	}
	if string(want) != string(got) {
		t.Fatalf("%s differs from the output (run go test -update to rewrite it, and read the diff):\n%s", path, lineDiff(string(want), string(got)))
	}
}

// AssertRender renders ws with cube.Render and compares the YAML with
// testdata/name.
func AssertRender(t testing.TB, name string, ws ...cube.Workload) {
	t.Helper()
	var buf bytes.Buffer
	if err := cube.Render(&buf, ws...); err != nil {
		t.Fatalf("render: %v", err)
	}
	Assert(t, name, buf.Bytes())
}

// lineDiff names the first line where want and got part, with a few lines
// of each around it.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	from := max(0, i-2)
	pick := func(l []string, sign string) string {
		var b strings.Builder
		for _, line := range l[min(from, len(l)):min(i+3, len(l))] {
			b.WriteString(sign + line + "\n")
		}
		return b.String()
	}
	return fmt.Sprintf("first difference at line %d\n%s%s", i+1, pick(w, "-"), pick(g, "+"))
}
