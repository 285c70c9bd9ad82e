// Package identity holds the labels every object cube renders carries and
// the identity of a release they are computed from. It imports only
// apimachinery's metadata types, so the pod settings and the builders can
// label objects without the Kubernetes client; package cube exports the
// same identity as cube.Identity.
package identity
