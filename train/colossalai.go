package train

import (
	"fmt"
	"slices"
	"strconv"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pod"
)

// ColossalAIPlugin is the ColossalAI booster plugin a script builds,
// passed to it as --plugin.
type ColossalAIPlugin string

// Booster plugins.
const (
	// PluginDDP is TorchDDPPlugin: plain data parallelism.
	PluginDDP ColossalAIPlugin = "torch_ddp"
	// PluginZeRO is LowLevelZeroPlugin: ZeRO stage 1 or 2 (--zero_stage).
	PluginZeRO ColossalAIPlugin = "low_level_zero"
	// PluginGemini is GeminiPlugin: ZeRO-3 with chunked heterogeneous memory.
	PluginGemini ColossalAIPlugin = "gemini"
	// PluginHybridParallel is HybridParallelPlugin: tensor × pipeline ×
	// data parallelism (--tp_size, --pp_size, --zero_stage).
	PluginHybridParallel ColossalAIPlugin = "hybrid_parallel"
)

// ColossalAILauncher starts the processes of each replica.
type ColossalAILauncher string

// Launchers.
const (
	// LaunchTorchrun runs TorchrunCommand (the default; also for elastic jobs).
	LaunchTorchrun ColossalAILauncher = "torchrun"
	// LaunchColossalAI runs ColossalAIRunCommand (`colossalai run`), which
	// needs the Master of a non-elastic job.
	LaunchColossalAI ColossalAILauncher = "colossalai"
)

// ColossalAIJob builds a ColossalAI run as a training-operator PyTorchJob
// whose replicas launch the script with torchrun or `colossalai run`, and
// pass the booster plugin and its parallel sizes as arguments:
//
//	--plugin torch_ddp | low_level_zero --zero_stage N | gemini |
//	hybrid_parallel --tp_size N --pp_size N --zero_stage N
//
// Its settings are its own methods below (RoleResources and the ColossalAI
// ones; Script and Launcher take the place of PyTorchJob's Torchrun), every
// torchrun setting (go doc train.Torch), every pod setting (go doc
// pod.Builder; Command and Args are replaced by the launcher's) and every
// run-policy setting (go doc train.RunPolicy and go doc train.Lifecycle).
// Create one with ColossalAI.
type ColossalAIJob struct {
	pod.Builder[ColossalAIJob]
	RunPolicy[ColossalAIJob]
	Torch[ColossalAIJob]
	roles     roleResources
	script    string
	args      []string
	plugin    ColossalAIPlugin
	zeroStage *int
	tp, pp    int
	launcher  ColossalAILauncher
}

// ColossalAI starts a ColossalAI job named name with one Master and one
// Worker, the DDP plugin and torchrun.
func ColossalAI(name string) *ColossalAIJob {
	j := &ColossalAIJob{plugin: PluginDDP, tp: 1, pp: 1, launcher: LaunchTorchrun}
	initOperator(j, &j.Builder, &j.RunPolicy, "colossalaijob", name)
	j.initTorch(j)
	return j
}

func (j *ColossalAIJob) operator() operator[ColossalAIJob] {
	return operator[ColossalAIJob]{pod: &j.Builder, run: &j.RunPolicy, roles: j.roles}
}

// RoleResources gives the Master or the Worker role its own CPU and
// memory, as TFJob.RoleResources.
func (j *ColossalAIJob) RoleResources(role kubeflowv1.ReplicaType, cpu, memory string) *ColossalAIJob {
	if j == nil {
		return nil
	}
	j.roles.set(role, cpu, memory)
	return j
}

// Script sets the training script and its own arguments; the plugin
// arguments follow them.
func (j *ColossalAIJob) Script(script string, args ...string) *ColossalAIJob {
	if j == nil {
		return nil
	}
	j.script, j.args = script, slices.Clone(args)
	return j
}

// Plugin sets the booster plugin (default PluginDDP).
func (j *ColossalAIJob) Plugin(p ColossalAIPlugin) *ColossalAIJob {
	if j == nil {
		return nil
	}
	j.plugin = p
	return j
}

// ZeROStage sets --zero_stage: 1 or 2 for PluginZeRO (default 2), 0 to 2
// for PluginHybridParallel (default 0; at most 1 with pipeline stages).
func (j *ColossalAIJob) ZeROStage(n int) *ColossalAIJob {
	if j == nil {
		return nil
	}
	j.zeroStage = &n
	return j
}

// TensorParallel sets --tp_size for PluginHybridParallel (default 1).
func (j *ColossalAIJob) TensorParallel(n int) *ColossalAIJob {
	if j == nil {
		return nil
	}
	j.tp = n
	return j
}

// PipelineParallel sets --pp_size for PluginHybridParallel (default 1).
func (j *ColossalAIJob) PipelineParallel(n int) *ColossalAIJob {
	if j == nil {
		return nil
	}
	j.pp = n
	return j
}

