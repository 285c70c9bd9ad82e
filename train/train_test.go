package train_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yamlv2 "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"
	sigsyaml "sigs.k8s.io/yaml"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcbus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/contract"
	"github.com/cubestudio/cube/internal/testsupport/cputime"
	"github.com/cubestudio/cube/internal/testsupport/golden"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/retry"
	"github.com/cubestudio/cube/train"
	trainer "github.com/cubestudio/cube/train/trainerv1alpha1"
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

// Regression tests for what the upstream controllers do with cube's
// objects (issue 10, section 1). No operator runs here; each test names the
// upstream source whose behaviour it pins down, and the ones about status
// write it through the real API server's status subresource as the
// operator would.

// TestVolcanoTasksRestartPolicy: Volcano v1.14 neither defaults nor checks a
// task template's restartPolicy (pkg/webhooks/admission/jobs/mutate and
// validate leave it), so without one the API's Always applies and a task
// never completes. cube renders OnFailure unless told otherwise.
func TestVolcanoTasksRestartPolicy(t *testing.T) {
	job, err := train.Volcano("vc").Image(img).
		Task("worker", 2).
		AddTask(train.VolcanoTask{Name: "launcher", Replicas: 1, RestartPolicy: corev1.RestartPolicyNever}).
		Build()
	require.NoError(t, err)
	assert.Equal(t, corev1.RestartPolicyOnFailure, job.Spec.Tasks[0].Template.Spec.RestartPolicy)
	assert.Equal(t, corev1.RestartPolicyNever, job.Spec.Tasks[1].Template.Spec.RestartPolicy)

	job, err = train.Volcano("vc").Image(img).RestartPolicy(corev1.RestartPolicyNever).
		Policy(vcbus.PodFailedEvent, vcbus.RestartJobAction).
		Task("worker", 2).
		Build()
	require.NoError(t, err)
	assert.Equal(t, corev1.RestartPolicyNever, job.Spec.Tasks[0].Template.Spec.RestartPolicy)
}

// TestVolcanoPluginHCCLRank: Volcano v1.14 registers hcclrank among its job
// plugins (pkg/controllers/job/plugins/factory.go).
func TestVolcanoPluginHCCLRank(t *testing.T) {
	job, err := train.Volcano("npu").Image(img).Task("worker", 2).
		On(hardware.Ascend910B3).Accelerators(8).
		Plugin(train.PluginHCCLRank).
		Build()
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{"env": {}, "svc": {}, "hcclrank": {}}, job.Spec.Plugins)
}

// TestMPIServiceAccountStaysOffTheLauncher: the training-operator v1.8.1
// (pkg/controller.v1/mpi, newLauncher, newLauncherRoleBinding) runs the
// Launcher as <job>-launcher, bound to a Role with pods/exec on the
// workers, unless the Launcher's template names an account; then it binds
// that account, creating it owned by the MPIJob when it is missing. The pod
// settings' ServiceAccount therefore reaches the Workers only, and
// LauncherServiceAccount says the launcher's account on purpose.
func TestMPIServiceAccountStaysOffTheLauncher(t *testing.T) {
	for _, b := range []*train.MPIJob{train.MPI("mpi"), train.Horovod("hvd")} {
		job, err := b.Image(img).Command("python", "a.py").ServiceAccount("s3-reader").Build()
		require.NoError(t, err)
		launcher := job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher].Template.Spec
		worker := job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker].Template.Spec
		assert.Empty(t, launcher.ServiceAccountName, "the operator's <job>-launcher account")
		assert.Equal(t, "s3-reader", worker.ServiceAccountName)
	}
	job, err := train.MPI("mpi").Image(img).Command("python", "a.py").
		ServiceAccount("s3-reader").LauncherServiceAccount("mpi-launcher").Build()
	require.NoError(t, err)
	assert.Equal(t, "mpi-launcher", job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher].Template.Spec.ServiceAccountName)
	assert.Equal(t, "s3-reader", job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker].Template.Spec.ServiceAccountName)
}

// TestCleanPodPolicyDefaultsToRunning: the operator's defaults
// (SetDefaults_* in pkg/apis/kubeflow.org/v1) are None, under which
// DeletePodsAndServices (pkg/controller.v1/common/job.go) deletes nothing
// when a job ends: an MPIJob's sleeping workers, a TFJob's parameter
// servers, an MXJob's scheduler and servers, a PaddleJob's servers keep
// running with their accelerators. cube defaults to Running, which deletes
// the pods still running and keeps the finished ones.
func TestCleanPodPolicyDefaultsToRunning(t *testing.T) {
	jobs := map[string]cube.Workload{
		"mpi":        train.MPI("mpi").Image(img).Command("a"),
		"horovod":    train.Horovod("hvd").Image(img).Command("a"),
		"tensorflow": train.TensorFlow("tf").Image(img).ParameterServers(2),
		"mxnet":      train.MXNet("mx").Image(img),
		"paddle":     train.Paddle("pd").Image(img).ParameterServers(1),
		"pytorch":    train.PyTorch("pt").Image(img),
		"deepspeed":  train.DeepSpeed("ds").Image(img),
		"colossalai": train.ColossalAI("cai").Image(img).Script("t.py"),
		"xgboost":    train.XGBoost("xgb").Image(img),
	}
	for name, w := range jobs {
		objs, err := w.Objects()
		require.NoError(t, err, name)
		assert.Equal(t, kubeflowv1.CleanPodPolicyRunning, *runPolicyOf(t, objs[len(objs)-1]).CleanPodPolicy, name)
	}
	job, err := train.MPI("mpi").Image(img).Command("a").CleanPodPolicy(kubeflowv1.CleanPodPolicyNone).Build()
	require.NoError(t, err)
	assert.Equal(t, kubeflowv1.CleanPodPolicyNone, *job.Spec.RunPolicy.CleanPodPolicy, "the caller's choice wins")
}

func runPolicyOf(t *testing.T, obj client.Object) kubeflowv1.RunPolicy {
	t.Helper()
	switch j := obj.(type) {
	case *kubeflowv1.PyTorchJob:
		return j.Spec.RunPolicy
	case *kubeflowv1.TFJob:
		return j.Spec.RunPolicy
	case *kubeflowv1.MPIJob:
		return j.Spec.RunPolicy
	case *kubeflowv1.MXJob:
		return j.Spec.RunPolicy
	case *kubeflowv1.PaddleJob:
		return j.Spec.RunPolicy
	case *kubeflowv1.XGBoostJob:
		return j.Spec.RunPolicy
	}
	t.Fatalf("no run policy on %T", obj)
	return kubeflowv1.RunPolicy{}
}

