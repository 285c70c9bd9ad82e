package train_test

import (
	"errors"
	"fmt"
	"os"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	vcbus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/retry"
	"github.com/cubestudio/cube/train"
)

// printErrors prints the problems of a builder one per line.
func printErrors(err error) {
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			fmt.Println(e)
		}
		return
	}
	fmt.Println(err)
}

// A PyTorchJob on two CPU pods: a Master and one Worker running torchrun.
func ExamplePyTorch() {
	job := train.PyTorch("mnist").
		Namespace("team-a").
		Image("pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime").
		Torchrun("mnist.py", "--epochs", "3").
		On(hardware.CPU).CPU("4").Memory("8Gi").
		CleanPodPolicy(kubeflowv1.CleanPodPolicyRunning).
		TTLAfterFinished(time.Hour)
	if err := cube.Render(os.Stdout, job); err != nil {
		fmt.Println(err)
	}
	// Output:
	// apiVersion: kubeflow.org/v1
	// kind: PyTorchJob
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: cube
	//     app.kubernetes.io/name: mnist
	//     app.kubernetes.io/part-of: mnist
	//     cube.dev/kind: pytorchjob
	//     cube.dev/release: mnist
	//   name: mnist
	//   namespace: team-a
	// spec:
	//   nprocPerNode: "1"
	//   pytorchReplicaSpecs:
	//     Master:
	//       replicas: 1
	//       restartPolicy: OnFailure
	//       template:
	//         metadata:
	//           labels:
	//             app.kubernetes.io/component: master
	//             app.kubernetes.io/managed-by: cube
	//             app.kubernetes.io/name: mnist
	//             app.kubernetes.io/part-of: mnist
	//             cube.dev/kind: pytorchjob
	//             cube.dev/release: mnist
	//         spec:
	//           containers:
	//           - command:
	//             - torchrun
	//             - mnist.py
	//             - --epochs
	//             - "3"
	//             image: pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime
	//             name: pytorch
	//             ports:
	//             - containerPort: 23456
	//               name: pytorchjob-port
	//             resources:
	//               limits:
	//                 cpu: "4"
	//                 memory: 8Gi
	//               requests:
	//                 cpu: "4"
	//                 memory: 8Gi
	//           nodeSelector:
	//             kubernetes.io/arch: amd64
	//     Worker:
	//       replicas: 1
	//       restartPolicy: OnFailure
	//       template:
	//         metadata:
	//           labels:
	//             app.kubernetes.io/component: worker
	//             app.kubernetes.io/managed-by: cube
	//             app.kubernetes.io/name: mnist
	//             app.kubernetes.io/part-of: mnist
	//             cube.dev/kind: pytorchjob
	//             cube.dev/release: mnist
	//         spec:
	//           containers:
	//           - command:
	//             - torchrun
	//             - mnist.py
	//             - --epochs
	//             - "3"
	//             image: pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime
	//             name: pytorch
	//             ports:
	//             - containerPort: 23456
	//               name: pytorchjob-port
	//             resources:
	//               limits:
	//                 cpu: "4"
	//                 memory: 8Gi
	//               requests:
	//                 cpu: "4"
	//                 memory: 8Gi
	//           nodeSelector:
	//             kubernetes.io/arch: amd64
	//   runPolicy:
	//     cleanPodPolicy: Running
	//     ttlSecondsAfterFinished: 3600
}

// Every problem of a builder comes back at once, with field paths.
func ExampleTensorFlow() {
	_, err := train.TensorFlow("9-tf").
		Workers(0).
		ParameterServers(2).
		On(hardware.H100).Accelerators(16).
		Build()
	printErrors(err)
	// Output:
	// spec.tfReplicaSpecs[Worker].replicas: Invalid value: 0: at least 1 worker required
	// metadata.name: Invalid value: "9-tf": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')
	// spec.tfReplicaSpecs[PS].template.spec.containers[0].image: Required value: an image is required (the same in spec.tfReplicaSpecs[Worker])
	// accelerators: Invalid value: 16: more devices per pod than a H100-SXM-80GB node holds (8)
}

