package identity

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The labels every object cube renders carries.
const (
	LabelName       = "app.kubernetes.io/name"
	LabelManagedBy  = "app.kubernetes.io/managed-by"
	LabelPartOf     = "app.kubernetes.io/part-of"
	LabelComponent  = "app.kubernetes.io/component"
	LabelKind       = "cube.dev/kind"
	LabelRelease    = "cube.dev/release"
	LabelReleaseUID = "cube.dev/release-uid"
	ManagedBy       = "cube"
)

// ID names one release: the builder kind that made it, the release name,
// and the application it belongs to (PartOf, defaulting to the release).
type ID struct {
	Kind    string
	Release string
	PartOf  string
}

// Labels returns the standard label set of id. The map is fresh.
func (id ID) Labels() map[string]string {
	partOf := id.PartOf
	if partOf == "" {
		partOf = id.Release
	}
	return map[string]string{
		LabelName:      id.Release,
		LabelManagedBy: ManagedBy,
		LabelPartOf:    partOf,
		LabelKind:      id.Kind,
		LabelRelease:   id.Release,
	}
}

// Selector returns the labels that select the pods of one component of the
// release (all of them when component is empty). Selectors stay small
// because a Deployment's selector is immutable.
func (id ID) Selector(component string) map[string]string {
	sel := map[string]string{LabelRelease: id.Release, LabelManagedBy: ManagedBy}
	if component != "" {
		sel[LabelComponent] = component
	}
	return sel
}

// ObjectMeta returns metadata for an object of the release named name in
// namespace, the standard labels merged over extraLabels, with the given
// annotations. Maps are copied.
func (id ID) ObjectMeta(name, namespace string, extraLabels, annotations map[string]string) metav1.ObjectMeta {
	labels := maps.Clone(extraLabels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, id.Labels())
	return metav1.ObjectMeta{
		Name:        name,
		Namespace:   namespace,
		Labels:      labels,
		Annotations: maps.Clone(annotations),
	}
}