// TestSinglePodJobs: the training-operator's PyTorchJob webhook
// (pkg/webhooks/pytorch) and XGBoost controller (SetPodEnv) accept a
// Master alone. Workers counts the Worker replicas, Nodes the pods that
// train, the Master included, as Arena's --workers and the Kubeflow SDK's
// num_workers do.
func TestSinglePodJobs(t *testing.T) {
	for _, b := range []*train.PyTorchJob{train.PyTorch("ft").Workers(0), train.PyTorch("ft").Nodes(1)} {
		job, err := b.Image(img).On(hardware.H100).Accelerators(8).Build()
		require.NoError(t, err)
		require.Len(t, job.Spec.PyTorchReplicaSpecs, 1)
		master := job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster]
		assert.Equal(t, int32(1), *master.Replicas)
		assert.Equal(t, "8", *job.Spec.NprocPerNode)
	}

	job, err := train.PyTorch("ddp").Image(img).Nodes(4).Build()
	require.NoError(t, err)
	assert.Equal(t, int32(3), *job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeWorker].Replicas)
	job, err = train.PyTorch("ddp").Image(img).Nodes(4).Workers(2).Build()
	require.NoError(t, err)
	assert.Equal(t, int32(2), *job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeWorker].Replicas, "the later call wins")
	job, err = train.PyTorch("elastic").Image(img).Elastic(2, 6).Nodes(4).Build()
	require.NoError(t, err)
	assert.Equal(t, int32(4), *job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeWorker].Replicas, "no Master under Elastic")
	assert.NotContains(t, job.Spec.PyTorchReplicaSpecs, kubeflowv1.PyTorchJobReplicaTypeMaster)

	objs, err := train.DeepSpeed("ds").Image(img).Nodes(1).Objects()
	require.NoError(t, err)
	ds := objs[1].(*kubeflowv1.PyTorchJob)
	require.Len(t, ds.Spec.PyTorchReplicaSpecs, 1)
	assert.Equal(t, train.DeepSpeedConfigDir, container(ds.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster]).VolumeMounts[0].MountPath)

	cai, err := train.ColossalAI("cai").Image(img).Script("t.py").Workers(0).
		Plugin(train.PluginHybridParallel).TensorParallel(2).On(hardware.H100).Accelerators(8).Build()
	require.NoError(t, err, "tp 2 divides the 8 processes of one pod")
	require.Len(t, cai.Spec.PyTorchReplicaSpecs, 1)

	xgb, err := train.XGBoost("xgb").Image(img).Nodes(1).Build()
	require.NoError(t, err)
	require.Len(t, xgb.Spec.XGBReplicaSpecs, 1)
	xgb, err = train.XGBoost("xgb").Image(img).Nodes(3).Build()
	require.NoError(t, err)
	assert.Equal(t, int32(2), *xgb.Spec.XGBReplicaSpecs[kubeflowv1.XGBoostJobReplicaTypeWorker].Replicas)
}

// TestRayJobRetryIsNotFinal writes the status KubeRay v1.5.0 stores while it
// retries (controllers/ray/rayjob_controller.go,
// checkBackoffLimitAndUpdateStatusIfNeeded: jobStatus FAILED beside
// jobDeploymentStatus Retrying) through the API server, and checks that
// the release is still in progress until the last attempt fails.
func TestRayJobRetryIsNotFinal(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()
	rel, err := c.Apply(ctx, train.Ray("retry").Image("rayproject/ray:2.40.0").Entrypoint("python t.py").WorkerGroup("w", 1).Retry(retry.Policy{Limit: 2}))
	require.NoError(t, err)
	setStatus := func(st rayv1.RayJobStatus) {
		t.Helper()
		job := &rayv1.RayJob{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "retry"}, job))
		job.Status = st
		require.NoError(t, env.Client.Status().Update(ctx, job))
	}
	setStatus(rayv1.RayJobStatus{JobDeploymentStatus: rayv1.JobDeploymentStatusRetrying, JobStatus: rayv1.JobStatusFailed,
		Reason: rayv1.AppFailed, Message: "exit 1", Failed: ptr[int32](1)})
	st, err := rel.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase)
	last := st.Objects[len(st.Objects)-1]
	assert.Equal(t, "Retrying", last.Reason)
	assert.Equal(t, "retrying after failed attempt 1: exit 1", last.Message)

	setStatus(rayv1.RayJobStatus{JobDeploymentStatus: rayv1.JobDeploymentStatusFailed, JobStatus: rayv1.JobStatusFailed,
		Reason: rayv1.AppFailed, Message: "exit 1", Failed: ptr[int32](3)})
	st, err = rel.Wait(ctx, cube.Succeeded, cube.Timeout(30*time.Second))
	require.ErrorIs(t, err, cube.ErrFailed)
	assert.Equal(t, cube.Failed, st.Phase)
}

// TestVolcanoJobsApplyWithTheirRestartPolicy applies jobs with each restart
// policy to the API server's Volcano Job schema.
func TestVolcanoJobsApplyWithTheirRestartPolicy(t *testing.T) {
	c, env, ns := newClient(t)
	for _, p := range []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever, corev1.RestartPolicyAlways} {
		name := "vc-" + map[corev1.RestartPolicy]string{"OnFailure": "onfailure", "Never": "never", "Always": "always"}[p]
		_, err := c.Apply(t.Context(), train.Volcano(name).Image(img).RestartPolicy(p).Task("worker", 2).Plugin(train.PluginHCCLRank))
		require.NoError(t, err)
		got := &vcbatch.Job{}
		require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, got))
		assert.Equal(t, p, got.Spec.Tasks[0].Template.Spec.RestartPolicy)
		assert.Contains(t, got.Spec.Plugins, train.PluginHCCLRank)
	}
}

// Objects computes its defaults (the image's entrypoint, the process count,
// the clean-pod policy…) into locals: a builder rendered many times is
// still equal, field by field, to a twin made the same way and never
// rendered. Every builder of every case, in every hardware setup.
func TestObjectsNeverChangeTheBuilder(t *testing.T) {
	for _, bc := range builderCases {
		for _, s := range setups {
			t.Run(bc.name+"/"+s.name, func(t *testing.T) {
				rendered, twin := bc.build(bc.name, s), bc.build(bc.name, s)
				require.True(t, reflect.DeepEqual(rendered, twin), "two builders made alike differ before rendering")
				for range 3 {
					_, err := rendered.Objects()
					require.NoError(t, err)
				}
				assert.True(t, reflect.DeepEqual(rendered, twin), "Objects changed the builder")
			})
		}
	}
	// A builder whose rendering fails is not changed either.
	bad, twin := train.DeepSpeed("ds").Image(img).Workers(-1), train.DeepSpeed("ds").Image(img).Workers(-1)
	_, err := bad.Objects()
	require.Error(t, err)
	assert.True(t, reflect.DeepEqual(bad, twin), "a failed Objects changed the builder")
}

