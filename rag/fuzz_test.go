package rag

import (
	"testing"
)

// Citations never point outside the sources.
func FuzzCitations(f *testing.F) {
	f.Add("a [1] b [2, 3] c [99] [0] [1,1]", 3)
	f.Fuzz(func(t *testing.T, text string, n int) {
		if n < 0 || n > 50 {
			return
		}
		sources := make([]Hit, n)
		for i := range sources {
			sources[i].Chunk.ID = string(rune('a' + i))
		}
		seen := map[int]bool{}
		for _, c := range citations(text, sources) {
			if c.N < 1 || c.N > n || seen[c.N] || c.ChunkID != sources[c.N-1].Chunk.ID {
				t.Fatalf("bad citation %+v of %d sources", c, n)
			}
			seen[c.N] = true
		}
		_ = extractive(text, sources)
	})
}
