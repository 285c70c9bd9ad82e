package train_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcbus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/retry"
	"github.com/cubestudio/cube/train"
	"github.com/cubestudio/cube/vgpu"
)

func container(spec *kubeflowv1.ReplicaSpec) corev1.Container {
	return spec.Template.Spec.Containers[0]
}

func envValue(c corev1.Container, name string) (string, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

func qstr(q resource.Quantity) string { return q.String() }

func TestPyTorchMasterAndWorkers(t *testing.T) {
	job, err := train.PyTorch("llama").Namespace("team-a").Image(img).
		Torchrun("train.py", "--epochs", "3").
		Workers(3).
		On(hardware.H100).Accelerators(8).
		CleanPodPolicy(kubeflowv1.CleanPodPolicyAll).
		RestartPolicy(kubeflowv1.RestartPolicyExitCode).
		TTLAfterFinished(1500 * time.Millisecond).
		ActiveDeadline(2 * time.Hour).
		Retry(retry.Policy{Limit: 4}).
		Suspend(true).
		Build()
	require.NoError(t, err)
	assert.Equal(t, "kubeflow.org/v1", job.APIVersion)
	assert.Equal(t, "PyTorchJob", job.Kind)
	assert.Equal(t, "team-a", job.Namespace)
	assert.Equal(t, "pytorchjob", job.Labels["cube.dev/kind"])
	require.Len(t, job.Spec.PyTorchReplicaSpecs, 2)
	master, worker := job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster], job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeWorker]
	assert.Equal(t, int32(1), *master.Replicas)
	assert.Equal(t, int32(3), *worker.Replicas)
	assert.Equal(t, kubeflowv1.RestartPolicyExitCode, master.RestartPolicy)
	assert.Equal(t, "8", *job.Spec.NprocPerNode, "one process per GPU")
	assert.Nil(t, job.Spec.ElasticPolicy)
	for _, spec := range []*kubeflowv1.ReplicaSpec{master, worker} {
		c := container(spec)
		assert.Equal(t, "pytorch", c.Name)
		assert.Equal(t, []string{"torchrun", "train.py", "--epochs", "3"}, c.Command)
		assert.Empty(t, c.Args)
		assert.Equal(t, "8", qstr(c.Resources.Limits["nvidia.com/gpu"]))
		assert.Equal(t, []corev1.ContainerPort{{Name: "pytorchjob-port", ContainerPort: 23456}}, c.Ports, "the operator's defaults apply")
		assert.Empty(t, spec.Template.Spec.SchedulerName)
	}
	assert.Equal(t, "master", master.Template.Labels[train.LabelComponent])
	assert.Equal(t, "worker", worker.Template.Labels[train.LabelComponent])
	rp := job.Spec.RunPolicy
	assert.Equal(t, kubeflowv1.CleanPodPolicyAll, *rp.CleanPodPolicy)
	assert.Equal(t, int32(2), *rp.TTLSecondsAfterFinished, "rounded up to whole seconds")
	assert.Equal(t, int64(7200), *rp.ActiveDeadlineSeconds)
	assert.Equal(t, int32(4), *rp.BackoffLimit)
	assert.True(t, *rp.Suspend)
	assert.Nil(t, rp.SchedulingPolicy, "no gang unless asked")
}

func TestPyTorchElastic(t *testing.T) {
	job, err := train.PyTorch("elastic").Image(img).
		Elastic(2, 6).
		Rendezvous(kubeflowv1.BackendETCD, "etcd.infra", 2379).
		RendezvousConf("timeout", "900").
		ElasticRetry(retry.Policy{Limit: 5}).
		NprocPerNode(4).
		Gang().
		Build()
	require.NoError(t, err)
	require.Len(t, job.Spec.PyTorchReplicaSpecs, 1, "an elastic job has no Master")
	worker := job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeWorker]
	assert.Equal(t, int32(6), *worker.Replicas, "starts at the maximum")
	ep := job.Spec.ElasticPolicy
	assert.Equal(t, int32(2), *ep.MinReplicas)
	assert.Equal(t, int32(6), *ep.MaxReplicas)
	assert.Equal(t, kubeflowv1.BackendETCD, *ep.RDZVBackend)
	assert.Equal(t, "etcd.infra", *ep.RDZVHost)
	assert.Equal(t, int32(2379), *ep.RDZVPort)
	assert.Equal(t, []kubeflowv1.RDZVConf{{Key: "timeout", Value: "900"}}, ep.RDZVConf)
	assert.Equal(t, int32(5), *ep.MaxRestarts)
	assert.Equal(t, "4", *job.Spec.NprocPerNode)
	assert.Equal(t, int32(2), *job.Spec.RunPolicy.SchedulingPolicy.MinAvailable, "the gang is the elastic minimum")
	assert.Equal(t, train.VolcanoScheduler, worker.Template.Spec.SchedulerName)

	job, err = train.PyTorch("elastic").Image(img).Elastic(1, 4).Workers(2).Build()
	require.NoError(t, err)
	assert.Equal(t, int32(2), *job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeWorker].Replicas)
	assert.Nil(t, job.Spec.ElasticPolicy.RDZVBackend, "the operator defaults to c10d on the first worker")
	assert.Equal(t, "1", *job.Spec.NprocPerNode, "pods without accelerators run one process")
}

func TestGangSchedulingPolicy(t *testing.T) {
	job, err := train.TensorFlow("tf").Image(img).Workers(3).ParameterServers(1).
		Queue("team-a").PriorityClass("high").Gang().
		Build()
	require.NoError(t, err)
	sp := job.Spec.RunPolicy.SchedulingPolicy
	require.NotNil(t, sp)
	assert.Equal(t, int32(4), *sp.MinAvailable, "every replica")
	assert.Equal(t, "team-a", sp.Queue)
	assert.Equal(t, "high", sp.PriorityClass)
	assert.Nil(t, sp.ScheduleTimeoutSeconds, "the operator gives Volcano's PodGroup no timeout")
	for typ, spec := range job.Spec.TFReplicaSpecs {
		assert.Equal(t, train.VolcanoScheduler, spec.Template.Spec.SchedulerName, typ)
		assert.Equal(t, "team-a", spec.Template.Annotations["scheduling.volcano.sh/queue-name"], typ)
		assert.Equal(t, "high", spec.Template.Spec.PriorityClassName, typ)
	}

	job, err = train.TensorFlow("tf").Image(img).Workers(3).GangMinAvailable(2).Scheduler(train.VolcanoScheduler).Build()
	require.NoError(t, err)
	assert.Equal(t, int32(2), *job.Spec.RunPolicy.SchedulingPolicy.MinAvailable)
}