// The Launcher of an MPIJob wraps the program in mpirun over Workers ×
// SlotsPerWorker ranks (a slot per GPU by default).
// One pod with a node's eight GPUs: Nodes counts the Master, as Arena's
// --workers and the Kubeflow SDK's num_workers do.
func ExamplePyTorchJob_Nodes() {
	for _, nodes := range []int{1, 4} {
		job, err := train.PyTorch("sft").
			Image("registry.example.com/llm/train:2.4").
			Torchrun("sft.py").
			Nodes(nodes).
			On(hardware.H100).Accelerators(8).
			Build()
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, typ := range []kubeflowv1.ReplicaType{kubeflowv1.PyTorchJobReplicaTypeMaster, kubeflowv1.PyTorchJobReplicaTypeWorker} {
			if spec, ok := job.Spec.PyTorchReplicaSpecs[typ]; ok {
				fmt.Printf("Nodes(%d): %s × %d\n", nodes, typ, *spec.Replicas)
			}
		}
	}
	// Output:
	// Nodes(1): Master × 1
	// Nodes(4): Master × 1
	// Nodes(4): Worker × 3
}

func ExampleMPI() {
	job, err := train.MPI("allreduce").
		Image("mpioperator/mpi-pi:openmpi").
		Command("/home/mpiuser/pi").
		Workers(2).
		On(hardware.L4).Accelerators(2).
		Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	launcher := job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher].Template.Spec.Containers[0]
	fmt.Println(launcher.Command)
	fmt.Println("slots per worker:", *job.Spec.SlotsPerWorker)
	// Output:
	// [mpirun --allow-run-as-root -np 4 -bind-to none -map-by slot /home/mpiuser/pi]
	// slots per worker: 2
}

// The Launcher keeps the operator's account, which may exec into the
// workers; ServiceAccount reaches the Workers, which read the data.
func ExampleMPIJob_LauncherServiceAccount() {
	job, err := train.MPI("allreduce").
		Image("mpioperator/mpi-pi:openmpi").
		Command("/home/mpiuser/pi").
		ServiceAccount("s3-reader").
		Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, typ := range []kubeflowv1.ReplicaType{kubeflowv1.MPIJobReplicaTypeLauncher, kubeflowv1.MPIJobReplicaTypeWorker} {
		fmt.Printf("%s: %q\n", typ, job.Spec.MPIReplicaSpecs[typ].Template.Spec.ServiceAccountName)
	}
	fmt.Println("cleanPodPolicy:", *job.Spec.RunPolicy.CleanPodPolicy)
	// Output:
	// Launcher: ""
	// Worker: "s3-reader"
	// cleanPodPolicy: Running
}

// Horovod jobs need the program every rank runs.
func ExampleHorovod() {
	_, err := train.Horovod("hvd").Image("horovod/horovod:0.28.1").Workers(2).Build()
	printErrors(err)
	// Output:
	// spec.mpiReplicaSpecs[Launcher].template.spec.containers[0].command: Required value: the program mpirun runs is required: set Command
}

