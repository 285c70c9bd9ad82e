package argo

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/internal/graph"
)

// executorSuffix names the service account ExecutorRBAC makes when the
// pipeline names none.
const executorSuffix = "-executor"

// executorRulesOf returns the RBAC rules Argo's executor (v3.7, emissary)
// needs to run the pipeline, freshly allocated:
//
//   - create and patch on argoproj.io workflowtaskresults, where every pod
//     reports its outputs and completion (docs/workflow-rbac.md and
//     manifests/quick-start/base/executor/emissary/executor-role.yaml);
//   - for each kind the workload steps run, create and get, no more: the
//     resource step runs kubectl create of the manifest (ExecResource),
//     polls the job with GET until a condition matches (WaitResource
//     checkResourceState, no watch) and reads its outputs with kubectl get
//     (SaveResourceParameters), all in workflow/executor/resource.go,
//     argo-workflows v3.7.6. The executor never patches or deletes the
//     job: it stops at its own deadline (see ActiveDeadline), and the
//     Workflow owns it (setOwnerReference), so the garbage collector
//     deletes it with the Workflow;
//   - for each kind the serving steps apply (Deployment, LeaderWorkerSet),
//     create, get and patch: kubectl apply reads the object and creates or
//     patches it, and the executor then polls it with GET. It never deletes
//     a service.
//
// The objects Objects renders around the jobs (ConfigMaps, Services…) are
// applied with the pipeline by whoever applies it, not by the executor, so
// they need no rule here. A pipeline that does not validate has no rules.
func executorRulesOf(p *pipeline.Pipeline) []rbacv1.PolicyRule {
	g, errs, err := analyze(p, true)
	if err != nil || len(errs) > 0 {
		return nil
	}
	return g.executorRules()
}

func (g *dag) executorRules() []rbacv1.PolicyRule {
	rules := []rbacv1.PolicyRule{{
		APIGroups: []string{"argoproj.io"},
		Resources: []string{"workflowtaskresults"},
		Verbs:     []string{"create", "patch"},
	}}
	// Jobs are created; services are applied, which kubectl does with a
	// get and then a create or a patch (client-side apply).
	jobs, services := map[string][]string{}, map[string][]string{}
	for _, n := range append(slices.Clone(g.Nodes), g.Exit) {
		if n == nil || n.Primary == nil {
			continue
		}
		byGroup := jobs
		if n.Type == graph.Serve {
			byGroup = services
		}
		gvk := n.Primary.GroupVersionKind()
		// The plural kubectl and Argo's executor derive from the kind
		// (resource.go inferObjectSelfLink uses the same lowercase plural).
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		if !slices.Contains(byGroup[gvk.Group], plural.Resource) {
			byGroup[gvk.Group] = append(byGroup[gvk.Group], plural.Resource)
		}
	}
	rules = appendRules(rules, jobs, "create", "get")
	return appendRules(rules, services, "create", "get", "patch")
}

// appendRules appends one rule per API group of byGroup, in group order.
func appendRules(rules []rbacv1.PolicyRule, byGroup map[string][]string, verbs ...string) []rbacv1.PolicyRule {
	groups := make([]string, 0, len(byGroup))
	for grp := range byGroup {
		groups = append(groups, grp)
	}
	slices.Sort(groups)
	for _, grp := range groups {
		resources := byGroup[grp]
		slices.Sort(resources)
		rules = append(rules, rbacv1.PolicyRule{
			APIGroups: []string{grp},
			Resources: resources,
			Verbs:     slices.Clone(verbs),
		})
	}
	return rules
}

// serviceAccountName is the account the pipeline's pods run under when
// ExecutorRBAC makes it.
func (g *dag) serviceAccountName() string {
	if g.P.ServiceAccount != "" || !g.executorRBAC {
		return g.P.ServiceAccount
	}
	return g.P.Name + executorSuffix
}

// rbacObjects renders the ServiceAccount, Role and RoleBinding of
// ExecutorRBAC, or nothing.
func (g *dag) rbacObjects() []client.Object {
	p := g.p
	if !g.executorRBAC {
		return nil
	}
	name := g.serviceAccountName()
	sa := &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: podspec.Of(&p.Handle).ObjectMeta(name),
	}
	role := &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: podspec.Of(&p.Handle).ObjectMeta(name),
		Rules:      g.executorRules(),
	}
	binding := &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: podspec.Of(&p.Handle).ObjectMeta(name),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name, Namespace: podspec.Of(&p.Handle).NamespaceName()}},
	}
	return []client.Object{sa, role, binding}
}
