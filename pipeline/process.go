package pipeline

import (
	"context"
	"os"
	"os/exec"
	"time"
)

// runProcess runs argv with its output in log. When ctx ends, and after the
// process exits, what it started is killed (see isolate and reap).
func runProcess(ctx context.Context, argv, env []string, log *os.File) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = log, log
	cmd.WaitDelay = 5 * time.Second
	isolate(cmd)
	if err := cmd.Start(); err != nil {
		return &startError{err}
	}
	err := cmd.Wait()
	reap(cmd)
	return err
}
