// Command prebuild builds what package envtest needs (kube-apiserver, etcd,
// controller-gen, the CRDs and an etcd with them installed) into the user
// cache and prints the cache directory. The first build takes 8 to 10
// minutes on two idle cores and more on a busy machine, longer than go
// test lets a test binary run by default, so run it once before the first
// go test on a machine (in CI, as a step of its own, with the Go build
// cache kept):
//
//	go run github.com/cubestudio/cube/cubetest/envtest/cmd/prebuild
//
// It works from any module that requires cube; later runs only check the
// cache and take a second.
package main
