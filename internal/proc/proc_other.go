//go:build !unix

package proc

import "os/exec"

// isolate leaves cmd as it is: without process groups, cancelling kills the
// main process only and its children may survive.
func isolate(*exec.Cmd) {}

func reap(*exec.Cmd) {}
