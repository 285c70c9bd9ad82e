//go:build tools

// Package tools pins the LeaderWorkerSet controller's command.
package tools

import _ "sigs.k8s.io/lws/cmd"
