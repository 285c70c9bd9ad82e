// Package v1beta1 holds the parts of Volcano's PodGroup (group
// scheduling.volcano.sh, version v1beta1) that cube reads to explain a gang
// that waits, with the field names and JSON tags of volcano.sh/apis
// v1.14.0 pkg/apis/scheduling/v1beta1/types.go. Fields cube does not read
// are left out.
//
// It is a copy of the type shapes rather than an import because the root
// package cube, which reads the PodGroups of a release for Status and
// Wait, must not depend on volcano.sh (internal/house, TestDependencies:
// importing cube must not pull Volcano in). The test of this package
// round-trips an object of the real types through these, so a wrong tag
// fails there.
package v1beta1
