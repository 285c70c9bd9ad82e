package rag

import (
	"strings"
	"unicode"
)

// terms returns the lower-cased words of text: maximal runs of letters and
// digits. BM25 and the hashed-feature embedder read text through it; there
// is no stemming and no stop list (BM25's IDF weighs common words down).
func terms(text string) []string {
	var out []string
	start := -1
	for i, r := range text {
		word := unicode.IsLetter(r) || unicode.IsDigit(r)
		if word && start < 0 {
			start = i
		}
		if !word && start >= 0 {
			out = append(out, strings.ToLower(text[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, strings.ToLower(text[start:]))
	}
	return out
}
