//go:build !unix

package load

// openNonblock is 0 where named pipes do not block an open.
const openNonblock = 0
