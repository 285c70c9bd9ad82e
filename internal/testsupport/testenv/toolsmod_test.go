package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// TestToolsSnapshot keeps toolsmod/ equal to the tools module it copies;
// after changing tools/, copy it again:
//
//	cp tools/go.mod toolsmod/go.mod.txt
//	cp tools/go.sum toolsmod/go.sum.txt
//	cp tools/cmd/etcd/main.go toolsmod/etcd.go.txt
func TestToolsSnapshot(t *testing.T) {
	for _, f := range snapshotFiles {
		want, err := os.ReadFile(filepath.Join("tools", f[1]))
		if err != nil {
			t.Fatal(err)
		}
		got, err := toolsSnapshot.ReadFile(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from tools/%s: copy it again (see this test's comment)", f[0], f[1])
		}
	}
}

// TestMaterializeTools writes the snapshot as a module once and finds it
// the second time.
func TestMaterializeTools(t *testing.T) {
	cache := t.TempDir()
	dir, err := materializeTools(cache)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range snapshotFiles {
		got, err := os.ReadFile(filepath.Join(dir, f[1]))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := toolsSnapshot.ReadFile(f[0])
		if string(got) != string(want) {
			t.Errorf("%s was written wrong", f[1])
		}
	}
	again, err := materializeTools(cache)
	if err != nil || again != dir {
		t.Errorf("second call: %q, %v; want %q", again, err, dir)
	}
	entries, _ := os.ReadDir(filepath.Join(cache, "cube-testenv"))
	if len(entries) != 1 {
		t.Errorf("left %d entries in the cache, want the module alone", len(entries))
	}
}
