//go:build tools

// Package tools pins Argo's controller and executor commands.
package tools
