//go:build unix

package load

import "syscall"

// openNonblock makes opening a named pipe return at once instead of
// waiting for a writer, so openRegular can look at what it opened.
const openNonblock = syscall.O_NONBLOCK
