package pod

import "github.com/cubestudio/cube/internal/podspec"

// Meta holds what every object of a workload shares: the namespace, extra
// labels and annotations, and the application it is part of. Builders
// without pods (a pipeline, a tuning experiment, a canary split) embed it
// directly; Builder embeds it for the rest. Its methods are settings that
// return the embedding builder.
type Meta[T any] struct {
	podspec.Handle[T]
}

// Namespace sets the namespace of every object; empty means the client's.
func (m *Meta[T]) Namespace(ns string) *T { return podspec.Of(&m.Handle).Namespace(ns) }

// Label adds a label to every object and pod. The standard cube labels win
// over a label of the same key.
func (m *Meta[T]) Label(key, value string) *T { return podspec.Of(&m.Handle).Label(key, value) }

// Annotation adds an annotation to every top-level object.
func (m *Meta[T]) Annotation(key, value string) *T {
	return podspec.Of(&m.Handle).Annotation(key, value)
}

// PartOf sets app.kubernetes.io/part-of, the application the release belongs
// to (default: the release name).
func (m *Meta[T]) PartOf(app string) *T { return podspec.Of(&m.Handle).PartOf(app) }