// DeepSpeed and ColossalAI render a PyTorchJob: the problems of that job
// keep their own field paths beside those of the outer settings, one error
// each, not one string.
func TestNestedPyTorchJobKeepsFieldPaths(t *testing.T) {
	ds := train.DeepSpeed("ds").Image(img).Workers(-1).Config(train.DeepSpeedConfig{MicroBatchPerGPU: 0}).
		ElasticRetry(retry.Policy{Limit: 1})
	assert.Equal(t, []string{
		`deepspeedConfig.train_micro_batch_size_per_gpu: Invalid value: 0: must be at least 1`,
		`spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: -1: must not be negative`,
		`spec.elasticPolicy: Forbidden: rendezvous settings and ElasticRetry need Elastic(min, max)`,
	}, errorsOf(t, ds))
	cai := train.ColossalAI("cai").Image(img).Nodes(0).Plugin("fsdp")
	assert.Equal(t, []string{
		`script: Required value: a training script is required: call Script`,
		`plugin: Unsupported value: "fsdp": supported values: "torch_ddp", "low_level_zero", "gemini", "hybrid_parallel"`,
		`spec.pytorchReplicaSpecs[Worker].replicas: Invalid value: -1: Nodes(0) leaves no pod: Nodes counts the Master, so it is at least 1`,
	}, errorsOf(t, cai))
}

// Retry carries what each engine has a field for and refuses the rest by
// name: the training-operator, KubeRay, torchrun and Volcano count retries
// but none waits by a setting of its own or stops after a time.
func TestRetryMapsToEachEngine(t *testing.T) {
	every := retry.Policy{Limit: 2, Backoff: time.Second, Factor: 2, MaxBackoff: time.Minute, MaxDuration: time.Hour}
	refused := func(setting, engine string) []string {
		return []string{
			setting + `.backoff: Forbidden: ` + engine + ` has no wait between retries of its own: leave Backoff zero`,
			setting + `.factor: Forbidden: ` + engine + ` has no growing wait between retries: leave Factor zero`,
			setting + `.maxBackoff: Forbidden: ` + engine + ` has no cap on the wait between retries: leave MaxBackoff zero`,
			setting + `.maxDuration: Forbidden: ` + engine + ` has no time after which retries stop (ActiveDeadline bounds a whole run): leave MaxDuration zero`,
		}
	}
	assert.Equal(t, refused("retry", "the training-operator"), errorsOf(t, pytorch().Retry(every)))
	assert.Equal(t, refused("retry", "KubeRay"), errorsOf(t, train.Ray("ray").Image(img).Entrypoint("e").WorkerGroup("w", 1).Retry(every)))
	assert.Equal(t, refused("elasticRetry", "torchrun"), errorsOf(t, pytorch().Elastic(1, 2).ElasticRetry(every)))
	assert.Equal(t, refused("retry", "Volcano"), errorsOf(t, train.Volcano("vc").Image(img).Task("w", 1).Retry(every)))
	assert.Equal(t, refused("spec.tasks[0].retry", "Volcano"),
		errorsOf(t, train.Volcano("vc").Image(img).AddTask(train.VolcanoTask{Name: "w", Replicas: 1, Retry: &every})))

	// A bad value is reported where the engine keeps the count, the others
	// under the setting.
	assert.Equal(t, []string{
		`spec.runPolicy.backoffLimit: Invalid value: -1: must not be negative`,
		`retry.backoff: Invalid value: "-1s": must not be negative`,
	}, errorsOf(t, pytorch().Retry(retry.Policy{Limit: -1, Backoff: -time.Second})))

	// A constant factor of 1 is no growing wait.
	job, err := pytorch().Retry(retry.Policy{Limit: 3, Factor: 1}).Build()
	require.NoError(t, err)
	assert.Equal(t, int32(3), *job.Spec.RunPolicy.BackoffLimit)
	elastic, err := pytorch().Elastic(1, 2).ElasticRetry(retry.Policy{Limit: 4}).Retry(retry.Policy{Limit: 1}).Build()
	require.NoError(t, err)
	assert.Equal(t, int32(4), *elastic.Spec.ElasticPolicy.MaxRestarts, "torchrun's restarts in place")
	assert.Equal(t, int32(1), *elastic.Spec.RunPolicy.BackoffLimit, "the pods' restarts after torchrun gave up")
	ray, err := train.Ray("ray").Image(img).Entrypoint("e").WorkerGroup("w", 1).Retry(retry.Policy{Limit: 2}).Build()
	require.NoError(t, err)
	assert.Equal(t, int32(2), *ray.Spec.BackoffLimit)
	never, err := train.Volcano("vc").Image(img).AddTask(train.VolcanoTask{Name: "w", Replicas: 1, Retry: &retry.Policy{}}).Retry(retry.Policy{}).Build()
	require.NoError(t, err)
	assert.Equal(t, int32(1), never.Spec.MaxRetry, "Volcano counts the first run: 1 runs once")
	assert.Equal(t, int32(1), never.Spec.Tasks[0].MaxRetry, "a task fails at its first restart")
	unset, err := train.Volcano("vc").Image(img).Task("w", 1).Build()
	require.NoError(t, err)
	assert.Zero(t, unset.Spec.MaxRetry, "unset leaves Volcano's default")
}

// The Ray head takes the workers' accelerators or none.
func TestRayHeadAccelerators(t *testing.T) {
	ray := func() *train.RayJob {
		return train.Ray("ray").Image(img).Entrypoint("e").WorkerGroup("w", 1).On(hardware.H100).Accelerators(4)
	}
	for n, want := range map[int]string{0: "0", 4: "4"} {
		job, err := ray().HeadAccelerators(n).Build()
		require.NoError(t, err)
		q := job.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
		assert.Equal(t, want, qstr(q))
	}
	assert.Equal(t, []string{
		`spec.rayClusterSpec.headGroupSpec.template.spec.containers[0].resources: Invalid value: 2: the head takes the workers' accelerators (4) or none`,
	}, errorsOf(t, ray().HeadAccelerators(2)))
}

// setup is one hardware column of the matrix every builder is rendered
// and applied in.
type setup struct {
	name string
	// on puts a builder's pod settings on the hardware.
	on func(b podSettings)
}

// podSettings is the hardware part of pod.Builder, whatever builder embeds it.
type podSettings interface {
	on(p hardware.Profile, gpus int, f hardware.Fabric, cpu, memory string)
}

// settingsOf adapts a pod.Builder of any builder type to podSettings.
type settingsOf[T any] struct{ b *pod.Builder[T] }

