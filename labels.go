package cube

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The labels every object cube renders carries. Client finds the objects of a
// release by LabelRelease together with LabelManagedBy.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelPartOf    = "app.kubernetes.io/part-of"
	LabelKind      = "cube.dev/kind"
	LabelRelease   = "cube.dev/release"
	// LabelReleaseUID carries the UID of the release that applied the
	// object (Release.UID). Apply sets it on every top-level object; only
	// objects that carry it are pruned or deleted with the release.
	LabelReleaseUID = "cube.dev/release-uid"

	// ManagedBy is the value of LabelManagedBy, and the field manager of every
	// server-side apply.
	ManagedBy = "cube"
)

// Identity names one release: the builder kind that made it (notebook,
// pytorchjob, vllm…), the release name, and the higher-level application it
// belongs to (PartOf, defaulting to the release name).
type Identity struct {
	Kind    string
	Release string
	PartOf  string
}

// Labels returns the standard label set of an identity. The map is fresh.
func (id Identity) Labels() map[string]string {
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

// Selector returns the labels that select the pods of one component of a
// release: the release label plus, when component is not empty,
// app.kubernetes.io/component. Selectors stay small because a Deployment's
// selector is immutable.
func (id Identity) Selector(component string) map[string]string {
	sel := map[string]string{LabelRelease: id.Release, LabelManagedBy: ManagedBy}
	if component != "" {
		sel["app.kubernetes.io/component"] = component
	}
	return sel
}

// ObjectMeta returns metadata for an object of the release named name in
// namespace, carrying the standard labels merged over extra labels and the
// given annotations. Maps are copied.
func (id Identity) ObjectMeta(name, namespace string, extraLabels, annotations map[string]string) metav1.ObjectMeta {
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
