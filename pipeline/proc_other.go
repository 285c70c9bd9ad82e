//go:build !unix

package pipeline

import (
	"context"
	"os"
	"os/exec"
	"time"
)

// runProcess runs argv with output to log; when ctx ends the process is
// killed (without process groups, its children may survive).
func runProcess(ctx context.Context, argv, env []string, log *os.File) error {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = log, log
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		return &startError{err}
	}
	return cmd.Wait()
}
