package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Formats maps the file extensions File and Dir read to the
// format's name.
var formats = map[string]string{
	".txt": "text", ".text": "text", ".md": "markdown", ".markdown": "markdown",
	".html": "html", ".htm": "html", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
	".pdf": "pdf", ".docx": "docx",
}

// File reads the file at name with the loader its extension selects
// (.txt .text .md .markdown .html .htm .csv .jsonl .ndjson .pdf .docx);
// source is the name documents carry. It reads regular files only (a
// symbolic link is followed): a named pipe, device, socket or directory is
// an error, found without waiting on it, since a pipe with no writer would
// block the read forever and a device need never end. File takes no
// context because a regular file's read cannot wait on anyone; Dir
// checks its context between files.
func File(name, source string) ([]Document, error) {
	format, ok := formats[strings.ToLower(filepath.Ext(name))]
	if !ok {
		return nil, fmt.Errorf("load %s: unknown extension %q", name, filepath.Ext(name))
	}
	f, st, err := openRegular(name)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", format, err)
	}
	defer f.Close()
	switch format {
	case "text":
		return Text(source, bufio.NewReader(f))
	case "markdown":
		return Markdown(source, bufio.NewReader(f))
	case "html":
		return HTML(source, bufio.NewReader(f))
	case "csv":
		return CSV(source, bufio.NewReader(f))
	case "jsonl":
		return JSONL(source, bufio.NewReader(f), "")
	case "pdf":
		return PDF(source, f, st.Size())
	default:
		return DOCX(source, f, st.Size())
	}
}

// openRegular opens name for reading if it is a regular file. It looks
// before opening and, since the file can change in between, again at what
// it opened, which it opens without blocking on a named pipe.
func openRegular(name string) (*os.File, fs.FileInfo, error) {
	st, err := os.Stat(name)
	if err != nil {
		return nil, nil, err
	}
	if err := regular(name, st); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(name, os.O_RDONLY|openNonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	if st, err = f.Stat(); err == nil {
		err = regular(name, st)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

func regular(name string, st fs.FileInfo) error {
	m := st.Mode()
	kind := ""
	switch {
	case m.IsRegular():
		return nil
	case m.IsDir():
		kind = "a directory"
	case m&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case m&fs.ModeSocket != 0:
		kind = "a socket"
	case m&fs.ModeDevice != 0:
		kind = "a device"
	default:
		kind = "irregular (" + m.Type().String() + ")"
	}
	return fmt.Errorf("%s: is %s, not a regular file", name, kind)
}

// Dir walks the directory tree at root and loads every file with a
// known extension (see File), skipping hidden files and directories.
// Each document's Source is its slash-separated path relative to root.
// Files are read in lexical order; every file that fails is reported,
// joined, together with the documents of the files that loaded.
func Dir(ctx context.Context, root string) ([]Document, error) {
	var names []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			if _, ok := formats[strings.ToLower(filepath.Ext(p))]; ok {
				names = append(names, p)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load dir %s: %w", root, err)
	}
	sort.Strings(names)
	var docs []Document
	var errs []error
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return docs, err
		}
		rel, err := filepath.Rel(root, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d, err := File(name, filepath.ToSlash(rel))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		docs = append(docs, d...)
	}
	return docs, errors.Join(errs...)
}
