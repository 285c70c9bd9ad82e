// Command prebuild builds what the test API server needs (kube-apiserver,
// etcd, controller-gen, the CRDs and the etcd template) into the user cache
// and prints the cache directory; it also fetches the go.mod file of every
// module in cube's module graph, which a module that requires cube resolves
// (TestAdopterModule runs one without the network), and builds the test
// cluster where the machine can run it. Run it before go test on a fresh
// machine so that the build (on two cores about 10 minutes for the API
// server alone, 50 to 60 for the API server and the cluster, whose
// operators build beside the API server) does not count against go test's
// timeout:
//
//	go run ./internal/testsupport/testenv/cmd/prebuild
package main
