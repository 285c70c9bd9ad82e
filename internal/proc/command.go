package proc

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// Command finds what a workload's job runs, to run it once on this machine: a
// RayJob's spec.entrypoint (through sh -c), or else the command and args of
// the first container with any, searching pod templates in key order (so a
// PyTorchJob's Master comes before its Workers, a TFJob's Chief before its
// PS and Workers, an MPIJob's Launcher before its Workers). It returns the
// command line and that container's env, or nil when nothing has a command.
func Command(u *unstructured.Unstructured) ([]string, []corev1.EnvVar) {
	if ep, ok, _ := unstructured.NestedString(u.Object, "spec", "entrypoint"); ok && ep != "" {
		return []string{"sh", "-c", ep}, nil
	}
	var found *corev1.Container
	var search func(v any)
	search = func(v any) {
		if found != nil {
			return
		}
		switch t := v.(type) {
		case map[string]any:
			if list, ok := t["containers"].([]any); ok {
				for _, item := range list {
					m, ok := item.(map[string]any)
					if !ok {
						continue
					}
					var c corev1.Container
					if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c) == nil && len(c.Command)+len(c.Args) > 0 {
						found = &c
						return
					}
				}
			}
			keys := make([]string, 0, len(t))
			for k := range t {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				search(t[k])
			}
		case []any:
			for _, e := range t {
				search(e)
			}
		}
	}
	search(u.Object["spec"])
	if found == nil {
		return nil, nil
	}
	return append(slices.Clone(found.Command), found.Args...), found.Env
}
