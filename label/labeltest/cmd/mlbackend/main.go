package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/cubestudio/cube/label"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "mlbackend: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	backend, err := label.BackendFromEnv()
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	addr := net.JoinHostPort("", strconv.Itoa(label.BackendPort))
	// Predictions wait on a model: no write timeout, but bounded headers.
	srv := &http.Server{Addr: addr, Handler: backend, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	fmt.Printf("mlbackend: serving Label Studio's ML backend protocol on %s\n", addr)
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
