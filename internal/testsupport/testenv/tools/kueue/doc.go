//go:build tools

// Package tools pins Kueue's manager command.
package tools
