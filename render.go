package cube

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"

	yaml "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/yamlenc"
)

// Render writes the objects of every workload as multi-document YAML that
// `kubectl apply -f -` accepts: apiVersion and kind filled in, no status, no
// empty creationTimestamp, in apply order (namespaces and configuration before
// workloads; objects of the same rank keep the workload's order). The output
// for the same workloads is byte-for-byte the same on every call. Render
// refuses what Apply refuses without a cluster: a nil workload, one without
// objects, objects without apiVersion and kind, and objects without the
// release label or of several releases in one workload.
func Render(w io.Writer, ws ...Workload) error {
	if isNil(w) {
		return errors.New("render: writer is nil")
	}
	objs, err := checkedAll("render workload", ws)
	if err != nil {
		return err
	}
	slices.SortStableFunc(objs, func(a, b client.Object) int {
		return cmp.Compare(rankOf(a.GetObjectKind().GroupVersionKind().Kind), rankOf(b.GetObjectKind().GroupVersionKind().Kind))
	})
	yw := yamlenc.Get()
	defer yw.Release()
	for i, obj := range objs {
		if i > 0 {
			yw.Append([]byte("---\n"))
		}
		// The output is yaml.v2's on the unstructured content, which is
		// what sigs.k8s.io/yaml gives without its JSON round trip. The
		// writer writes the common documents itself, from the object's
		// JSON (the unstructured converter sizes every map for all the
		// fields of its struct) and without the events yaml.v2 queues,
		// and leaves the rest to yaml.v2.
		if _, typed := obj.(*unstructured.Unstructured); !typed && yw.FromJSON(obj) {
			continue
		}
		u, err := ToUnstructured(obj)
		if err != nil {
			return err
		}
		if yw.Document(u.Object) {
			continue
		}
		b, err := yaml.Marshal(u.Object)
		if err != nil {
			return fmt.Errorf("render %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		yw.Append(b)
	}
	_, err = w.Write(yw.Bytes())
	return err
}

// ToUnstructured converts a typed object to the unstructured form cube sends
// to the API server and renders: status and an empty creationTimestamp are
// removed, and apiVersion/kind must be set (every cube builder sets them).
func ToUnstructured(obj client.Object) (*unstructured.Unstructured, error) {
	if isNil(obj) {
		return nil, errors.New("object is nil")
	}
	if err := kindSet(obj); err != nil {
		return nil, err
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	var content map[string]any
	if u, ok := obj.(*unstructured.Unstructured); ok {
		content = runtime.DeepCopyJSON(u.Object)
	} else {
		var err error
		content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, fmt.Errorf("convert %s %q: %w", gvk.Kind, obj.GetName(), err)
		}
	}
	delete(content, "status")
	if md, ok := content["metadata"].(map[string]any); ok {
		if ts, present := md["creationTimestamp"]; present && ts == nil {
			delete(md, "creationTimestamp")
		}
	}
	stripNullTimestamps(content)
	return &unstructured.Unstructured{Object: content}, nil
}

// stripNullTimestamps removes the `creationTimestamp: null` that every
// embedded ObjectMeta (pod templates, volume claim templates) converts to.
func stripNullTimestamps(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, child := range t {
			if k == "creationTimestamp" && child == nil {
				delete(t, k)
				continue
			}
			stripNullTimestamps(child)
		}
	case []any:
		for _, child := range t {
			stripNullTimestamps(child)
		}
	}
}

// applyRank orders kinds so that what others depend on exists first, as Helm
// does on install.
var applyRank = map[string]int{
	"Namespace":                0,
	"NetworkPolicy":            1,
	"ResourceQuota":            2,
	"LimitRange":               3,
	"PodDisruptionBudget":      4,
	"ServiceAccount":           5,
	"Secret":                   6,
	"ConfigMap":                7,
	"StorageClass":             8,
	"PersistentVolume":         9,
	"PersistentVolumeClaim":    10,
	"CustomResourceDefinition": 11,
	"ClusterRole":              12,
	"ClusterRoleBinding":       13,
	"Role":                     14,
	"RoleBinding":              15,
	"Queue":                    16,
	"PriorityClass":            17,
	"Service":                  18,
}

const workloadRank = 100

func rankOf(kind string) int {
	if r, ok := applyRank[kind]; ok {
		return r
	}
	return workloadRank
}

// SortForApply orders objects for creation: namespaces, policy, service
// accounts, secrets, config maps and claims before services and workloads. The
// sort is stable, so objects of one rank keep their order.
func SortForApply(objs []*unstructured.Unstructured) {
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return cmp.Compare(rankOf(a.GetKind()), rankOf(b.GetKind()))
	})
}