// DeepSpeed's configuration is typed and rendered into a ConfigMap that
// every replica mounts.
func ExampleDeepSpeed() {
	job := train.DeepSpeed("llama-pretrain").
		Image("registry.example.com/llm/deepspeed:0.15").
		Torchrun("pretrain.py").
		Workers(3).
		On(hardware.H100).Accelerators(8).
		Config(train.DeepSpeedConfig{
			ZeROStage:            3,
			OffloadOptimizer:     train.Offload{Device: train.OffloadCPU, PinMemory: true},
			Precision:            train.BF16,
			MicroBatchPerGPU:     2,
			GradientAccumulation: 16,
		})
	configOnly := cube.WorkloadFunc(func() ([]client.Object, error) {
		objs, err := job.Objects()
		if err != nil {
			return nil, err
		}
		return objs[:1], nil
	})
	if err := cube.Render(os.Stdout, configOnly); err != nil {
		fmt.Println(err)
	}
	// Output:
	// apiVersion: v1
	// data:
	//   ds_config.json: |-
	//     {
	//       "train_micro_batch_size_per_gpu": 2,
	//       "gradient_accumulation_steps": 16,
	//       "bf16": {
	//         "enabled": true
	//       },
	//       "zero_optimization": {
	//         "stage": 3,
	//         "offload_optimizer": {
	//           "device": "cpu",
	//           "pin_memory": true
	//         }
	//       }
	//     }
	// kind: ConfigMap
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: cube
	//     app.kubernetes.io/name: llama-pretrain
	//     app.kubernetes.io/part-of: llama-pretrain
	//     cube.dev/kind: deepspeedjob
	//     cube.dev/release: llama-pretrain
	//   name: llama-pretrain-deepspeed
}

// ColossalAI's plugin settings are checked against the job's size.
func ExampleColossalAI() {
	_, err := train.ColossalAI("gpt").
		Image("hpcaitech/colossalai:0.4.0").
		Script("train.py").
		Workers(2).
		On(hardware.A100_80G).Accelerators(2).
		Plugin(train.PluginHybridParallel).TensorParallel(4).PipelineParallel(2).ZeROStage(2).
		Build()
	printErrors(err)
	// Output:
	// plugin.zeroStage: Invalid value: 2: must be 0 or 1 with pipeline parallelism
	// plugin.tpSize: Invalid value: 4: tp_size × pp_size (8) must divide the 6 processes of the job
}

// A PaddleJob in parameter-server mode: the servers run without GPUs.
func ExamplePaddle() {
	job, err := train.Paddle("ctr").
		Image("paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6").
		Launch("train.py").
		ParameterServers(2).Workers(4).
		On(hardware.T4).Accelerators(1).
		Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, typ := range []kubeflowv1.ReplicaType{kubeflowv1.PaddleJobReplicaTypeMaster, kubeflowv1.PaddleJobReplicaTypeWorker} {
		spec := job.Spec.PaddleReplicaSpecs[typ]
		gpus := spec.Template.Spec.Containers[0].Resources.Limits[hardware.ResourceNVIDIAGPU]
		fmt.Printf("%s: %d replicas, %s GPU each, %v\n", typ, *spec.Replicas, gpus.String(), spec.Template.Spec.Containers[0].Command)
	}
	// Output:
	// Master: 2 replicas, 0 GPU each, [python -m paddle.distributed.launch train.py]
	// Worker: 4 replicas, 1 GPU each, [python -m paddle.distributed.launch train.py]
}

// XGBoost jobs need an image and at least one Worker.
func ExampleXGBoost() {
	_, err := train.XGBoost("xgb").Nodes(0).Build()
	printErrors(err)
	// Output:
	// spec.xgbReplicaSpecs[Worker].replicas: Invalid value: -1: Nodes(0) leaves no pod: Nodes counts the Master, so it is at least 1
	// spec.xgbReplicaSpecs[Master].template.spec.containers[0].image: Required value: an image is required
}

// An MXJob: a Scheduler, Servers and Workers, GPUs on the Workers only.
func ExampleMXNet() {
	job, err := train.MXNet("mx").
		Image("mxnet/python:1.9.1_gpu_cu112_py3").
		Command("python", "/mxnet/train.py").
		Servers(2).Workers(2).
		On(hardware.T4).Accelerators(1).
		Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, typ := range []kubeflowv1.ReplicaType{"Scheduler", "Server", "Worker"} {
		spec := job.Spec.MXReplicaSpecs[typ]
		gpus := spec.Template.Spec.Containers[0].Resources.Limits[hardware.ResourceNVIDIAGPU]
		fmt.Printf("%s: %d × %s GPU\n", typ, *spec.Replicas, gpus.String())
	}
	// Output:
	// Scheduler: 1 × 0 GPU
	// Server: 2 × 0 GPU
	// Worker: 2 × 1 GPU
}

