package train_test

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/retry"
	"github.com/cubestudio/cube/train"
)

// A fuzz program is a byte string read as: the builder kind, whether to
// start from a job that validates (a base), the release name, then
// method calls, each an index into the kind's method table followed by
// the bytes its arguments are drawn from. Arguments come from small
// dictionaries that mix valid values with the hostile ones a new user
// tries; bytes past the end read as zero.
type program = fuzzcorpus.Program

func pick[T any](p *program, values []T) T { return fuzzcorpus.Pick(p, values) }

var (
	fuzzInts      = []int{1, 2, 0, 3, 8, -1, 4, 16, 64, 65536, math.MaxInt32, math.MaxInt32 + 1, -7}
	fuzzStrings   = []string{"x", "team-a", "", "Bad Queue", "root", "/data", "relative", "a.b", "with space", "ünï", strings.Repeat("a", 70), "UPPER", "$(X)", "-1", "8", "lots"}
	fuzzNames     = []string{"job", "a-b", "Bad_Name", "1job", "", strings.Repeat("a", 50), "x"}
	fuzzKeys      = []string{"EPOCHS", "HF_TOKEN", "A=B", "", "team", "app.kubernetes.io/name", "bad key!", "OPENAI_API_KEY"}
	fuzzValues    = []string{"3", "hf_abcdefghijklmnopqrstuvwxyz", "", "bad value!", "sk-0123456789abcdefghij", strings.Repeat("v", 70), "/var/run/secrets/x"}
	fuzzQuantity  = []string{"1", "500m", "16Gi", "", "-1", "lots", "1e3", "0"}
	fuzzPaths     = []string{"/data", "/models", "relative", "", "/dev/shm", "/etc/deepspeed"}
	fuzzDurations = []time.Duration{time.Minute, 0, -time.Second, time.Hour, 90 * time.Second, time.Duration(math.MaxInt32+1) * time.Second, time.Nanosecond}
	fuzzProfiles  = []hardware.Profile{hardware.H100, hardware.CPU, hardware.Ascend910B3, hardware.T4, hardware.H100.PerNode(0), {}}
	fuzzFabrics   = []hardware.Fabric{{}, hardware.InfiniBand(), hardware.RoCE(), hardware.TCP()}
	fuzzRoles     = []kubeflowv1.ReplicaType{"Master", "Worker", "Launcher", "PS", "Chief", "Server", "Scheduler", "Evaluator", "Bogus"}
	fuzzCleanPods = []kubeflowv1.CleanPodPolicy{kubeflowv1.CleanPodPolicyRunning, kubeflowv1.CleanPodPolicyAll, kubeflowv1.CleanPodPolicyNone, "Sometimes"}
	fuzzRestarts  = []kubeflowv1.RestartPolicy{kubeflowv1.RestartPolicyOnFailure, kubeflowv1.RestartPolicyNever, kubeflowv1.RestartPolicyAlways, kubeflowv1.RestartPolicyExitCode, "Maybe"}
	fuzzPodRests  = []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever, corev1.RestartPolicyAlways, "Sometimes", ""}
	fuzzEvents    = []vcbus.Event{vcbus.PodEvictedEvent, vcbus.PodFailedEvent, vcbus.AnyEvent, vcbus.TaskCompletedEvent, vcbus.PodRunningEvent, "Boom"}
	fuzzActions   = []vcbus.Action{vcbus.RestartJobAction, vcbus.AbortJobAction, vcbus.CompleteJobAction, vcbus.RestartTaskAction, "Panic"}
	fuzzPlugins   = []string{train.PluginSSH, train.PluginEnv, train.PluginSvc, train.PluginHCCLRank, "pytorch", "mpi", "gossip"}
)

type op func(p *program)

