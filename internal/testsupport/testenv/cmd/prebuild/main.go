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

// moduleGraph puts the go.mod file of every module in cube's module graph
// into the module cache. cube's own build reads only those of the modules
// it builds, but a module that requires cube resolves the whole graph
// (TestAdopterModule, cubetest/envtest, runs one with GOPROXY=off, as the
// tests download nothing); on a fresh machine it stopped at
// github.com/inconshreveable/mousetrap, which Argo's go.mod requires.
func moduleGraph(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, "go", "list", "-m", "all")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go list -m all (the module graph, for TestAdopterModule): %v\n%s", err, out)
	}
	return nil
}
