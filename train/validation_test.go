package train_test

import (
	"math"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcbus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/retry"
	"github.com/cubestudio/cube/train"
)

// errorsOf returns the problems Objects reports, one string each.
func errorsOf(t *testing.T, w cube.Workload) []string {
	t.Helper()
	objs, err := w.Objects()
	require.Error(t, err)
	assert.Nil(t, objs)
	var agg utilerrors.Aggregate
	require.ErrorAs(t, err, &agg)
	out := make([]string, len(agg.Errors()))
	for i, e := range agg.Errors() {
		out[i] = e.Error()
	}
	return out
}

const img = "registry.example.com/ml/train:1.0"

func pytorch() *train.PyTorchJob { return train.PyTorch("job").Image(img) }

// TestValidation covers every problem the builders report, each with its
// field path, all at once.
func TestValidation(t *testing.T) {
	cases := []struct {
		name string
		w    cube.Workload
		want []string
	}{
		// Names.
		{"bad name", train.PyTorch("Bad_Name").Image(img), []string{
			`metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
		}},
		{"name starting with a digit", train.TensorFlow("1job").Image(img), []string{
			`metadata.name: Invalid value: "1job": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`,
		}},
		{"name too long for the worker pods", train.PyTorch("a234567890123456789012345678901234567890123456789012345").Image(img), []string{
			`metadata.name: Too long: may not be more than 54 bytes`,
		}},
		{"missing name", train.XGBoost("").Image(img), []string{
			`metadata.name: Required value: a name is required`,
		}},

		// Images and the shared pod settings, reported once for all replicas.
		{"missing image", train.PyTorch("job"), []string{
			`spec.pytorchReplicaSpecs[Master].template.spec.containers[0].image: Required value: an image is required (the same in spec.pytorchReplicaSpecs[Worker])`,
		}},
		{"more GPUs than the node holds, reported once for every replica", pytorch().On(hardware.H100).Accelerators(16), []string{
			`accelerators: Invalid value: 16: more devices per pod than a H100-SXM-80GB node holds (8)`,
		}},
		{"negative GPUs reported once, under the setting", pytorch().On(hardware.H100).Accelerators(-1), []string{
			`accelerators: Invalid value: -1: must not be negative`,
		}},
		{"settings reported once on a job of four roles", train.TensorFlow("tf").Image(img).Chief().ParameterServers(1).Evaluator().
			On(hardware.H100).Accelerators(-2).Queue("Bad Queue").Env("HF_TOKEN", "hf_abcdefghijklmnopqrstuvwxyz"), []string{
			`accelerators: Invalid value: -2: must not be negative`,
			`queue: Invalid value: "Bad Queue": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`env[HF_TOKEN].value: Forbidden: HF_TOKEN looks like a credential written in clear, which would be stored in the rendered objects: put it in a Secret and use EnvFromSecret("HF_TOKEN", secret, key)`,
		}},
		{"the root queue", pytorch().Gang().Queue("root"), []string{
			`queue: Invalid value: "root": Volcano accepts no jobs in the root queue; use a leaf queue`,
		}},

		// Run policy.
		{"run policy", pytorch().
			TTLAfterFinished(-time.Second).
			ActiveDeadline(0).
			Retry(retry.Policy{Limit: -1}).
			CleanPodPolicy("Sometimes").
			RestartPolicy("Maybe"), []string{
			`spec.runPolicy.ttlSecondsAfterFinished: Invalid value: "-1s": must not be negative`,
			`spec.runPolicy.activeDeadlineSeconds: Invalid value: "0s": must be positive`,
			`spec.runPolicy.backoffLimit: Invalid value: -1: must not be negative`,
			`spec.runPolicy.cleanPodPolicy: Unsupported value: "Sometimes": supported values: "All", "Running", "None"`,
			`spec.pytorchReplicaSpecs[Master].restartPolicy: Unsupported value: "Maybe": supported values: "Always", "OnFailure", "Never", "ExitCode"`,
		}},
		{"durations and counts beyond 32 bits", pytorch().
			TTLAfterFinished(time.Duration(math.MaxInt32+1) * time.Second).
			Retry(retry.Policy{Limit: math.MaxInt32 + 1}), []string{
			`spec.runPolicy.ttlSecondsAfterFinished: Invalid value: "596523h14m8s": must be at most 2147483647 seconds`,
			`spec.runPolicy.backoffLimit: Invalid value: 2147483648: must fit in 32 bits`,
		}},
		{"gang", pytorch().Scheduler("default-scheduler").GangMinAvailable(3), []string{
			`schedulerName: Invalid value: "default-scheduler": gang scheduling runs through Volcano; remove Scheduler or set it to volcano`,
			`spec.runPolicy.schedulingPolicy.minAvailable: Invalid value: 3: must not exceed the job's 2 replicas`,
		}},
		{"gang of none", pytorch().GangMinAvailable(0), []string{
			`spec.runPolicy.schedulingPolicy.minAvailable: Invalid value: 0: must be at least 1`,
		}},

		// PyTorch.
		{"pytorch with negative workers", pytorch().Workers(-1).NprocPerNode(0), []string{
			`spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: -1: must not be negative`,
			`spec.nprocPerNode: Invalid value: 0: must be at least 1`,
		}},
		{"pytorch of no nodes", pytorch().Nodes(0), []string{
			`spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: -1: Nodes(0) leaves no pod: Nodes counts the Master, so it is at least 1`,
		}},
		{"elastic pytorch of no workers", pytorch().Elastic(1, 2).Nodes(0), []string{
			`spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: 0: must be within the elastic range 1..2`,
		}},
		{"elastic range min > max", pytorch().Elastic(4, 2), []string{
			`spec.elasticPolicy.maxReplicas: Invalid value: 2: must not be less than minReplicas (4)`,
		}},
		{"elastic min below 1", pytorch().Elastic(0, 2), []string{
			`spec.elasticPolicy.minReplicas: Invalid value: 0: must be at least 1`,
		}},
		{"workers outside the elastic range", pytorch().Elastic(2, 4).Workers(5), []string{
			`spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: 5: must be within the elastic range 2..4`,
		}},
		{"rendezvous", pytorch().Elastic(1, 2).Rendezvous("zookeeper", "", 70000).RendezvousConf("", "x").ElasticRetry(retry.Policy{Limit: -1}), []string{
			`spec.elasticPolicy.rdzvBackend: Unsupported value: "zookeeper": supported values: "c10d", "etcd", "etcd-v2"`,
			`spec.elasticPolicy.rdzvPort: Invalid value: 70000: must be a port number`,
			`spec.elasticPolicy.rdzvConf[0].key: Required value: a key is required`,
			`spec.elasticPolicy.maxRestarts: Invalid value: -1: must not be negative`,
		}},
		{"rendezvous without elastic", pytorch().ElasticRetry(retry.Policy{Limit: 3}), []string{
			`spec.elasticPolicy: Forbidden: rendezvous settings and ElasticRetry need Elastic(min, max)`,
		}},

		// TensorFlow.
		{"tf job with no worker", train.TensorFlow("tf").Image(img).Workers(0).ParameterServers(-1), []string{
			`spec.tfReplicaSpecs[Worker].replicas: Invalid value: 0: at least 1 worker required`,
			`spec.tfReplicaSpecs[PS].replicas: Invalid value: -1: must not be negative`,
		}},

		// MPI and Horovod, with the training-operator's own validation.
		{"mpi", train.MPI("mpi").Workers(0).SlotsPerWorker(0), []string{
			`spec.mpiReplicaSpecs[Worker].replicas: Invalid value: 0: at least 1 worker required`,
			`spec.slotsPerWorker: Invalid value: 0: must be at least 1`,
			`spec.mpiReplicaSpecs[Launcher].template.spec.containers[0].command: Required value: the program mpirun runs is required: set Command`,
			`spec.mpiReplicaSpecs[Launcher].template.spec.containers[0].image: Required value: an image is required (the same in spec.mpiReplicaSpecs[Worker])`,
		}},
		{"horovod without a program", train.Horovod("hvd").Image(img), []string{
			`spec.mpiReplicaSpecs[Launcher].template.spec.containers[0].command: Required value: the program mpirun runs is required: set Command`,
		}},

		{"resources of a role the job lacks", train.MPI("mpi").Image(img).Command("python", "a.py").
			RoleResources(kubeflowv1.PyTorchJobReplicaTypeMaster, "1", "1Gi").
			RoleResources(kubeflowv1.MPIJobReplicaTypeLauncher, "one", ""), []string{
			`spec.mpiReplicaSpecs[Master]: Unsupported value: "Master": supported values: "Launcher", "Worker"`,
			`spec.mpiReplicaSpecs[Launcher].template.spec.containers[0].resources.requests[cpu]: Invalid value: "one": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
			`spec.mpiReplicaSpecs[Launcher].template.spec.containers[0].resources.limits[cpu]: Invalid value: "one": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
		}},

		// Paddle, XGBoost, MXNet.
		{"paddle", train.Paddle("paddle").Image(img).Workers(0).ParameterServers(-2), []string{
			`spec.paddleReplicaSpecs[Worker].replicas: Invalid value: 0: at least 1 worker required`,
			`spec.paddleReplicaSpecs[Master].replicas: Invalid value: -2: must not be negative`,
		}},
		{"xgboost", train.XGBoost("xgb").Image(img).Workers(-1), []string{
			`spec.xgbReplicaSpecs[Worker].replicas: Invalid value: -1: must not be negative`,
		}},
		{"xgboost of no nodes", train.XGBoost("xgb").Image(img).Nodes(0), []string{
			`spec.xgbReplicaSpecs[Worker].replicas: Invalid value: -1: Nodes(0) leaves no pod: Nodes counts the Master, so it is at least 1`,
		}},
		{"mxnet", train.MXNet("mx").Workers(0).Servers(0), []string{
			`spec.mxReplicaSpecs[Worker].replicas: Invalid value: 0: at least 1 worker required`,
			`spec.mxReplicaSpecs[Server].replicas: Invalid value: 0: at least 1 server required`,
			`spec.mxReplicaSpecs[Scheduler].template.spec.containers[0].image: Required value: an image is required (the same in spec.mxReplicaSpecs[Server], spec.mxReplicaSpecs[Worker])`,
		}},

		// DeepSpeed.
		{"deepspeed config", train.DeepSpeed("ds").Image(img).Config(train.DeepSpeedConfig{
			ZeROStage:            4,
			Precision:            "fp8",
			MicroBatchPerGPU:     0,
			GradientAccumulation: -1,
			GradientClipping:     -1,
			OffloadOptimizer:     train.Offload{Device: "tape"},
			OffloadParams:        train.Offload{NVMePath: "/nvme"},
		}), []string{
			`deepspeedConfig.train_micro_batch_size_per_gpu: Invalid value: 0: must be at least 1`,
			`deepspeedConfig.gradient_accumulation_steps: Invalid value: -1: must be at least 1`,
			`deepspeedConfig.gradient_clipping: Invalid value: -1: must not be negative`,
			`deepspeedConfig.precision: Unsupported value: "fp8": supported values: "bf16", "fp16", ""`,
			`deepspeedConfig.zero_optimization.stage: Invalid value: 4: must be 0, 1, 2 or 3`,
			`deepspeedConfig.zero_optimization.offload_optimizer.device: Unsupported value: "tape": supported values: "cpu", "nvme"`,
			`deepspeedConfig.zero_optimization.offload_param.device: Required value: set the device to offload to`,
		}},
		{"deepspeed offload needs the right stage", train.DeepSpeed("ds").Image(img).Config(train.DeepSpeedConfig{
			ZeROStage:        2,
			MicroBatchPerGPU: 1,
			OffloadOptimizer: train.Offload{Device: train.OffloadNVMe, NVMePath: "nvme"},
			OffloadParams:    train.Offload{Device: train.OffloadCPU, NVMePath: "/nvme"},
		}), []string{
			`deepspeedConfig.zero_optimization.offload_optimizer.nvme_path: Invalid value: "nvme": must be an absolute path on an NVMe volume`,
			`deepspeedConfig.zero_optimization.offload_optimizer: Forbidden: nvme offload needs ZeRO stage 3 or higher, not 2`,
			`deepspeedConfig.zero_optimization.offload_param.nvme_path: Forbidden: only for nvme offload`,
			`deepspeedConfig.zero_optimization.offload_param: Forbidden: cpu offload needs ZeRO stage 3 or higher, not 2`,
		}},
		{"deepspeed config directory taken", train.DeepSpeed("ds").Image(img).ConfigMapVolume("mine", train.DeepSpeedConfigDir), []string{
			`spec.pytorchReplicaSpecs[Master].template.spec.containers[0].volumeMounts[0].mountPath: Duplicate value: "/etc/deepspeed": the same in spec.pytorchReplicaSpecs[Worker]`,
		}},
		{"deepspeed config volume name taken", train.DeepSpeed("ds").Image(img).AddVolume(deepSpeedVolumeClash(), ""), []string{
			`spec.pytorchReplicaSpecs[Master].template.spec.volumes[0].name: Duplicate value: "deepspeed-config": the same in spec.pytorchReplicaSpecs[Worker]`,
		}},

		// ColossalAI.
		{"colossalai plugin", train.ColossalAI("cai").Image(img).ZeROStage(1).TensorParallel(2), []string{
			`script: Required value: a training script is required: call Script`,
			`plugin.tpSize: Forbidden: tensor and pipeline sizes need hybrid_parallel`,
			`plugin.zeroStage: Forbidden: torch_ddp takes no ZeRO stage`,
		}},
		{"colossalai zero stage", train.ColossalAI("cai").Image(img).Script("t.py").Plugin(train.PluginZeRO).ZeROStage(3), []string{
			`plugin.zeroStage: Invalid value: 3: must be 1 to 2 for low_level_zero`,
		}},
		{"colossalai hybrid", train.ColossalAI("cai").Image(img).Script("t.py").Workers(2).
			Plugin(train.PluginHybridParallel).PipelineParallel(2).ZeROStage(2), []string{
			`plugin.zeroStage: Invalid value: 2: must be 0 or 1 with pipeline parallelism`,
			`plugin.tpSize: Invalid value: 1: tp_size × pp_size (2) must divide the 3 processes of the job`,
		}},
		{"colossalai sizes", train.ColossalAI("cai").Image(img).Script("t.py").
			Plugin(train.PluginHybridParallel).TensorParallel(0).PipelineParallel(0), []string{
			`plugin.tpSize: Invalid value: 0: must be at least 1`,
			`plugin.ppSize: Invalid value: 0: must be at least 1`,
		}},
		{"colossalai unknown plugin and launcher", train.ColossalAI("cai").Image(img).Script("t.py").Plugin("fsdp").Launcher("mpirun"), []string{
			`plugin: Unsupported value: "fsdp": supported values: "torch_ddp", "low_level_zero", "gemini", "hybrid_parallel"`,
			`launcher: Unsupported value: "mpirun": supported values: "torchrun", "colossalai"`,
		}},
		{"colossalai run needs a master", train.ColossalAI("cai").Image(img).Script("t.py").Elastic(1, 2).Launcher(train.LaunchColossalAI), []string{
			`launcher: Forbidden: colossalai run needs the Master of a non-elastic job; use torchrun`,
		}},

		// Ray.
		{"ray", train.Ray("a2345678901234567890123456789012345678901234567890").Image(img).Command("python"), []string{
			`metadata.name: Too long: may not be more than 47 bytes`,
			`spec.entrypoint: Required value: an entrypoint is required`,
			`command: Forbidden: Ray containers run ` + "`ray start`" + `; put the program in Entrypoint`,
			`spec.rayClusterSpec.workerGroupSpecs: Required value: at least one worker group is required`,
		}},
		{"ray keeping its cluster", train.Ray("ray").Image(img).Entrypoint("python t.py").WorkerGroup("w", 1).
			KeepClusterAfterFinish().Suspend(true).TTLAfterFinished(time.Minute).ActiveDeadline(-time.Second).Retry(retry.Policy{Limit: -1}), []string{
			`spec.activeDeadlineSeconds: Invalid value: "-1s": must not be negative`,
			`spec.backoffLimit: Invalid value: -1: must not be negative`,
			`spec.suspend: Forbidden: a RayJob that keeps its cluster cannot be suspended`,
			`spec.ttlSecondsAfterFinished: Forbidden: a RayJob that keeps its cluster has no TTL`,
		}},
		{"ray worker groups", train.Ray("ray").Image(img).Entrypoint("python t.py").
			WorkerGroup("GPU", 1).WorkerGroup("w", 1).WorkerGroup("w", 0).
			AutoscaledWorkerGroup("x", 1, 3, 2).AutoscaledWorkerGroup("y", 5, 1, 4).
			AutoscaledWorkerGroup("z", 1, 1, math.MaxInt32+1), []string{
			`spec.rayClusterSpec.workerGroupSpecs[0].groupName: Invalid value: "GPU": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			`spec.rayClusterSpec.workerGroupSpecs[2].groupName: Duplicate value: "w"`,
			`spec.rayClusterSpec.workerGroupSpecs[2].minReplicas: Invalid value: 0: must be at least 1`,
			`spec.rayClusterSpec.workerGroupSpecs[3].maxReplicas: Invalid value: 2: must not be less than minReplicas (3)`,
			`spec.rayClusterSpec.workerGroupSpecs[4].replicas: Invalid value: 5: must be within 1..4`,
			`spec.rayClusterSpec.workerGroupSpecs[5].maxReplicas: Invalid value: 2147483648: must fit in 32 bits`,
		}},

		{"ray gang on another scheduler", train.Ray("ray").Image(img).Entrypoint("python t.py").WorkerGroup("w", 1).
			Gang().Scheduler("yunikorn").Queue("Bad Queue").Accelerators(-1).RuntimeEnv(train.RuntimeEnv{EnvVars: map[string]string{"WANDB_API_KEY": "0123456789abcdef", "EPOCHS": "3"}}), []string{
			`queue: Invalid value: "Bad Queue": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`accelerators: Invalid value: -1: must not be negative`,
			`schedulerName: Invalid value: "yunikorn": gang scheduling runs through Volcano; remove Scheduler or set it to volcano`,
			`spec.runtimeEnvYAML.env_vars[WANDB_API_KEY]: Forbidden: WANDB_API_KEY looks like a credential written in clear, which would be stored in the RayJob: set it on the pods with EnvFromSecret("WANDB_API_KEY", secret, key); Ray's processes inherit it`,
		}},
		{"ray queue too long for a label", train.Ray("ray").Image(img).Entrypoint("python t.py").WorkerGroup("w", 1).
			Gang().Queue("q234567890123456789012345678901234567890123456789012345678901234"), []string{
			`metadata.labels[volcano.sh/queue-name]: Invalid value: "q234567890123456789012345678901234567890123456789012345678901234": must be no more than 63 bytes`,
		}},

		// Volcano.
		{"volcano without tasks", train.Volcano("vc").Image(img).Plugin("gossip").MinAvailable(0).Retry(retry.Policy{Limit: -1}).TTLAfterFinished(-time.Second).
			Policy("PodExploded", vcbus.RestartJobAction).Policy(vcbus.PodFailedEvent, "Panic"), []string{
			`spec.tasks: Required value: at least one task is required`,
			`spec.plugins[gossip]: Unsupported value: "gossip": supported values: "env", "svc", "ssh", "pytorch", "tensorflow", "mpi", "hcclrank", "ray"`,
			`spec.minAvailable: Invalid value: 0: must be at least 1`,
			`spec.maxRetry: Invalid value: -1: must not be negative`,
			`spec.ttlSecondsAfterFinished: Invalid value: "-1s": must not be negative`,
			`spec.policies[0].event: Unsupported value: "PodExploded": supported values: "*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated"`,
			`spec.policies[1].action: Unsupported value: "Panic": supported values: "AbortJob", "RestartJob", "RestartTask", "RestartPod", "RestartPartition", "TerminateJob", "CompleteJob", "ResumeJob"`,
		}},
		{"volcano tasks", train.Volcano("vc").Image(img).MinAvailable(9).
			Task("Worker", 1).Task("w", 2).Task("w", 0).
			AddTask(train.VolcanoTask{Name: "x", Replicas: 2, MinAvailable: ptr(3), Retry: &retry.Policy{Limit: -1},
				Policies: []vcbatch.LifecyclePolicy{{Event: "Boom", Action: vcbus.AbortJobAction}}}), []string{
			`spec.minAvailable: Invalid value: 9: must not exceed the job's 5 pods`,
			`spec.tasks[0].name: Invalid value: "Worker": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			`spec.tasks[2].name: Duplicate value: "w"`,
			`spec.tasks[2].replicas: Invalid value: 0: at least 1 replica required`,
			`spec.tasks[3].policies[0].event: Unsupported value: "Boom": supported values: "*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated"`,
			`spec.tasks[3].minAvailable: Invalid value: 3: must be within 1..2`,
			`spec.tasks[3].maxRetry: Invalid value: -1: must not be negative`,
		}},
		{"volcano restart policies", train.Volcano("vc").Image(img).RestartPolicy("Sometimes").
			Task("a", 1).
			AddTask(train.VolcanoTask{Name: "b", Replicas: 1, RestartPolicy: corev1.RestartPolicyOnFailure,
				Policies: []vcbatch.LifecyclePolicy{{Event: vcbus.PodFailedEvent, Action: vcbus.RestartJobAction}}}).
			AddTask(train.VolcanoTask{Name: "c", Replicas: 1, RestartPolicy: corev1.RestartPolicyNever,
				Policies: []vcbatch.LifecyclePolicy{{Events: []vcbus.Event{vcbus.PodEvictedEvent, vcbus.PodFailedEvent}, Action: vcbus.RestartJobAction}}}), []string{
			`spec.tasks[0].template.spec.restartPolicy: Unsupported value: "Sometimes": supported values: "OnFailure", "Never", "Always"`,
			`spec.tasks[1].template.spec.restartPolicy: Invalid value: "OnFailure": a PodFailed policy never fires while the kubelet restarts failed containers in place: set RestartPolicy(corev1.RestartPolicyNever)`,
		}},
		{"volcano policies as Volcano's webhook checks them", train.Volcano("vc").Image(img).RestartPolicy(corev1.RestartPolicyNever).Task("a", 1).
			Policy(vcbus.PodRunningEvent, vcbus.RestartJobAction).
			Policy(vcbus.PodFailedEvent, vcbus.AbortJobAction).
			Policy(vcbus.PodFailedEvent, vcbus.RestartJobAction).
			Policy(vcbus.AnyEvent, vcbus.AbortJobAction).
			AddTask(train.VolcanoTask{Name: "b", Replicas: 1, Policies: []vcbatch.LifecyclePolicy{
				{ExitCode: ptr[int32](0), Action: vcbus.RestartPodAction},
				{ExitCode: ptr[int32](3), Event: vcbus.PodEvictedEvent, Action: vcbus.RestartPodAction},
				{Action: vcbus.RestartPodAction},
			}}), []string{
			`spec.policies[0].event: Unsupported value: "PodRunning": supported values: "*", "PodFailed", "PodEvicted", "PodPending", "Unknown", "TaskCompleted", "TaskFailed", "JobUpdated"`,
			`spec.policies[2].event: Duplicate value: "PodFailed"`,
			`spec.policies: Invalid value: "*": a policy for every event ("*") leaves room for no other`,
			`spec.tasks[1].policies[0].exitCode: Invalid value: 0: 0 is not a failure`,
			`spec.tasks[1].policies[1].exitCode: Forbidden: a policy reacts to events or to an exit code, not both`,
			`spec.tasks[1].policies[2].event: Required value: an event or an exit code is required`,
		}},
		{"volcano job PodFailed policy under the default restart policy", train.Volcano("vc").Image(img).Task("a", 1).
			Policy(vcbus.PodFailedEvent, vcbus.AbortJobAction), []string{
			`spec.tasks[0].template.spec.restartPolicy: Invalid value: "OnFailure": a PodFailed policy never fires while the kubelet restarts failed containers in place: set RestartPolicy(corev1.RestartPolicyNever)`,
		}},
		{"mpi launcher service account", train.MPI("mpi").Image(img).Command("mpi_hello").LauncherServiceAccount("Bad SA"), []string{
			`spec.mpiReplicaSpecs[Launcher].template.spec.serviceAccountName: Invalid value: "Bad SA": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, errorsOf(t, tc.w))
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestBuildReturnsNothingOnError checks that Build gives no object with its
// errors.
func TestBuildReturnsNothingOnError(t *testing.T) {
	job, err := train.PyTorch("job").Build()
	assert.Nil(t, job)
	require.Error(t, err)
	tf, err := train.TensorFlow("tf").Build()
	assert.Nil(t, tf)
	require.Error(t, err)
	mpi, err := train.MPI("mpi").Build()
	assert.Nil(t, mpi)
	require.Error(t, err)
	ds, err := train.DeepSpeed("ds").Build()
	assert.Nil(t, ds)
	require.Error(t, err)
	cai, err := train.ColossalAI("cai").Build()
	assert.Nil(t, cai)
	require.Error(t, err)
	pd, err := train.Paddle("pd").Build()
	assert.Nil(t, pd)
	require.Error(t, err)
	xgb, err := train.XGBoost("xgb").Build()
	assert.Nil(t, xgb)
	require.Error(t, err)
	mx, err := train.MXNet("mx").Build()
	assert.Nil(t, mx)
	require.Error(t, err)
	ray, err := train.Ray("ray").Build()
	assert.Nil(t, ray)
	require.Error(t, err)
	vc, err := train.Volcano("vc").Build()
	assert.Nil(t, vc)
	require.Error(t, err)
}

func deepSpeedVolumeClash() corev1.Volume {
	return corev1.Volume{Name: "deepspeed-config", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
}
