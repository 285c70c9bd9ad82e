// Command stopcluster stops the test cluster that the tests started, if it
// still runs, and waits until it has removed what its node left on the
// machine. The cluster stops by itself two minutes after its last test
// binary ends; .ci/run calls this so that nothing outlives the run.
//
//	go run ./internal/testenv/cmd/stopcluster
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cubestudio/cube/internal/testenv"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := testenv.StopCluster(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "stopcluster:", err)
		os.Exit(1)
	}
}
