package llm

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/train"
	trainer "github.com/cubestudio/cube/train/trainerv1alpha1"
)

// Runtime runs the fine-tune as a Kubeflow Trainer v2 TrainJob
// (train.Trainer) on the ClusterTrainingRuntime name, whose framework is f,
// instead of a training-operator PyTorchJob. LLaMA-Factory starts torchrun
// itself, so f must be train.FrameworkTorch (a runtime made with
// train.ClusterRuntime(name, train.FrameworkTorch), or Trainer's own
// torch-distributed).
//
// The pod settings of Job() and its Nodes and NprocPerNode become the
// TrainJob's, ActiveDeadline and Suspend its own; what a TrainJob cannot
// carry (the run policy's TTLAfterFinished, Retry, CleanPodPolicy,
// RestartPolicy and Gang, RoleResources, and the pod settings
// train.TrainJob refuses) is refused, naming the runtime as where it
// belongs. The train.yaml, dataset_info.json and DeepSpeed ConfigMaps are
// the same as for a PyTorchJob, mounted through the TrainJob's runtime
// patch.
func (f *FineTune) Runtime(name string, fw train.Framework) *FineTune {
	return f.set(func() { f.runtime, f.framework = name, fw })
}

// TrainerLaunchCommand is LaunchCommand for a TrainJob of Kubeflow
// Trainer v2.3.0, whose torch plugin sets torchrun's whole environment
// with the PET_ prefix (PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK,
// PET_MASTER_ADDR, PET_MASTER_PORT: pkg/constants/constants.go,
// pkg/runtime/framework/plugins/torch/torch.go), where the
// training-operator sets MASTER_ADDR and MASTER_PORT unprefixed:
//
//	env NNODES=$(PET_NNODES) NODE_RANK=$(PET_NODE_RANK) NPROC_PER_NODE=$(PET_NPROC_PER_NODE) MASTER_ADDR=$(PET_MASTER_ADDR) MASTER_PORT=$(PET_MASTER_PORT) llamafactory-cli train /etc/llamafactory/train.yaml
func TrainerLaunchCommand(command, config string) []string {
	return []string{"env", "NNODES=$(PET_NNODES)", "NODE_RANK=$(PET_NODE_RANK)", "NPROC_PER_NODE=$(PET_NPROC_PER_NODE)",
		"MASTER_ADDR=$(PET_MASTER_ADDR)", "MASTER_PORT=$(PET_MASTER_PORT)",
		"llamafactory-cli", command, config}
}

