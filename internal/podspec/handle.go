package podspec

// Handle carries a builder's pod settings inside pod.Builder and pod.Meta,
// which embed it by value. It has no exported fields or methods: a user of
// a builder can do nothing with it, while a package of cube reaches the
// settings and their plumbing with Of.
type Handle[T any] struct{ b Builder[T] }

// Of returns the settings behind h. h must not be nil; a zero Handle is a
// builder that no constructor made, whose Init was never called, and its
// Objects reports that.
func Of[T any](h *Handle[T]) *Builder[T] { return &h.b }
