// Package tenant builds a team's share of a Kubernetes cluster as one
// cube.Workload: its namespace with a Pod Security level, a ResourceQuota
// and a LimitRange, a Volcano queue whose capability follows the quota, the
// Roles and RoleBindings of its members, the ServiceAccount its pipelines
// run as, and NetworkPolicies that isolate it from other namespaces with
// the exceptions KubeRay and Prometheus need.
//
//	team := tenant.New("team-a").
//		Editors("alice").Viewers("bob").
//		CPU("128").Memory("1Ti").
//		Accelerators(hardware.H100, 16)
//	rel, err := client.Apply(ctx, team)
//
// Accelerator quotas are counted per device resource of a hardware
// profile (nvidia.com/gpu, huawei.com/Ascend910…). Before anything is
// applied, Admits says whether the tenant's Pod Security level admits the
// pods of given workloads, and LevelFor chooses the strictest level that
// does.
//
// With Queueing(Kueue) the tenant's quota is a Kueue ClusterQueue, its
// Namespace carries LabelQueueing=Kueue (the selector to give Kueue's
// managedJobsNamespaceSelector), and Plan says before submitting whether and where Kueue would admit a
// workload now: the flavor of each pod set, what it would borrow from
// the cohort, or what it waits for.
//
//	plans, err := tenant.Plan(ctx, reader, "team-a", job)
//	// PyTorchJob.kubeflow.org team-a/sft: Waits: waits in ClusterQueue
//	// team-a for nvidia.com/gpu on flavor cube-h100-sxm-80gb (needs 8,
//	// 4 free now, at most 12)
//
// The platform applies, once and in a release of their own, the Kueue
// objects every tenant shares: Flavors (a ResourceFlavor per accelerator
// profile) and Priorities (WorkloadPriorityClasses). A job takes a
// priority with WorkloadPriority on its builder; within a tenant a
// waiting job preempts admitted jobs of lower priority, and Status says
// so ("Preempted by a workload of ClusterQueue team-a (prioritization in
// the ClusterQueue)").
//
// PodPriorities are kube-scheduler's PriorityClasses, applied once by
// the platform in a release of their own like Flavors and Priorities: a
// pod takes one with PriorityClass on its builder, a class may be every
// pod's default, and a class may wait for room instead of evicting pods
// of lower priority.
//
// A cube.Client reads the tenant's Volcano Queue once it is given
// Kinds (or kinds.All()); without them the queue reads Unknown.
package tenant