// trainJob renders the fine-tune as a TrainJob from job (the caller's job
// with the image default and the DeepSpeed configuration, as rendered)
// and its PyTorchJob, adding the fine-tune's volumes, mounts and env to
// the trainer's pods.
func (f *FineTune) trainJob(job *train.DeepSpeedJob, rendered *kubeflowv1.PyTorchJob, volumes []corev1.Volume, mounts []corev1.VolumeMount, env []corev1.EnvVar) (client.Object, field.ErrorList) {
	var errs field.ErrorList
	if f.framework != train.FrameworkTorch {
		errs = append(errs, field.Invalid(field.NewPath("runtime", "framework"), f.framework,
			"LLaMA-Factory starts torchrun itself (FORCE_TORCHRUN): the runtime must be a torch one (train.FrameworkTorch)"))
	}
	name := podspec.Of(&job.Handle).Name()
	tj := train.Trainer(name).Runtime(f.runtime, f.framework)
	podspec.CopySettings(podspec.Of(&tj.Handle), podspec.Of(&job.Handle))
	if cmd, args := podspec.Of(&job.Handle).CommandLine(); len(args) == 0 && slices.Equal(cmd, LaunchCommand("train", ConfigFile)) {
		tj.Command(TrainerLaunchCommand("train", ConfigFile)...)
	}

	// The pod counts, as the PyTorchJob renders them.
	jobPath := field.NewPath("job", "spec")
	specs := rendered.Spec.PyTorchReplicaSpecs
	master, worker := specs[kubeflowv1.PyTorchJobReplicaTypeMaster], specs[kubeflowv1.PyTorchJobReplicaTypeWorker]
	nodes := 1
	if worker != nil && worker.Replicas != nil {
		nodes += int(*worker.Replicas)
	}
	tj.Nodes(nodes)
	if n := rendered.Spec.NprocPerNode; n != nil {
		v, err := strconv.Atoi(*n)
		if err != nil {
			errs = append(errs, field.Invalid(jobPath.Child("nprocPerNode"), *n, "a TrainJob's numProcPerNode is a number"))
		} else {
			tj.NprocPerNode(v)
		}
	}

	// What the run policy and the replicas carry beyond the defaults.
	def, err := train.DeepSpeed(name).Image("defaults").Nodes(nodes).Build()
	if err != nil {
		return nil, append(errs, field.InternalError(field.NewPath("job"), err))
	}
	rp, defRP := rendered.Spec.RunPolicy, def.Spec.RunPolicy
	rpPath := jobPath.Child("runPolicy")
	if s := rp.ActiveDeadlineSeconds; s != nil {
		tj.ActiveDeadline(time.Duration(*s) * time.Second)
	}
	if s := rp.Suspend; s != nil && *s {
		tj.Suspend(true)
	}
	onRuntime := func(p *field.Path, setting, where string) {
		errs = append(errs, field.Forbidden(p, fmt.Sprintf("a TrainJob of Kubeflow Trainer v2.3.0 has no %s: %s", setting, where)))
	}
	if !equality.Semantic.DeepEqual(rp.TTLSecondsAfterFinished, defRP.TTLSecondsAfterFinished) {
		onRuntime(rpPath.Child("ttlSecondsAfterFinished"), "TTLAfterFinished", "set it on the runtime (train.ClusterRuntime TTLAfterFinished)")
	}
	if !equality.Semantic.DeepEqual(rp.BackoffLimit, defRP.BackoffLimit) {
		onRuntime(rpPath.Child("backoffLimit"), "Retry", "set it on the runtime (train.ClusterRuntime Retry)")
	}
	if !equality.Semantic.DeepEqual(rp.SchedulingPolicy, defRP.SchedulingPolicy) {
		onRuntime(rpPath.Child("schedulingPolicy"), "Gang", "set it on the runtime (train.ClusterRuntime Gang)")
	}
	if !equality.Semantic.DeepEqual(rp.CleanPodPolicy, defRP.CleanPodPolicy) {
		onRuntime(rpPath.Child("cleanPodPolicy"), "CleanPodPolicy", "its JobSet keeps the pods of finished jobs")
	}
	for _, typ := range []kubeflowv1.ReplicaType{kubeflowv1.PyTorchJobReplicaTypeMaster, kubeflowv1.PyTorchJobReplicaTypeWorker} {
		spec, d := specs[typ], def.Spec.PyTorchReplicaSpecs[typ]
		p := jobPath.Child("pytorchReplicaSpecs").Key(string(typ))
		if spec != nil && d != nil && spec.RestartPolicy != d.RestartPolicy {
			onRuntime(p.Child("restartPolicy"), "RestartPolicy", "the JobSet's pods restart as the runtime says")
		}
	}
	if master != nil && worker != nil && !equality.Semantic.DeepEqual(master.Template.Spec.Containers[0].Resources, worker.Template.Spec.Containers[0].Resources) {
		onRuntime(jobPath.Child("pytorchReplicaSpecs").Key(string(kubeflowv1.PyTorchJobReplicaTypeWorker)).Child("template", "spec", "containers").Index(0).Child("resources"),
			"RoleResources (every node is alike)", "drop RoleResources")
	}

	out, err := tj.Build()
	errs = append(errs, nestedErrors(field.NewPath("job"), err)...)
	if len(errs) > 0 {
		return nil, errs
	}
	// The DeepSpeed configuration's volume, as the PyTorchJob mounts it.
	if master != nil {
		c := master.Template.Spec.Containers[0]
		for _, m := range c.VolumeMounts {
			if path.Clean(m.MountPath) != train.DeepSpeedConfigDir {
				continue
			}
			for _, v := range master.Template.Spec.Volumes {
				if v.Name == m.Name {
					volumes = append([]corev1.Volume{v}, volumes...)
					mounts = append([]corev1.VolumeMount{m}, mounts...)
				}
			}
		}
	}
	return out, addToTrainJob(out, volumes, mounts, env)
}

