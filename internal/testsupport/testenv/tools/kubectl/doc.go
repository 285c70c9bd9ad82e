// Command kubectl is kubectl v1.37 for the test cluster's images: the body
// of k8s.io/kubernetes/cmd/kubectl/kubectl.go, built from the published
// k8s.io/kubectl module so that kubectl's dependencies need not join the
// node's tools module.
package main
