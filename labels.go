package cube

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cubestudio/cube/internal/identity"
)

// The labels every object cube renders carries. Client finds the objects of a
// release by LabelRelease together with LabelManagedBy.
const (
	LabelName      = identity.LabelName
	LabelManagedBy = identity.LabelManagedBy
	LabelPartOf    = identity.LabelPartOf
	LabelKind      = identity.LabelKind
	LabelRelease   = identity.LabelRelease
	// LabelReleaseUID carries the UID of the release that applied the
	// object (Release.UID). Apply sets it on every top-level object; only
	// objects that carry it are pruned or deleted with the release.
	LabelReleaseUID = identity.LabelReleaseUID

	// ManagedBy is the value of LabelManagedBy, and the field manager of every
	// server-side apply.
	ManagedBy = identity.ManagedBy
)

// Identity names one release: the builder kind that made it (notebook,
// pytorchjob, vllm…), the release name, and the higher-level application it
// belongs to (PartOf, defaulting to the release name).
type Identity identity.ID

// Labels returns the standard label set of an identity. The map is fresh.
func (id Identity) Labels() map[string]string { return identity.ID(id).Labels() }

// Selector returns the labels that select the pods of one component of a
// release: the release label plus, when component is not empty,
// app.kubernetes.io/component. Selectors stay small because a Deployment's
// selector is immutable.
func (id Identity) Selector(component string) map[string]string {
	return identity.ID(id).Selector(component)
}

// ObjectMeta returns metadata for an object of the release named name in
// namespace, carrying the standard labels merged over extra labels and the
// given annotations. Maps are copied.
func (id Identity) ObjectMeta(name, namespace string, extraLabels, annotations map[string]string) metav1.ObjectMeta {
	return identity.ID(id).ObjectMeta(name, namespace, extraLabels, annotations)
}