// addToTrainJob adds volumes and mounts to the trainer's pods through the
// TrainJob's runtime patch (made if the pod settings needed none) and env
// to spec.trainer.env, reporting a volume name or mount path already taken.
func addToTrainJob(j *trainer.TrainJob, volumes []corev1.Volume, mounts []corev1.VolumeMount, env []corev1.EnvVar) field.ErrorList {
	j.Spec.Trainer.Env = append(j.Spec.Trainer.Env, env...)
	if len(volumes) == 0 && len(mounts) == 0 {
		return nil
	}
	var patch *trainer.RuntimePatch
	for i := range j.Spec.RuntimePatches {
		if j.Spec.RuntimePatches[i].Manager == train.RuntimePatchManager {
			patch = &j.Spec.RuntimePatches[i]
		}
	}
	if patch == nil {
		j.Spec.RuntimePatches = append(j.Spec.RuntimePatches, trainer.RuntimePatch{Manager: train.RuntimePatchManager})
		patch = &j.Spec.RuntimePatches[len(j.Spec.RuntimePatches)-1]
	}
	if patch.TrainingRuntimeSpec == nil {
		patch.TrainingRuntimeSpec = &trainer.TrainingRuntimeSpecPatch{}
	}
	t := patch.TrainingRuntimeSpec
	if t.Template == nil {
		t.Template = &trainer.JobSetTemplatePatch{}
	}
	if t.Template.Spec == nil {
		t.Template.Spec = &trainer.JobSetSpecPatch{}
	}
	rjs := &t.Template.Spec.ReplicatedJobs
	i := slices.IndexFunc(*rjs, func(r trainer.ReplicatedJobPatch) bool { return r.Name == trainer.Node })
	if i < 0 {
		*rjs = append(*rjs, trainer.ReplicatedJobPatch{Name: trainer.Node})
		i = len(*rjs) - 1
	}
	rj := &(*rjs)[i]
	if rj.Template == nil {
		rj.Template = &trainer.JobTemplatePatch{}
	}
	if rj.Template.Spec == nil {
		rj.Template.Spec = &trainer.JobSpecPatch{}
	}
	if rj.Template.Spec.Template == nil {
		rj.Template.Spec.Template = &trainer.PodTemplatePatch{}
	}
	pt := rj.Template.Spec.Template
	if pt.Spec == nil {
		pt.Spec = &trainer.PodSpecPatch{}
	}
	ps := pt.Spec
	ci := slices.IndexFunc(ps.Containers, func(c trainer.ContainerPatch) bool { return c.Name == trainer.Node })
	if ci < 0 {
		ps.Containers = append(ps.Containers, trainer.ContainerPatch{Name: trainer.Node})
		ci = len(ps.Containers) - 1
	}
	c := &ps.Containers[ci]
	p := field.NewPath("spec", "runtimePatches").Index(slices.IndexFunc(j.Spec.RuntimePatches, func(r trainer.RuntimePatch) bool { return r.Manager == train.RuntimePatchManager })).
		Child("trainingRuntimeSpec", "template", "spec", "replicatedJobs").Index(i).Child("template", "spec", "template", "spec")
	var errs field.ErrorList
	for _, v := range volumes {
		if slices.ContainsFunc(ps.Volumes, func(x corev1.Volume) bool { return x.Name == v.Name }) {
			errs = append(errs, field.Duplicate(p.Child("volumes"), v.Name))
		}
	}
	ps.Volumes = append(ps.Volumes, volumes...)
	for _, m := range mounts {
		if slices.ContainsFunc(c.VolumeMounts, func(x corev1.VolumeMount) bool { return path.Clean(x.MountPath) == path.Clean(m.MountPath) }) {
			errs = append(errs, field.Duplicate(p.Child("containers").Index(ci).Child("volumeMounts"), m.MountPath))
		}
	}
	c.VolumeMounts = append(c.VolumeMounts, mounts...)
	return errs
}
