package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/cubestudio/cube/internal/testenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := testenv.Prepare(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "prebuild:", err)
		os.Exit(1)
	}
	fmt.Println(dir)
}