// TestOneArgumentMovesAJobToAscend renders the same builder on H100 and on
// Ascend 910B3 by changing only the argument of On, and checks that the
// Ascend form reaches every replica.
func TestOneArgumentMovesAJobToAscend(t *testing.T) {
	build := func(p hardware.Profile) *kubeflowv1.PyTorchJob {
		job, err := train.PyTorch("move").Image(img).Workers(2).
			On(p).Accelerators(8).Fabric(hardware.RoCE()).
			Build()
		require.NoError(t, err)
		return job
	}
	nvidia, ascend := build(hardware.H100), build(hardware.Ascend910B3)
	assert.NotContains(t, nvidia.Labels, hardware.LabelRingController)
	assert.Equal(t, "ascend-910b", ascend.Labels[hardware.LabelRingController], "the job carries ring-controller.atlas")
	for typ, spec := range ascend.Spec.PyTorchReplicaSpecs {
		c := container(spec)
		assert.Equal(t, "8", qstr(c.Resources.Limits["huawei.com/Ascend910"]), typ)
		assert.NotContains(t, c.Resources.Limits, corev1.ResourceName("nvidia.com/gpu"), typ)
		assert.Equal(t, "ascend-910b", spec.Template.Labels[hardware.LabelRingController], typ)
		v, ok := envValue(c, "HCCL_CONNECT_TIMEOUT")
		assert.True(t, ok, typ)
		assert.Equal(t, "600", v, typ)
		_, nccl := envValue(c, "NCCL_DEBUG")
		assert.False(t, nccl, typ)
		assert.Equal(t, "910B3", spec.Template.Spec.NodeSelector[hardware.LabelNPUChipName], typ)

		nc := container(nvidia.Spec.PyTorchReplicaSpecs[typ])
		assert.Equal(t, "8", qstr(nc.Resources.Limits["nvidia.com/gpu"]), typ)
		_, nccl = envValue(nc, "NCCL_DEBUG")
		assert.True(t, nccl, typ)
	}
	assert.Equal(t, *nvidia.Spec.NprocPerNode, *ascend.Spec.NprocPerNode, "one process per device on both")

	// Without the Ascend Docker Runtime the driver mounts go into every
	// replica, with and without devices.
	tf, err := train.TensorFlow("tf").Image(img).Workers(2).ParameterServers(1).
		On(hardware.Ascend910B3.AscendDockerRuntime(false)).Accelerators(8).
		Build()
	require.NoError(t, err)
	for typ, spec := range tf.Spec.TFReplicaSpecs {
		var mounts []string
		for _, m := range container(spec).VolumeMounts {
			mounts = append(mounts, m.MountPath)
		}
		assert.Contains(t, mounts, "/usr/local/Ascend/driver/lib64", typ)
		assert.Contains(t, mounts, "/usr/local/dcmi", typ)
	}
	assert.NotContains(t, container(tf.Spec.TFReplicaSpecs[kubeflowv1.TFJobReplicaTypePS]).Resources.Limits, corev1.ResourceName("huawei.com/Ascend910"))
}

func TestTensorFlowRoles(t *testing.T) {
	job, err := train.TensorFlow("tf").Image(img).Command("python", "t.py").
		Chief().ParameterServers(2).Workers(4).Evaluator().SucceedWhenAllWorkersSucceed().
		On(hardware.L4).Accelerators(1).
		Build()
	require.NoError(t, err)
	specs := job.Spec.TFReplicaSpecs
	require.Len(t, specs, 4)
	for typ, want := range map[kubeflowv1.ReplicaType]int32{"Chief": 1, "PS": 2, "Worker": 4, "Evaluator": 1} {
		assert.Equal(t, want, *specs[typ].Replicas, typ)
		c := container(specs[typ])
		assert.Equal(t, "tensorflow", c.Name, typ)
		assert.Equal(t, []string{"python", "t.py"}, c.Command, typ)
		if typ == kubeflowv1.TFJobReplicaTypePS {
			assert.NotContains(t, c.Resources.Limits, corev1.ResourceName("nvidia.com/gpu"), "parameter servers get no GPU")
		} else {
			assert.Equal(t, "1", qstr(c.Resources.Limits["nvidia.com/gpu"]), typ)
		}
	}
	assert.Equal(t, kubeflowv1.SuccessPolicyAllWorkers, *job.Spec.SuccessPolicy)

	job, err = train.TensorFlow("tf").Image(img).Build()
	require.NoError(t, err)
	require.Len(t, job.Spec.TFReplicaSpecs, 1)
	assert.Equal(t, int32(1), *job.Spec.TFReplicaSpecs[kubeflowv1.TFJobReplicaTypeWorker].Replicas)
	assert.Equal(t, kubeflowv1.SuccessPolicyDefault, *job.Spec.SuccessPolicy, "the operator's default")
}

func TestMPILauncherAndWorkers(t *testing.T) {
	job, err := train.MPI("mpi").Image(img).Command("python", "/app/a.py").Args("--steps", "10").
		Workers(3).On(hardware.A100_80G).Accelerators(4).MPIRunArgs("-x", "NCCL_IB_HCA").
		Build()
	require.NoError(t, err)
	launcher, worker := job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher], job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker]
	assert.Equal(t, []string{"mpirun", "--allow-run-as-root", "-np", "12", "-bind-to", "none", "-map-by", "slot",
		"-x", "NCCL_IB_HCA", "python", "/app/a.py", "--steps", "10"}, container(launcher).Command)
	assert.Empty(t, container(launcher).Args)
	assert.NotContains(t, container(launcher).Resources.Limits, corev1.ResourceName("nvidia.com/gpu"), "the launcher holds no GPU")
	assert.Empty(t, container(worker).Command, "the operator keeps workers idle until mpirun reaches them")
	assert.Empty(t, container(worker).Args)
	assert.Equal(t, "4", qstr(container(worker).Resources.Limits["nvidia.com/gpu"]))
	assert.Equal(t, int32(3), *worker.Replicas)
	assert.Equal(t, int32(4), *job.Spec.SlotsPerWorker, "a slot per GPU")
	assert.Equal(t, "mpi", job.Spec.MainContainer)
	assert.Equal(t, "mpijob", job.Labels["cube.dev/kind"])

	hvd, err := train.Horovod("hvd").Image(img).Command("python", "h.py").Workers(2).SlotsPerWorker(2).Build()
	require.NoError(t, err)
	assert.Equal(t, train.HorovodMPIRunCommand(4, "python", "h.py"), container(hvd.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher]).Command)
	assert.Equal(t, "horovodjob", hvd.Labels["cube.dev/kind"])
}

