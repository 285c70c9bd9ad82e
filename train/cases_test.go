package train_test

import (
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	vcbus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/retry"
	"github.com/cubestudio/cube/train"
)

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
