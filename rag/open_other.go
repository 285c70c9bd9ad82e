//go:build !unix

package rag

// openNonblock is 0 where named pipes do not block an open.
const openNonblock = 0