func TestRoleResources(t *testing.T) {
	job, err := train.MPI("mpi").Image(img).Command("python", "/app/a.py").
		CPU("32").Memory("256Gi").On(hardware.H100).Accelerators(8).Workers(2).
		RoleResources(kubeflowv1.MPIJobReplicaTypeLauncher, "1", "2Gi").
		Build()
	require.NoError(t, err)
	launcher := container(job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher]).Resources
	worker := container(job.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker]).Resources
	assert.Equal(t, []string{"1", "2Gi", "1", "2Gi"}, []string{qstr(launcher.Requests["cpu"]), qstr(launcher.Requests["memory"]), qstr(launcher.Limits["cpu"]), qstr(launcher.Limits["memory"])})
	assert.Equal(t, []string{"32", "256Gi", "8"}, []string{qstr(worker.Limits["cpu"]), qstr(worker.Limits["memory"]), qstr(worker.Limits["nvidia.com/gpu"])})

	// A parameter server with more memory and the shared CPU.
	tf, err := train.TensorFlow("tf").Image(img).CPU("8").Memory("16Gi").ParameterServers(1).
		RoleResources(kubeflowv1.TFJobReplicaTypePS, "", "64Gi").Build()
	require.NoError(t, err)
	ps := container(tf.Spec.TFReplicaSpecs[kubeflowv1.TFJobReplicaTypePS]).Resources
	assert.Equal(t, []string{"8", "64Gi"}, []string{qstr(ps.Limits["cpu"]), qstr(ps.Limits["memory"])})

	// A Ray head smaller than its workers.
	ray, err := train.Ray("ray").Image(img).Entrypoint("python t.py").WorkerGroup("w", 1).
		CPU("16").Memory("64Gi").HeadResources("2", "8Gi").Build()
	require.NoError(t, err)
	head := ray.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Resources
	rayWorker := ray.Spec.RayClusterSpec.WorkerGroupSpecs[0].Template.Spec.Containers[0].Resources
	assert.Equal(t, []string{"2", "8Gi"}, []string{qstr(head.Limits["cpu"]), qstr(head.Limits["memory"])})
	assert.Equal(t, []string{"16", "64Gi"}, []string{qstr(rayWorker.Limits["cpu"]), qstr(rayWorker.Limits["memory"])})
}

func TestDeepSpeedConfigMap(t *testing.T) {
	objs, err := train.DeepSpeed("ds").Image(img).
		Torchrun("pretrain.py", "--lr", "1e-4").
		Config(train.DeepSpeedConfig{
			ZeROStage:        3,
			OffloadOptimizer: train.Offload{Device: train.OffloadNVMe, NVMePath: "/nvme", PinMemory: true},
			OffloadParams:    train.Offload{Device: train.OffloadCPU},
			Precision:        train.FP16,
			MicroBatchPerGPU: 4,
		}).
		On(hardware.H100).Accelerators(8).
		Objects()
	require.NoError(t, err)
	require.Len(t, objs, 2)
	cm := objs[0].(*corev1.ConfigMap)
	assert.Equal(t, "ds-deepspeed", cm.Name)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal([]byte(cm.Data[train.DeepSpeedConfigKey]), &cfg))
	assert.Equal(t, map[string]any{
		"train_micro_batch_size_per_gpu": 4.0,
		"gradient_accumulation_steps":    1.0,
		"fp16":                           map[string]any{"enabled": true},
		"zero_optimization": map[string]any{
			"stage":             3.0,
			"offload_optimizer": map[string]any{"device": "nvme", "nvme_path": "/nvme", "pin_memory": true},
			"offload_param":     map[string]any{"device": "cpu"},
		},
	}, cfg)
	job := objs[1].(*kubeflowv1.PyTorchJob)
	assert.Equal(t, "deepspeedjob", job.Labels["cube.dev/kind"])
	for typ, spec := range job.Spec.PyTorchReplicaSpecs {
		c := container(spec)
		assert.Equal(t, []string{"torchrun", "pretrain.py", "--lr", "1e-4", "--deepspeed", "--deepspeed_config", train.DeepSpeedConfigFile}, c.Command, typ)
		assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "deepspeed-config", MountPath: train.DeepSpeedConfigDir, ReadOnly: true}, typ)
		assert.Contains(t, spec.Template.Spec.Volumes, corev1.Volume{Name: "deepspeed-config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "ds-deepspeed"}},
		}}, typ)
	}
	built, err := train.DeepSpeed("ds").Image(img).Build()
	require.NoError(t, err)
	assert.Equal(t, "PyTorchJob", built.Kind)
}

