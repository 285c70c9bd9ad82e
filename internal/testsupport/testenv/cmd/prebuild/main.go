package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reason := testenv.ClusterUnsupported()
	if reason != "" && os.Getenv("CI") == "true" {
		fmt.Fprintln(os.Stderr, "prebuild:", reason)
		os.Exit(1)
	}
	if reason == "" {
		// The cluster's build includes the API server's, and builds the
		// operators beside it.
		if err := testenv.PrepareCluster(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "prebuild:", err)
			os.Exit(1)
		}
	}
	dir, err := testenv.Prepare(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "prebuild:", err)
		os.Exit(1)
	}
	fmt.Println(dir)
	if err := moduleGraph(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "prebuild:", err)
		os.Exit(1)
	}
	if reason != "" {
		fmt.Fprintln(os.Stderr, "prebuild: not building the test cluster:", reason)
	}
}

func moduleGraph(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "all")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go list -m all (the module graph, for TestAdopterModule): %v\n%s", err, out)
	}
	return nil
}
