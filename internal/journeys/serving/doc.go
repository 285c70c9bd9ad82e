// Package serving runs cube's model services on the test cluster with the
// stand-in engine that stands in for vLLM: one node with its autoscaler and
// disruption budget, and a LeaderWorkerSet group across two pods. It has no
// non-test code.
package serving
