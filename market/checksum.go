package market

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"
)

// Checksum computes what a download reports for the files of fsys: their
// total size, and "sha256:" and the SHA-256 of the manifest that
// `sha256sum` prints for every regular file, one "<hex>  ./<path>" line
// each, in byte order of the paths (what `find . -type f -print0 | sort
// -z | xargs -0 sha256sum | sha256sum` gives under LC_ALL=C). The
// downloaders' bookkeeping directories, .cache and ._____temp at the top,
// are left out. Register weights already on a volume with the same
// checksum a download would give them.
func Checksum(fsys fs.FS) (sizeBytes int64, checksum string, err error) {
	if fsys == nil {
		return 0, "", fmt.Errorf("checksum: no file system")
	}
	var paths []string
	err = fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (p == ".cache" || p == "._____temp") {
			return fs.SkipDir
		}
		if d.Type().IsRegular() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return 0, "", fmt.Errorf("checksum: %w", err)
	}
	// find prints "./a/b"; sort -z orders those strings bytewise.
	slices.SortFunc(paths, func(a, b string) int { return strings.Compare("./"+a, "./"+b) })
	manifest := sha256.New()
	for _, p := range paths {
		f, err := fsys.Open(p)
		if err != nil {
			return 0, "", fmt.Errorf("checksum: %w", err)
		}
		h := sha256.New()
		n, err := io.Copy(h, f)
		f.Close()
		if err != nil {
			return 0, "", fmt.Errorf("checksum %s: %w", p, err)
		}
		sizeBytes += n
		io.WriteString(manifest, manifestLine(hex.EncodeToString(h.Sum(nil)), "./"+p))
	}
	return sizeBytes, "sha256:" + hex.EncodeToString(manifest.Sum(nil)), nil
}

// manifestLine is one line of sha256sum's output. GNU sha256sum escapes a
// name holding a backslash or a newline and marks the line with a leading
// backslash.
func manifestLine(sum, name string) string {
	if strings.ContainsAny(name, "\\\n") {
		name = strings.NewReplacer("\\", "\\\\", "\n", "\\n").Replace(name)
		return "\\" + sum + "  " + name + "\n"
	}
	return sum + "  " + name + "\n"
}
