package lex

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Terms returns the lower-cased words of text: maximal runs of letters and
// digits. BM25 and the hashed-feature embedder read text through it; there
// is no stemming and no stop list (BM25's IDF weighs common words down).
func Terms(text string) []string {
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

// Each calls fn with each lower-cased word of text, the words Terms
// returns, in a buffer fn must not keep; it allocates only for words
// longer than 64 bytes.
func Each(text string, fn func(word []byte)) {
	var buf [64]byte
	emit := func(w string) {
		b := buf[:0]
		for _, r := range w {
			b = utf8.AppendRune(b, unicode.ToLower(r))
		}
		fn(b)
	}
	start := -1
	for i, r := range text {
		word := unicode.IsLetter(r) || unicode.IsDigit(r)
		if word && start < 0 {
			start = i
		}
		if !word && start >= 0 {
			emit(text[start:i])
			start = -1
		}
	}
	if start >= 0 {
		emit(text[start:])
	}
}

// stopWords are English function words; the hashed-feature embedder
// weighs them a tenth of other words, since it has no corpus statistics
// (as BM25's IDF) to learn that they carry no topic, and extractive answers
// skip them.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about above after again all also am an and any are as at be because been
		before being between both but by can could did do does doing down during each few for from further had
		has have having he her here hers him his how i if in into is it its itself just me more most my no nor
		not now of off on once only or other our ours out over own same she should so some such than that the
		their theirs them then there these they this those through to too under until up very was we were what
		when where which while who whom why will with would you your yours`) {
		stopWords[w] = true
	}
}

// Stop reports whether w, lower-cased, is an English function word.
func Stop(w string) bool { return stopWords[w] }