// podOps are the pod settings every builder shares. Namespaces are empty
// or invalid, so that accepted jobs land in the test's namespace.
func podOps[T any](b *pod.Builder[T]) []op {
	str := func(p *program) string { return pick(p, fuzzStrings) }
	return []op{
		func(p *program) {
			b.Image(pick(p, []string{"registry.example.com/ml/train:1.0", "", "bad image", "busybox"}))
		},
		func(p *program) { b.Namespace(pick(p, []string{"", "Bad_NS"})) },
		func(p *program) { b.Label(pick(p, fuzzKeys), pick(p, fuzzValues)) },
		func(p *program) { b.Annotation(pick(p, fuzzKeys), pick(p, fuzzValues)) },
		func(p *program) { b.PartOf(pick(p, fuzzNames)) },
		func(p *program) {
			b.ImagePullPolicy(pick(p, []corev1.PullPolicy{corev1.PullIfNotPresent, corev1.PullAlways, "Sometimes"}))
		},
		func(p *program) { b.Command(str(p), str(p)) },
		func(p *program) { b.Args(str(p)) },
		func(p *program) { b.AddArgs(str(p), str(p)) },
		func(p *program) { b.WorkingDir(pick(p, fuzzPaths)) },
		func(p *program) { b.Env(pick(p, fuzzKeys), pick(p, fuzzValues)) },
		func(p *program) {
			b.EnvFromSecret(pick(p, fuzzKeys), pod.SecretKeyRef{Name: pick(p, fuzzNames), Key: pick(p, []string{"token", ""})})
		},
		func(p *program) {
			b.EnvFromField(pick(p, fuzzKeys), pick(p, []string{"status.podIP", "metadata.name"}))
		},
		func(p *program) { b.EnvFromSecretAll(pick(p, fuzzNames)) },
		func(p *program) { b.EnvFromConfigMap(pick(p, fuzzNames)) },
		func(p *program) { b.CPU(pick(p, fuzzQuantity)) },
		func(p *program) { b.Memory(pick(p, fuzzQuantity)) },
		func(p *program) { b.Request(corev1.ResourceEphemeralStorage, pick(p, fuzzQuantity)) },
		func(p *program) { b.Limit(corev1.ResourceMemory, pick(p, fuzzQuantity)) },
		func(p *program) { b.On(pick(p, fuzzProfiles)) },
		func(p *program) { b.Accelerators(pick(p, fuzzInts)) },
		func(p *program) { b.Slice(nil) },
		func(p *program) { b.Fabric(pick(p, fuzzFabrics)) },
		func(p *program) { b.SharedMemory(pick(p, fuzzQuantity)) },
		func(p *program) { b.PVC(pick(p, fuzzNames), pick(p, fuzzPaths)) },
		func(p *program) { b.PVCSubPath(pick(p, fuzzNames), str(p), pick(p, fuzzPaths)) },
		func(p *program) { b.HostPath(pick(p, fuzzPaths), pick(p, fuzzPaths)) },
		func(p *program) { b.NFS(str(p), pick(p, fuzzPaths), pick(p, fuzzPaths)) },
		func(p *program) { b.ConfigMapVolume(pick(p, fuzzNames), pick(p, fuzzPaths)) },
		func(p *program) { b.SecretVolume(pick(p, fuzzNames), pick(p, fuzzPaths)) },
		func(p *program) { b.EmptyDir(pick(p, fuzzNames), pick(p, fuzzPaths)) },
		func(p *program) { b.NodeSelector(pick(p, fuzzKeys), pick(p, fuzzValues)) },
		func(p *program) {
			b.AddToleration(corev1.Toleration{Key: pick(p, fuzzKeys), Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
		},
		func(p *program) { b.Affinity(nil) },
		func(p *program) { b.PriorityClass(pick(p, fuzzNames)) },
		func(p *program) { b.ServiceAccount(pick(p, fuzzNames)) },
		func(p *program) { b.ImagePullSecret(pick(p, fuzzNames)) },
		func(p *program) { b.Scheduler(pick(p, []string{train.VolcanoScheduler, "", "default-scheduler"})) },
		func(p *program) { b.Queue(str(p)) },
		func(p *program) { b.PodLabel(pick(p, fuzzKeys), pick(p, fuzzValues)) },
		func(p *program) { b.PodAnnotation(pick(p, fuzzKeys), pick(p, fuzzValues)) },
		func(p *program) { b.PodSecurityContext(nil) },
		func(p *program) { b.SecurityContext(nil) },
		func(p *program) { b.Port(pick(p, []string{"http", "", "Bad Port"}), int32(pick(p, fuzzInts))) },
		func(p *program) { b.HostNetwork(p.Byte()%2 == 0) },
	}
}

func lifecycleOps[T any](l *train.Lifecycle[T]) []op {
	return []op{
		func(p *program) { l.TTLAfterFinished(pick(p, fuzzDurations)) },
		func(p *program) { l.ActiveDeadline(pick(p, fuzzDurations)) },
		func(p *program) { l.Retry(retry.Policy{Limit: pick(p, fuzzInts), Backoff: pick(p, fuzzDurations)}) },
		func(p *program) { l.Suspend(p.Byte()%2 == 0) },
	}
}

func runPolicyOps[T any](r *train.RunPolicy[T]) []op {
	return append(lifecycleOps(&r.Lifecycle), []op{
		func(p *program) { r.CleanPodPolicy(pick(p, fuzzCleanPods)) },
		func(p *program) { r.RestartPolicy(pick(p, fuzzRestarts)) },
		func(p *program) { r.Gang() },
		func(p *program) { r.GangMinAvailable(pick(p, fuzzInts)) },
	}...)
}

// torchOps are the methods PyTorch, DeepSpeed and ColossalAI share.
type torchBuilder[T any] interface {
	Workers(int) *T
	Nodes(int) *T
	Elastic(int, int) *T
	Rendezvous(kubeflowv1.RDZVBackend, string, int) *T
	RendezvousConf(string, string) *T
	ElasticRetry(retry.Policy) *T
	NprocPerNode(int) *T
	RoleResources(kubeflowv1.ReplicaType, string, string) *T
}

func torchOps[T any](b torchBuilder[T]) []op {
	return []op{
		func(p *program) { b.Workers(pick(p, fuzzInts)) },
		func(p *program) { b.Nodes(pick(p, fuzzInts)) },
		func(p *program) { b.Elastic(pick(p, fuzzInts), pick(p, fuzzInts)) },
		func(p *program) {
			b.Rendezvous(pick(p, []kubeflowv1.RDZVBackend{kubeflowv1.BackendC10D, kubeflowv1.BackendETCD, "zookeeper"}), pick(p, fuzzStrings), pick(p, []int{0, 29400, -1, 70000}))
		},
		func(p *program) { b.RendezvousConf(pick(p, fuzzKeys), pick(p, fuzzValues)) },
		func(p *program) { b.ElasticRetry(retry.Policy{Limit: pick(p, fuzzInts)}) },
		func(p *program) { b.NprocPerNode(pick(p, fuzzInts)) },
		func(p *program) { b.RoleResources(pick(p, fuzzRoles), pick(p, fuzzQuantity), pick(p, fuzzQuantity)) },
	}
}

// fuzzKinds make each builder (a base that validates or a bare one) and
// its method table. The last two kinds are a zero value and a nil pointer.
var fuzzKinds = []func(name string, base bool) (cube.Workload, []op){
	func(name string, base bool) (cube.Workload, []op) {
		j := train.PyTorch(name)
		if base {
			j.Image(trainImage).Torchrun("train.py")
		}
		return j, concat(podOps(&j.Builder), runPolicyOps(&j.RunPolicy), torchOps[train.PyTorchJob](j),
			[]op{func(p *program) { j.Torchrun(pick(p, fuzzStrings), pick(p, fuzzStrings)) }})
	},
	func(name string, base bool) (cube.Workload, []op) {
		j := train.DeepSpeed(name)
		if base {
			j.Image(trainImage).Torchrun("train.py")
		}
		return j, concat(podOps(&j.Builder), runPolicyOps(&j.RunPolicy), torchOps[train.DeepSpeedJob](j), []op{
			func(p *program) { j.Torchrun(pick(p, fuzzStrings)) },
			func(p *program) {
				j.Config(train.DeepSpeedConfig{
					ZeROStage: pick(p, []int{0, 1, 2, 3, 4, -1}), MicroBatchPerGPU: pick(p, fuzzInts), GradientAccumulation: pick(p, fuzzInts),
					Precision:        pick(p, []train.Precision{train.BF16, train.FP16, train.FP32, "fp8"}),
					OffloadOptimizer: train.Offload{Device: pick(p, []train.OffloadDevice{train.OffloadNone, train.OffloadCPU, train.OffloadNVMe, "tape"}), NVMePath: pick(p, fuzzPaths)},
					OffloadParams:    train.Offload{Device: pick(p, []train.OffloadDevice{train.OffloadNone, train.OffloadCPU, train.OffloadNVMe}), NVMePath: pick(p, fuzzPaths)},
					GradientClipping: float64(pick(p, fuzzInts)),
				})
			},
		})
	},
	func(name string, base bool) (cube.Workload, []op) {
		j := train.ColossalAI(name)
		if base {
			j.Image(trainImage).Script("train.py")
		}
		return j, concat(podOps(&j.Builder), runPolicyOps(&j.RunPolicy), torchOps[train.ColossalAIJob](j), []op{
			func(p *program) { j.Script(pick(p, fuzzStrings), pick(p, fuzzStrings)) },
			func(p *program) {
				j.Plugin(pick(p, []train.ColossalAIPlugin{train.PluginDDP, train.PluginZeRO, train.PluginGemini, train.PluginHybridParallel, "fsdp"}))
			},
			func(p *program) { j.ZeROStage(pick(p, fuzzInts)) },
			func(p *program) { j.TensorParallel(pick(p, fuzzInts)) },
			func(p *program) { j.PipelineParallel(pick(p, fuzzInts)) },
			func(p *program) {
				j.Launcher(pick(p, []train.ColossalAILauncher{train.LaunchTorchrun, train.LaunchColossalAI, "mpirun"}))
			},
		})
	},
	func(name string, base bool) (cube.Workload, []op) {
		j := train.TensorFlow(name)
		if base {
			j.Image(trainImage).Command("python", "train.py")
		}
		return j, concat(podOps(&j.Builder), runPolicyOps(&j.RunPolicy), []op{
			func(p *program) { j.Workers(pick(p, fuzzInts)) },
			func(p *program) { j.ParameterServers(pick(p, fuzzInts)) },
			func(p *program) { j.Chief() },
			func(p *program) { j.Evaluator() },
			func(p *program) { j.SucceedWhenAllWorkersSucceed() },
			func(p *program) { j.RoleResources(pick(p, fuzzRoles), pick(p, fuzzQuantity), pick(p, fuzzQuantity)) },
		})
	},
	func(name string, base bool) (cube.Workload, []op) {
		j := train.MPI(name)
		if name == "x" {
			j = train.Horovod(name)
		}
		if base {
			j.Image(trainImage).Command("python", "allreduce.py")
		}
		return j, concat(podOps(&j.Builder), runPolicyOps(&j.RunPolicy), []op{
			func(p *program) { j.Workers(pick(p, fuzzInts)) },
			func(p *program) { j.SlotsPerWorker(pick(p, fuzzInts)) },
			func(p *program) { j.MPIRunArgs(pick(p, fuzzStrings)) },
			func(p *program) { j.LauncherServiceAccount(pick(p, fuzzNames)) },
			func(p *program) { j.RoleResources(pick(p, fuzzRoles), pick(p, fuzzQuantity), pick(p, fuzzQuantity)) },
		})
	},
	func(name string, base bool) (cube.Workload, []op) {
		j := train.Paddle(name)
		if base {
			j.Image(trainImage).Launch("train.py")
		}
		return j, concat(podOps(&j.Builder), runPolicyOps(&j.RunPolicy), []op{
			func(p *program) { j.Workers(pick(p, fuzzInts)) },
			func(p *program) { j.ParameterServers(pick(p, fuzzInts)) },
			func(p *program) { j.Launch(pick(p, fuzzStrings), pick(p, fuzzStrings)) },
			func(p *program) { j.RoleResources(pick(p, fuzzRoles), pick(p, fuzzQuantity), pick(p, fuzzQuantity)) },
		})
	},
	func(name string, base bool) (cube.Workload, []op) {
		j := train.XGBoost(name)
		if base {
			j.Image(trainImage).Command("python", "xgb.py")
		}
		return j, concat(podOps(&j.Builder), runPolicyOps(&j.RunPolicy), []op{
			func(p *program) { j.Workers(pick(p, fuzzInts)) },
			func(p *program) { j.Nodes(pick(p, fuzzInts)) },
			func(p *program) { j.RoleResources(pick(p, fuzzRoles), pick(p, fuzzQuantity), pick(p, fuzzQuantity)) },
		})
	},
	func(name string, base bool) (cube.Workload, []op) {
		j := train.MXNet(name)
		if base {
			j.Image(trainImage).Command("python", "mx.py")
		}
		return j, concat(podOps(&j.Builder), runPolicyOps(&j.RunPolicy), []op{
			func(p *program) { j.Workers(pick(p, fuzzInts)) },
			func(p *program) { j.Servers(pick(p, fuzzInts)) },
			func(p *program) { j.RoleResources(pick(p, fuzzRoles), pick(p, fuzzQuantity), pick(p, fuzzQuantity)) },
		})
	},
	func(name string, base bool) (cube.Workload, []op) {
		j := train.Ray(name)
		if base {
			j.Image("rayproject/ray:2.40.0").Entrypoint("python train.py").WorkerGroup("workers", 1)
		}
		return j, concat(podOps(&j.Builder), lifecycleOps(&j.Lifecycle), []op{
			func(p *program) { j.Entrypoint(pick(p, fuzzStrings)) },
			func(p *program) {
				j.RuntimeEnv(train.RuntimeEnv{WorkingDir: pick(p, fuzzPaths), Pip: []string{pick(p, fuzzStrings)}, EnvVars: map[string]string{pick(p, fuzzKeys): pick(p, fuzzValues)}})
			},
			func(p *program) { j.WorkerGroup(pick(p, fuzzNames), pick(p, fuzzInts)) },
			func(p *program) {
				j.AutoscaledWorkerGroup(pick(p, fuzzNames), pick(p, fuzzInts), pick(p, fuzzInts), pick(p, fuzzInts))
			},
			func(p *program) { j.KeepClusterAfterFinish() },
			func(p *program) { j.RayVersion(pick(p, []string{"2.40.0", "", "latest"})) },
			func(p *program) { j.HeadAccelerators(pick(p, fuzzInts)) },
			func(p *program) { j.HeadResources(pick(p, fuzzQuantity), pick(p, fuzzQuantity)) },
			func(p *program) { j.Gang() },
		})
	},
	func(name string, base bool) (cube.Workload, []op) {
		j := train.Volcano(name)
		if base {
			j.Image(trainImage).Command("python", "train.py").Task("worker", 2)
		}
		return j, concat(podOps(&j.Builder), []op{
			func(p *program) { j.Task(pick(p, fuzzNames), pick(p, fuzzInts)) },
			func(p *program) {
				min := pick(p, fuzzInts)
				j.AddTask(train.VolcanoTask{
					Name: pick(p, []string{"launcher", "ps", "Bad Task", ""}), Replicas: pick(p, fuzzInts), MinAvailable: &min,
					Command: []string{pick(p, fuzzStrings)}, NoAccelerators: p.Byte()%2 == 0,
					CPU: pick(p, fuzzQuantity), Memory: pick(p, fuzzQuantity), Retry: &retry.Policy{Limit: pick(p, fuzzInts)},
					RestartPolicy: pick(p, fuzzPodRests),
					Policies:      []vcbatch.LifecyclePolicy{{Event: pick(p, fuzzEvents), Action: pick(p, fuzzActions)}},
				})
			},
			func(p *program) { j.MinAvailable(pick(p, fuzzInts)) },
			func(p *program) { j.Plugin(pick(p, fuzzPlugins), pick(p, fuzzStrings)) },
			func(p *program) { j.RemovePlugin(pick(p, fuzzPlugins)) },
			func(p *program) { j.Policy(pick(p, fuzzEvents), pick(p, fuzzActions)) },
			func(p *program) { j.Retry(retry.Policy{Limit: pick(p, fuzzInts)}) },
			func(p *program) { j.TTLAfterFinished(pick(p, fuzzDurations)) },
			func(p *program) { j.RestartPolicy(pick(p, fuzzPodRests)) },
		})
	},
	// A zero value: its chained pod methods return nil, so the calls go
	// to the value itself.
	func(string, bool) (cube.Workload, []op) {
		j := &train.PyTorchJob{}
		return j, concat(podOps(&j.Builder), runPolicyOps(&j.RunPolicy), torchOps[train.PyTorchJob](j))
	},
	func(string, bool) (cube.Workload, []op) { return (*train.VolcanoJob)(nil), nil },
}

func concat(lists ...[]op) []op {
	var out []op
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// maxCalls bounds a program's method calls.
const maxCalls = 48

// run interprets a program.
func run(data []byte) cube.Workload {
	p := fuzzcorpus.NewProgram(data)
	kind := fuzzKinds[int(p.Byte())%len(fuzzKinds)]
	base := p.Byte()%4 != 0
	w, ops := kind(pick(p, fuzzNames), base)
	for calls := 0; len(ops) > 0 && !p.Done() && calls < maxCalls; calls++ {
		ops[int(p.Byte())%len(ops)](p)
	}
	return w
}

// FuzzBuilders drives the train builders through random method calls
// with random arguments: nothing panics, Objects answers the same twice
// (fresh objects, the same YAML, or the same errors, every one with a
// field path). TestFuzzCorpusApplies checks the accepted programs against
// the API server.
func FuzzBuilders(f *testing.F) {
	for _, seed := range fuzzSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w := run(data)
		first, err1 := w.Objects()
		second, err2 := w.Objects()
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("Objects answered %v, then %v", err1, err2)
		}
		if err1 != nil {
			if err1.Error() != err2.Error() {
				t.Fatalf("Objects reported %q, then %q", err1, err2)
			}
			var agg utilerrors.Aggregate
			if !errors.As(err1, &agg) {
				t.Fatalf("not an aggregate of field errors: %v", err1)
			}
			for _, e := range agg.Errors() {
				if strings.HasPrefix(e.Error(), ": ") || strings.Contains(e.Error(), "hf_abcdefghijklmnopqrstuvwxyz") || strings.Contains(e.Error(), "sk-0123456789") {
					t.Fatalf("an error without a field path, or repeating a secret: %v", e)
				}
			}
			return
		}
		if len(first) == 0 {
			t.Fatal("accepted with no objects")
		}
		var a, b bytes.Buffer
		if err := cube.Render(&a, cube.Objects(first...)); err != nil {
			t.Fatalf("render: %v", err)
		}
		if err := cube.Render(&b, cube.Objects(second...)); err != nil {
			t.Fatalf("render: %v", err)
		}
		if a.String() != b.String() {
			t.Fatal("two Objects calls rendered differently")
		}
		for i := range first {
			if first[i] == second[i] {
				t.Fatal("Objects returned the same object twice")
			}
		}
	})
}

