package argo

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/cubestudio/cube/pipeline"
)

// ExecutorRules gives the external tests the rules ExecutorRBAC grants,
// which the builder keeps to itself (they are in the Role Objects renders).
func ExecutorRules(p *pipeline.Pipeline) []rbacv1.PolicyRule { return executorRulesOf(p) }
