// Package queueing checks, on the test cluster, that tenants queued by
// Kueue v0.17.0 behave as cube promises: a job is admitted whole or not at
// all, a job that does not fit waits and reads "Queued: waiting for quota
// in ClusterQueue …" through Release.Status and Wait, a second job runs
// when the first has finished, and a tenant that borrowed its cohort's
// idle GPUs is preempted when their owner submits, which reads "Preempted
// by a workload of ClusterQueue …". tenant.Plan, asked before a job is
// submitted, names the flavors Kueue then admits it on, and says Waits
// for one Kueue then holds. A RayJob, a serving group on LeaderWorkerSet,
// a Deployment (pod by pod) and a notebook (its StatefulSet) are admitted
// through Kueue the same way, and the one that does not fit reads Queued
// under its own kind. The node advertises four
// nvidia.com/gpu of the Tesla-T4 product (hardware.T4). It has no non-test
// code.
package queueing
