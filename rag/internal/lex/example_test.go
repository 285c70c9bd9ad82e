package lex_test

import (
	"fmt"

	"github.com/cubestudio/cube/rag/internal/lex"
)

func ExampleTerms() {
	// Stop words are marked with a star.
	for _, w := range lex.Terms("Raise the GPU-quota of team-a: 8×A100!") {
		if lex.Stop(w) {
			w += "*"
		}
		fmt.Print(w, " ")
	}
	fmt.Println()
	// Output: raise the* gpu quota of* team a* 8 a100
}