// fuzzSeeds are programs that reach every builder and much of its method
// table; most are accepted.
var fuzzSeeds = func() [][]byte {
	var seeds [][]byte
	for kind := range fuzzKinds {
		seeds = append(seeds, []byte{byte(kind), 1, 0})
		// The hardware, a fabric, GPUs and a queue with gang scheduling.
		seeds = append(seeds, []byte{byte(kind), 1, 0, 19, 0, 20, 3, 22, 1, 38, 1})
	}
	return seeds
}()

// fuzzCorpus returns the seeds, the programs go test -fuzz saved under
// testdata/fuzz/FuzzBuilders, and n pseudo-random programs (fixed seed).
func fuzzCorpus(t *testing.T, n int) [][]byte {
	corpus := append([][]byte{}, fuzzSeeds...)
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzBuilders", "*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		// go test fuzz v1 / []byte("...")
		lines := strings.SplitN(string(data), "\n", 3)
		require.GreaterOrEqual(t, len(lines), 2, f)
		quoted := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(lines[1]), "[]byte("), ")")
		s, err := strconv.Unquote(quoted)
		require.NoError(t, err, f)
		corpus = append(corpus, []byte(s))
	}
	rng := rand.New(rand.NewPCG(10, 1))
	for range n {
		prog := make([]byte, 3+rng.IntN(12))
		for i := range prog {
			prog[i] = byte(rng.IntN(256))
		}
		prog[1] = 1 // start from a base job, so that many are accepted
		corpus = append(corpus, prog)
	}
	return corpus
}

// TestFuzzCorpusApplies runs the fuzz corpus and applies every program
// Objects accepts to the API server (a server-side dry run, strict field
// validation): what cube accepts, the server accepts.
func TestFuzzCorpusApplies(t *testing.T) {
	c, _, _ := newClient(t)
	accepted := 0
	corpus := fuzzCorpus(t, 600)
	for i, prog := range corpus {
		w := run(prog)
		if _, err := w.Objects(); err != nil {
			continue
		}
		accepted++
		_, err := c.Apply(t.Context(), w, cube.DryRun)
		assert.NoError(t, err, "program %d %q", i, prog)
	}
	t.Logf("%d of %d programs accepted and applied", accepted, len(corpus))
	assert.Greater(t, accepted, len(corpus)/10, "the corpus exercises accepted jobs")
}
