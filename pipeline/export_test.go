package pipeline

import rbacv1 "k8s.io/api/rbac/v1"

// ExecutorRules gives the external tests the rules ExecutorRBAC grants,
// which the builder keeps to itself (they are in the Role Objects renders).
func ExecutorRules(p *Pipeline) []rbacv1.PolicyRule { return p.executorRulesOf() }
