// Package cubetest lets users unit-test their own automation built on cube
// without a cluster or binaries.
//
// NewCluster returns an in-memory cluster: a cube.Client on
// controller-runtime's fake client (server-side apply, watches, status
// subresources, a REST mapper for every kind cube builds) and client-go's
// fake clientset for logs. Nothing runs in it, so the Mark methods move a
// release's objects to Ready, Succeeded or Failed by writing the status each
// controller would write (Deployment, StatefulSet, Job, Pod, PVC, Service,
// the training-operator jobs, Katib Experiment, Volcano Job, RayJob, Argo
// Workflow and CronWorkflow, LeaderWorkerSet). A test of "apply, wait,
// react" runs in milliseconds:
//
//	cluster := cubetest.NewCluster(nil)
//	rel, _ := cluster.Client.Apply(ctx, myWorkload)
//	_ = cluster.MarkFailed(ctx, rel, "BackoffLimitExceeded", "")
//	_, err := rel.Wait(ctx, cube.Succeeded) // errors.Is(err, cube.ErrFailed)
//
// When the code under test applies and waits in one call, run it in a
// goroutine and play the controllers from the test once WaitForRelease
// returns the release with all its objects created. Pods written with
// SetStatus carry container statuses as the kubelet writes them, and
// AddPod creates a pod of a release that is running, unschedulable or stuck
// (ImagePullBackOff, CrashLoopBackOff…), so reactions to what
// Status.Pods reports can be tested too. RefusePods records the events the
// controllers record when the API server refuses to create their pods (a
// quota exceeded: QuotaExceededMessage), so reactions to Status.Refusals
// and to Wait with cube.FailOnStuckPods can be tested as well.
//
// Every cube builder applies, waits and reacts here: tenants and notebooks
// (with their NetworkPolicies), training jobs, RayJobs, Volcano jobs,
// Katib Experiments, LLM fine-tunes, served models (Deployments and
// LeaderWorkerSets) and their canary Splits, pipelines, Label Studio and
// its ML backend, the model market's download and evaluation Jobs,
// pipeline Schedules (CronWorkflows) and ops' Leases. A Split's HTTPRoute gets the parent statuses a Gateway
// controller writes (Accepted and ResolvedRefs), a tenant's ResourceQuota
// the status the quota controller writes once it has counted it (until
// then cube reads it InProgress). Kinds no controller writes a status to
// (a Lease, RBAC, a LimitRange) are Ready once they exist: nothing can fail
// them.
//
// Mark writes a release's objects one after the other while the code
// under test may react to the first writes: once its Wait has seen one
// object fail it may delete the release. Mark skips the objects deleted
// after it started, as a controller writes nothing to an object that is
// gone; an object missing before it starts is an error. The fake
// client's server-side apply is controller-runtime's with one repair: it
// still treats NetworkPolicy as having a status, which the API removed, and
// without the repair no object with a NetworkPolicy could be applied.
//
// SetStatus and MarkObject are the same status writers for any client,
// including a real API server in integration tests. They, Mark and AddPod
// refuse what no controller would write: a phase other than InProgress,
// Ready, Succeeded and Failed, a pod name the API server refuses.
package cubetest
