package train_test

// Regression tests for what the upstream controllers do with cube's
// objects (issue 10, section 1). No operator runs here; each test names the
// upstream source whose behaviour it pins down, and the ones about status
// write it through the real API server's status subresource as the
// operator would.

import (
	"reflect"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcbus "volcano.sh/apis/pkg/apis/bus/v1alpha1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/retry"
	"github.com/cubestudio/cube/train"
)

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
