package proc

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"time"
)

// Run runs argv with env as its whole environment and its output (stdout
// and stderr) in log, as a step runs on this machine: in a process group of
// its own, so that when ctx ends the process and everything it started are
// killed, and what is left of the group when the process exits is killed
// too (a step, like a container, leaves nothing behind). On Linux the
// process also gets SIGKILL when the calling process dies. A process that
// could not start returns a *StartError.
func Run(ctx context.Context, argv, env []string, log *os.File) error {
	if len(argv) == 0 {
		return &StartError{Err: errors.New("no command to run")}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = log, log
	cmd.WaitDelay = 5 * time.Second
	isolate(cmd)
	if err := cmd.Start(); err != nil {
		return &StartError{Err: err}
	}
	err := cmd.Wait()
	reap(cmd)
	return err
}

// StartError is a process that could not start (a missing executable):
// what Argo calls an error rather than a failure when it decides what to
// retry.
type StartError struct{ Err error }

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }
