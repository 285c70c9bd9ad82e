// Package pods checks, on the test cluster, that what the real kubelet and
// scheduler report about pods that cannot start reaches Release.Status and
// Release.Wait. It has no non-test code.
package pods
