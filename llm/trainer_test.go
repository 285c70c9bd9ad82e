package llm_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/contract"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/retry"
	"github.com/cubestudio/cube/train"
	trainer "github.com/cubestudio/cube/train/trainerv1alpha1"
)

// launcherEnv is what LLaMA-Factory's launcher reads to start torchrun
// itself when FORCE_TORCHRUN is set (launch(): NNODES, NODE_RANK,
// NPROC_PER_NODE, MASTER_ADDR, MASTER_PORT; src/llamafactory/launcher.py
// at v0.9.5, cli.py in later versions, which read the same names).
var launcherEnv = []string{"NNODES", "NODE_RANK", "NPROC_PER_NODE", "MASTER_ADDR", "MASTER_PORT"}

// trainerTorchEnv reads the names of the variables Kubeflow Trainer
// v2.3.0's torch plugin sets on the trainer's container from its source
// (pkg/constants/constants.go, TorchEnv*), downloaded at that version.
func trainerTorchEnv(t *testing.T) []string {
	t.Helper()
	dir, err := contract.ModuleDir("github.com/kubeflow/trainer/v2@v2.3.0")
	require.NoError(t, err)
	src, err := os.ReadFile(filepath.Join(dir, "pkg", "constants", "constants.go"))
	require.NoError(t, err)
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s*TorchEnv\w+\s+string\s*=\s*"(\w+)"`).FindAllStringSubmatch(string(src), -1) {
		names = append(names, m[1])
	}
	require.NotEmpty(t, names, "no TorchEnv constants in pkg/constants/constants.go")
	return names
}

// launchProblems checks a launch command against the launcher's and the
// Trainer's variables: every $(VAR) it expands must be one the Trainer
// sets, and `env` must give the launcher every variable it reads.
func launchProblems(cmd []string, setByTrainer []string) []string {
	var problems []string
	given := map[string]bool{}
	for _, a := range cmd[1:] {
		name, value, ok := strings.Cut(a, "=")
		if !ok {
			break
		}
		given[name] = true
		for _, m := range regexp.MustCompile(`\$\((\w+)\)`).FindAllStringSubmatch(value, -1) {
			if !slices.Contains(setByTrainer, m[1]) {
				problems = append(problems, name+" expands $("+m[1]+"), which the Trainer does not set")
			}
		}
	}
	for _, v := range launcherEnv {
		if !given[v] {
			problems = append(problems, "the launcher reads "+v+", which the command does not set")
		}
	}
	return problems
}

// trainJobOf returns the TrainJob among a fine-tune's objects.
func trainJobOf(t *testing.T, objs []client.Object) *trainer.TrainJob {
	t.Helper()
	for _, o := range objs {
		if j, ok := o.(*trainer.TrainJob); ok {
			return j
		}
	}
	t.Fatalf("no TrainJob among %d objects", len(objs))
	return nil
}

// A fine-tune on Trainer v2 starts LLaMA-Factory's launcher with the
// torchrun variables it reads, each taken from one the Trainer's torch
// plugin sets; the training-operator's launch command would leave
// MASTER_ADDR and MASTER_PORT to the launcher's defaults (127.0.0.1 and a
// random port), and the check says so.
func TestTrainerLaunchKeepsTheContract(t *testing.T) {
	setByTrainer := trainerTorchEnv(t)
	assert.Subset(t, setByTrainer, []string{"PET_NNODES", "PET_NPROC_PER_NODE", "PET_NODE_RANK", "PET_MASTER_ADDR", "PET_MASTER_PORT"})
	f := llm.SFT("sft", qwen).AddDataset(alpaca).Output("pvc://models/sft").Runtime("torch-h100", train.FrameworkTorch)
	f.Job().On(hardware.H100).Accelerators(8).Nodes(2)
	objs, err := f.Objects()
	require.NoError(t, err)
	j := trainJobOf(t, objs)
	assert.Equal(t, llm.TrainerLaunchCommand("train", llm.ConfigFile), j.Spec.Trainer.Command)
	assert.Empty(t, launchProblems(j.Spec.Trainer.Command, setByTrainer))
	assert.Equal(t, []string{
		"NNODES expands $(PET_NNODES), which the Trainer does not set",
	}, launchProblems([]string{"env", "NNODES=$(PET_NNODES)", "NODE_RANK=$(PET_NODE_RANK)", "NPROC_PER_NODE=$(PET_NPROC_PER_NODE)",
		"MASTER_ADDR=$(PET_MASTER_ADDR)", "MASTER_PORT=$(PET_MASTER_PORT)", "llamafactory-cli"}, []string{"PET_NODE_RANK", "PET_NPROC_PER_NODE", "PET_MASTER_ADDR", "PET_MASTER_PORT"}))
	assert.Equal(t, []string{
		"the launcher reads MASTER_ADDR, which the command does not set",
		"the launcher reads MASTER_PORT, which the command does not set",
	}, launchProblems(llm.LaunchCommand("train", llm.ConfigFile), setByTrainer))
}

// What the PyTorchJob and the TrainJob of the same fine-tune share: the
// two ConfigMaps, the image, the pod counts, the resources, the env; the
// TrainJob mounts the ConfigMaps and the output claim on the trainer's
// node container through cube's runtime patch.
func TestTrainerTargetMatchesThePyTorchJob(t *testing.T) {
	build := func(runtime bool) []client.Object {
		f := builders[0].build("sft")
		if runtime {
			f.Runtime("torch-h100", train.FrameworkTorch)
		}
		f.Job().On(hardware.H100).Accelerators(8).CPU("96").Memory("1600Gi").Nodes(3).Namespace("team").LocalQueue("team-a")
		objs, err := f.Objects()
		require.NoError(t, err)
		return objs
	}
	v1, v2 := build(false), build(true)
	require.Len(t, v2, 3)
	assert.Equal(t, v1[:2], v2[:2], "the LLaMA-Factory and DeepSpeed ConfigMaps")
	pj := v1[2].(*kubeflowv1.PyTorchJob)
	master := pj.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster].Template.Spec
	j := trainJobOf(t, v2)

	assert.Equal(t, "team", j.Namespace)
	assert.Equal(t, "team-a", j.Labels["kueue.x-k8s.io/queue-name"])
	assert.Equal(t, "torch-h100", j.Spec.RuntimeRef.Name)
	assert.Equal(t, master.Containers[0].Image, *j.Spec.Trainer.Image)
	assert.Equal(t, int32(3), *j.Spec.Trainer.NumNodes)
	assert.Equal(t, int32(8), *j.Spec.Trainer.NumProcPerNode)
	assert.Equal(t, master.Containers[0].Resources, *j.Spec.Trainer.ResourcesPerNode)
	for _, e := range j.Spec.Trainer.Env {
		assert.Contains(t, master.Containers[0].Env, e)
	}
	var envNames []string
	for _, e := range j.Spec.Trainer.Env {
		envNames = append(envNames, e.Name)
	}
	assert.Contains(t, envNames, "FORCE_TORCHRUN")
	assert.Contains(t, envNames, "HF_TOKEN")

	require.Len(t, j.Spec.RuntimePatches, 1)
	rjs := j.Spec.RuntimePatches[0].TrainingRuntimeSpec.Template.Spec.ReplicatedJobs
	require.Len(t, rjs, 1)
	ps := rjs[0].Template.Spec.Template.Spec
	require.Len(t, ps.Containers, 1)
	assert.Equal(t, trainer.Node, ps.Containers[0].Name)
	assert.Empty(t, ps.Containers[0].Env, "the Trainer's webhook refuses env on the node container's patch")
	mounts := map[string]string{}
	for _, m := range ps.Containers[0].VolumeMounts {
		mounts[m.MountPath] = m.Name
	}
	for _, m := range master.Containers[0].VolumeMounts {
		assert.Equal(t, m.Name, mounts[m.MountPath], "mount %s", m.MountPath)
	}
	assert.ElementsMatch(t, master.Volumes, ps.Volumes)
}

// What a TrainJob cannot carry is refused, under the job's field paths,
// all at once; nothing panics on a nil fine-tune.
func TestTrainerTargetRefusals(t *testing.T) {
	base := func() *llm.FineTune {
		return llm.SFT("sft", qwen).AddDataset(alpaca).Output("pvc://models/sft").Runtime("torch-cpu", train.FrameworkTorch)
	}
	cases := map[string]struct {
		f    func() *llm.FineTune
		want []string
	}{
		"a deepspeed runtime": {func() *llm.FineTune { return base().Runtime("ds", train.FrameworkDeepSpeed) },
			[]string{"runtime.framework: Invalid value: \"deepspeed\": LLaMA-Factory starts torchrun itself"}},
		"run policy": {func() *llm.FineTune {
			f := base()
			f.Job().CleanPodPolicy(kubeflowv1.CleanPodPolicyNone).TTLAfterFinished(time.Hour).Retry(retry.Policy{Limit: 2}).Gang()
			return f
		}, []string{
			"job.spec.runPolicy.ttlSecondsAfterFinished: Forbidden: a TrainJob of Kubeflow Trainer v2.3.0 has no TTLAfterFinished",
			"job.spec.runPolicy.backoffLimit: Forbidden: a TrainJob of Kubeflow Trainer v2.3.0 has no Retry",
			"job.spec.runPolicy.schedulingPolicy: Forbidden",
			"job.spec.runPolicy.cleanPodPolicy: Forbidden",
		}},
		"restart policy and role resources": {func() *llm.FineTune {
			f := base()
			f.Job().RestartPolicy(kubeflowv1.RestartPolicyNever).RoleResources(kubeflowv1.PyTorchJobReplicaTypeWorker, "4", "8Gi")
			return f
		}, []string{
			"job.spec.pytorchReplicaSpecs[Master].restartPolicy: Forbidden",
			"job.spec.pytorchReplicaSpecs[Worker].template.spec.containers[0].resources: Forbidden",
		}},
		"a pod setting the TrainJob refuses": {func() *llm.FineTune {
			f := base()
			f.Job().Scheduler("volcano").PriorityClass("high")
			return f
		}, []string{"job.spec.trainer.schedulerName: Forbidden", "job.spec.trainer.priorityClassName: Forbidden"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := c.f().Objects()
			require.Error(t, err)
			for _, w := range c.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	var nilFT *llm.FineTune
	_, err := nilFT.Runtime("x", train.FrameworkTorch).Objects()
	assert.ErrorContains(t, err, "llm.FineTune: Required value")

	// ActiveDeadline and Suspend are a TrainJob's own.
	f := base()
	f.Job().ActiveDeadline(90 * time.Minute).Suspend(true)
	objs, err := f.Objects()
	require.NoError(t, err)
	j := trainJobOf(t, objs)
	assert.Equal(t, int64(5400), j.Spec.ActiveDeadlineSeconds)
	assert.True(t, *j.Spec.Suspend)
	// A command of the caller's is kept.
	f = base()
	f.Job().Command("python3", "-m", "mine")
	objs, err = f.Objects()
	require.NoError(t, err)
	assert.Equal(t, []string{"python3", "-m", "mine"}, trainJobOf(t, objs).Spec.Trainer.Command)
}
