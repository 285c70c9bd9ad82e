//go:build tools

// Package tools pins the JobSet controller's and the Kubeflow Trainer v2
// controller manager's commands.
package tools
