package train_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yamlv2 "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"
	sigsyaml "sigs.k8s.io/yaml"

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