func (s settingsOf[T]) on(p hardware.Profile, gpus int, f hardware.Fabric, cpu, memory string) {
	s.b.On(p)
	if gpus > 0 {
		s.b.Accelerators(gpus)
	}
	if !f.IsZero() {
		s.b.Fabric(f)
	}
	s.b.CPU(cpu)
	s.b.Memory(memory)
}

var setups = []setup{
	{"h100-ib", func(b podSettings) { b.on(hardware.H100, 8, hardware.InfiniBand(), "96", "1600Gi") }},
	{"ascend910b3", func(b podSettings) { b.on(hardware.Ascend910B3, 8, hardware.RoCE(), "96", "1400Gi") }},
	{"cpu", func(b podSettings) { b.on(hardware.CPU, 0, hardware.Fabric{}, "8", "32Gi") }},
}

// builderCase builds one framework's job, for a setup, named name.
type builderCase struct {
	name  string
	build func(name string, s setup) cube.Workload
}

const trainImage = "registry.example.com/ml/train:1.0"

var builderCases = []builderCase{
	{"pytorch", func(name string, s setup) cube.Workload {
		j := train.PyTorch(name).Image(trainImage).
			Torchrun("train.py", "--epochs", "3").
			Workers(3).
			PVC("datasets", "/data").
			EnvFromSecret("HF_TOKEN", pod.SecretKeyRef{Name: "hf", Key: "token"}).
			CleanPodPolicy(kubeflowv1.CleanPodPolicyRunning).
			TTLAfterFinished(time.Hour).
			Retry(retry.Policy{Limit: 3}).
			Gang().Queue("team-a").PriorityClass("training")
		s.on(settingsOf[train.PyTorchJob]{&j.Builder})
		return j
	}},
	// One pod with every accelerator of a node: the most common fine-tune.
	{"pytorch-single", func(name string, s setup) cube.Workload {
		j := train.PyTorch(name).Image(trainImage).
			Torchrun("sft.py", "--model", "/models/qwen").
			Nodes(1).
			SharedMemory("16Gi")
		s.on(settingsOf[train.PyTorchJob]{&j.Builder})
		return j
	}},
	{"tensorflow", func(name string, s setup) cube.Workload {
		j := train.TensorFlow(name).Image(trainImage).
			Command("python", "/app/train.py").
			Chief().ParameterServers(2).Workers(4).Evaluator().
			ActiveDeadline(48 * time.Hour)
		s.on(settingsOf[train.TFJob]{&j.Builder})
		return j
	}},
	{"mpi", func(name string, s setup) cube.Workload {
		j := train.MPI(name).Image(trainImage).
			Command("python", "/app/allreduce.py").
			Workers(2).
			RoleResources(kubeflowv1.MPIJobReplicaTypeLauncher, "1", "2Gi").
			Gang()
		s.on(settingsOf[train.MPIJob]{&j.Builder})
		return j
	}},
	{"horovod", func(name string, s setup) cube.Workload {
		j := train.Horovod(name).Image(trainImage).
			Command("python", "/app/horovod_mnist.py").
			Workers(4).
			SharedMemory("16Gi")
		s.on(settingsOf[train.MPIJob]{&j.Builder})
		return j
	}},
	{"deepspeed", func(name string, s setup) cube.Workload {
		j := train.DeepSpeed(name).Image(trainImage).
			Torchrun("pretrain.py", "--model", "/models/llama").
			Workers(3).
			Config(train.DeepSpeedConfig{
				ZeROStage:            3,
				OffloadOptimizer:     train.Offload{Device: train.OffloadCPU, PinMemory: true},
				Precision:            train.BF16,
				MicroBatchPerGPU:     2,
				GradientAccumulation: 8,
				GradientClipping:     1,
			})
		s.on(settingsOf[train.DeepSpeedJob]{&j.Builder})
		return j
	}},
	{"colossalai", func(name string, s setup) cube.Workload {
		j := train.ColossalAI(name).Image(trainImage).
			Script("train.py", "--config", "/etc/train/config.yaml").
			Workers(3).
			Plugin(train.PluginHybridParallel).TensorParallel(2).PipelineParallel(2).ZeROStage(1)
		s.on(settingsOf[train.ColossalAIJob]{&j.Builder})
		return j
	}},
	{"paddle", func(name string, s setup) cube.Workload {
		j := train.Paddle(name).Image(trainImage).
			Launch("train.py").
			ParameterServers(2).Workers(2)
		s.on(settingsOf[train.PaddleJob]{&j.Builder})
		return j
	}},
	{"xgboost", func(name string, s setup) cube.Workload {
		j := train.XGBoost(name).Image(trainImage).
			Command("python", "/app/xgb.py", "--n_estimators", "100").
			Workers(2)
		s.on(settingsOf[train.XGBoostJob]{&j.Builder})
		return j
	}},
	{"mxnet", func(name string, s setup) cube.Workload {
		j := train.MXNet(name).Image(trainImage).
			Command("python", "/app/mx_train.py").
			Servers(2).Workers(2)
		s.on(settingsOf[train.MXNetJob]{&j.Builder})
		return j
	}},
	{"ray", func(name string, s setup) cube.Workload {
		j := train.Ray(name).Image("rayproject/ray:2.40.0").
			Entrypoint("python /app/train.py").
			RuntimeEnv(train.RuntimeEnv{Pip: []string{"torch==2.4.0"}, EnvVars: map[string]string{"EPOCHS": "3"}}).
			WorkerGroup("workers", 2).
			AutoscaledWorkerGroup("burst", 1, 1, 4).
			TTLAfterFinished(10 * time.Minute).
			RayVersion("2.40.0").
			Gang().Queue("team-a")
		s.on(settingsOf[train.RayJob]{&j.Builder})
		return j
	}},
	{"volcano", func(name string, s setup) cube.Workload {
		j := train.Volcano(name).Image(trainImage).
			Command("sh", "-c", "python /app/train.py --hosts $VC_WORKER_HOSTS").
			Task("worker", 4).
			Plugin(train.PluginSSH).
			Policy(vcbus.PodEvictedEvent, vcbus.RestartJobAction).
			Policy(vcbus.PodFailedEvent, vcbus.AbortJobAction).
			RestartPolicy(corev1.RestartPolicyNever).
			Retry(retry.Policy{Limit: 1}). // maxRetry 2: Volcano counts the first run

			Queue("team-a")
		s.on(settingsOf[train.VolcanoJob]{&j.Builder})
		return j
	}},
}