func TestColossalAILaunch(t *testing.T) {
	command := func(j *train.ColossalAIJob) []string {
		job, err := j.Build()
		require.NoError(t, err)
		return container(job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeWorker]).Command
	}
	base := func() *train.ColossalAIJob {
		return train.ColossalAI("cai").Image(img).Script("train.py", "--epochs", "1").On(hardware.H100).Accelerators(8)
	}
	assert.Equal(t, []string{"torchrun", "train.py", "--epochs", "1", "--plugin", "torch_ddp"}, command(base()))
	assert.Equal(t, []string{"torchrun", "train.py", "--epochs", "1", "--plugin", "gemini"}, command(base().Plugin(train.PluginGemini)))
	assert.Equal(t, []string{"torchrun", "train.py", "--epochs", "1", "--plugin", "low_level_zero", "--zero_stage", "2"},
		command(base().Plugin(train.PluginZeRO)))
	assert.Equal(t, []string{"torchrun", "train.py", "--epochs", "1", "--plugin", "hybrid_parallel", "--tp_size", "4", "--pp_size", "2", "--zero_stage", "1"},
		command(base().Plugin(train.PluginHybridParallel).TensorParallel(4).PipelineParallel(2).ZeROStage(1)))
	assert.Equal(t, []string{"colossalai", "run", "--nproc_per_node", "8", "--master_addr", "$(MASTER_ADDR)", "--master_port", "$(MASTER_PORT)",
		"--extra_launch_args", "nnodes=$(PET_NNODES),node_rank=$(PET_NODE_RANK)", "train.py", "--epochs", "1", "--plugin", "torch_ddp"},
		command(base().Launcher(train.LaunchColossalAI)))
	elastic, err := base().Elastic(1, 3).Plugin(train.PluginHybridParallel).TensorParallel(3).Build()
	require.NoError(t, err, "world size is unknown for elastic jobs, so it is not checked")
	assert.Equal(t, "colossalaijob", elastic.Labels["cube.dev/kind"])
}

func TestPaddleModes(t *testing.T) {
	collective, err := train.Paddle("pd").Image(img).Launch("train.py", "--lr", "0.1").Workers(4).On(hardware.A100_80G).Accelerators(8).Build()
	require.NoError(t, err)
	require.Len(t, collective.Spec.PaddleReplicaSpecs, 1, "collective mode runs workers only")
	w := collective.Spec.PaddleReplicaSpecs[kubeflowv1.PaddleJobReplicaTypeWorker]
	assert.Equal(t, int32(4), *w.Replicas)
	assert.Equal(t, "paddle", container(w).Name)
	assert.Equal(t, []string{"python", "-m", "paddle.distributed.launch", "train.py", "--lr", "0.1"}, container(w).Command)

	ps, err := train.Paddle("pd").Image(img).ParameterServers(2).Workers(3).On(hardware.A100_80G).Accelerators(1).Build()
	require.NoError(t, err)
	servers := ps.Spec.PaddleReplicaSpecs[kubeflowv1.PaddleJobReplicaTypeMaster]
	assert.Equal(t, int32(2), *servers.Replicas, "the operator's Master replicas are the parameter servers")
	assert.NotContains(t, container(servers).Resources.Limits, corev1.ResourceName("nvidia.com/gpu"))
	assert.Equal(t, int32(3), *ps.Spec.PaddleReplicaSpecs[kubeflowv1.PaddleJobReplicaTypeWorker].Replicas)
}

func TestXGBoostAndMXNetRoles(t *testing.T) {
	xgb, err := train.XGBoost("xgb").Image(img).Workers(5).Build()
	require.NoError(t, err)
	assert.Equal(t, int32(1), *xgb.Spec.XGBReplicaSpecs[kubeflowv1.XGBoostJobReplicaTypeMaster].Replicas)
	assert.Equal(t, int32(5), *xgb.Spec.XGBReplicaSpecs[kubeflowv1.XGBoostJobReplicaTypeWorker].Replicas)
	assert.Equal(t, "xgboost", container(xgb.Spec.XGBReplicaSpecs[kubeflowv1.XGBoostJobReplicaTypeWorker]).Name)

	mx, err := train.MXNet("mx").Image(img).Servers(2).Workers(3).On(hardware.T4).Accelerators(1).Build()
	require.NoError(t, err)
	assert.Equal(t, kubeflowv1.MXTrain, mx.Spec.JobMode)
	for typ, want := range map[kubeflowv1.ReplicaType]int32{"Scheduler": 1, "Server": 2, "Worker": 3} {
		spec := mx.Spec.MXReplicaSpecs[typ]
		assert.Equal(t, want, *spec.Replicas, typ)
		assert.Equal(t, "mxnet", container(spec).Name, typ)
		_, gpu := container(spec).Resources.Limits["nvidia.com/gpu"]
		assert.Equal(t, typ == kubeflowv1.MXJobReplicaTypeWorker, gpu, typ)
	}
}

func TestRayJob(t *testing.T) {
	job, err := train.Ray("ray").Image("rayproject/ray:2.40.0").
		Entrypoint("python train.py").
		RuntimeEnv(train.RuntimeEnv{WorkingDir: "s3://bucket/code.zip", Pip: []string{"torch"}, EnvVars: map[string]string{"A": "1"}}).
		WorkerGroup("gpu", 2).
		AutoscaledWorkerGroup("spot", 1, 0+1, 8).
		On(hardware.H100).Accelerators(8).
		ActiveDeadline(time.Hour).Retry(retry.Policy{Limit: 2}).TTLAfterFinished(time.Minute).
		Build()
	require.NoError(t, err)
	assert.Equal(t, "ray.io/v1", job.APIVersion)
	assert.Equal(t, "python train.py", job.Spec.Entrypoint)
	assert.Equal(t, "env_vars:\n  A: \"1\"\npip:\n- torch\nworking_dir: s3://bucket/code.zip\n", job.Spec.RuntimeEnvYAML)
	assert.True(t, job.Spec.ShutdownAfterJobFinishes)
	assert.Equal(t, int32(60), job.Spec.TTLSecondsAfterFinished)
	assert.Equal(t, int32(3600), *job.Spec.ActiveDeadlineSeconds)
	assert.Equal(t, int32(2), *job.Spec.BackoffLimit)
	cluster := job.Spec.RayClusterSpec
	head := cluster.HeadGroupSpec.Template.Spec.Containers[0]
	assert.Equal(t, "ray-head", head.Name)
	assert.NotContains(t, head.Resources.Limits, corev1.ResourceName("nvidia.com/gpu"), "the head gets no GPU by default")
	assert.Equal(t, map[string]string{"dashboard-host": "0.0.0.0"}, cluster.HeadGroupSpec.RayStartParams)
	require.Len(t, cluster.WorkerGroupSpecs, 2)
	gpu, spot := cluster.WorkerGroupSpecs[0], cluster.WorkerGroupSpecs[1]
	assert.Equal(t, "gpu", gpu.GroupName)
	assert.Equal(t, [3]int32{2, 2, 2}, [3]int32{*gpu.Replicas, *gpu.MinReplicas, *gpu.MaxReplicas})
	assert.Equal(t, [3]int32{1, 1, 8}, [3]int32{*spot.Replicas, *spot.MinReplicas, *spot.MaxReplicas})
	assert.Equal(t, "8", qstr(gpu.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]))
	assert.Equal(t, "ray-worker", gpu.Template.Spec.Containers[0].Name)
	require.NotNil(t, cluster.EnableInTreeAutoscaling)
	assert.True(t, *cluster.EnableInTreeAutoscaling)

	kept, err := train.Ray("ray").Image(img).Entrypoint("python t.py").WorkerGroup("w", 1).HeadAccelerators(1).
		On(hardware.L4).Accelerators(1).KeepClusterAfterFinish().Build()
	require.NoError(t, err)
	assert.False(t, kept.Spec.ShutdownAfterJobFinishes)
	assert.Nil(t, kept.Spec.RayClusterSpec.EnableInTreeAutoscaling)
	assert.Equal(t, "1", qstr(kept.Spec.RayClusterSpec.HeadGroupSpec.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]))
	assert.Empty(t, kept.Spec.RuntimeEnvYAML)

	// Without Gang the job carries no batch-scheduling labels.
	assert.NotContains(t, job.Labels, "volcano.sh/queue-name")
	assert.Empty(t, gpu.Template.Spec.SchedulerName)
	assert.Nil(t, gpu.Resources, "KubeRay maps nvidia.com/gpu to --num-gpus itself")
}

