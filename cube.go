package cube

import (
	"errors"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// Objects calls f; a nil f is an error.
func (f WorkloadFunc) Objects() ([]client.Object, error) {
	if f == nil {
		return nil, errors.New("cube: WorkloadFunc is nil")
	}
	return f()
}

// Objects returns a Workload made of copies of objs, for objects built by
// hand. Each call of its Objects method deep-copies them again. A nil
// object is reported by Objects.
func Objects(objs ...client.Object) Workload {
	held := make([]client.Object, 0, len(objs))
	var errs []error
	for i, o := range objs {
		if isNil(o) {
			errs = append(errs, fmt.Errorf("cube.Objects: object %d is nil", i))
			continue
		}
		held = append(held, o.DeepCopyObject().(client.Object))
	}
	return WorkloadFunc(func() ([]client.Object, error) {
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		out := make([]client.Object, len(held))
		for i, o := range held {
			out[i] = o.DeepCopyObject().(client.Object)
		}
		return out, nil
	})
}

// isNil reports whether v is nil or an interface holding a nil pointer,
// map, slice, func or channel: a typed nil such as (*train.PyTorchJob)(nil),
// whose methods would dereference it.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// prepare builds w and converts its objects to the form Apply sends and
// Render writes, with the checks both make (see checked).
func prepare(w Workload) ([]*unstructured.Unstructured, error) {
	objs, err := checked(w)
	if err != nil {
		return nil, err
	}
	return toUnstructuredAll(objs)
}

func toUnstructuredAll(objs []client.Object) ([]*unstructured.Unstructured, error) {
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		var err error
		if out[i], err = ToUnstructured(o); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checked builds w and checks its objects as Apply and Render do, so that
// Render never writes what Apply refuses: at least one object, each with
// apiVersion and kind, every one labelled with the same release.
func checked(w Workload) ([]client.Object, error) {
	built, err := build(w)
	if err != nil {
		return nil, err
	}
	if len(built) == 0 {
		return nil, fmt.Errorf("workload %T has no objects", w)
	}
	var errs []error
	release := ""
	for _, b := range built {
		if err := kindSet(b); err != nil {
			errs = append(errs, err)
			continue
		}
		kind := b.GetObjectKind().GroupVersionKind().Kind
		switch name := b.GetLabels()[LabelRelease]; {
		case name == "":
			errs = append(errs, fmt.Errorf("%s %q has no %s label: build it with cube.Identity", kind, b.GetName(), LabelRelease))
		case release == "":
			release = name
		case release != name:
			errs = append(errs, fmt.Errorf("%s %q belongs to release %q, not %q: a workload is one release", kind, b.GetName(), name, release))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return built, nil
}

// kindSet refuses an object without apiVersion and kind: every cube
// builder sets them, and the API server and kubectl need them.
func kindSet(obj client.Object) error {
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Kind == "" || gvk.Version == "" {
		return fmt.Errorf("object %q of type %T has no apiVersion/kind set", obj.GetName(), obj)
	}
	return nil
}

// checkedAll checks every workload of ws, reporting the problems of each
// under "<what> <index>".
func checkedAll(what string, ws []Workload) ([]client.Object, error) {
	var objs []client.Object
	var errs []error
	for i, w := range ws {
		prepared, err := checked(w)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %d: %w", what, i, err))
			continue
		}
		objs = append(objs, prepared...)
	}
	return objs, errors.Join(errs...)
}

// prepareAll is checkedAll with the objects converted as prepare does.
func prepareAll(what string, ws []Workload) ([]*unstructured.Unstructured, error) {
	objs, err := checkedAll(what, ws)
	if err != nil {
		return nil, err
	}
	return toUnstructuredAll(objs)
}

// build returns the objects of w, refusing a nil or typed-nil workload and
// nil objects, which Render and Apply would otherwise dereference.
func build(w Workload) ([]client.Object, error) {
	switch {
	case w == nil:
		return nil, errors.New("workload is nil")
	case isNil(w):
		return nil, fmt.Errorf("workload %T is nil", w)
	}
	objs, err := w.Objects()
	if err != nil {
		return nil, err
	}
	for i, o := range objs {
		if isNil(o) {
			return nil, fmt.Errorf("workload %T: object %d is nil", w, i)
		}
	}
	return objs, nil
}
