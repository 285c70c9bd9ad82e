// Package train builds distributed training jobs as typed Kubernetes
// objects: one builder per framework, every one a cube.Workload.
//
//	builder        object                                   replicas
//	PyTorch        training-operator PyTorchJob              Master + Workers, or elastic Workers
//	TensorFlow     TFJob                                     Chief, PS, Workers, Evaluator
//	MPI, Horovod   MPIJob (kubeflow.org/v1)                  Launcher + Workers
//	DeepSpeed      PyTorchJob + ConfigMap (ds_config.json)   Master + Workers (torchrun)
//	ColossalAI     PyTorchJob                                Master + Workers (torchrun or colossalai run)
//	Paddle         PaddleJob                                 Workers (collective) or Master servers + Workers
//	XGBoost        XGBoostJob                                Master + Workers
//	MXNet          MXJob                                     Scheduler, Servers, Workers
//	Ray            KubeRay RayJob                            head + worker groups
//	Volcano        Volcano batch.volcano.sh/v1alpha1 Job     tasks
//	Trainer        Kubeflow Trainer v2 TrainJob               numNodes pods of a runtime's JobSet
//	ClusterRuntime Trainer v2 ClusterTrainingRuntime          (the JobSet template TrainJobs name)
//
// Every builder embeds pod.Builder by name, so image, command, env, secrets,
// volumes, resources, node placement, the hardware profile (On), vGPU
// slices (Slice) and the fabric (Fabric) are set the same way everywhere
// (go doc pod.Builder) and land on every replica's pod template through
// hardware.Apply: the same job moves from NVIDIA to Ascend by changing the
// argument of On. The training-operator builders also embed RunPolicy by
// name (clean-pod policy, restart policy and gang scheduling through
// Volcano, and through Lifecycle the TTL, deadline, Retry and suspend: go
// doc train.RunPolicy, go doc train.Lifecycle); RayJob embeds Lifecycle.
// Everything else a builder takes is a method of its own, so go doc
// train.PyTorchJob lists it. RoleResources gives one role (an MPI launcher,
// a parameter server) its own CPU and memory; the Ray head (HeadResources)
// and Volcano tasks (VolcanoTask.CPU, Memory) have the same.
//
// Retries take one value, retry.Policy, on every builder: Retry sets the
// job's (the training-operator's and KubeRay's backoffLimit, Volcano's
// maxRetry), ElasticRetry torchrun's restarts of an elastic worker group
// in place. None of the engines waits between retries by a setting of its
// own, so a Policy with a Backoff is refused, not dropped.
//
//	job := train.PyTorch("llama-sft").
//		Namespace("team-a").
//		Image("registry.example.com/llm/train:2.4").
//		Torchrun("sft.py", "--model", "/models/llama").
//		Workers(3).
//		On(hardware.H100).Accelerators(8).
//		Fabric(hardware.InfiniBand()).
//		PVC("datasets", "/data").
//		Gang().Queue("team-a")
//	client, err := cube.New(cfg, cube.Kinds(train.Kinds()...))
//	...
//	rel, err := client.Apply(ctx, job)
//	...
//	_, err = rel.Wait(ctx, cube.Succeeded)
//
// A RayJob's head and worker groups share the pod settings too. On Ascend
// each group that gets NPUs declares them to Ray as the NPU resource (KubeRay
// derives GPUs from nvidia.com/gpu itself but knows no Ascend resource), and
// RayJob.Gang hands the cluster to Volcano through KubeRay's batch-scheduler
// integration (the operator must run with --batch-scheduler=volcano).
//
// # Counting pods: Workers and Nodes
//
// Workers(n) counts the operator's Worker replicas, on every builder: the
// pods named <job>-worker-<i>. Jobs whose Master trains too (PyTorch,
// DeepSpeed, ColossalAI, XGBoost) also take Nodes(n), the pods that
// train with the Master included: the count Arena's --workers, the
// Kubeflow SDK's num_workers and torchrun's --nnodes use. Nodes(1) (or
// Workers(0)) is a single pod, the usual fine-tune on one node's
// accelerators; Nodes(4) is a Master and three Workers, as Workers(3) is.
// Coming from Arena or the SDK, write Nodes with the number you used there.
// Under Elastic no Master runs and both count the Workers.
//
// # What the operators need
//
// Gang needs the training-operator started with
// --gang-scheduler-name=volcano; without it the operator creates no
// PodGroup and the pods reach Volcano one by one. The operator hands Volcano
// only the gang size, queue, priority class and minimum resources, so
// there is no schedule timeout to set. Every training-operator job
// defaults to cleanPodPolicy Running (the operator's default is None,
// which leaves parameter servers and MPI workers running, with their
// accelerators, after the job ended). An MPIJob's ServiceAccount reaches
// the Workers only: the Launcher keeps the account the operator grants
// pods/exec on the workers, unless LauncherServiceAccount names one.
// Volcano jobs' pods restart OnFailure unless RestartPolicy says
// otherwise; Volcano sets no default, and the API's Always never lets a
// task complete.
//
// Chained methods never fail; Build (the primary typed object) and Objects
// report every problem at once with field paths. The training-operator's
// own defaulting (SetObjectDefaults_*) is applied to the rendered jobs,
// and its exported validation (ValidateV1MpiJobSpec, ValidateV1MXJob) runs
// as a backstop once cube's own checks pass: it stops at its first finding,
// and cube's checks report every problem with its field path.
//
// # Training-operator v1 or Kubeflow Trainer v2
//
// The training-operator v1 jobs (PyTorch, DeepSpeed, MPI…) are what Cube
// Studio's users and most running clusters have; Kubeflow Trainer v2
// (Trainer, a TrainJob naming a ClusterTrainingRuntime, run on JobSet) is
// the API Kubeflow develops, and the one Kueue admits as a TrainJob. Pick
// the operator the cluster runs; on a new platform pick Trainer v2 and
// install its runtimes with ClusterRuntime. The two take the same settings
// (the embedded Torch: Nodes, Workers, NprocPerNode; every pod setting), so
// moving a job is changing its constructor; what Trainer v2.3.0 leaves to
// the runtime (the scheduler, priority class, gang, retries, TTL) is
// refused on the TrainJob and set on the runtime, and it has no elastic
// jobs. The TrainJob and runtime types are package trainerv1alpha1's
// mirror of Trainer v2.3.0's API (its own package does not compile with
// the Kubernetes libraries cube uses).
//
// Kinds returns, for every kind the package builds, how to read its phase
// and the Argo resource-template success and failure conditions
// (cube.Kind). Give them to the client (cube.Kinds(train.Kinds()...),
// or kinds.All()) so that Release.Wait reports Running, Succeeded and
// Failed, and to a pipeline that runs a training job as a workload step
// (pipeline.New(name).Kinds(train.Kinds()...)) so that its step waits the
// same way. A client not given them reads the jobs Unknown, and Wait for
// them fails at once with cube.ErrNeverReaches.
package train
