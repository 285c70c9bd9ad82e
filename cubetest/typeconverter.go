package cubetest

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	clientgoapplyconfigurations "k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// typeConverters are the fake client's type converters for server-side
// apply: client-go's schema for the built-in kinds, the deduced one for the
// custom resources. They are controller-runtime's defaults (fake.ClientBuilder
// Build) with one repair, see statusTolerant.
func typeConverters() []managedfields.TypeConverter {
	return []managedfields.TypeConverter{statusTolerant{builtinTypes()}, managedfields.NewDeducedTypeConverter()}
}

// builtinTypes is built once: parsing client-go's schema takes half a
// second, and the converter only reads it.
var builtinTypes = sync.OnceValue(func() managedfields.TypeConverter {
	return clientgoapplyconfigurations.NewTypeConverter(clientgoscheme.Scheme)
})

// statusTolerant drops a null status before typing an object with the
// built-in schema. The fake client (controller-runtime v0.25.2,
// pkg/client/fake/client.go inTreeResourcesWithStatus) still lists
// NetworkPolicy as having a status subresource, which the API removed, and
// on an apply that creates the object it clears status by setting
// "status": null (versioned_tracker.go Apply, copyStatusFrom). The built-in
// schema has no status for NetworkPolicy, so typing the patch failed and the
// fake fell back to the deduced converter for it alone; merging a patch
// typed by one schema into a live object typed by the other failed with
// "expected objects with types from the same schema", and no Tenant or
// notebook (both have a NetworkPolicy) could be applied.
type statusTolerant struct{ managedfields.TypeConverter }

func (s statusTolerant) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if status, present := u.Object["status"]; present && status == nil {
			u = u.DeepCopy()
			delete(u.Object, "status")
			obj = u
		}
	}
	return s.TypeConverter.ObjectToTyped(obj, opts...)
}
