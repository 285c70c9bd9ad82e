package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/cubestudio/cube/internal/testsupport/testenv"
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
	if reason := testenv.ClusterUnsupported(); reason != "" {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "prebuild:", reason)
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "prebuild: not building the test cluster:", reason)
		return
	}
	if err := testenv.PrepareCluster(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "prebuild:", err)
		os.Exit(1)
	}
}
