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
// TenantSpec.Admits makes the same check without a cluster.
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
//     Tenant(...).AllowRDMA() opts a tenant into the privileged level.
//
//     Read-only hostPath mounts of an accelerator's driver: the Ascend
//     driver, npu-smi and DCMI (volumes ascend-*) on a profile without
//     the Ascend Docker Runtime (WithAscendRuntime(false)), and a
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
//     (pod.HelperSecurityContext). cube sets them itself where it knows
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
// TenantSpec.LevelFor picks the strictest of restricted and baseline
// that admits a set of workloads, or says which pod neither admits and
// why; PodTemplates returns the pod templates the checks judge.
// ClientRules lists the RBAC a program running cube needs, each rule
// shown needed by a test on the API server.
//
// A Tenant is a team's namespace: quota, container default requests (no
// default limits, which would kill engines that state none), Volcano
// queue, Roles for its editors and viewers covering every kind cube
// creates, the ServiceAccount PipelineServiceAccount for its pipelines,
// and network isolation with explicit IngressExceptions (KubeRay's
// operator, Prometheus; an ingress controller on request).
//
// Nothing in this package panics on a nil or zero value: a nil or typed-nil
// Workload, a nil Client, Release or TenantSpec, a Client made from a nil
// controller-runtime client or with a bad option (WithNamespace("Bad_NS"))
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
// (OWNER:NAMESPACE/NAME, WithFieldOwner), so the API server reports the
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
// and of the kinds given with WithKinds: train.Kinds(), serve.Kinds(),
// pipeline.Kinds(), tune.Kinds(), or all of them with kinds.All(). An
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
// controllers record, and what its pods (found by the release label) are
// stuck on, as PodProblems:
// unschedulable with the scheduler's message, an image that cannot be
// pulled, a missing Secret key, a crash loop with the last exit reason
// (OOMKilled…). FailOnStuckPods makes Wait fail on a refusal or a stuck
// pod at once instead of at the controller's deadline.
//
// # One word per concept
//
// Each concept has one name across the module, chosen from the word users
// already know from Kubernetes, Argo, Katib or vLLM; the upstream field it
// renders to is cited where it differs.
//
//	concept                        word               where                                     why
//	whole accelerators asked for   GPUs(n)            pod.Builder.GPUs, vgpu.Spec.GPUs,         nvidia.com/gpu, Ray num_gpus; an NPU
//	  by a pod (setter, field)     GPUs (field)       hardware.Placement.GPUs,                  count too, per the profile. Field
//	                                                  TenantSpec.GPUs, ops LeaseSpec.GPUs,      paths are "gpus".
//	                                                  train RayJob.HeadGPUs
//	  read back                    GPUCount()         pod.Builder.GPUCount, vgpu.Spec.GPUCount  a getter cannot share the setter's name
//	  a role without them          NoGPUs             pod.TemplateOptions.NoGPUs,
//	                                                  train.VolcanoTask.NoGPUs
//	devices a node has or a plan   Devices            hardware.NodeInventory.Devices,           a measure of hardware, not a request
//	  spans (measure, not request)                    Inventory.Devices, serve.PlanResult.
//	                                                  Devices, llm.TrainingPlan.Devices,
//	                                                  vgpu.Share.Devices, DeviceHours
//	retries of a failed run        RetryLimit /       train Lifecycle.RetryLimit and            Argo retryStrategy.limit, Kubernetes
//	                               Retry{Limit}       VolcanoJob.RetryLimit (backoffLimit,      backoffLimit and Volcano maxRetry
//	                                                  maxRetry), pipeline.Retry.Limit,          count the same retries; "Retry" +
//	                                                  market DownloadJob.RetryLimit             "Limit" in that order everywhere
//	retries of an HTTP call        Retry(limit,       rag OpenAIEmbedder.Retry, label           the same words for the same count,
//	                               backoff)           Retry                                     plus the first backoff
//	how many run at once           Parallelism        pipeline Pipeline.Parallelism, Step       Kubernetes Job and Argo parallelism
//	                                                  Parallelism, run option pipeline.
//	                                                  Parallelism, rag OpenAIEmbedder.
//	                                                  Parallelism, WithApplyParallelism,
//	                                                  tune Experiment/Local.Parallelism
//	                                                  (Katib parallelTrialCount),
//	                                                  market EvaluationJob.Parallelism
//	what a cron does on overlap    ConcurrencyPolicy  pipeline Schedule.ConcurrencyPolicy       CronWorkflow concurrencyPolicy; not a
//	                                                                                            count
//	how long the caller waits      Timeout            cube.Timeout (Wait)                       kubectl wait --timeout
//	how long one HTTP request may  RequestTimeout     inference.RequestTimeout (client),            http.Client.Timeout, Gateway API
//	  take                                            serve Split.RequestTimeout (gateway)      timeouts.request
//	how long a run may take before ActiveDeadline     train Lifecycle.ActiveDeadline, pipeline  activeDeadlineSeconds, the field
//	  the controller fails it                         Step ActiveDeadline                       both render
//	how long a pod may load before StartupTimeout     serve Service.StartupTimeout              startup probe budget; a different
//	  it is restarted                                                                           bound
//	how late a cron run may start  StartingDeadline   pipeline Schedule.StartingDeadline        startingDeadlineSeconds
//	collective connect bound       HCCLConnectTimeout hardware.HCCLConnectTimeout               HCCL_CONNECT_TIMEOUT
//	file-lock wait                 LockTimeout        market FileStore.LockTimeout              a different wait, named for its lock
//	numeric format, computed with  models.DType       serve plan options WeightDType and        one type where cube needs the width
//	                                                  KVCacheDType, models.Model.DType
//	numeric format, passed to an   DType(string),     serve Service.DType, KVCacheDType         the engine's own values (auto, half,
//	  engine flag                  KVCacheDType       (checked per engine)                      fp8_e5m2…), which models.DType
//	                               (string)                                                     cannot name; Auto maps fp8 → FP8
//	quantization method            Quantization       serve Service.Quantization (awq, gptq,    vLLM --quantization; the plan
//	                                                  fp8); the plan's weight format is         option sizing weights is WeightDType
//	                                                  WeightDType
//	model sharding                 TensorParallel,    serve Service and plan option, train      vLLM --tensor-parallel-size; the
//	                               PipelineParallel   ColossalAIJob, PlanResult                 same int everywhere
//	a count in the public API      int                serve Replicas, DisruptionBudget,         converted at the boundary by
//	                                                  Autoscale, ScaleOnCPU/Memory, Split.      pod.Int32, which reports a count that
//	                                                  Weights; train; tune MaxTrials,           does not fit; ports stay int32 as in
//	                                                  MaxFailed; label MLBackendServer.         corev1, and serve.TritonInstanceGroup
//	                                                  Replicas                                  mirrors Triton's model_config.proto
//	where a thing stands (value)   Phase              cube.Phase, pipeline.Phase (local step    Kubernetes and Argo .status.phase
//	                                                  outcome), tune TrialPhase
//	the report carrying a phase    Status             cube.Status, cube.ObjectStatus            Kubernetes .status
//	catalogue look-up by name      Lookup, ignoring   hardware.Lookup, models.Lookup,           names are typed by people; the
//	                               case and space     Profile.MIGProfile, Profile.VNPUTemplate, result carries the canonical
//	                                                  vgpu.MIG, vgpu.VNPU                       spelling, which is what renders
//	a builder type                 named for what it  serve.Service, train.PyTorchJob,          TenantBuilder → TenantSpec,
//	                               builds             vgpu.Spec, notebook.Notebook; cube        LeaseBuilder → LeaseSpec: the
//	                                                  TenantSpec, ops LeaseSpec                 constructor holds the short name
package cube
