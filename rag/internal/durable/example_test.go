package durable_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/cubestudio/cube/rag/internal/durable"
)

func ExampleSyncDir() {
	dir, err := os.MkdirTemp("", "durable-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	// A rename is durable once the directory that holds it is synced.
	tmp, final := filepath.Join(dir, "m.json.tmp"), filepath.Join(dir, "m.json")
	_ = os.WriteFile(tmp, []byte("{}"), 0o600)
	_ = os.Rename(tmp, final)
	fmt.Println(durable.SyncDir(dir))
	fmt.Println(durable.SyncDir(filepath.Join(dir, "missing")) != nil)
	// Output:
	// <nil>
	// true
}
