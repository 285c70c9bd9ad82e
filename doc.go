// Package cube builds, applies and follows the Kubernetes objects of an AI
// platform: notebooks, pipelines, distributed training, hyperparameter search,
// fine-tuning, inference serving, labeling and more, each in its own package.
//
// Every builder is a Workload: a value whose Objects method validates it and
// returns fresh typed objects. Render turns workloads into YAML for kubectl or
// GitOps; Client applies them with server-side apply and returns a Release to
// wait on, read logs from and delete:
//
//	c, err := cube.New(restConfig, cube.Namespace("team-a"))
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
// Retry-After are retried with bounded backoff (the Retry option, a
// retry.Policy; client-go
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
// tenant.Admits makes the same check without a cluster.
//
// # Pod Security
//
// What cube's pods ask of the Pod Security Standards, tested for every
// builder on every hardware profile and fabric with the evaluator of
// k8s.io/pod-security-admission (internal/security):
//
//   - Every pod passes the baseline level but for three additions, which
//     need the privileged level:
//
//     IPC_LOCK, added to the main container by an RDMA fabric
//     (InfiniBand, RoCE) to pin memory for verbs: baseline refuses it
//     ("non-default capabilities"), restricted too ("unrestricted
//     capabilities"). Ascend's on-chip RoCE adds none.
//     tenant.New(...).AllowRDMA() opts a tenant into the privileged level.
//
//     Read-only hostPath mounts of an accelerator's driver: the Ascend
//     driver, npu-smi and DCMI (volumes ascend-*) on a profile without
//     the Ascend Docker Runtime (AscendDockerRuntime(false)), and a
//     profile's HostMounts (Hygon's /opt/hyhal), on every pod of a
//     workload placed on that profile, its roles without devices
//     (parameter servers, launchers, Ray heads) included: both levels
//     refuse host paths ("hostPath volumes"; restricted also "restricted
//     volume types"). Profiles with the runtime mount nothing.
//
//     The host network of MindIE serving across nodes, whose HCCL rank
//     table names the nodes' addresses ("host namespaces").
//
//   - Every pod passes the restricted level, but for those additions,
//     once it runs as a non-root user: give any builder
//     PodSecurityContext (runAsNonRoot, runAsUser, the RuntimeDefault
//     seccomp profile) and SecurityContext (allowPrivilegeEscalation
//     false, capabilities drop ALL); the containers a builder adds beside
//     the main one (model downloads and pulls) get the same
//     (the same contexts as the main container). cube sets them itself where it knows
//     the image's user: notebooks (Jupyter's jovyan and code-server's
//     coder, 1000; RStudio's rserver as rstudio) and Label Studio (1001).
//     The other default images run as root (vLLM, SGLang, TGI, TEI,
//     Triton, Ollama, MindIE, LLaMA-Factory, verl, aws-cli,
//     python:3.12-slim), so cube sets no user for them: as they come,
//     their pods fail restricted's runAsNonRoot, seccompProfile,
//     allowPrivilegeEscalation and capabilities checks, and pass
//     baseline, the level a Tenant enforces by default. So does Label
//     Studio's bundled Postgres, whose image starts as root to own its
//     data directory and which the caller's contexts do not reach: a
//     restricted namespace takes ExternalDatabase.
//
// tenant.LevelFor picks the strictest of restricted and baseline
// that admits a set of workloads, or says which pod neither admits and
// why; PodTemplates returns the pod templates the checks judge.
// ClientRules lists the RBAC a program running cube needs, each rule
// shown needed by a test on the API server.
//
// A team's namespace — quota, default requests, queueing (Kueue, Volcano or
// none), Roles, network isolation — is a workload of package tenant.
//
// Nothing in this package panics on a nil or zero value: a nil or typed-nil
// Workload, a nil Client or Release, a Client made from a nil
// controller-runtime client or with a bad option (Namespace("Bad_NS"))
// and a bad wait option (Timeout(-time.Second)) all give errors saying so.
// Render refuses what Apply refuses without a cluster.
//
// # Releases own what they create
//
// A release is a name in a namespace, held by one kind of workload (the
// builder's kind, Release.Kind) and one instance (Release.UID), recorded in
// a ConfigMap cube-release-NAME. Apply of a workload of another kind under
// a name in use is refused with ErrNameTaken, and so is an object another
// release made: each release applies as its own field manager
// (OWNER:NAMESPACE/NAME, FieldOwner), so the API server reports the
// clash as a conflict. Every object carries the release's UID
// (LabelReleaseUID); prune and Release.Delete delete only objects that
// carry it and that the release created: one found in place (an
// administrator's Namespace made a Tenant) is adopted and never deleted,
// and a Namespace goes only with an explicit Delete of the release that
// created it, never by prune.
//
// # Statuses never guess
//
// A Client reads the phase of the Kubernetes API's own kinds (CoreKinds)
// and of the kinds given with the Kinds option: train.Kinds(), serve.Kinds(),
// pipeline.Kinds(), tune.Kinds(), tenant.Kinds(), or all of them with
// kinds.All(). An
// object of any other kind is Unknown, never Ready, whatever the program
// imports; an object that does not exist is Missing, and a release whose
// objects are all gone (after Delete) is Missing too, while Client.Release
// of its name fails with ErrNotFound. Wait takes any phase but Unknown and
// stops with ErrNeverReaches as soon as the release cannot reach it
// (Succeeded for a release of Deployments); with neither Timeout nor a
// deadline on its context, DefaultWaitTimeout bounds it.
//
// While a release is neither Ready nor Succeeded, Status and Wait also say
// which pods the cluster refused to create (Refusals: a quota exceeded,
// naming the ResourceQuota and the resources, Pod Security, a LimitRange,
// a webhook, a missing ServiceAccount), read from the events the
// controllers record (Kubernetes' own, the training-operator's, Volcano's,
// and KubeRay's on the RayCluster a RayJob made), and what its pods (found by the release label) are
// stuck on, as PodProblems:
// unschedulable with the scheduler's message, an image that cannot be
// pulled, a missing Secret key, a crash loop with the last exit reason
// (OOMKilled…). FailOnStuckPods makes Wait fail on a refusal or a stuck
// pod at once instead of at the controller's deadline.
//
// A job held by Kueue reads why (Status.Queue: queued for quota in a
// ClusterQueue, with what is in use and borrowed, inadmissible, preempted
// or evicted, from its Workload), and a pod the scheduler cannot place
// because no device matches its ResourceClaim says which claim, what it
// needs and what the node's devices have. Apply returns what the API
// server warned about objects it accepted (Release.Warnings: a Pod
// Security level in warn mode, a deprecated API).
//
// # Names
//
// One concept has one name across the packages: Accelerators for whole
// devices (GPUs, NPUs…) a pod asks for, Retry with a retry.Policy for trying
// a failed thing again, a time.Duration for every length of time, a
// pod.SecretKeyRef for every credential, cube.Phase for where a thing
// stands. A builder's exported methods are its settings, plus Objects and
// Build.
package cube