// A RayJob whose cluster is shut down when the entrypoint finishes.
func ExampleRay() {
	job := train.Ray("tune").
		Image("rayproject/ray:2.40.0").
		Entrypoint("python tune.py").
		RuntimeEnv(train.RuntimeEnv{Pip: []string{"optuna"}}).
		WorkerGroup("workers", 2).
		On(hardware.CPU).CPU("2").Memory("4Gi").
		TTLAfterFinished(5 * time.Minute)
	if err := cube.Render(os.Stdout, job); err != nil {
		fmt.Println(err)
	}
	// Output:
	// apiVersion: ray.io/v1
	// kind: RayJob
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: cube
	//     app.kubernetes.io/name: tune
	//     app.kubernetes.io/part-of: tune
	//     cube.dev/kind: rayjob
	//     cube.dev/release: tune
	//   name: tune
	// spec:
	//   entrypoint: python tune.py
	//   rayClusterSpec:
	//     headGroupSpec:
	//       rayStartParams:
	//         dashboard-host: 0.0.0.0
	//       template:
	//         metadata:
	//           labels:
	//             app.kubernetes.io/component: head
	//             app.kubernetes.io/managed-by: cube
	//             app.kubernetes.io/name: tune
	//             app.kubernetes.io/part-of: tune
	//             cube.dev/kind: rayjob
	//             cube.dev/release: tune
	//         spec:
	//           containers:
	//           - image: rayproject/ray:2.40.0
	//             name: ray-head
	//             resources:
	//               limits:
	//                 cpu: "2"
	//                 memory: 4Gi
	//               requests:
	//                 cpu: "2"
	//                 memory: 4Gi
	//           nodeSelector:
	//             kubernetes.io/arch: amd64
	//     workerGroupSpecs:
	//     - groupName: workers
	//       maxReplicas: 2
	//       minReplicas: 2
	//       rayStartParams: {}
	//       replicas: 2
	//       scaleStrategy: {}
	//       template:
	//         metadata:
	//           labels:
	//             app.kubernetes.io/component: worker
	//             app.kubernetes.io/managed-by: cube
	//             app.kubernetes.io/name: tune
	//             app.kubernetes.io/part-of: tune
	//             cube.dev/kind: rayjob
	//             cube.dev/release: tune
	//         spec:
	//           containers:
	//           - image: rayproject/ray:2.40.0
	//             name: ray-worker
	//             resources:
	//               limits:
	//                 cpu: "2"
	//                 memory: 4Gi
	//               requests:
	//                 cpu: "2"
	//                 memory: 4Gi
	//           nodeSelector:
	//             kubernetes.io/arch: amd64
	//   runtimeEnvYAML: |
	//     pip:
	//     - optuna
	//   shutdownAfterJobFinishes: true
	//   ttlSecondsAfterFinished: 300
}

// The same RayJob on Ascend 910B3, gang-scheduled by Volcano: each group
// with NPUs declares them to Ray, and the job carries the queue KubeRay
// copies to the PodGroup it creates.
func ExampleRayJob_Gang() {
	job, err := train.Ray("rl").
		Image("registry.example.com/ray-ascend:2.40.0").
		Entrypoint("python grpo.py").
		WorkerGroup("actors", 4).
		On(hardware.Ascend910B3).Accelerators(8).
		Gang().Queue("team-a").
		Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	w := job.Spec.RayClusterSpec.WorkerGroupSpecs[0]
	fmt.Println("queue:", job.Labels["volcano.sh/queue-name"])
	fmt.Println("scheduler:", w.Template.Spec.SchedulerName)
	fmt.Println("ray resources:", w.Resources)
	fmt.Println("pod limit:", w.Template.Spec.Containers[0].Resources.Limits.Name("huawei.com/Ascend910", "0"))
	// Output:
	// queue: team-a
	// scheduler: volcano
	// ray resources: map[NPU:8]
	// pod limit: 8
}

