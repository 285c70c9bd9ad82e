package cube

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// PodSecurityError is Apply (or CheckPodSecurity, tenant.Admits) refusing, before
// anything is applied, workloads whose pods the namespace's Pod Security
// level would refuse: the API server's PodSecurity admission checks pods
// only when a controller creates them, so a job would be stored and then
// never get a pod.
type PodSecurityError struct {
	Namespace string
	// Level is the enforced level and version, as the API server writes
	// it: "baseline:latest".
	Level      string
	Violations []PodSecurityViolation
}

// PodSecurityViolation is one pod template the level refuses.
type PodSecurityViolation struct {
	Object ObjectRef
	// Template is the field path of the pod template in the object
	// ("spec.pytorchReplicaSpecs.Worker.template"; "spec" for a Pod).
	Template string
	// Reasons is what PodSecurity admission would say, e.g. `non-default
	// capabilities (container "pytorch" must not include "IPC_LOCK" in
	// securityContext.capabilities.add)`.
	Reasons string
}

func (e *PodSecurityError) Error() string {
	if e == nil {
		return "<nil PodSecurityError>"
	}
	parts := make([]string, len(e.Violations))
	rdma := false
	for i, v := range e.Violations {
		parts[i] = fmt.Sprintf("%s (%s): %s", v.Object, v.Template, v.Reasons)
		rdma = rdma || strings.Contains(v.Reasons, `"IPC_LOCK"`)
	}
	msg := fmt.Sprintf("namespace %s enforces PodSecurity %q, which would refuse the pods of %s", e.Namespace, e.Level, strings.Join(parts, "; "))
	if rdma {
		msg += "; IPC_LOCK comes from an RDMA fabric: let the tenant use it with tenant.New(...).AllowRDMA()"
	}
	return msg
}

// The checks of k8s.io/pod-security-admission, the code the API server's
// PodSecurity admission runs (policy.DefaultChecks at v0.37.2).
var podSecurityEvaluator = sync.OnceValues(func() (policy.Evaluator, error) {
	return policy.NewEvaluator(policy.DefaultChecks(), nil)
})

// enforcedLevel reads a namespace's enforce labels as PodSecurity
// admission does; ok is false when there is nothing to check (no label,
// privileged, or labels the admission itself would reject).
func enforcedLevel(labels map[string]string) (psaapi.LevelVersion, bool) {
	level, err := psaapi.ParseLevel(labels[psaapi.EnforceLevelLabel])
	if err != nil || level == psaapi.LevelPrivileged {
		return psaapi.LevelVersion{}, false
	}
	version := psaapi.LatestVersion()
	if v, set := labels[psaapi.EnforceVersionLabel]; set {
		if version, err = psaapi.ParseVersion(v); err != nil {
			return psaapi.LevelVersion{}, false
		}
	}
	return psaapi.LevelVersion{Level: level, Version: version}, true
}

// CheckPodSecurity reports, without a cluster, whether a namespace with
// the given labels admits the pods of the workloads: nil, or a
// *PodSecurityError naming every pod template its enforced level refuses
// and why, as the API server's PodSecurity admission would (the checks are
// k8s.io/pod-security-admission's, at the level and version of the labels
// pod-security.kubernetes.io/enforce and enforce-version). A namespace
// without an enforce label, or at the privileged level, admits every pod.
// The workloads are rendered and checked as Apply does; their problems
// are reported under "workload <index>".
func CheckPodSecurity(namespace string, labels map[string]string, ws ...Workload) error {
	objs, err := prepareAll("workload", ws)
	if err != nil {
		return err
	}
	return checkPodSecurity(namespace, labels, objs)
}

// checkPodSecurity evaluates every pod template of objs at the level the
// labels of namespace enforce.
func checkPodSecurity(namespace string, labels map[string]string, objs []*unstructured.Unstructured) error {
	lv, ok := enforcedLevel(labels)
	if !ok {
		return nil
	}
	eval, err := podSecurityEvaluator()
	if err != nil {
		return fmt.Errorf("pod security checks: %w", err)
	}
	psErr := &PodSecurityError{Namespace: namespace, Level: lv.String()}
	for _, u := range objs {
		for _, tmpl := range podTemplates(u.Object) {
			agg := policy.AggregateCheckResults(eval.EvaluatePod(lv, tmpl.meta, tmpl.spec))
			if !agg.Allowed {
				psErr.Violations = append(psErr.Violations, PodSecurityViolation{Object: RefOf(u), Template: tmpl.path, Reasons: agg.ForbiddenDetail()})
			}
		}
	}
	if len(psErr.Violations) > 0 {
		return psErr
	}
	return nil
}