// Kinds of the primary objects, by case.
var primaryKind = map[string]string{
	"pytorch": "PyTorchJob", "pytorch-single": "PyTorchJob", "tensorflow": "TFJob", "mpi": "MPIJob", "horovod": "MPIJob",
	"deepspeed": "PyTorchJob", "colossalai": "PyTorchJob", "paddle": "PaddleJob",
	"xgboost": "XGBoostJob", "mxnet": "MXJob", "ray": "RayJob", "volcano": "Job",
}

// trainerCases are the TrainJobs and ClusterTrainingRuntimes rendered on
// every hardware setup (golden files, and applied against the Trainer's
// CRDs by TestTrainerAppliedStrictly).
var trainerCases = []builderCase{
	{"trainjob", func(name string, s setup) cube.Workload {
		j := train.Trainer(name).Image(trainImage).
			Torchrun("train.py", "--epochs", "3").
			Nodes(4).
			PVC("datasets", "/data").
			EnvFromSecret("HF_TOKEN", pod.SecretKeyRef{Name: "hf", Key: "token"}).
			ServiceAccount("trainer").
			ActiveDeadline(2 * time.Hour).
			Queue("team-a")
		s.on(settingsOf[train.TrainJob]{&j.Builder})
		return j
	}},
	{"trainjob-deepspeed", func(name string, s setup) cube.Workload {
		j := train.Trainer(name).Runtime("deepspeed-distributed", train.FrameworkDeepSpeed).
			Command("mpirun", "python3", "train.py").
			Workers(1)
		s.on(settingsOf[train.TrainJob]{&j.Builder})
		return j
	}},
	{"runtime-torch", func(name string, s setup) cube.Workload {
		r := train.ClusterRuntime(name, train.FrameworkTorch).Image(trainImage).
			SharedMemory("16Gi").
			Gang().
			Retry(retry.Policy{Limit: 2}).
			TTLAfterFinished(time.Hour)
		s.on(settingsOf[train.ClusterTrainingRuntime]{&r.Builder})
		return r
	}},
	{"runtime-deepspeed", func(name string, s setup) cube.Workload {
		r := train.ClusterRuntime(name, train.FrameworkDeepSpeed).Image("ghcr.io/kubeflow/trainer/deepspeed-runtime")
		s.on(settingsOf[train.ClusterTrainingRuntime]{&r.Builder})
		return r
	}},
}

func TestTrainerGolden(t *testing.T) {
	for _, bc := range trainerCases {
		for _, s := range setups {
			name := bc.name + "-" + s.name
			t.Run(name, func(t *testing.T) {
				golden.AssertRender(t, name+".golden", bc.build(bc.name, s))
			})
		}
	}
}

// The same settings give a PyTorchJob and a TrainJob the same pods: the
// node count (Master included), the processes per node, the image,
// command, env and resources.
func TestTrainJobTakesPyTorchJobSettings(t *testing.T) {
	for _, n := range []func(*train.Torch[train.PyTorchJob], *train.Torch[train.TrainJob]){
		func(p *train.Torch[train.PyTorchJob], j *train.Torch[train.TrainJob]) { p.Nodes(3); j.Nodes(3) },
		func(p *train.Torch[train.PyTorchJob], j *train.Torch[train.TrainJob]) { p.Workers(2); j.Workers(2) },
		func(p *train.Torch[train.PyTorchJob], j *train.Torch[train.TrainJob]) {},
	} {
		p := train.PyTorch("x").Image(trainImage).Torchrun("a.py").Env("A", "1").On(hardware.H100).Accelerators(4).NprocPerNode(2)
		j := train.Trainer("x").Image(trainImage).Torchrun("a.py").Env("A", "1").On(hardware.H100).Accelerators(4).NprocPerNode(2)
		n(&p.Torch, &j.Torch)
		pj, err := p.Build()
		require.NoError(t, err)
		tj, err := j.Build()
		require.NoError(t, err)
		pods := int32(0)
		for _, r := range pj.Spec.PyTorchReplicaSpecs {
			pods += *r.Replicas
		}
		assert.Equal(t, pods, *tj.Spec.Trainer.NumNodes)
		assert.Equal(t, *pj.Spec.NprocPerNode, "2")
		assert.Equal(t, int32(2), *tj.Spec.Trainer.NumProcPerNode)
		master := pj.Spec.PyTorchReplicaSpecs["Master"].Template.Spec.Containers[0]
		assert.Equal(t, master.Image, *tj.Spec.Trainer.Image)
		assert.Equal(t, master.Command, tj.Spec.Trainer.Command)
		assert.Equal(t, master.Resources, *tj.Spec.Trainer.ResourcesPerNode)
		assert.Contains(t, tj.Spec.Trainer.Env, corev1.EnvVar{Name: "A", Value: "1"})
	}
}

// What a TrainJob cannot carry is refused by name, all at once.
func TestTrainJobRefuses(t *testing.T) {
	_, err := train.Trainer("x").Scheduler("foo").PriorityClass("p").Port("http", 8080).
		Elastic(1, 2).Env("PET_NNODES", "3").Build()
	require.Error(t, err)
	for _, want := range []string{
		"spec.trainer.schedulerName", "spec.trainer.priorityClassName", "spec.trainer.ports",
		"elastic: Forbidden", "spec.trainer.env[0].name", "PET_NNODES",
	} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = train.Trainer("x").Runtime("", train.Framework("caffe")).Build()
	require.Error(t, err)
	for _, want := range []string{"spec.runtimeRef.framework", "spec.runtimeRef.name"} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = train.Trainer("x").Runtime("deepspeed-distributed", train.FrameworkDeepSpeed).Env("OMPI_MCA_orte_default_hostfile", "/x").Build()
	assert.ErrorContains(t, err, "OMPI_MCA_orte_default_hostfile")
	_, err = train.Trainer("x").Runtime("jax-distributed", train.FrameworkJAX).NprocPerNode(2).Build()
	assert.ErrorContains(t, err, "spec.trainer.numProcPerNode")
	_, err = train.Trainer("x").Nodes(0).Build()
	assert.ErrorContains(t, err, "spec.trainer.numNodes")
	_, err = train.Trainer("x").ActiveDeadline(-time.Second).Build()
	assert.ErrorContains(t, err, "spec.activeDeadlineSeconds")
	_, err = train.Trainer("Bad_Name").Build()
	assert.ErrorContains(t, err, "metadata.name")

	var zero train.TrainJob
	_, err = zero.Image("x").Build()
	assert.ErrorContains(t, err, "train.Trainer(name)")
	var nilJob *train.TrainJob
	_, err = nilJob.Runtime("r", train.FrameworkTorch).Build()
	assert.ErrorContains(t, err, "train.Trainer(name)")
	_, err = nilJob.Objects()
	assert.ErrorContains(t, err, "train.Trainer(name)")

	_, err = train.ClusterRuntime("r", train.FrameworkTorchTune).Image("x").Namespace("ns").NprocPerNode(2).Retry(retry.Policy{Limit: 1, Backoff: time.Second}).Build()
	require.Error(t, err)
	for _, want := range []string{"metadata.labels[trainer.kubeflow.org/framework]", "metadata.namespace", "nprocPerNode", "retry.backoff"} {
		assert.Contains(t, err.Error(), want)
	}
	var nilRuntime *train.ClusterTrainingRuntime
	_, err = nilRuntime.Gang().Build()
	assert.ErrorContains(t, err, "train.ClusterRuntime(name)")
	var zeroRuntime train.ClusterTrainingRuntime
	_, err = zeroRuntime.Gang().Nodes(2).Build()
	assert.ErrorContains(t, err, "train.ClusterRuntime(name)")
	_, err = train.ClusterRuntime("r", train.FrameworkTorch).Build()
	assert.ErrorContains(t, err, "image")
}

