// Package lex splits text into the lower-cased words that BM25, the
// hashed-feature embedder and extractive answers of package rag read, and
// knows the English stop words.
package lex
