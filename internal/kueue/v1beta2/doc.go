// Package v1beta2 holds the parts of Kueue's v1beta2 API (group
// kueue.x-k8s.io) that cube writes and reads: ResourceFlavor,
// ClusterQueue, LocalQueue, WorkloadPriorityClass and Workload, with the
// field names and JSON tags of sigs.k8s.io/kueue v0.17.0
// apis/kueue/v1beta2 (the storage version). Fields cube neither writes nor
// reads are left out; the API server keeps them on the stored object, and
// cube updates these objects by server-side apply, which leaves them
// alone.
//
// It is a copy of the type shapes rather than an import because the
// module sigs.k8s.io/kueue requires github.com/kubeflow/training-operator
// v1.9.3, and the main module's graph would then give cube the v1.9 API,
// which no longer has the MXJob that cube's train package builds for the
// training operator v1.8.1. The tests of this package decode the objects
// the real CRDs of v0.17.0 store (package testenv installs them), so a
// wrong tag fails there.
//
// +kubebuilder:object:generate=true
// +groupName=kueue.x-k8s.io
package v1beta2
