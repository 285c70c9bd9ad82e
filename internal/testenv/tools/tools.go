//go:build tools

// Package tools pins the commands the test API server is built from.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
