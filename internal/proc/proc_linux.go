//go:build linux

package proc

import "syscall"

// dieWithRun makes a step's process get SIGKILL when the run's process
// dies, however it dies: a run killed with SIGKILL leaves no step behind
// to write into the run directory while a resumed run works in it
// (TestLocalRunResumesAfterSIGKILL). The signal fires when the thread that
// started the step exits; Go retires a thread only when a goroutine locked
// to it exits, which the runner never does. Processes the step started
// itself are its to stop.
func dieWithRun(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }
