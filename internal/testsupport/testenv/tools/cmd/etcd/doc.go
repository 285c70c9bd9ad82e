// Command etcd is etcd's own main, built from the Go module proxy so that the
// test API server needs no downloaded binaries.
package main
