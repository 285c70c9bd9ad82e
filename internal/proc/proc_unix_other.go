//go:build unix && !linux

package proc

import "syscall"

// dieWithRun does nothing: only Linux has a parent-death signal, so
// elsewhere a step outlives a run killed with SIGKILL.
func dieWithRun(*syscall.SysProcAttr) {}
