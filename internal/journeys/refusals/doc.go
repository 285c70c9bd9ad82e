// Package refusals checks, on the test cluster, that pods the API server
// refuses to create reach Release.Status and Release.Wait as cube.Refusal:
// in a tenant whose ResourceQuota allows one nvidia.com/gpu, a PyTorchJob,
// an MPIJob, a served model's Deployment, a notebook's StatefulSet and a
// RayJob's head each ask for two, the quota admission plugin refuses their
// pods, and the real training-operator, ReplicaSet, StatefulSet and
// KubeRay controllers record it in the events cube reads. The node has no GPUs; it needs none, as quota
// admission counts requests before any pod is scheduled. It has no
// non-test code.
package refusals
