package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := testenv.StopCluster(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "stopcluster:", err)
		os.Exit(1)
	}
}
