package argo

import (
	"fmt"
	"math"
	"slices"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/internal/graph"
)

// workload compiles a workload step to a resource template that creates its
// job and waits on the completion conditions of the job's kind.
func (c *compiler) workload(n *graph.Node) (wfv1.Template, field.ErrorList) {
	wp := n.Path.Child("workload")
	if n.Primary == nil {
		return wfv1.Template{}, nil // analyze reported why
	}
	gk := n.Primary.GroupVersionKind().GroupKind()
	done := n.Completion
	if done == (cube.Completion{}) {
		// Kinds cannot help with a kind of the Kubernetes API (a bare
		// Pod): cube reads those itself, and has no Argo conditions for it.
		advice := "give the pipeline its kind with Kinds (train.Kinds()… or kinds.All())"
		if slices.ContainsFunc(cube.CoreKinds(), func(k cube.Kind) bool { return k.GroupKind == gk }) {
			advice = "run it in a batch Job"
		}
		return wfv1.Template{}, field.ErrorList{field.Invalid(wp, gk.String(), fmt.Sprintf(
			"step %q: the pipeline has no Completion for %s, so Argo cannot tell when it finishes: %s", n.C.Name, gk, advice))}
	}
	obj := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(n.Primary.Object)}
	rewriteStrings(obj.Object, func(v string) string { return graph.Substitute(v, c.inTemplate) })
	if n.UsesWorkspace {
		mountWorkspace(obj.Object, c.g.workspacePath())
	}
	var errs field.ErrorList
	if n.C.TimeoutSet && n.C.Timeout > 0 && n.Type == graph.Workload {
		errs = append(errs, stopAtDeadline(obj, gk, n.C.Timeout, n.Path.Child("activeDeadline"))...)
	}
	// The job, its pods and the objects around it join the pipeline's
	// release, so that Release.Wait on the pipeline sees the job's pods and
	// their problems; selectors move with the labels they select.
	release := n.Primary.GetLabels()[cube.LabelRelease]
	relabel(obj.Object, release, podspec.Of(&c.g.p.Handle).Name())
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[cube.LabelRelease] = podspec.Of(&c.g.p.Handle).Name()
	labels[pipeline.LabelStep] = n.C.Name
	obj.SetLabels(labels)
	// Every run (and retry) creates its own job; a service keeps its name,
	// so that a run applies it again.
	if name := obj.GetName(); name != "" && n.Type == graph.Workload {
		obj.SetGenerateName(name + "-")
		obj.SetName("")
	}
	manifest, err := yaml.Marshal(obj.Object)
	if err != nil {
		return wfv1.Template{}, field.ErrorList{field.Invalid(wp, gk.String(), fmt.Sprintf("render manifest: %v", err))}
	}
	for _, a := range n.Aux {
		u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(a.Object)}
		relabel(u.Object, release, podspec.Of(&c.g.p.Handle).Name())
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[cube.LabelRelease] = podspec.Of(&c.g.p.Handle).Name()
		u.SetLabels(labels)
		if u.GetNamespace() == "" && podspec.Of(&c.g.p.Handle).NamespaceName() != "" {
			u.SetNamespace(podspec.Of(&c.g.p.Handle).NamespaceName())
		}
		c.aux = append(c.aux, u)
	}
	var outputs wfv1.Outputs
	if n.Type == graph.Workload {
		for _, o := range n.C.Outputs {
			outputs.Parameters = append(outputs.Parameters, wfv1.Parameter{Name: o, ValueFrom: &wfv1.ValueFrom{JSONPath: n.Def.JSONPaths[o]}})
		}
	}
	// A job is created and owned by the Workflow, so the garbage collector
	// deletes it with the Workflow. A service is created too, never applied:
	// kubectl apply would overwrite a Deployment of the same name that
	// someone else made, and a step must not change what cube did not
	// create; a run that finds one fails the step with AlreadyExists. It is
	// owned by nobody: it serves after the run.
	// Argo's executor runs kubectl ACTION -f MANIFEST -o json and then polls
	// the object until the conditions match (ExecResource, WaitResource in
	// workflow/executor/resource.go, argo-workflows v3.7.6).
	action, owned := "create", true
	if n.Type == graph.Serve {
		owned = false
	}
	return wfv1.Template{
		Metadata: wfv1.Metadata{Labels: map[string]string{pipeline.LabelStep: n.C.Name}},
		Outputs:  outputs,
		Resource: &wfv1.ResourceTemplate{
			Action:            action,
			SetOwnerReference: owned,
			Manifest:          string(manifest),
			SuccessCondition:  done.Success,
			FailureCondition:  done.Failure,
		},
	}, errs
}

