// Command prebuild builds what the test API server needs (kube-apiserver,
// etcd, controller-gen, the CRDs and the etcd template) into the user cache
// and prints the cache directory. Run it before go test on a fresh machine
// so that the build, about 8 minutes on two cores, does not count against
// go test's timeout:
//
//	go run ./internal/testsupport/testenv/cmd/prebuild
package main