// Launcher chooses torchrun (default) or `colossalai run`.
func (j *ColossalAIJob) Launcher(l ColossalAILauncher) *ColossalAIJob {
	if j == nil {
		return nil
	}
	j.launcher = l
	return j
}

// pluginArgs renders the plugin's arguments for a world of world
// processes (0 when elastic: the size is not known).
func (j *ColossalAIJob) pluginArgs(world int) ([]string, field.ErrorList) {
	var errs field.ErrorList
	p := field.NewPath("plugin")
	args := []string{"--plugin", string(j.plugin)}
	stage := func(def, lo, hi int) int {
		s := def
		if j.zeroStage != nil {
			s = *j.zeroStage
		}
		if s < lo || s > hi {
			errs = append(errs, field.Invalid(p.Child("zeroStage"), s, fmt.Sprintf("must be %d to %d for %s", lo, hi, j.plugin)))
		}
		return s
	}
	if j.plugin != PluginHybridParallel && (j.tp != 1 || j.pp != 1) {
		errs = append(errs, field.Forbidden(p.Child("tpSize"), "tensor and pipeline sizes need "+string(PluginHybridParallel)))
	}
	switch j.plugin {
	case PluginDDP, PluginGemini:
		if j.zeroStage != nil {
			errs = append(errs, field.Forbidden(p.Child("zeroStage"), fmt.Sprintf("%s takes no ZeRO stage", j.plugin)))
		}
	case PluginZeRO:
		args = append(args, "--zero_stage", strconv.Itoa(stage(2, 1, 2)))
	case PluginHybridParallel:
		s := stage(0, 0, 2)
		if j.tp < 1 {
			errs = append(errs, field.Invalid(p.Child("tpSize"), j.tp, "must be at least 1"))
		}
		if j.pp < 1 {
			errs = append(errs, field.Invalid(p.Child("ppSize"), j.pp, "must be at least 1"))
		}
		if j.pp > 1 && s > 1 {
			errs = append(errs, field.Invalid(p.Child("zeroStage"), s, "must be 0 or 1 with pipeline parallelism"))
		}
		if j.tp >= 1 && j.pp >= 1 && world > 0 && world%(j.tp*j.pp) != 0 {
			errs = append(errs, field.Invalid(p.Child("tpSize"), j.tp,
				fmt.Sprintf("tp_size × pp_size (%d) must divide the %d processes of the job", j.tp*j.pp, world)))
		}
		args = append(args, "--tp_size", strconv.Itoa(j.tp), "--pp_size", strconv.Itoa(j.pp), "--zero_stage", strconv.Itoa(s))
	default:
		errs = append(errs, field.NotSupported(p, j.plugin, []ColossalAIPlugin{PluginDDP, PluginZeRO, PluginGemini, PluginHybridParallel}))
	}
	return args, errs
}

func (j *ColossalAIJob) build() (*kubeflowv1.PyTorchJob, field.ErrorList) {
	if j == nil || unmade(&j.Builder) {
		return nil, unmadeErrors("train.ColossalAIJob", "ColossalAI")
	}
	var errs field.ErrorList
	if j.script == "" {
		errs = append(errs, field.Required(field.NewPath("script"), "a training script is required: call Script"))
	}
	world := 0
	nproc := j.Torch.torch.nprocPerNode(podspec.Of(&j.Handle).GPUCount())
	if j.Torch.torch.elastic == nil {
		workers, _ := j.Torch.torch.size.workers(true, nil) // reported by buildPyTorchJob
		world = (1 + workers) * nproc
	}
	pluginArgs, pluginErrs := j.pluginArgs(world)
	errs = append(errs, pluginErrs...)
	args := slices.Concat(j.args, pluginArgs)
	var command []string
	switch j.launcher {
	case LaunchTorchrun:
		command = TorchrunCommand(j.script, args...)
	case LaunchColossalAI:
		if j.Torch.torch.elastic != nil {
			errs = append(errs, field.Forbidden(field.NewPath("launcher"), "colossalai run needs the Master of a non-elastic job; use torchrun"))
		}
		command = ColossalAIRunCommand(nproc, j.script, args...)
	default:
		errs = append(errs, field.NotSupported(field.NewPath("launcher"), j.launcher, []ColossalAILauncher{LaunchTorchrun, LaunchColossalAI}))
	}
	job, jobErrs := buildPyTorchJob(j.operator(), &j.Torch.torch, command)
	return job, dedupe(append(errs, jobErrs...))
}

// Build validates the settings and returns the PyTorchJob, or every
// problem at once.
func (j *ColossalAIJob) Build() (*kubeflowv1.PyTorchJob, error) { return result(j.build()) }

// Objects returns the PyTorchJob; it implements cube.Workload.
func (j *ColossalAIJob) Objects() ([]client.Object, error) { return objects(j.Build()) }
