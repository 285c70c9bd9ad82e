// Package envtest runs a real kube-apiserver, backed by its own etcd, for
// the integration tests of code built on cube, with the CRDs of every
// engine cube renders for installed: training-operator, Katib, Argo
// Workflows, LeaderWorkerSet, KubeRay, Volcano and Gateway API. It is what
// cube's own tests run against. Objects are checked against the real
// schemas and admission (RBAC, Pod Security, ResourceQuota), so what
// passes here is what the API server of a cluster accepts.
//
//	func TestMain(m *testing.M) { envtest.Main(m) }
//
//	func TestPortalCreatesTenant(t *testing.T) {
//		env := envtest.Get(t)     // one API server per test binary
//		ns := env.Namespace(t)    // fresh, deleted when t ends
//		portal := myportal.New(env.Config)
//		...
//		var quota corev1.ResourceQuota
//		err := env.Kube.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "team-a"}, &quota)
//	}
//
// Only etcd and kube-apiserver run: no controllers, scheduler or kubelet.
// Nothing runs pods or fills in the status of a workload, so Release.Wait
// waits until the test writes a status itself (cubetest.MarkObject writes
// the one each controller would, through any client). There is no
// namespace controller either: Namespace's cleanup deletes what the
// namespace holds itself.
//
// # Build and cache
//
// Nothing is downloaded but Go modules. kube-apiserver (Kubernetes
// v1.37.2) and etcd (v3.7.0) are built from source with the go command of
// the toolchain running the tests, the CRD manifests are copied out of the
// Go modules of each project at the versions cube uses (Volcano's are
// generated with controller-gen), and an etcd with the CRDs installed is
// kept as a template, all under $(os.UserCacheDir)/cube-testenv (~/.cache
// on Linux). This works in any module that requires cube: the module cache
// copy of cube is enough.
//
// The first build on a machine takes 8 to 10 minutes on two idle cores and
// 20 or more on a busy one, most of it compiling kube-apiserver; later
// starts take seconds. Main builds before the tests start, but go test
// stops a test binary after -timeout (10 minutes by default) plus a
// minute, so build ahead once per machine (and in CI as its own step):
//
//	go run github.com/cubestudio/cube/cubetest/envtest/cmd/prebuild
//
// or give the first run a longer -timeout (go test -timeout 45m).
package envtest