func TestRayJobOnAscendGangScheduled(t *testing.T) {
	job, err := train.Ray("ray").Image(img).Entrypoint("python train.py").
		WorkerGroup("npu", 2).HeadAccelerators(8).
		On(hardware.Ascend910B3).Accelerators(8).
		Gang().Queue("team-a").PriorityClass("high").
		Build()
	require.NoError(t, err)
	cluster := job.Spec.RayClusterSpec
	worker := cluster.WorkerGroupSpecs[0]
	assert.Equal(t, "8", qstr(worker.Template.Spec.Containers[0].Resources.Limits["huawei.com/Ascend910"]))
	assert.Equal(t, map[string]string{"NPU": "8"}, worker.Resources, "Ray learns the NPUs from the group's resources")
	assert.Equal(t, map[string]string{"NPU": "8"}, cluster.HeadGroupSpec.Resources, "the head has NPUs too")
	assert.Equal(t, "team-a", job.Labels["volcano.sh/queue-name"])
	assert.Equal(t, "high", job.Labels["ray.io/priority-class-name"])
	assert.Equal(t, "ascend-910b", job.Labels["ring-controller.atlas"])
	for _, tmpl := range []corev1.PodTemplateSpec{cluster.HeadGroupSpec.Template, worker.Template} {
		assert.Equal(t, "volcano", tmpl.Spec.SchedulerName)
		assert.Equal(t, "high", tmpl.Spec.PriorityClassName)
	}

	cpuHead, err := train.Ray("ray").Image(img).Entrypoint("python train.py").
		WorkerGroup("npu", 1).On(hardware.Ascend910B3).Accelerators(4).Build()
	require.NoError(t, err)
	assert.Nil(t, cpuHead.Spec.RayClusterSpec.HeadGroupSpec.Resources, "a head without NPUs declares none")
	assert.Equal(t, map[string]string{"NPU": "4"}, cpuHead.Spec.RayClusterSpec.WorkerGroupSpecs[0].Resources)
}

func TestVolcanoJob(t *testing.T) {
	job, err := train.Volcano("vc").Image(img).Command("python", "w.py").
		AddTask(train.VolcanoTask{Name: "launcher", Replicas: 1, Command: []string{"mpirun", "python", "w.py"}, NoAccelerators: true,
			CPU: "1", Memory: "2Gi",
			Policies: []vcbatch.LifecyclePolicy{{Event: vcbus.TaskCompletedEvent, Action: vcbus.CompleteJobAction}}}).
		AddTask(train.VolcanoTask{Name: "worker", Replicas: 4, MinAvailable: ptr(2), Retry: &retry.Policy{Limit: 3}}).
		Plugin(train.PluginSSH).RemovePlugin(train.PluginEnv).Plugin(train.PluginSvc, "--publish-not-ready-addresses=true").
		MinAvailable(3).Retry(retry.Policy{Limit: 5}).TTLAfterFinished(time.Hour).
		Policy(vcbus.PodEvictedEvent, vcbus.RestartJobAction).
		PriorityClass("batch").
		CPU("32").Memory("256Gi").On(hardware.H100).Accelerators(8).
		Build()
	require.NoError(t, err)
	assert.Equal(t, "batch.volcano.sh/v1alpha1", job.APIVersion)
	assert.Equal(t, "Job", job.Kind)
	s := job.Spec
	assert.Equal(t, train.VolcanoScheduler, s.SchedulerName)
	assert.Equal(t, train.DefaultVolcanoQueue, s.Queue)
	assert.Equal(t, "batch", s.PriorityClassName)
	assert.Equal(t, int32(3), s.MinAvailable)
	assert.Equal(t, int32(6), s.MaxRetry, "Volcano counts the first run in maxRetry")
	assert.Equal(t, int32(3600), *s.TTLSecondsAfterFinished)
	assert.Equal(t, map[string][]string{"ssh": {}, "svc": {"--publish-not-ready-addresses=true"}}, s.Plugins)
	assert.Equal(t, []vcbatch.LifecyclePolicy{{Event: vcbus.PodEvictedEvent, Action: vcbus.RestartJobAction}}, s.Policies)
	require.Len(t, s.Tasks, 2)
	launcher, worker := s.Tasks[0], s.Tasks[1]
	assert.Equal(t, []string{"mpirun", "python", "w.py"}, launcher.Template.Spec.Containers[0].Command)
	assert.NotContains(t, launcher.Template.Spec.Containers[0].Resources.Limits, corev1.ResourceName("nvidia.com/gpu"))
	assert.Equal(t, []string{"1", "2Gi"}, []string{qstr(launcher.Template.Spec.Containers[0].Resources.Limits["cpu"]), qstr(launcher.Template.Spec.Containers[0].Resources.Requests["memory"])})
	assert.Equal(t, []vcbatch.LifecyclePolicy{{Event: vcbus.TaskCompletedEvent, Action: vcbus.CompleteJobAction}}, launcher.Policies)
	assert.Equal(t, []string{"python", "w.py"}, worker.Template.Spec.Containers[0].Command)
	assert.Equal(t, "worker", worker.Template.Spec.Containers[0].Name)
	assert.Equal(t, int32(4), worker.Replicas)
	assert.Equal(t, "256Gi", qstr(worker.Template.Spec.Containers[0].Resources.Limits["memory"]), "the other tasks keep the job's resources")
	assert.Equal(t, int32(2), *worker.MinAvailable)
	assert.Equal(t, int32(4), worker.MaxRetry, "Volcano fails the task when the restarts reach maxRetry")
	assert.Equal(t, "8", qstr(worker.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]))
	assert.Equal(t, train.VolcanoScheduler, worker.Template.Spec.SchedulerName)

	def, err := train.Volcano("vc").Image(img).Task("worker", 2).Build()
	require.NoError(t, err)
	assert.Equal(t, int32(2), def.Spec.MinAvailable, "the gang is every pod")
	assert.Equal(t, map[string][]string{"env": {}, "svc": {}}, def.Spec.Plugins)
}