// The hardware lands where the Trainer v2.3.0 reads it: accelerators,
// RDMA devices and CPU in resourcesPerNode, the fabric's and the
// profile's env in spec.trainer.env, the rest in the runtime patch of the
// replicated jobs that train (both for an MPI runtime).
func TestTrainJobCarriesTheHardware(t *testing.T) {
	j, err := train.Trainer("big").Image(trainImage).Nodes(2).
		On(hardware.H100).Accelerators(8).Fabric(hardware.InfiniBand()).PVC("data", "/data").Build()
	require.NoError(t, err)
	res := j.Spec.Trainer.ResourcesPerNode
	require.NotNil(t, res)
	gpus := res.Limits[hardware.ResourceNVIDIAGPU]
	want := resource.MustParse("8")
	assert.Equal(t, 0, want.Cmp(gpus), "limit %s", gpus.String())
	require.Len(t, j.Spec.RuntimePatches, 1)
	p := j.Spec.RuntimePatches[0]
	assert.Equal(t, train.RuntimePatchManager, p.Manager)
	jobs := p.TrainingRuntimeSpec.Template.Spec.ReplicatedJobs
	require.Len(t, jobs, 1)
	assert.Equal(t, trainer.Node, jobs[0].Name)
	ps := jobs[0].Template.Spec.Template.Spec
	require.NotNil(t, ps)
	assert.NotEmpty(t, ps.Volumes)
	require.Len(t, ps.Containers, 1)
	assert.Equal(t, trainer.Node, ps.Containers[0].Name)
	assert.Empty(t, ps.Containers[0].Env, "the webhook refuses env on the node container's patch")
	assert.NotEmpty(t, ps.Containers[0].VolumeMounts)

	ds, err := train.Trainer("ds").Runtime("deepspeed-distributed", train.FrameworkDeepSpeed).On(hardware.H100).Accelerators(8).Build()
	require.NoError(t, err)
	var names []string
	for _, rj := range ds.Spec.RuntimePatches[0].TrainingRuntimeSpec.Template.Spec.ReplicatedJobs {
		names = append(names, rj.Name)
	}
	assert.Equal(t, []string{trainer.Node, trainer.Launcher}, names)
	assert.Equal(t, int32(8), *ds.Spec.Trainer.NumProcPerNode)
}

// upstreamDir is where the module cache holds module@version.
func upstreamDir(t *testing.T, moduleAtVersion string) string {
	t.Helper()
	dir, err := contract.ModuleDir(moduleAtVersion)
	require.NoError(t, err)
	return dir
}

// Every runtime Trainer v2.3.0 ships decodes strictly into the mirrored
// types (no field of theirs is unknown here), and a ClusterRuntime of the
// same framework has the same shape: its replicated jobs, which of them
// the trainer step overrides, the ML policy and the MPI launcher's
// settings.
func TestClusterRuntimeMatchesUpstream(t *testing.T) {
	dir := upstreamDir(t, "github.com/kubeflow/trainer/v2@v2.3.0")
	files, err := filepath.Glob(filepath.Join(dir, "manifests", "base", "runtimes", "*.yaml"))
	require.NoError(t, err)
	more, err := filepath.Glob(filepath.Join(dir, "manifests", "base", "runtimes", "torchtune", "*", "*.yaml"))
	require.NoError(t, err)
	files = append(files, more...)
	require.GreaterOrEqual(t, len(files), 6)
	shape := func(r *trainer.ClusterTrainingRuntime) []string {
		var out []string
		for _, rj := range r.Spec.Template.Spec.ReplicatedJobs {
			out = append(out, rj.Name+" ancestor="+rj.Template.Labels[trainer.LabelTrainJobAncestor])
		}
		return out
	}
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			var up trainer.ClusterTrainingRuntime
			require.NoError(t, yaml.UnmarshalStrict(data, &up))
			f := train.Framework(up.Labels[trainer.LabelFramework])
			if f == train.FrameworkTorchTune {
				return // one per model; cube refuses to build them
			}
			assert.Equal(t, train.UpstreamRuntime(f), up.Name)
			ours, err := train.ClusterRuntime(up.Name, f).Image("img").Build()
			require.NoError(t, err)
			assert.Equal(t, shape(&up), shape(ours))
			assert.Equal(t, up.Spec.MLPolicy.Torch != nil, ours.Spec.MLPolicy.Torch != nil)
			assert.Equal(t, up.Spec.MLPolicy.JAX != nil, ours.Spec.MLPolicy.JAX != nil)
			assert.Equal(t, up.Spec.MLPolicy.XGBoost != nil, ours.Spec.MLPolicy.XGBoost != nil)
			assert.Equal(t, up.Spec.MLPolicy.MPI, ours.Spec.MLPolicy.MPI)
			assert.Equal(t, up.Spec.Template.Spec.SuccessPolicy, ours.Spec.Template.Spec.SuccessPolicy)
			assert.Equal(t, up.Spec.Template.Spec.Network, ours.Spec.Template.Spec.Network)
			for i, rj := range up.Spec.Template.Spec.ReplicatedJobs {
				assert.Equal(t, rj.DependsOn, ours.Spec.Template.Spec.ReplicatedJobs[i].DependsOn)
				uc, oc := rj.Template.Spec.Template.Spec.Containers[0], ours.Spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec.Containers[0]
				assert.Equal(t, uc.Name, oc.Name)
				if rj.Name == trainer.Node && up.Spec.MLPolicy.MPI != nil {
					assert.Equal(t, slices.Concat(uc.Command, uc.Args), slices.Concat(oc.Command, oc.Args), "the node's sshd")
					assert.Equal(t, uc.ReadinessProbe, oc.ReadinessProbe)
				}
			}
		})
	}
}