// A Volcano job: one task of four pods gang-scheduled in a queue, with the
// ssh plugin for launchers that reach the other pods over ssh.
func ExampleVolcano() {
	job := train.Volcano("hostfile").
		Image("registry.example.com/ml/deepspeed:0.15").
		Command("sh", "-c", "deepspeed --hostfile /etc/volcano/worker.host train.py").
		Task("worker", 4).
		Plugin(train.PluginSSH).
		Policy(vcbus.PodEvictedEvent, vcbus.RestartJobAction).
		Queue("team-a").
		On(hardware.CPU)
	if err := cube.Render(os.Stdout, job); err != nil {
		fmt.Println(err)
	}
	// Output:
	// apiVersion: batch.volcano.sh/v1alpha1
	// kind: Job
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: cube
	//     app.kubernetes.io/name: hostfile
	//     app.kubernetes.io/part-of: hostfile
	//     cube.dev/kind: volcanojob
	//     cube.dev/release: hostfile
	//   name: hostfile
	// spec:
	//   minAvailable: 4
	//   plugins:
	//     env: []
	//     ssh: []
	//     svc: []
	//   policies:
	//   - action: RestartJob
	//     event: PodEvicted
	//   queue: team-a
	//   schedulerName: volcano
	//   tasks:
	//   - name: worker
	//     replicas: 4
	//     template:
	//       metadata:
	//         annotations:
	//           scheduling.volcano.sh/queue-name: team-a
	//         labels:
	//           app.kubernetes.io/component: worker
	//           app.kubernetes.io/managed-by: cube
	//           app.kubernetes.io/name: hostfile
	//           app.kubernetes.io/part-of: hostfile
	//           cube.dev/kind: volcanojob
	//           cube.dev/release: hostfile
	//       spec:
	//         containers:
	//         - command:
	//           - sh
	//           - -c
	//           - deepspeed --hostfile /etc/volcano/worker.host train.py
	//           image: registry.example.com/ml/deepspeed:0.15
	//           name: worker
	//           resources: {}
	//         nodeSelector:
	//           kubernetes.io/arch: amd64
	//         restartPolicy: OnFailure
	//         schedulerName: volcano
}

// The Argo resource-template conditions of a PyTorchJob, among the kinds
// the package lists for cube.Kinds and pipeline.Pipeline.Kinds.
func ExamplePyTorchJobKind() {
	c, _ := cube.CompletionOf(train.PyTorchJobKind, train.Kinds()...)
	fmt.Println("success:", c.Success)
	fmt.Println("failure:", c.Failure)
	// Output:
	// success: status.completionTime
	// failure: status.conditions.0.type == Failed, status.conditions.1.type == Failed, status.conditions.2.type == Failed, status.conditions.3.type == Failed, status.conditions.4.type == Failed
}

// One retry.Policy on every builder: the job's retries, and an elastic
// job's torchrun restarts in place. A wait between retries, which no
// engine has a field for, is refused by name.
func ExamplePyTorchJob_Retry() {
	job, err := train.PyTorch("elastic").
		Image("pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime").
		Torchrun("train.py").
		Elastic(2, 4).
		ElasticRetry(retry.Policy{Limit: 3}).
		Retry(retry.Policy{Limit: 1}).
		Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("maxRestarts:", *job.Spec.ElasticPolicy.MaxRestarts)
	fmt.Println("backoffLimit:", *job.Spec.RunPolicy.BackoffLimit)

	_, err = train.PyTorch("waits").Image("pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime").
		Retry(retry.Policy{Limit: 3, Backoff: time.Minute}).Build()
	fmt.Println(err)
	// Output:
	// maxRestarts: 3
	// backoffLimit: 1
	// retry.backoff: Forbidden: the training-operator has no wait between retries of its own: leave Backoff zero
}
