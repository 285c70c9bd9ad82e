//go:build unix

package proc

import (
	"errors"
	"os/exec"
	"syscall"
)

// isolate runs cmd in its own process group; cancelling kills the whole
// group, so a step's children die with it. On Linux the step also dies
// with the run's process (dieWithRun).
func isolate(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithRun(cmd.SysProcAttr)
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
}

// reap kills what is left of the step's process group after its main
// process exited: like a container, a step leaves no process behind.
func reap(cmd *exec.Cmd) { _ = killGroup(cmd.Process.Pid) }

func killGroup(pgid int) error {
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
