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
// A Client outlives the API server's passing troubles. Requests that fail
// with a refused or dropped connection, a 5xx, or a 429 without
// Retry-After are retried with bounded backoff (WithRetry; client-go
// itself retries answers with Retry-After), and then fail wrapping
// ErrUnavailable; every retried write is idempotent. Writes of the record
// are conditional on its resourceVersion, and one that conflicts with
// another writer reads it again and keeps that writer's objects. An apply
// that fails records every object that may exist (a write whose answer was
// lost counts), so applying again converges and Delete finds everything.
// Wait re-watches and re-lists with backoff through restarts, expired
// watches and 5xx, bounded by its timeout and context.
//
// Before it applies anything, Apply checks the pod templates of a workload
// against the Pod Security level of the namespace they land in, with the
// checks of k8s.io/pod-security-admission that the API server's admission
// runs, and says which template is refused and why (a *PodSecurityError):
// the API server itself would store a job and then refuse its pods.
// TenantBuilder.Admits makes the same check without a cluster.
//
// A Tenant is a team's namespace: quota, container default requests (no
// default limits, which would kill engines that state none), Volcano
// queue, Roles for its editors and viewers covering every kind cube
// creates, the ServiceAccount PipelineServiceAccount for its pipelines,
// and network isolation with explicit IngressExceptions (KubeRay's
// operator, Prometheus; an ingress controller on request).
//
// Nothing in this package panics on a nil or zero value: a nil or typed-nil
// Workload, a nil Client, Release or TenantBuilder, a Client made from a nil
// controller-runtime client or with a bad option (WithNamespace("Bad_NS"))
// and a bad wait option (Timeout(-time.Second)) all give errors saying so.
// Render refuses what Apply refuses without a cluster.
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
