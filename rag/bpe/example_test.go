package bpe_test

import (
	"fmt"

	"github.com/cubestudio/cube/rag/bpe"
)

// A tokenizer counts and splits text the way the model's encoding does,
// offline; rag.Tokens(tok, size, overlap) splits documents with it.
func ExampleCL100kBase() {
	tok := bpe.CL100kBase()
	text := "GPU quota for the NLP team"
	tokens, err := tok.Tokens(text)
	fmt.Println(tok.Name(), tok.Count(text), err)
	fmt.Printf("%q\n", tokens)
	// Output:
	// cl100k_base 7 <nil>
	// ["GPU" " quota" " for" " the" " N" "LP" " team"]
}
