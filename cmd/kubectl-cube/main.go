package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cubestudio/cube/cmd/kubectl-cube/internal/cli"
)

func main() {
	// Ctrl-C stops a wait or a followed log cleanly: the context ends, the
	// command returns and the process exits with the command's code.
	// controller-runtime's client logs through a logger the program sets;
	// unset, it prints a stack trace to stderr after 30 seconds, in the
	// middle of a wait. The plugin says what went wrong through errors.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