// TestObjectsAreFresh checks that every call builds new objects and that
// the builders copy what they are given.
func TestObjectsAreFresh(t *testing.T) {
	args := []string{"--lr", "0.1"}
	env := train.RuntimeEnv{Pip: []string{"torch"}}
	policies := []vcbatch.LifecyclePolicy{{Event: vcbus.PodFailedEvent, Action: vcbus.AbortJobAction}}
	for _, bc := range builderCases {
		t.Run(bc.name, func(t *testing.T) {
			w := bc.build(bc.name, setups[0])
			first, err := w.Objects()
			require.NoError(t, err)
			second, err := w.Objects()
			require.NoError(t, err)
			require.Len(t, second, len(first))
			for i := range first {
				assert.NotSame(t, first[i], second[i])
				first[i].SetLabels(map[string]string{"changed": "yes"})
				assert.NotEqual(t, first[i].GetLabels(), second[i].GetLabels())
			}
		})
	}
	cai := train.ColossalAI("cai").Image(img).Script("t.py", args...)
	ray := train.Ray("ray").Image(img).Entrypoint("e").WorkerGroup("w", 1).RuntimeEnv(env)
	vc := train.Volcano("vc").Image(img).AddTask(train.VolcanoTask{Name: "w", Replicas: 1, Command: args, Policies: policies, RestartPolicy: corev1.RestartPolicyNever})
	args[0], env.Pip[0], policies[0].Action = "changed", "changed", "changed"
	c, err := cai.Build()
	require.NoError(t, err)
	assert.Equal(t, []string{"torchrun", "t.py", "--lr", "0.1", "--plugin", "torch_ddp"}, container(c.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster]).Command)
	r, err := ray.Build()
	require.NoError(t, err)
	assert.Equal(t, "pip:\n- torch\n", r.Spec.RuntimeEnvYAML)
	v, err := vc.Build()
	require.NoError(t, err)
	assert.Equal(t, []string{"--lr", "0.1"}, v.Spec.Tasks[0].Template.Spec.Containers[0].Command)
	assert.Equal(t, vcbus.AbortJobAction, v.Spec.Tasks[0].Policies[0].Action)
}

func TestCommandHelpers(t *testing.T) {
	assert.Equal(t, []string{"torchrun", "t.py", "-x"}, train.TorchrunCommand("t.py", "-x"))
	assert.Equal(t, []string{"mpirun", "--allow-run-as-root", "-np", "8", "-bind-to", "none", "-map-by", "slot", "./a.out"}, train.MPIRunCommand(8, "./a.out"))
	assert.Equal(t, []string{"mpirun", "--allow-run-as-root", "-np", "2", "-bind-to", "none", "-map-by", "slot",
		"-x", "LD_LIBRARY_PATH", "-x", "PATH", "-x", "NCCL_DEBUG", "-mca", "pml", "ob1", "-mca", "btl", "^openib", "python", "h.py"},
		train.HorovodMPIRunCommand(2, "python", "h.py"))
	assert.Equal(t, []string{"horovodrun", "-np", "16", "--hostfile", "/etc/volcano/worker.host", "python", "h.py"},
		train.HorovodRunCommand(16, "/etc/volcano/worker.host", "python", "h.py"))
	assert.Equal(t, []string{"python", "-m", "paddle.distributed.launch", "t.py", "--x"}, train.PaddleLaunchCommand("t.py", "--x"))
	assert.Equal(t, "/etc/mpi/hostfile", train.MPIHostfile)
}

// TestSlicesReachEveryReplica gives each pod a fraction of a device
// instead of whole ones.
func TestSlicesReachEveryReplica(t *testing.T) {
	job, err := train.PyTorch("mig").Image(img).Workers(2).Slice(vgpu.MIG(hardware.A100_80G, "3g.40gb")).Build()
	require.NoError(t, err)
	assert.Equal(t, "1", *job.Spec.NprocPerNode, "a slice is one device")
	for typ, spec := range job.Spec.PyTorchReplicaSpecs {
		c := container(spec)
		assert.Equal(t, "1", qstr(c.Resources.Limits["nvidia.com/mig-3g.40gb"]), typ)
		assert.NotContains(t, c.Resources.Limits, corev1.ResourceName("nvidia.com/gpu"), typ)
	}
	mpi, err := train.MPI("mpi").Image(img).Command("./a.out").Slice(vgpu.MIG(hardware.A100_80G, "1g.10gb")).Build()
	require.NoError(t, err)
	assert.NotContains(t, container(mpi.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeLauncher]).Resources.Limits,
		corev1.ResourceName("nvidia.com/mig-1g.10gb"), "the launcher gets no slice either")
	assert.Equal(t, "1", qstr(container(mpi.Spec.MPIReplicaSpecs[kubeflowv1.MPIJobReplicaTypeWorker]).Resources.Limits["nvidia.com/mig-1g.10gb"]))
}

