// Package cubetest lets users unit-test their own automation built on cube
// without a cluster or binaries.
//
// NewCluster returns an in-memory cluster: a cube.Client on
// controller-runtime's fake client (server-side apply, watches, status
// subresources, a REST mapper for every kind cube builds) and client-go's
// fake clientset for logs. It is as strict as the API server where a
// platform's code depends on it, and nothing runs in it until the test
// says what the controllers do.
//
// # Say what the controllers do: reactors
//
// React registers a reaction to every object of a kind (Kind) or of a
// release (Release) created from then on. The code under test applies and
// waits in one goroutine, with no naming convention in the test:
//
//	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
//	_ = cluster.React(cubetest.Kind("PyTorchJob"), cubetest.After(2*time.Second, cubetest.Succeed()))
//	_ = cluster.React(cubetest.Kind("Deployment"), cubetest.Ready())
//	rel, _ := cluster.Client.Apply(ctx, fineTune)
//	st, err := rel.Wait(ctx, cube.Succeeded) // Succeeded, in milliseconds
//
// The reactions are Ready, Succeed and FailWith(reason, message), each at
// once or After a delay. The delays run on the cluster's own clock, which
// keeps their order but does not wait them out: it moves on to the next
// reaction due once the cluster has been quiet for a few milliseconds,
// so "fails after ten minutes" takes milliseconds. Err reports what the
// reactions could not write.
//
// # Test the quota-exceeded path
//
// Every namespaced object must go into a namespace that exists, or
// Apply fails as on a cluster (NotFound, `namespaces "x" not found`). A
// new cluster has default, kube-system, kube-public and kube-node-lease,
// and the namespace of its client (cube.Namespace); others come from
// objs, a tenant applied, or a Namespace created on Fake.
//
// The namespace's ResourceQuotas, LimitRanges and Pod Security level
// (pod-security.kubernetes.io/enforce) apply as the API server's
// admission applies them, with its messages (held to a real
// kube-apiserver in this package's tests):
//
//   - a Pod (or claim, or any object a quota counts) created directly is
//     refused with the API server's Forbidden error ("exceeded quota: …",
//     "failed quota: …: must specify limits.memory for: main", "maximum
//     cpu usage per Container is 2, but limit is 4", "violates
//     PodSecurity …"); cube.AsQuotaExceeded reads a quota's. A Pod takes
//     its LimitRange defaults;
//   - a workload (Deployment, StatefulSet, Job, the training-operator
//     jobs, LeaderWorkerSet, Volcano Job, RayJob) is stored, as on a
//     cluster, and its controller's pods (template × replicas, role after
//     role; none while the job is suspended) go through the same admission: those that fit count against
//     the quota from then on, and at the first one refused the controller
//     records what it records (its event with the server's answer, as
//     RefusePods does). Release.Status lists the refusal
//     (Status.Refusals, with the quota, what was requested, used and
//     limited), Wait with cube.FailOnStuckPods fails on it, and the
//     workload cannot be marked Ready or Succeeded: Mark says why, and
//     reactions leave it alone.
//
// So a portal's "quota exceeded" path is a plain test:
//
//	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
//	_, _ = cluster.Client.Apply(ctx, tenant.New("team-a").Accelerators(hardware.H100, 8))
//	rel, _ := cluster.Client.Apply(ctx, sixteenGPUFineTune)
//	st, err := rel.Wait(ctx, cube.Succeeded, cube.FailOnStuckPods) // errors.Is(err, cube.ErrFailed)
//	q := st.Refusals[0].Quota // requested requests.nvidia.com/gpu=8, used 8, limited to 8
//
// Quotas count what Kubernetes' quota evaluators count: pods and
// count/pods, requests.* and limits.* of cpu, memory and
// ephemeral-storage (and cpu, memory as requests), requests.<name> of
// extended resources (requests.nvidia.com/gpu) and hugepages, claims and
// their storage (per storage class too), services, count/<resource>.<group>
// of any kind; quotas with the scopes Terminating, NotTerminating,
// BestEffort, NotBestEffort and PriorityClass apply to the pods they
// select. A pod that has ended and a job that has succeeded or failed
// count nothing. cubetest counts a quota at once, as the quota controller
// does soon after: the API server's "status unknown for quota" while it
// has not is not played. A RayJob's pods are its RayCluster's head and
// workers as its spec gives them (KubeRay's injected init container and
// the submitter Job are not counted). The pods of Argo workflows are not
// played: which pods a workflow makes depends on how its steps run.
//
// # Play the controllers by hand
//
// The Mark methods move a release's objects to Ready, Succeeded or Failed
// by writing the status each controller would write (Deployment,
// StatefulSet, Job, Pod, PVC, Service, the training-operator jobs, Katib
// Experiment, Volcano Job, RayJob, Argo Workflow and CronWorkflow,
// LeaderWorkerSet), the same writers reactions use:
//
//	rel, _ := cluster.Client.Apply(ctx, myWorkload)
//	_ = cluster.MarkFailed(ctx, rel, "BackoffLimitExceeded", "")
//	_, err := rel.Wait(ctx, cube.Succeeded) // errors.Is(err, cube.ErrFailed)
//
// When the code under test applies and waits in one call and a reaction
// cannot say what the test needs, run it in a goroutine and play the
// controllers once WaitForRelease returns the release with all its
// objects created. Pods written with SetStatus carry container statuses
// as the kubelet writes them, and AddPod creates a pod of a release that
// is running, unschedulable or stuck (ImagePullBackOff,
// CrashLoopBackOff…), so reactions to what Status.Pods reports can be
// tested too. RefusePods records the events the controllers record when
// the API server refuses to create their pods, for any answer
// (QuotaExceededMessage builds a quota's), without refusing anything
// itself.
//
// Every cube builder applies, waits and reacts here: tenants and notebooks
// (with their NetworkPolicies), training jobs, RayJobs, Volcano jobs,
// Katib Experiments, LLM fine-tunes, served models (Deployments and
// LeaderWorkerSets) and their canary Splits, pipelines, Label Studio and
// its ML backend, the model market's download and evaluation Jobs,
// pipeline Schedules (CronWorkflows) and ops' Leases. A Split's HTTPRoute
// gets the parent statuses a Gateway controller writes (Accepted and
// ResolvedRefs), a tenant's ResourceQuota the status the quota controller
// writes once it has counted it (until then cube reads it InProgress).
// Kinds no controller writes a status to (a Lease, RBAC, a LimitRange)
// are Ready once they exist: nothing can fail them.
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
