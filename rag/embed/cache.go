package embed

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync"
)

// Cache keeps the most recently used vectors, keyed by model and
// the SHA-256 of the text. It is safe for concurrent use; a nil cache
// caches nothing.
type Cache struct {
	mu      sync.Mutex
	max     int
	entries map[string]*list.Element
	order   *list.List
	hits    int
	misses  int
}

type cacheEntry struct {
	key string
	vec []float32
}

// NewCache returns a cache holding up to maxEntries vectors.
func NewCache(maxEntries int) *Cache {
	return &Cache{max: maxEntries, entries: map[string]*list.Element{}, order: list.New()}
}

// Stats returns how many lookups found a vector and how many did not.
func (c *Cache) Stats() (hits, misses int) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

func (c *Cache) get(model, text string) ([]float32, bool) {
	if c == nil || c.entries == nil {
		return nil, false
	}
	key := contentHash(model, text)
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		c.misses++
		return nil, false
	}
	c.hits++
	c.order.MoveToFront(el)
	return el.Value.(*cacheEntry).vec, true
}

func (c *Cache) put(model, text string, vec []float32) {
	if c == nil || c.entries == nil || c.max <= 0 {
		return
	}
	key := contentHash(model, text)
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.order.MoveToFront(el)
		return
	}
	c.entries[key] = c.order.PushFront(&cacheEntry{key: key, vec: vec})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*cacheEntry).key)
	}
}

// contentHash is the hex SHA-256 of s.
func contentHash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(strconv.Itoa(len(p))))
		h.Write([]byte{':'})
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}
