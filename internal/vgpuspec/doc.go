// Package vgpuspec gives cube's own packages the values of a *vgpu.Spec.
//
// A vgpu.Spec is a builder: its exported methods are settings. What pod,
// serve and the other packages need from it — the card, the kind, the
// device count, the backend, the device request it renders — goes through
// Of, as a builder's pod settings go through internal/podspec:
//
//	r := vgpuspec.Of(slice)
//	if r.Backend() == string(vgpu.Volcano) { ... }
//	errs := r.Apply(&tmpl, "main", path)
package vgpuspec
