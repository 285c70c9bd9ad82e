package cube

import (
	"cmp"
	"maps"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
)

// What a Client does with each kind of a release's objects, and why:
//
//	create, patch  Apply (server-side apply is a patch; one that creates
//	               the object also needs create)
//	get            Release.Status; prune reads an object before deleting it
//	list, watch    Release.Wait
//	delete         Release.Delete, prune
var objectVerbs = []string{"create", "delete", "get", "list", "patch", "watch"}

// ClientRules returns the RBAC rules a Client needs to apply the
// workloads in one namespace, wait on them, read their status and their
// pods' logs, prune the objects a later Apply drops and delete the
// release: the least privilege a program running cube needs. Grant them
// with a Role and RoleBinding in that namespace; objects without a
// namespace (a tenant's Namespace and Volcano Queue) need them in a
// ClusterRole instead. The rules are, sorted by API group and resource:
//
//   - on every kind of the workloads' objects: create and patch (Apply:
//     server-side apply, which the API server also authorizes as create
//     when it creates the object), get (Status, prune), list and watch
//     (Wait), delete (Delete, prune);
//   - configmaps: create, get, patch, list and delete, for the release
//     records (cube-release-NAME) that Apply writes, Client.Release and
//     Client.Releases read and Delete removes;
//   - pods: list and watch, for what Wait and Status say about stuck
//     pods (without them Wait follows the objects alone) and for Logs,
//     which lists the release's pods; pods/log: get, for Logs;
//   - events: list and watch, for the pods the cluster refused to create
//     (Status.Refusals: a quota exceeded…), which controllers report only
//     in events (without them Wait and Status cannot say why a job never
//     starts);
//   - namespaces: get, for Apply's Pod Security check, which reads the
//     namespace's enforce label (without it Apply leaves the check to the
//     API server, which refuses only the pods, after the job is stored).
//     A RoleBinding grants get on its own namespace only.
//
// Plural resource names are derived from the kinds as kubectl does
// (meta.UnsafeGuessKindToResource); every kind cube renders follows that
// rule. A workload that fails to render is reported as Apply would.
func ClientRules(ws ...Workload) ([]rbacv1.PolicyRule, error) {
	objs, err := prepareAll("workload", ws)
	if err != nil {
		return nil, err
	}
	type resource struct{ group, name string }
	verbs := map[resource]map[string]bool{}
	add := func(group, name string, vs ...string) {
		r := resource{group, name}
		if verbs[r] == nil {
			verbs[r] = map[string]bool{}
		}
		for _, v := range vs {
			verbs[r][v] = true
		}
	}
	for _, u := range objs {
		plural, _ := meta.UnsafeGuessKindToResource(u.GroupVersionKind())
		add(plural.Group, plural.Resource, objectVerbs...)
	}
	add("", "configmaps", "create", "delete", "get", "list", "patch")
	add("", "pods", "list", "watch")
	add("", "pods/log", "get")
	add("", "events", "list", "watch")
	add("", "namespaces", "get")

	keys := slices.SortedFunc(maps.Keys(verbs), func(a, b resource) int {
		if a.group != b.group {
			return cmp.Compare(a.group, b.group)
		}
		return cmp.Compare(a.name, b.name)
	})
	rules := make([]rbacv1.PolicyRule, 0, len(keys))
	for _, k := range keys {
		rules = append(rules, rbacv1.PolicyRule{
			APIGroups: []string{k.group},
			Resources: []string{k.name},
			Verbs:     slices.Sorted(maps.Keys(verbs[k])),
		})
	}
	return rules, nil
}
