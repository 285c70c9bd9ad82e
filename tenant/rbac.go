package tenant

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
)

var (
	editVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	viewVerbs = []string{"get", "list", "watch"}
	// jobVerbs are what an Argo resource step does with the job it runs:
	// kubectl create, then GET polls until its success or failure
	// condition matches and kubectl get for its outputs
	// (workflow/executor/resource.go ExecResource, WaitResource,
	// SaveResourceParameters, argo-workflows v3.7.6); it never watches,
	// lists, patches or deletes the job.
	jobVerbs = []string{"create", "get"}
)

// cubeResources are the kinds cube's builders create in a tenant's
// namespace, by API group. The ClusterRoles edit and view are not enough:
// they cover only what aggregates to them (training-operator v1.8.1
// aggregates its jobs to kubeflow-edit/kubeflow-view only,
// manifests/overlays/kubeflow/kubeflow-training-roles.yaml; KubeRay,
// LeaderWorkerSet and Volcano ship no aggregated roles; Argo's aggregate
// roles come only with its cluster install), and even their built-in rules
// exist only once kube-controller-manager's clusterrole-aggregation
// controller has filled them. The tenant's Roles name every kind, so
// members can use what cube makes whatever the cluster aggregates.
var cubeResources = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"pods", "services", "configmaps", "persistentvolumeclaims", "serviceaccounts"}},
	{APIGroups: []string{"apps"}, Resources: []string{"deployments", "statefulsets"}},
	{APIGroups: []string{"batch"}, Resources: []string{"jobs"}},
	{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}},
	{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}},
	{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}},
	{APIGroups: []string{"kubeflow.org"}, Resources: []string{
		"pytorchjobs", "tfjobs", "mpijobs", "paddlejobs", "xgboostjobs", "mxjobs", // training-operator
		"experiments", "trials", "suggestions", // Katib
	}},
	{APIGroups: []string{"argoproj.io"}, Resources: []string{"workflows", "cronworkflows", "workflowtemplates", "workflowtaskresults"}},
	{APIGroups: []string{"ray.io"}, Resources: []string{"rayjobs", "rayclusters", "rayservices"}},
	{APIGroups: []string{"leaderworkerset.x-k8s.io"}, Resources: []string{"leaderworkersets"}},
	{APIGroups: []string{"batch.volcano.sh"}, Resources: []string{"jobs"}},
	{APIGroups: []string{"scheduling.volcano.sh"}, Resources: []string{"podgroups"}},
	{APIGroups: []string{"gateway.networking.k8s.io"}, Resources: []string{"httproutes"}},
}

// editOnly are what editors get beyond cubeResources: Secrets (tokens a
// notebook or a model server reads), pod logs, and the DeepSpeed and MPI
// launchers' Roles; the API server still refuses a Role granting more
// than its creator holds (RBAC escalation checks).
var editOnly = []rbacv1.PolicyRule{
	{APIGroups: []string{""}, Resources: []string{"secrets"}},
	{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles", "rolebindings"}},
}

// kueueReads: both editors and viewers read the namespace's Kueue
// Workloads and LocalQueues, which say why a job waits (Release.Status and
// Wait: Status.Queue). Kueue writes them; members never do.
var kueueReads = rbacv1.PolicyRule{APIGroups: []string{"kueue.x-k8s.io"}, Resources: []string{"workloads", "localqueues"}, Verbs: []string{"get", "list", "watch"}}

// logs: both editors and viewers read pod logs (Release.Logs).
var logs = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get", "list", "watch"}}

// events: both editors and viewers read the namespace's events, where
// controllers report the pods the cluster refused to create
// (Release.Status and Wait: Refusals; see ClientRules).
var events = rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"list", "watch"}}

// ownNamespace lets editors read the tenant's Namespace: Apply's Pod
// Security check reads its enforce label (see ClientRules), and skips the
// check for a caller who may not, leaving only the API server to refuse
// the pods, after their job is stored. A RoleBinding grants it for its
// own namespace only.
func ownNamespace(name string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, ResourceNames: []string{name}, Verbs: []string{"get"}}
}

// pipelineJobs are the kinds a pipeline's workload step creates and
// follows: every kind with a completion that cube builds.
var pipelineJobs = []rbacv1.PolicyRule{
	{APIGroups: []string{"kubeflow.org"}, Resources: []string{"pytorchjobs", "tfjobs", "mpijobs", "paddlejobs", "xgboostjobs", "mxjobs", "experiments"}},
	{APIGroups: []string{"ray.io"}, Resources: []string{"rayjobs"}},
	{APIGroups: []string{"batch.volcano.sh"}, Resources: []string{"jobs"}},
	{APIGroups: []string{"batch"}, Resources: []string{"jobs"}},
}

