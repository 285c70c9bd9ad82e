//go:build tools

// Package tools pins the LeaderWorkerSet controller's command.
package tools
