package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: nslookup NAME")
		os.Exit(2)
	}
	name := os.Args[1]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The pure-Go resolver reads /etc/resolv.conf as the C library does.
	addrs, err := (&net.Resolver{PreferGo: true}).LookupHost(ctx, name)
	if err != nil {
		fmt.Fprintf(os.Stderr, "** server can't find %s: %v\n", name, err)
		os.Exit(1)
	}
	fmt.Printf("Name:\t%s\n", name)
	for _, a := range addrs {
		fmt.Printf("Address: %s\n", a)
	}
}