// withVerbs returns fresh copies of rules with verbs; status gets the
// view verbs, read for the others' state.
func withVerbs(rules []rbacv1.PolicyRule, verbs []string, status bool) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, 0, len(rules)*2)
	for _, r := range rules {
		out = append(out, rbacv1.PolicyRule{APIGroups: slices.Clone(r.APIGroups), Resources: slices.Clone(r.Resources), Verbs: slices.Clone(verbs)})
		if status {
			st := make([]string, len(r.Resources))
			for i, res := range r.Resources {
				st[i] = res + "/status"
			}
			out = append(out, rbacv1.PolicyRule{APIGroups: slices.Clone(r.APIGroups), Resources: st, Verbs: slices.Clone(viewVerbs)})
		}
	}
	return out
}

func role(id cube.Identity, name, namespace string, rules []rbacv1.PolicyRule) *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
		ObjectMeta: id.ObjectMeta(name, namespace, nil, nil),
		Rules:      rules,
	}
}

func roleBinding(id cube.Identity, name, namespace string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: id.ObjectMeta(name, namespace, nil, nil),
		RoleRef:    ref,
		Subjects:   slices.Clone(subjects),
	}
}

// pipelineAccount is the ServiceAccount Argo runs a pipeline's pods as,
// with the Role Argo's executor needs (workflowtaskresults create and
// patch: manifests/quick-start/base/executor/emissary/executor-role.yaml
// and docs/workflow-rbac.md, argo-workflows v3.7.6) and what a workload
// step does with its job.
func (t *Spec) pipelineAccount(id cube.Identity) []client.Object {
	rules := append([]rbacv1.PolicyRule{{
		APIGroups: []string{"argoproj.io"}, Resources: []string{"workflowtaskresults"}, Verbs: []string{"create", "patch"},
	}}, withVerbs(pipelineJobs, jobVerbs, false)...)
	return []client.Object{
		&corev1.ServiceAccount{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
			ObjectMeta: id.ObjectMeta(PipelineServiceAccount, t.name, nil, nil),
		},
		role(id, PipelineServiceAccount, t.name, rules),
		roleBinding(id, PipelineServiceAccount, t.name,
			rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: PipelineServiceAccount},
			[]rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: PipelineServiceAccount, Namespace: t.name}}),
	}
}

// memberRoles are the Roles <name>-cube-edit and <name>-cube-view: every
// kind cube creates, to edit or to read, and pod logs; editors also read
// the tenant's Namespace.
func (t *Spec) memberRoles(id cube.Identity) []client.Object {
	edit := append(withVerbs(cubeResources, editVerbs, true), withVerbs(editOnly, editVerbs, false)...)
	view := withVerbs(cubeResources, viewVerbs, true)
	return []client.Object{
		role(id, t.name+"-cube-edit", t.name, append(edit, *logs.DeepCopy(), *events.DeepCopy(), *kueueReads.DeepCopy(), ownNamespace(t.name))),
		role(id, t.name+"-cube-view", t.name, append(view, *logs.DeepCopy(), *events.DeepCopy(), *kueueReads.DeepCopy())),
	}
}

// memberBindings bind editors and viewers to the ClusterRole edit or view
// and to the tenant's Role beside it.
func (t *Spec) memberBindings(id cube.Identity) ([]client.Object, field.ErrorList) {
	var objs []client.Object
	var errs field.ErrorList
	for _, b := range []struct {
		role     string
		subjects []rbacv1.Subject
	}{{ClusterRoleEdit, t.editors}, {ClusterRoleView, t.viewers}} {
		if len(b.subjects) == 0 {
			continue
		}
		rbName := t.name + "-" + b.role
		for i, s := range b.subjects {
			if s.Name == "" {
				errs = append(errs, field.Required(field.NewPath("roleBindings").Key(rbName).Child("subjects").Index(i).Child("name"), "a user or group name is required"))
			}
		}
		objs = append(objs,
			roleBinding(id, rbName, t.name, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role}, b.subjects),
			roleBinding(id, t.name+"-cube-"+b.role, t.name, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: t.name + "-cube-" + b.role}, b.subjects),
		)
	}
	return objs, errs
}
