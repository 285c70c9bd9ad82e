// Package journeys holds the tests that run cube's workloads to completion on
// the real one-node test cluster (internal/testsupport/testenv.GetCluster): the
// training-operator, LeaderWorkerSet, Argo, KubeRay and Katib controllers, the
// kubelet on containerd, kube-proxy and CoreDNS all run for real, so these
// tests see what a cluster does with what cube renders, not only what the
// API server's schema accepts.
//
// Each journey applies a workload with cube.Client, follows it with
// Release.Wait and Release.Logs, and asserts on what really happened: the
// world size and reduced value torch printed, the answer the served model
// gave, the pods that were left behind. What cannot run here is said in the
// test that would need it: there are no GPUs, no Volcano scheduler, and no
// real inference engine (an OpenAI-compatible stand-in,
// internal/testsupport/testenv/cmd/standin-engine, stands in for vLLM).
//
// This package holds the helpers they share; the journeys are in its
// subpackages, one test binary each, so that each stays within go test's
// 10-minute timeout while they share one cluster.
package journeys
