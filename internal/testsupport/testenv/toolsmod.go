package testenv

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
)

// toolsSnapshot is a copy of the parts of the nested tools module that
// kube-apiserver and etcd are built from: tools/go.mod, tools/go.sum and
// tools/cmd/etcd/main.go, as toolsmod/go.mod.txt, go.sum.txt and
// etcd.go.txt. A module zip leaves out every directory with a go.mod of its
// own, so when cube is a dependency in the module cache, tools/ is not
// there and the build writes this copy out instead (TestToolsSnapshot
// keeps it equal to tools/).
//
//go:embed toolsmod/go.mod.txt toolsmod/go.sum.txt toolsmod/etcd.go.txt
var toolsSnapshot embed.FS

// snapshotFiles maps the snapshot's files to where they go in the module.
var snapshotFiles = [][2]string{
	{"toolsmod/go.mod.txt", "go.mod"},
	{"toolsmod/go.sum.txt", "go.sum"},
	{"toolsmod/etcd.go.txt", filepath.Join("cmd", "etcd", "main.go")},
}

// materializeTools writes the tools module out of the snapshot into the
// user cache, once per content, and returns its directory. It is written
// under a temporary name and renamed, so a killed write leaves nothing
// half-made.
func materializeTools(cache string) (string, error) {
	h := sha256.New()
	for _, f := range snapshotFiles {
		data, err := toolsSnapshot.ReadFile(f[0])
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d\n", f[1], len(data))
		h.Write(data)
	}
	dir := filepath.Join(cache, "cube-testenv", "tools-"+hex.EncodeToString(h.Sum(nil))[:12])
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", fmt.Errorf("write tools module: %w", err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".tools-")
	if err != nil {
		return "", fmt.Errorf("write tools module: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, f := range snapshotFiles {
		data, _ := toolsSnapshot.ReadFile(f[0])
		dst := filepath.Join(tmp, f[1])
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", fmt.Errorf("write tools module: %w", err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return "", fmt.Errorf("write tools module: %w", err)
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", fmt.Errorf("write tools module: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, "go.mod")); statErr == nil {
			return dir, nil // another test binary wrote it meanwhile
		}
		return "", fmt.Errorf("write tools module: %w", err)
	}
	return dir, nil
}