func TestDeepSpeedGatherWeightsOnSave(t *testing.T) {
	data, errs := train.DeepSpeedConfig{ZeROStage: 3, MicroBatchPerGPU: 1, GatherWeightsOnSave: true}.JSON(field.NewPath("ds"))
	require.Empty(t, errs)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(data, &cfg))
	assert.Equal(t, map[string]any{"stage": 3.0, "stage3_gather_16bit_weights_on_model_save": true}, cfg["zero_optimization"])

	_, errs = train.DeepSpeedConfig{ZeROStage: 2, MicroBatchPerGPU: 1, GatherWeightsOnSave: true}.JSON(field.NewPath("ds"))
	require.Len(t, errs, 1)
	assert.Equal(t, "ds.zero_optimization.stage3_gather_16bit_weights_on_model_save", errs[0].Field)
}

// jsonPath resolves Argo's keys against an object the way gjson does for
// the paths train uses: dot-separated fields, numeric parts index lists;
// values read as strings (numbers in decimal, objects as JSON).
type jsonPath struct{ obj map[string]any }

func (j jsonPath) lookup(path string) (any, bool) {
	var cur any = j.obj
	for _, part := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[part]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func (j jsonPath) Has(path string) bool { _, ok := j.lookup(path); return ok }

func (j jsonPath) Get(path string) string {
	v, _ := j.Lookup(path)
	return v
}

func (j jsonPath) Lookup(path string) (string, bool) {
	v, ok := j.lookup(path)
	if !ok {
		return "", false
	}
	if s, ok := v.(string); ok {
		return s, true
	}
	b, _ := json.Marshal(v)
	return string(b), true
}

// argo evaluates a completion as Argo's executor does
// (workflow/executor/resource.go matchConditions): the conditions parse as
// label selectors; any failure requirement fails, all success
// requirements succeed.
func argo(t *testing.T, c cube.Completion, u *unstructured.Unstructured) (succeeded, failed bool) {
	t.Helper()
	success, err := labels.Parse(c.Success)
	require.NoError(t, err, "success condition %q must parse as Argo parses it", c.Success)
	failure, err := labels.Parse(c.Failure)
	require.NoError(t, err, "failure condition %q must parse as Argo parses it", c.Failure)
	ls := jsonPath{u.Object}
	failReqs, _ := failure.Requirements()
	for _, r := range failReqs {
		if r.Matches(ls) {
			return false, true
		}
	}
	successReqs, _ := success.Requirements()
	matched := 0
	for _, r := range successReqs {
		if r.Matches(ls) {
			matched++
		}
	}
	return matched == len(successReqs), false
}

func toUnstructured(t *testing.T, obj runtime.Object, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	return u
}

// TestCompletionsFollowTheStatusWriters checks, for every kind, that the
// reader and the Argo conditions of train.Kinds agree with the status each
// operator writes (cubetest.SetStatus).
func TestCompletionsFollowTheStatusWriters(t *testing.T) {
	cpu := setups[2]
	for _, bc := range builderCases {
		t.Run(bc.name, func(t *testing.T) {
			objs, err := bc.build(bc.name, cpu).Objects()
			require.NoError(t, err)
			job := objs[len(objs)-1]
			gvk := job.GetObjectKind().GroupVersionKind()
			completion, ok := cube.CompletionOf(gvk.GroupKind(), train.Kinds()...)
			require.True(t, ok, "train.Kinds has a completion for %s", gvk.GroupKind())
			i := slices.IndexFunc(train.Kinds(), func(k cube.Kind) bool { return k.GroupKind == gvk.GroupKind() })
			require.GreaterOrEqual(t, i, 0)
			assert.True(t, train.Kinds()[i].Completes, "%s runs to completion", gvk.GroupKind())
			unread := cube.ReadStatus(toUnstructured(t, job, gvk))
			assert.Equal(t, cube.Unknown, unread.Phase, "a reader without train.Kinds cannot tell")
			assert.Equal(t, "NoReader", unread.Reason)
			for _, tc := range []struct {
				phase             cube.Phase
				succeeded, failed bool
			}{
				{cube.InProgress, false, false},
				{cube.Succeeded, true, false},
				{cube.Failed, false, true},
			} {
				u := toUnstructured(t, job, gvk)
				require.NoError(t, cubetest.SetStatus(u, tc.phase, "Reason", "message"))
				st := cube.ReadStatus(u, train.Kinds()...)
				assert.Equal(t, tc.phase, st.Phase, "reader after %s", tc.phase)
				succeeded, failed := argo(t, completion, u)
				assert.Equal(t, tc.succeeded, succeeded, "argo success after %s", tc.phase)
				assert.Equal(t, tc.failed, failed, "argo failure after %s", tc.phase)
			}
		})
	}
}

// TestTrainingJobCompletionFindsTheConditionAnywhere uses the condition
// lists the operator writes in longer histories (restarts, suspension).
func TestTrainingJobCompletionFindsTheConditionAnywhere(t *testing.T) {
	completion, ok := cube.CompletionOf(train.PyTorchJobKind, train.Kinds()...)
	require.True(t, ok)
	now := metav1.Now()
	cond := func(typ kubeflowv1.JobConditionType, s corev1.ConditionStatus) kubeflowv1.JobCondition {
		return kubeflowv1.JobCondition{Type: typ, Status: s, Reason: "PyTorchJob" + string(typ), LastUpdateTime: now, LastTransitionTime: now}
	}
	gvk := kubeflowv1.SchemeGroupVersion.WithKind(kubeflowv1.PyTorchJobKind)
	for _, tc := range []struct {
		name              string
		status            kubeflowv1.JobStatus
		phase             cube.Phase
		reason            string
		succeeded, failed bool
	}{
		{"new", kubeflowv1.JobStatus{}, cube.InProgress, "Pending", false, false},
		{"created", kubeflowv1.JobStatus{Conditions: []kubeflowv1.JobCondition{cond(kubeflowv1.JobCreated, corev1.ConditionTrue)}}, cube.InProgress, "Created", false, false},
		{"restarting", kubeflowv1.JobStatus{Conditions: []kubeflowv1.JobCondition{
			cond(kubeflowv1.JobCreated, corev1.ConditionTrue), cond(kubeflowv1.JobRestarting, corev1.ConditionTrue),
		}}, cube.InProgress, "Restarting", false, false},
		{"suspended", kubeflowv1.JobStatus{Conditions: []kubeflowv1.JobCondition{
			cond(kubeflowv1.JobCreated, corev1.ConditionTrue), cond(kubeflowv1.JobRunning, corev1.ConditionFalse), cond(kubeflowv1.JobSuspended, corev1.ConditionTrue),
		}}, cube.InProgress, "Suspended", false, false},
		{"failed after suspension", kubeflowv1.JobStatus{CompletionTime: &now, Conditions: []kubeflowv1.JobCondition{
			cond(kubeflowv1.JobCreated, corev1.ConditionTrue), cond(kubeflowv1.JobSuspended, corev1.ConditionFalse),
			cond(kubeflowv1.JobRunning, corev1.ConditionFalse), cond(kubeflowv1.JobFailed, corev1.ConditionTrue),
		}}, cube.Failed, "PyTorchJobFailed", false, true},
		{"failed at the deadline before running", kubeflowv1.JobStatus{CompletionTime: &now, Conditions: []kubeflowv1.JobCondition{
			cond(kubeflowv1.JobCreated, corev1.ConditionTrue), cond(kubeflowv1.JobFailed, corev1.ConditionTrue),
		}}, cube.Failed, "PyTorchJobFailed", false, true},
		{"succeeded after a restart", kubeflowv1.JobStatus{CompletionTime: &now, Conditions: []kubeflowv1.JobCondition{
			cond(kubeflowv1.JobCreated, corev1.ConditionTrue), cond(kubeflowv1.JobSuspended, corev1.ConditionFalse),
			cond(kubeflowv1.JobRunning, corev1.ConditionFalse), cond(kubeflowv1.JobSucceeded, corev1.ConditionTrue),
		}}, cube.Succeeded, "PyTorchJobSucceeded", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := &kubeflowv1.PyTorchJob{Status: tc.status}
			u := toUnstructured(t, job, gvk)
			st := cube.ReadStatus(u, train.Kinds()...)
			assert.Equal(t, tc.phase, st.Phase)
			assert.Equal(t, tc.reason, st.Reason)
			succeeded, failed := argo(t, completion, u)
			assert.Equal(t, tc.succeeded, succeeded)
			assert.Equal(t, tc.failed, failed)
		})
	}
}

