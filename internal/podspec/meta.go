package podspec

import (
	"maps"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/identity"
)

// Meta holds what every builder's objects share: the release name, namespace,
// extra labels and annotations. Embed it (through Builder, or directly in
// builders without pods) and call InitMeta from the constructor; its methods
// return the embedding builder so chains stay fluent.
type Meta[T any] struct {
	self        *T
	kind        string
	name        string
	namespace   string
	partOf      string
	labels      map[string]string
	annotations map[string]string
	localQueue  string // Kueue's LocalQueue, set with Builder.LocalQueue
	// workloadPriority is Kueue's WorkloadPriorityClass, set with
	// Builder.WorkloadPriority.
	workloadPriority string
}

// InitMeta binds m to the builder that embeds it. kind is the builder kind
// recorded in the cube.dev/kind label (e.g. "pytorchjob"); name is the release
// name, which also names the primary object.
func (m *Meta[T]) InitMeta(self *T, kind, name string) {
	m.self, m.kind, m.name = self, kind, name
}

// ret is what a setter returns: the builder it set, or, on a zero value
// that no constructor made (self is nil), a fresh zero value, so that a
// chain of setters goes on without a nil dereference and the builder's
// Objects reports that it was never made.
func (m *Meta[T]) ret() *T {
	if m.self == nil {
		return new(T)
	}
	return m.self
}

// Namespace sets the namespace of every object; empty means the client's.
func (m *Meta[T]) Namespace(ns string) *T { m.namespace = ns; return m.ret() }

// Label adds a label to every object and pod. The standard cube labels win
// over a label of the same key.
func (m *Meta[T]) Label(key, value string) *T {
	if m.labels == nil {
		m.labels = map[string]string{}
	}
	m.labels[key] = value
	return m.ret()
}

// Annotation adds an annotation to every top-level object.
func (m *Meta[T]) Annotation(key, value string) *T {
	if m.annotations == nil {
		m.annotations = map[string]string{}
	}
	m.annotations[key] = value
	return m.ret()
}

// PartOf sets app.kubernetes.io/part-of, the application the release belongs
// to (default: the release name).
func (m *Meta[T]) PartOf(app string) *T { m.partOf = app; return m.ret() }

// Name returns the release name given to the constructor.
func (m *Meta[T]) Name() string { return m.name }

// NamespaceName returns the namespace set with Namespace (may be empty).
func (m *Meta[T]) NamespaceName() string { return m.namespace }

// Annotations returns a copy of the annotations set with Annotation (nil
// when there are none): what ObjectMeta would carry, without building it.
func (m *Meta[T]) Annotations() map[string]string { return maps.Clone(m.annotations) }

// Identity returns the release identity that labels every object.
func (m *Meta[T]) Identity() identity.ID {
	return identity.ID{Kind: m.kind, Release: m.name, PartOf: m.partOf}
}

// ObjectMeta returns fresh metadata for one object of the release: its name,
// the namespace, the extra labels under the standard ones, the annotations.
func (m *Meta[T]) ObjectMeta(name string) metav1.ObjectMeta {
	labels := m.labels
	if m.localQueue != "" || m.workloadPriority != "" {
		labels = maps.Clone(m.labels)
		if labels == nil {
			labels = map[string]string{}
		}
		if m.localQueue != "" {
			labels[KueueQueueLabel] = m.localQueue
		}
		if m.workloadPriority != "" {
			labels[KueuePriorityLabel] = m.workloadPriority
		}
	}
	return m.Identity().ObjectMeta(name, m.namespace, labels, m.annotations)
}

// PodLabels returns the labels of the release's pods: the extra labels, the
// standard ones and the given component labels, freshly allocated.
func (m *Meta[T]) PodLabels(extra map[string]string) map[string]string {
	return m.podLabelsWith(extra)
}

// podLabelsWith is PodLabels with the extra labels of several sets, later
// ones winning, in one map sized once.
func (m *Meta[T]) podLabelsWith(extra ...map[string]string) map[string]string {
	id := m.Identity().Labels()
	n := len(m.labels) + len(id)
	for _, e := range extra {
		n += len(e)
	}
	out := make(map[string]string, n)
	maps.Copy(out, m.labels)
	maps.Copy(out, id)
	for _, e := range extra {
		maps.Copy(out, e)
	}
	return out
}

