// Package training runs cube's training jobs to completion on the test
// cluster: a PyTorchJob all-reduce over gloo, an MPIJob's mpirun, and a
// RayJob reconciled by KubeRay. It has no non-test code.
package training
