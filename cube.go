package cube

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Workload is anything that renders to Kubernetes objects: every builder in
// cube implements it. Objects validates the builder and returns every problem
// at once (a field.ErrorList aggregate with field paths), or a fresh slice of
// fresh typed objects with TypeMeta set: callers may mutate what they get.
type Workload interface {
	Objects() ([]client.Object, error)
}

// WorkloadFunc adapts a function to a Workload.
type WorkloadFunc func() ([]client.Object, error)

// Objects calls f.
func (f WorkloadFunc) Objects() ([]client.Object, error) { return f() }

// Objects returns a Workload made of copies of objs, for objects built by
// hand. Each call of its Objects method deep-copies them again.
func Objects(objs ...client.Object) Workload {
	held := make([]client.Object, len(objs))
	for i, o := range objs {
		held[i] = o.DeepCopyObject().(client.Object)
	}
	return WorkloadFunc(func() ([]client.Object, error) {
		out := make([]client.Object, len(held))
		for i, o := range held {
			out[i] = o.DeepCopyObject().(client.Object)
		}
		return out, nil
	})
}