func TestTrainJobStatus(t *testing.T) {
	cond := func(typ, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: "m"}
	}
	cases := []struct {
		name   string
		status trainer.TrainJobStatus
		phase  cube.Phase
		reason string
	}{
		{"new", trainer.TrainJobStatus{}, cube.InProgress, "Pending"},
		{"created", trainer.TrainJobStatus{JobsStatus: []trainer.JobStatus{{Name: "node", Active: ptr[int32](0)}}}, cube.InProgress, "Created"},
		{"running", trainer.TrainJobStatus{JobsStatus: []trainer.JobStatus{{Name: "node", Active: ptr[int32](1), Ready: ptr[int32](1)}}}, cube.InProgress, "Running"},
		{"suspended", trainer.TrainJobStatus{Conditions: []metav1.Condition{cond("Suspended", "Suspended")}}, cube.InProgress, "Suspended"},
		{"resumed", trainer.TrainJobStatus{Conditions: []metav1.Condition{{Type: "Suspended", Status: metav1.ConditionFalse, Reason: "Resumed"}}}, cube.InProgress, "Pending"},
		{"complete", trainer.TrainJobStatus{Conditions: []metav1.Condition{cond("Suspended", "Suspended"), cond("Complete", "AllJobsCompleted")}}, cube.Succeeded, "AllJobsCompleted"},
		{"failed", trainer.TrainJobStatus{Conditions: []metav1.Condition{cond("Failed", "DeadlineExceeded")}}, cube.Failed, "DeadlineExceeded"},
		{"unknown condition", trainer.TrainJobStatus{Conditions: []metav1.Condition{cond("Exploded", "")}}, cube.Unknown, "Exploded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := train.TrainJobStatus(&trainer.TrainJob{Status: c.status})
			assert.Equal(t, c.phase, st.Phase)
			assert.Equal(t, c.reason, st.Reason)
		})
	}
}

func TestJobSetStatus(t *testing.T) {
	cond := func(typ jobsetv1alpha2.JobSetConditionType, reason string) metav1.Condition {
		return metav1.Condition{Type: string(typ), Status: metav1.ConditionTrue, Reason: reason}
	}
	cases := []struct {
		name   string
		status jobsetv1alpha2.JobSetStatus
		phase  cube.Phase
		reason string
	}{
		{"new", jobsetv1alpha2.JobSetStatus{}, cube.InProgress, "Pending"},
		{"running", jobsetv1alpha2.JobSetStatus{ReplicatedJobsStatus: []jobsetv1alpha2.ReplicatedJobStatus{{Name: "node", Active: 1}}}, cube.InProgress, "Running"},
		{"completed", jobsetv1alpha2.JobSetStatus{Conditions: []metav1.Condition{cond(jobsetv1alpha2.JobSetCompleted, "AllJobsCompleted")}, TerminalState: "Completed"}, cube.Succeeded, "AllJobsCompleted"},
		{"failed", jobsetv1alpha2.JobSetStatus{Conditions: []metav1.Condition{cond(jobsetv1alpha2.JobSetFailed, "FailedJobs")}}, cube.Failed, "FailedJobs"},
		{"terminal only", jobsetv1alpha2.JobSetStatus{TerminalState: "Failed"}, cube.Failed, "Failed"},
		{"restarting", jobsetv1alpha2.JobSetStatus{Conditions: []metav1.Condition{cond(jobsetv1alpha2.JobSetRestarting, "r")}}, cube.InProgress, "RestartingJobSet"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := train.JobSetStatus(&jobsetv1alpha2.JobSet{Status: c.status})
			assert.Equal(t, c.phase, st.Phase)
			assert.Equal(t, c.reason, st.Reason)
		})
	}
}

// Objects never changes the builder: rendering twice gives the same YAML.
func TestTrainJobRendersTwiceAlike(t *testing.T) {
	j := train.Trainer("x").Image(trainImage).On(hardware.Ascend910B3).Accelerators(8).Fabric(hardware.RoCE())
	a, err := j.Objects()
	require.NoError(t, err)
	b, err := j.Objects()
	require.NoError(t, err)
	ya, _ := yaml.Marshal(a)
	yb, _ := yaml.Marshal(b)
	assert.True(t, bytes.Equal(ya, yb))
}

// TestGolden renders every builder on every hardware setup and compares
// the YAML with testdata/<builder>-<setup>.golden (go test -update
// rewrites them).
func TestGolden(t *testing.T) {
	for _, bc := range builderCases {
		for _, s := range setups {
			name := bc.name + "-" + s.name
			t.Run(name, func(t *testing.T) {
				golden.AssertRender(t, name+".golden", bc.build(bc.name, s))
			})
		}
	}
}

func benchJob(name string) *train.PyTorchJob {
	return train.PyTorch(name).
		Image("registry.example.com/llm/train:2.4").
		Torchrun("sft.py", "--model", "/models/llama").
		Workers(3).
		On(hardware.H100).Accelerators(8).
		Fabric(hardware.InfiniBand()).
		PVC("datasets", "/data").
		EnvFromSecret("HF_TOKEN", pod.SecretKeyRef{Name: "hf", Key: "token"}).
		Gang().Queue("team-a")
}

// BenchmarkRender1000PyTorchJobs builds, validates and renders to YAML a
// thousand 4-replica PyTorchJobs on H100 with InfiniBand per iteration:
// with cube.Render (cube) and, in the same run, with what Render did before
// it wrote YAML itself (baseline: each job to unstructured, then yaml.v2)
// and with sigs.k8s.io/yaml. cpu-µs/job counts CPU time, all threads: what
// a job costs on one core of a shared machine; cube/... are the ratios of
// it.
func BenchmarkRender1000PyTorchJobs(b *testing.B) {
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("job-%d", i)
	}
	cpu := map[string]time.Duration{}
	for _, run := range []struct {
		name   string
		render func(*train.PyTorchJob) error
	}{
		{"cube", func(j *train.PyTorchJob) error { return cube.Render(io.Discard, j) }},
		{"baseline", func(j *train.PyTorchJob) error {
			objs, err := j.Objects()
			if err != nil {
				return err
			}
			u, err := cube.ToUnstructured(objs[0])
			if err != nil {
				return err
			}
			_, err = yamlv2.Marshal(u.Object)
			return err
		}},
		{"sigs.k8s.io-yaml", func(j *train.PyTorchJob) error {
			objs, err := j.Objects()
			if err != nil {
				return err
			}
			_, err = sigsyaml.Marshal(objs[0])
			return err
		}},
	} {
		b.Run(run.name, func(b *testing.B) {
			b.ReportAllocs()
			meter := cputime.Start()
			for b.Loop() {
				for _, name := range names {
					if err := run.render(benchJob(name)); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "µs/job")
			if used, ok := meter.Elapsed(); ok {
				cpu[run.name] = used / time.Duration(b.N)
				b.ReportMetric(float64(used.Microseconds())/float64(b.N)/1000, "cpu-µs/job")
			}
			if ours := cpu["cube"]; ours > 0 && run.name != "cube" {
				b.ReportMetric(float64(ours)/float64(cpu[run.name]), "cube/"+run.name)
			}
		})
	}
}

