//go:build tools

// Package tools pins the commands the test API server and the test cluster's
// node are built from.
package tools
