//go:build unix

package load

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A named pipe with no writer blocked File forever; it, a symbolic
// link to it and a directory are refused at once, and Dir skips them.
func TestLoadFileRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "notes.md")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	require.NoError(t, os.Symlink(fifo, filepath.Join(dir, "link.md")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "dir.md"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "real.md"), []byte("# Real\n"), 0o644))

	for name, want := range map[string]string{
		"notes.md": "notes.md: is a named pipe, not a regular file",
		"link.md":  "link.md: is a named pipe, not a regular file",
		"dir.md":   "dir.md: is a directory, not a regular file",
	} {
		done := make(chan error, 1)
		go func() {
			_, err := File(filepath.Join(dir, name), name)
			done <- err
		}()
		select {
		case err := <-done:
			require.Error(t, err, name)
			assert.Contains(t, err.Error(), "load markdown: ")
			assert.Contains(t, err.Error(), want)
		case <-time.After(5 * time.Second):
			t.Fatalf("File(%s) blocked", name)
		}
	}
	docs, err := Dir(t.Context(), dir)
	require.NoError(t, err)
	require.Len(t, docs, 1)
	assert.Equal(t, "real.md", docs[0].Source)
}
