package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/cubestudio/cube/cmd/kubectl-cube/internal/cli"
)

func main() {
	// Ctrl-C stops a wait or a followed log cleanly: the context ends, the
	// command returns and the process exits with the command's code.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