// BenchmarkBuild1000PyTorchJobs is the builders' share of the above:
// validation and the typed objects, without YAML (cube), beside, in the
// same run, the floor of writing the same objects by hand (baseline: a copy
// of the rendered job renamed and given the operator's defaults, with no
// validation at all). cube/baseline is what the builder's checks and
// hardware placement cost over that floor.
func BenchmarkBuild1000PyTorchJobs(b *testing.B) {
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("job-%d", i)
	}
	ref, err := benchJob("ref").Build()
	if err != nil {
		b.Fatal(err)
	}
	per := map[string]time.Duration{}
	for _, run := range []struct {
		name  string
		build func(name string) error
	}{
		{"cube", func(name string) error { _, err := benchJob(name).Objects(); return err }},
		{"baseline", func(name string) error {
			job := ref.DeepCopy()
			job.Name = name
			kubeflowv1.SetObjectDefaults_PyTorchJob(job)
			return nil
		}},
	} {
		b.Run(run.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, name := range names {
					if err := run.build(name); err != nil {
						b.Fatal(err)
					}
				}
			}
			per[run.name] = b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/1000, "µs/job")
			if ours := per["cube"]; ours > 0 && run.name != "cube" && per[run.name] > 0 {
				b.ReportMetric(float64(ours)/float64(per[run.name]), "cube/"+run.name)
			}
		})
	}
}

// BenchmarkApply200PyTorchJobs creates 200 PyTorchJobs on the test API
// server with cube.Client.Apply (render, validate, server-side apply with
// strict validation, release record) and the same 200 jobs, rendered once,
// with controller-runtime's server-side apply alone, in the same run, and
// reports both times and their ratio; and two floors, measured the same
// way: the floor of any apply that records a release before writing it,
// the same SSA preceded by the create of one small ConfigMap each
// (record-first-floor/ssa), and the floor of cube's design, which also
// reads the namespace for its Pod Security check at the same time as it
// writes the record (record-and-check-floor/ssa). cube/record-and-check
// is then what cube's own code adds.
func BenchmarkApply200PyTorchJobs(b *testing.B) {
	env := testenv.Get(b)
	ns := env.Namespace(b)
	// Delete the jobs before the namespace cleanup, which has a short
	// deadline for everything the namespace holds.
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for _, obj := range []client.Object{&kubeflowv1.PyTorchJob{}, &corev1.ConfigMap{}} {
			if err := env.Client.DeleteAllOf(ctx, obj, client.InNamespace(ns)); err != nil {
				b.Errorf("delete %T: %v", obj, err)
			}
		}
	})
	c := cube.NewFromClient(env.Client, cube.Namespace(ns))
	ctx := b.Context()
	var cubeTime, ssaTime, floorTime, checkFloorTime time.Duration
	round := 0
	for b.Loop() {
		round++
		builders := make([]*train.PyTorchJob, 200)
		rendered := make([]client.Object, 200)
		floorJobs := make([]client.Object, 200)
		checkJobs := make([]client.Object, 200)
		for i := range builders {
			builders[i] = benchJob(fmt.Sprintf("cube-%d-%d", round, i))
			objs, err := benchJob(fmt.Sprintf("ssa-%d-%d", round, i)).Namespace(ns).Objects()
			if err != nil {
				b.Fatal(err)
			}
			rendered[i] = objs[0]
			if objs, err = benchJob(fmt.Sprintf("floor-%d-%d", round, i)).Namespace(ns).Objects(); err != nil {
				b.Fatal(err)
			}
			floorJobs[i] = objs[0]
			if objs, err = benchJob(fmt.Sprintf("check-%d-%d", round, i)).Namespace(ns).Objects(); err != nil {
				b.Fatal(err)
			}
			checkJobs[i] = objs[0]
		}
		timed := func(total *time.Duration, f func() error) {
			start := time.Now()
			if err := f(); err != nil {
				b.Fatal(err)
			}
			*total += time.Since(start)
		}
		ssaApply := func(obj client.Object) error {
			u, err := cube.ToUnstructured(obj)
			if err != nil {
				return err
			}
			return env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("bench"))
		}
		record := func(name string) error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Data: map[string]string{"objects": "kubeflow.org/v1 PyTorchJob " + ns + " " + name}}
			return env.Client.Create(ctx, cm, client.FieldOwner("bench"))
		}
		// Job by job, the four ways take turns going first, so that a
		// change in the machine's load (it is shared) falls on all four.
		for i := range builders {
			runs := []func(){
				func() { timed(&cubeTime, func() error { _, err := c.Apply(ctx, builders[i]); return err }) },
				func() { timed(&ssaTime, func() error { return ssaApply(rendered[i]) }) },
				// The floor of any apply that records a release before its
				// objects: one small write (a ConfigMap) before the object's.
				func() {
					timed(&floorTime, func() error {
						if err := record(floorJobs[i].GetName()); err != nil {
							return err
						}
						return ssaApply(floorJobs[i])
					})
				},
				// The floor of cube's design: the record's write and the
				// read of the namespace's Pod Security labels at once,
				// then the object's.
				func() {
					timed(&checkFloorTime, func() error {
						var nsObj corev1.Namespace
						read := make(chan error, 1)
						go func() { read <- env.Client.Get(ctx, client.ObjectKey{Name: ns}, &nsObj) }()
						werr := record(checkJobs[i].GetName())
						if err := errors.Join(werr, <-read); err != nil {
							return err
						}
						return ssaApply(checkJobs[i])
					})
				},
			}
			for k := range runs {
				runs[(k+i)%len(runs)]()
			}
		}
	}
	b.ReportMetric(float64(cubeTime.Milliseconds())/float64(round), "cube-ms/200")
	b.ReportMetric(float64(ssaTime.Milliseconds())/float64(round), "ssa-ms/200")
	b.ReportMetric(float64(cubeTime)/float64(ssaTime), "cube/ssa")
	b.ReportMetric(float64(floorTime)/float64(ssaTime), "record-first-floor/ssa")
	b.ReportMetric(float64(checkFloorTime)/float64(ssaTime), "record-and-check-floor/ssa")
	b.ReportMetric(float64(cubeTime)/float64(checkFloorTime), "cube/record-and-check")
}
