package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// cacheEntry is what the cache keeps of a succeeded instance.
type cacheEntry struct {
	Key     string            `json:"key"`
	Step    string            `json:"step"`
	Outputs map[string]string `json:"outputs"`
}

// cache records the instances that succeeded in a run directory: one JSON
// line each in cache/index.jsonl, read once when a run starts and appended to
// as steps succeed. A torn last line (a crash mid-write) is ignored.
type cache struct {
	mu      sync.Mutex
	entries map[string]cacheEntry
	f       *os.File
}

func openCache(dir string) (*cache, error) {
	path := filepath.Join(dir, "cache", "index.jsonl")
	c := &cache{entries: map[string]cacheEntry{}}
	if b, err := os.ReadFile(path); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			var e cacheEntry
			if json.Unmarshal([]byte(line), &e) == nil && e.Key != "" {
				c.entries[e.Key] = e
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read cache: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open cache: %w", err)
	}
	c.f = f
	return c, nil
}

func (c *cache) get(key string) (cacheEntry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	return e, ok
}

// put records an entry; losing one only costs a rerun, so errors are not
// reported.
func (c *cache) put(e cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.entries[e.Key]; ok && old.Step == e.Step && maps.Equal(old.Outputs, e.Outputs) {
		return // already recorded: reruns do not grow the index
	}
	b, err := json.Marshal(e)
	if err != nil {
		return
	}
	c.entries[e.Key] = e
	_, _ = c.f.Write(append(b, '\n'))
}

func (c *cache) close() error { return c.f.Close() }

// stepLog is a step's log file, created on the first write so that function
// steps that log nothing cost no file.
type stepLog struct {
	path string
	mu   sync.Mutex
	f    *os.File
	err  error
}

func (l *stepLog) open() (*os.File, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && l.err == nil {
		l.f, l.err = os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	}
	return l.f, l.err
}

func (l *stepLog) Write(p []byte) (int, error) {
	f, err := l.open()
	if err != nil {
		return 0, err
	}
	return f.Write(p)
}

func (l *stepLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}
