// Command prebuild builds what the test API server needs (kube-apiserver,
// etcd, controller-gen, the CRDs and the etcd template) into the user cache
// and prints the cache directory. Run it before go test on a fresh machine
// so that the build, about 8 minutes on two cores, does not count against
// go test's timeout:
//
//	go run ./internal/testenv/cmd/prebuild
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
