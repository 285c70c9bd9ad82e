package bpe

import (
	"fmt"

	"github.com/tiktoken-go/tokenizer"
)

// Tokenizer is a BPE encoding; it implements rag.Tokenizer.
type Tokenizer struct {
	codec tokenizer.Codec
	name  string
}

// CL100kBase returns the cl100k_base encoding (GPT-4, text-embedding-3).
func CL100kBase() *Tokenizer {
	c, _ := tokenizer.Get(tokenizer.Cl100kBase)
	return &Tokenizer{codec: c, name: "cl100k_base"}
}

// O200kBase returns the o200k_base encoding (GPT-4o).
func O200kBase() *Tokenizer {
	c, _ := tokenizer.Get(tokenizer.O200kBase)
	return &Tokenizer{codec: c, name: "o200k_base"}
}

// Name returns the encoding's name.
func (t *Tokenizer) Name() string {
	if t == nil {
		return ""
	}
	return t.name
}

// Tokens returns the byte pieces of text's tokens.
func (t *Tokenizer) Tokens(text string) ([]string, error) {
	if t == nil || t.codec == nil {
		return nil, fmt.Errorf("bpe: nil Tokenizer: use bpe.CL100kBase")
	}
	_, pieces, err := t.codec.Encode(text)
	if err != nil {
		return nil, fmt.Errorf("bpe %s: %w", t.name, err)
	}
	return pieces, nil
}

// Count returns the number of tokens in text, 0 if it cannot be encoded;
// it fits RecursiveSplitter.Length.
func (t *Tokenizer) Count(text string) int {
	if t == nil || t.codec == nil {
		return 0
	}
	n, err := t.codec.Count(text)
	if err != nil {
		return 0
	}
	return n
}