// ValidateMeta checks the release name (a DNS-1123 label of at most
// maxNameLen characters, because it prefixes the names of generated objects
// and pods), the namespace, labels and annotations.
func (m *Meta[T]) ValidateMeta(maxNameLen int) field.ErrorList {
	var errs field.ErrorList
	namePath := field.NewPath("metadata", "name")
	switch {
	case m.name == "":
		errs = append(errs, field.Required(namePath, "a name is required"))
	default:
		// One limit for one name: the tighter of the DNS label's 63 and
		// the builder's own, reported once.
		limit := validation.DNS1123LabelMaxLength
		if maxNameLen > 0 && maxNameLen < limit {
			limit = maxNameLen
		}
		labelLen := validation.MaxLenError(validation.DNS1123LabelMaxLength)
		for _, msg := range validation.IsDNS1123Label(m.name) {
			if msg != labelLen {
				errs = append(errs, field.Invalid(namePath, m.name, msg))
			}
		}
		if len(m.name) > limit {
			errs = append(errs, field.TooLong(namePath, m.name, limit))
		}
	}
	if m.namespace != "" {
		for _, msg := range validation.IsDNS1123Label(m.namespace) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "namespace"), m.namespace, msg))
		}
	}
	errs = append(errs, ValidateLabels(m.labels, field.NewPath("metadata", "labels"))...)
	for _, k := range sortedKeys(m.annotations) {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations").Key(k), k, msg))
		}
	}
	return errs
}

// ValidateServiceMeta is ValidateMeta for workloads whose name also names
// a Service (a notebook's UI, a training job's replicas, a served model):
// Service names are DNS-1035 labels, so a name that is otherwise valid
// must also start with a letter.
func (m *Meta[T]) ValidateServiceMeta(maxNameLen int) field.ErrorList {
	errs := m.ValidateMeta(maxNameLen)
	namePath := field.NewPath("metadata", "name")
	for _, e := range errs {
		if e.Field == namePath.String() {
			return errs
		}
	}
	for _, msg := range validation.IsDNS1035Label(m.name) {
		errs = append(errs, field.Invalid(namePath, m.name, msg))
	}
	return errs
}

// ValidateLabels checks label keys and values as the API server does.
func ValidateLabels(labels map[string]string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	// Nearly every label is valid: the checks below without regular
	// expressions say so, and only the rest go to apimachinery's, which
	// phrase the problems. A compiled pipeline checks its step labels ten
	// thousand times.
	valid := true
	for k, v := range labels {
		valid = valid && isQualifiedName(k) && isLabelValue(v)
	}
	if valid {
		return nil
	}
	for _, k := range sortedKeys(labels) {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(path.Key(k), k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(labels[k]) {
			errs = append(errs, field.Invalid(path.Key(k), labels[k], msg))
		}
	}
	return errs
}

// isQualifiedName is validation.IsQualifiedName's rule for names it
// accepts: an optional DNS-1123 subdomain and "/", then 1 to 63
// alphanumerics, '-', '_' or '.', alphanumeric at both ends.
func isQualifiedName(s string) bool {
	name := s
	if prefix, rest, found := strings.Cut(s, "/"); found {
		if !isDNS1123Subdomain(prefix) {
			return false
		}
		name = rest
	}
	return name != "" && isLabelValue(name)
}

// isLabelValue is validation.IsValidLabelValue's rule: empty, or at most
// 63 alphanumerics, '-', '_' or '.', alphanumeric at both ends.
func isLabelValue(s string) bool {
	if s == "" {
		return true
	}
	if len(s) > validation.LabelValueMaxLength || !isAlphanumeric(s[0]) || !isAlphanumeric(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlphanumeric(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// isDNS1123Subdomain is validation.IsDNS1123Subdomain's rule: at most 253
// characters, dot-separated labels of lower-case alphanumerics and '-',
// each starting and ending alphanumeric.
func isDNS1123Subdomain(s string) bool {
	if s == "" || len(s) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || !isLowerAlphanumeric(label[0]) || !isLowerAlphanumeric(label[len(label)-1]) {
			return false
		}
		for i := 1; i < len(label)-1; i++ {
			if c := label[i]; !isLowerAlphanumeric(c) && c != '-' {
				return false
			}
		}
	}
	return true
}

func isLowerAlphanumeric(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

func isAlphanumeric(c byte) bool { return isLowerAlphanumeric(c) || c >= 'A' && c <= 'Z' }
