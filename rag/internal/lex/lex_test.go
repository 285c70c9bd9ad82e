package lex

import (
	"slices"
	"testing"
)

// TestEachYieldsTheWordsOfTerms compares the allocation-free walk with
// Terms on mixed scripts, digits, case and a word past the buffer.
func TestEachYieldsTheWordsOfTerms(t *testing.T) {
	for _, text := range []string{
		"", "  ", "TrimSpace returns s, with ÉCOLE and İstanbul; ΣΊΣΥΦΟΣ 42x!",
		"a" + string(make([]byte, 0)) + "Supercalifragilisticexpialidocious-Supercalifragilisticexpialidocious-SUPERCALIFRAGILISTICEXPIALIDOCIOUSSUPERCALIFRAGILISTICEXPIALIDOCIOUS",
		"日本語のテキスト and ＦＵＬＬ width",
	} {
		var got []string
		Each(text, func(w []byte) { got = append(got, string(w)) })
		if want := Terms(text); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("%q: Each %q, Terms %q", text, got, want)
		}
	}
}