// relabel replaces the value from of every cube.dev/release key in a
// JSON-like value (labels, pod template labels, selectors) with to, and
// gives every pod template (a map whose spec has containers) that label.
func relabel(v any, from, to string) {
	switch t := v.(type) {
	case map[string]any:
		if cur, ok := t[cube.LabelRelease].(string); ok && from != "" && cur == from {
			t[cube.LabelRelease] = to
		}
		if spec, ok := t["spec"].(map[string]any); ok {
			if _, ok := spec["containers"].([]any); ok {
				meta, _ := t["metadata"].(map[string]any)
				if meta == nil {
					meta = map[string]any{}
					t["metadata"] = meta
				}
				labels, _ := meta["labels"].(map[string]any)
				if labels == nil {
					labels = map[string]any{}
					meta["labels"] = labels
				}
				labels[cube.LabelRelease] = to
			}
		}
		for _, child := range t {
			relabel(child, from, to)
		}
	case []any:
		for _, child := range t {
			relabel(child, from, to)
		}
	}
}

// trainingOperatorGroup is the API group of the training-operator's jobs,
// which all keep their deadline in spec.runPolicy.
const trainingOperatorGroup = "kubeflow.org"

// jobDeadlines are where the kinds a workload step runs keep a deadline of
// their own, enforced by their controller: batch/v1 Job
// (spec.activeDeadlineSeconds, k8s.io/api/batch/v1 JobSpec), training-operator
// v1.8.1 jobs (spec.runPolicy.activeDeadlineSeconds, pkg/apis/kubeflow.org/v1
// common_types.go RunPolicy) and KubeRay v1.5.0 RayJob
// (spec.activeDeadlineSeconds, apis/ray/v1 rayjob_types.go).
var jobDeadlines = map[schema.GroupKind][]string{
	{Group: "batch", Kind: "Job"}:     {"spec", "activeDeadlineSeconds"},
	{Group: "ray.io", Kind: "RayJob"}: {"spec", "activeDeadlineSeconds"},
}

// stopAtDeadline gives the job the step's timeout as its own deadline, the
// smaller one when it has one already. Argo's activeDeadlineSeconds on a
// resource template bounds only the argoexec pod that created the job
// (workflow/controller/operator.go executeResource: the Workflow owns the
// job through setOwnerReference, not the pod), so without this the job
// would run on after the step timed out and a retry would start a second
// one beside it.
func stopAtDeadline(obj *unstructured.Unstructured, gk schema.GroupKind, timeout time.Duration, path *field.Path) field.ErrorList {
	fields, ok := jobDeadlines[gk]
	if !ok && gk.Group == trainingOperatorGroup {
		fields, ok = []string{"spec", "runPolicy", "activeDeadlineSeconds"}, true
	}
	if !ok {
		return field.ErrorList{field.Invalid(path, timeout.String(), fmt.Sprintf(
			"%s has no deadline of its own, so a timeout would stop only the step and leave the job running: bound the job inside the workload instead", gk))}
	}
	secs := int64(math.Ceil(timeout.Seconds()))
	if have, found, _ := unstructured.NestedFieldNoCopy(obj.Object, fields...); found {
		if cur, ok := have.(int64); ok && cur > 0 && cur < secs {
			secs = cur
		}
	}
	if err := unstructured.SetNestedField(obj.Object, secs, fields...); err != nil {
		return field.ErrorList{field.InternalError(path, err)}
	}
	return nil
}

// mountWorkspace mounts the run's workspace claim, which Argo names
// WORKFLOW-workspace, in every pod spec of a job (every map with a
// "containers" list) that does not have a volume of that name already.
func mountWorkspace(v any, mountPath string) {
	switch t := v.(type) {
	case map[string]any:
		if containers, ok := t["containers"].([]any); ok {
			volumes, _ := t["volumes"].([]any)
			for _, vol := range volumes {
				if m, ok := vol.(map[string]any); ok && m["name"] == workspaceVolume {
					return
				}
			}
			t["volumes"] = append(volumes, map[string]any{
				"name":                  workspaceVolume,
				"persistentVolumeClaim": map[string]any{"claimName": "{{workflow.name}}-" + workspaceVolume},
			})
			for _, ctr := range containers {
				m, ok := ctr.(map[string]any)
				if !ok {
					continue
				}
				mounts, _ := m["volumeMounts"].([]any)
				m["volumeMounts"] = append(mounts, map[string]any{"name": workspaceVolume, "mountPath": mountPath})
				env, _ := m["env"].([]any)
				m["env"] = append(env, map[string]any{"name": pipeline.EnvWorkspace, "value": mountPath})
			}
			return
		}
		for _, child := range t {
			mountWorkspace(child, mountPath)
		}
	case []any:
		for _, child := range t {
			mountWorkspace(child, mountPath)
		}
	}
}

// rewriteStrings replaces every string in a JSON-like value with fn(string).
func rewriteStrings(v any, fn func(string) string) {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if s, ok := child.(string); ok {
				t[k] = fn(s)
				continue
			}
			rewriteStrings(child, fn)
		}
	case []any:
		for i, child := range t {
			if s, ok := child.(string); ok {
				t[i] = fn(s)
				continue
			}
			rewriteStrings(child, fn)
		}
	}
}
