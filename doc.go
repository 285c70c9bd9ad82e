// Package cube builds, applies and follows the Kubernetes objects of an AI
// platform: notebooks, pipelines, distributed training, hyperparameter search,
// fine-tuning, inference serving, labeling and more, each in its own package.
//
// Every builder is a Workload: a value whose Objects method validates it and
// returns fresh typed objects. Render turns workloads into YAML for kubectl or
// GitOps; Client applies them with server-side apply and returns a Release to
// wait on, read logs from and delete:
//
//	c, err := cube.New(restConfig, cube.WithNamespace("team-a"))
//	rel, err := c.Apply(ctx, job)
//	st, err := rel.Wait(ctx, cube.Succeeded, cube.Timeout(2*time.Hour),
//		cube.OnProgress(func(s cube.Status) { log.Println(s) }))
//
// Objects carry the standard labels of an Identity (app.kubernetes.io/name,
// app.kubernetes.io/managed-by=cube, app.kubernetes.io/part-of, cube.dev/kind,
// cube.dev/release). Apply records each release in a ConfigMap named
// cube-release-NAME, so Client.Releases and Client.Release find releases again;
// the record is written before the objects it adds, so an apply that stops
// halfway leaves nothing Delete cannot find. Applying a release again is
// declarative: objects the workload no longer has are pruned (NoPrune keeps
// them).
//
// How the phase of a kind is read is registered with RegisterStatus; this
// package registers Deployment, StatefulSet, Job, Pod, PersistentVolumeClaim
// and Service, and the workload packages register their own kinds.
//
// While a release is neither Ready nor Succeeded, Status and Wait also say
// what its pods (found by the release label) are stuck on, as PodProblems:
// unschedulable with the scheduler's message, an image that cannot be
// pulled, a missing Secret key, a crash loop with the last exit reason
// (OOMKilled…). FailOnStuckPods makes Wait fail on the stuck ones at once
// instead of at the controller's deadline.
package cube