// checkPodSecurity checks the pods of objs, already in their namespaces,
// against the level each namespace enforces: the labels of a Namespace
// applied with them, or else of the stored namespace. A namespace the
// client cannot read is left to the API server.
func (c *Client) checkPodSecurity(ctx context.Context, objs []*unstructured.Unstructured) error {
	byNamespace := map[string][]*unstructured.Unstructured{}
	applied := map[string]map[string]string{}
	for _, u := range objs {
		if u.GetKind() == "Namespace" && u.GroupVersionKind().Group == "" {
			applied[u.GetName()] = u.GetLabels()
			continue
		}
		if ns := u.GetNamespace(); ns != "" {
			byNamespace[ns] = append(byNamespace[ns], u)
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(byNamespace)) {
		labels, ok := applied[ns]
		if !ok {
			stored := &unstructured.Unstructured{}
			stored.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
			if err := c.c.Get(ctx, client.ObjectKey{Name: ns}, stored); err != nil {
				continue
			}
			labels = stored.GetLabels()
		}
		if err := checkPodSecurity(ns, labels, byNamespace[ns]); err != nil {
			return err
		}
	}
	return nil
}

type podTemplate struct {
	path string
	meta *metav1.ObjectMeta
	spec *corev1.PodSpec
}

// PodTemplate is one pod template of an object, as PodTemplates finds it.
type PodTemplate struct {
	// Path is the field path of the template in the object
	// ("spec.pytorchReplicaSpecs.Worker.template"; "spec" for a Pod).
	Path     string
	Metadata metav1.ObjectMeta
	Spec     corev1.PodSpec
}

// PodTemplates returns the pod templates of obj, of any kind, that
// Apply's Pod Security check evaluates: a Pod's spec, the templates of
// Deployments, StatefulSets, jobs of every operator, LeaderWorkerSets and
// RayJobs, and those of the manifests an Argo Workflow's resource steps
// create. Programs that run their own policy on cube's pods start here.
func PodTemplates(obj client.Object) ([]PodTemplate, error) {
	u, err := ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	found := podTemplates(u.Object)
	out := make([]PodTemplate, len(found))
	for i, t := range found {
		out[i] = PodTemplate{Path: t.path, Metadata: *t.meta, Spec: *t.spec}
	}
	return out, nil
}

// podTemplates finds the pod specs in an object of any kind: every map
// with a list of containers (a Pod's spec, a Deployment's or a job
// replica's template, a LeaderWorkerSet's leader and worker templates, a
// RayJob's head and worker groups), and, inside an Argo Workflow, those of
// the manifests its resource steps create. The metadata beside a spec
// (the template's) comes with it.
func podTemplates(obj map[string]any) []podTemplate {
	var out []podTemplate
	var walk func(v any, path string, parent map[string]any, key string)
	walk = func(v any, path string, parent map[string]any, key string) {
		switch t := v.(type) {
		case map[string]any:
			if _, ok := t["containers"].([]any); ok {
				if tmpl, ok := toPodTemplate(t, path, parent, key); ok {
					out = append(out, tmpl)
				}
				return
			}
			for _, k := range slices.Sorted(maps.Keys(t)) {
				child := t[k]
				if manifest, ok := child.(string); ok && k == "manifest" {
					var embedded map[string]any
					if yaml.Unmarshal([]byte(manifest), &embedded) == nil {
						walk(embedded, join(path, k), nil, "")
					}
					continue
				}
				walk(child, join(path, k), t, k)
			}
		case []any:
			for i, child := range t {
				walk(child, path+"["+strconv.Itoa(i)+"]", nil, "")
			}
		}
	}
	walk(obj, "", nil, "")
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func toPodTemplate(specMap map[string]any, path string, parent map[string]any, key string) (podTemplate, bool) {
	spec := &corev1.PodSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(specMap, spec); err != nil {
		return podTemplate{}, false // not a pod spec after all: the API server judges it
	}
	meta := &metav1.ObjectMeta{}
	if key == "spec" && parent != nil {
		if m, ok := parent["metadata"].(map[string]any); ok {
			_ = runtime.DefaultUnstructuredConverter.FromUnstructured(m, meta)
		}
		if p := strings.TrimSuffix(path, ".spec"); p != "spec" && p != "" {
			path = p
		}
	}
	return podTemplate{path: path, meta: meta, spec: spec}, true
}
