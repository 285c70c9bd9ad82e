// Package bpe gives rag.TokenSplitter a byte-pair-encoding tokenizer that
// works offline: OpenAI's cl100k_base and o200k_base encodings from
// github.com/tiktoken-go/tokenizer, whose vocabularies are compiled into
// the binary (about 10 MB), so nothing is downloaded at run time. It is a
// package of its own so that importing rag does not carry the vocabularies.
//
//	splitter := rag.Tokens(bpe.CL100kBase(), 512, 64)
package bpe
