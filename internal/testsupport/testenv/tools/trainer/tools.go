//go:build tools

package tools

import (
	_ "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"
	_ "sigs.k8s.io/jobset"
)