func TestVolcanoAndRayPhases(t *testing.T) {
	for _, tc := range []struct {
		phase  vcbatch.JobPhase
		want   cube.Phase
		reason string
	}{
		{"", cube.InProgress, "Pending"},
		{vcbatch.Pending, cube.InProgress, "Pending"},
		{vcbatch.Restarting, cube.InProgress, "Restarting"},
		{vcbatch.Completing, cube.InProgress, "Completing"},
		{vcbatch.Completed, cube.Succeeded, "Completed"},
		{vcbatch.Aborted, cube.Failed, "Aborted"},
		{vcbatch.Terminated, cube.Failed, "Terminated"},
		{vcbatch.Failed, cube.Failed, "Failed"},
	} {
		st := train.VolcanoJobStatus(&vcbatch.Job{Status: vcbatch.JobStatus{State: vcbatch.JobState{Phase: tc.phase}, Running: 2}})
		assert.Equal(t, tc.want, st.Phase, tc.phase)
		assert.Equal(t, tc.reason, st.Reason, tc.phase)
		assert.Equal(t, "2 running, 0 succeeded, 0 failed", st.Message)
	}
	for _, tc := range []struct {
		deploy rayv1.JobDeploymentStatus
		job    rayv1.JobStatus
		reason rayv1.JobFailedReason
		want   cube.Phase
		why    string
	}{
		{"", "", "", cube.InProgress, "New"},
		{rayv1.JobDeploymentStatusInitializing, "", "", cube.InProgress, "Initializing"},
		{rayv1.JobDeploymentStatusRunning, rayv1.JobStatusRunning, "", cube.InProgress, "Running"},
		{rayv1.JobDeploymentStatusComplete, rayv1.JobStatusSucceeded, "", cube.Succeeded, "SUCCEEDED"},
		{rayv1.JobDeploymentStatusComplete, rayv1.JobStatusStopped, "", cube.Failed, "STOPPED"},
		{rayv1.JobDeploymentStatusFailed, rayv1.JobStatusFailed, rayv1.DeadlineExceeded, cube.Failed, "DeadlineExceeded"},
		{rayv1.JobDeploymentStatusValidationFailed, "", "", cube.Failed, "ValidationFailed"},
		// KubeRay keeps a failed attempt's FAILED beside Retrying while the
		// backoffLimit allows another, and beside Running until the
		// submitter ends: neither is final.
		{rayv1.JobDeploymentStatusRetrying, rayv1.JobStatusFailed, rayv1.AppFailed, cube.InProgress, "Retrying"},
		{rayv1.JobDeploymentStatusRunning, rayv1.JobStatusFailed, "", cube.InProgress, "Running"},
		{rayv1.JobDeploymentStatusFailed, rayv1.JobStatusFailed, rayv1.AppFailed, cube.Failed, "AppFailed"},
	} {
		job := &rayv1.RayJob{Status: rayv1.RayJobStatus{JobDeploymentStatus: tc.deploy, JobStatus: tc.job, Reason: tc.reason}}
		st := train.RayJobStatus(job)
		assert.Equal(t, tc.want, st.Phase, "%s/%s", tc.deploy, tc.job)
		assert.Equal(t, tc.why, st.Reason, "%s/%s", tc.deploy, tc.job)
		u := toUnstructured(t, job, rayv1.GroupVersion.WithKind("RayJob"))
		completion, ok := cube.CompletionOf(train.RayJobKind, train.Kinds()...)
		require.True(t, ok)
		succeeded, failed := argo(t, completion, u)
		assert.Equal(t, tc.want == cube.Succeeded, succeeded, "%s/%s", tc.deploy, tc.job)
		assert.Equal(t, tc.want == cube.Failed, failed, "%s/%s", tc.deploy, tc.job)
	}
}

func TestUnreadableStatus(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": "not a list"}}}
	u.SetGroupVersionKind(kubeflowv1.SchemeGroupVersion.WithKind(kubeflowv1.TFJobKind))
	st := cube.ReadStatus(u, train.Kinds()...)
	assert.Equal(t, cube.Failed, st.Phase)
	assert.Equal(t, "Unreadable", st.Reason)
}
