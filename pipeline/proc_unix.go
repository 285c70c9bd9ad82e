//go:build unix

package pipeline

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// runProcess runs argv in its own process group with output to log. When
// ctx ends, and after the process exits, the whole group is killed: like a
// container, a step leaves no process behind.
func runProcess(ctx context.Context, argv, env []string, log *os.File) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return &startError{err}
	}
	err := cmd.Wait()
	_ = killGroup(cmd.Process.Pid)
	return err
}

func killGroup(pgid int) error {
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
