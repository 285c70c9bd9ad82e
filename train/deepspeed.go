package train

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pod"
)

// Where the DeepSpeed configuration is mounted in every replica.
const (
	DeepSpeedConfigDir  = "/etc/deepspeed"
	DeepSpeedConfigKey  = "ds_config.json"
	DeepSpeedConfigFile = DeepSpeedConfigDir + "/" + DeepSpeedConfigKey
)

// Precision is the mixed-precision mode of a DeepSpeed run.
type Precision string

// Precisions.
const (
	FP32 Precision = ""
	BF16 Precision = "bf16"
	FP16 Precision = "fp16"
)

// OffloadDevice is where ZeRO offloads optimizer state or parameters.
type OffloadDevice string

// Offload devices.
const (
	OffloadNone OffloadDevice = ""
	OffloadCPU  OffloadDevice = "cpu"
	OffloadNVMe OffloadDevice = "nvme"
)

// Offload moves optimizer state or parameters off the accelerator.
type Offload struct {
	Device OffloadDevice
	// NVMePath is the directory on a local NVMe volume (mount it with
	// HostPath or PVC); required for OffloadNVMe.
	NVMePath string
	// PinMemory page-locks the CPU buffers for faster transfers.
	PinMemory bool
}

// DeepSpeedConfig is the part of DeepSpeed's JSON configuration cube
// types; it renders to ds_config.json. DeepSpeed derives
// train_batch_size from the micro batch, the accumulation steps and the
// world size.
type DeepSpeedConfig struct {
	// ZeROStage is the ZeRO optimization stage, 0 to 3.
	ZeROStage int
	// OffloadOptimizer moves optimizer state to CPU (ZeRO stages 1–3) or
	// NVMe (stage 3, ZeRO-Infinity).
	OffloadOptimizer Offload
	// OffloadParams moves parameters to CPU or NVMe (stage 3 only).
	OffloadParams Offload
	// Precision is bf16, fp16 (dynamic loss scaling) or fp32.
	Precision Precision
	// MicroBatchPerGPU is train_micro_batch_size_per_gpu (at least 1).
	MicroBatchPerGPU int
	// GradientAccumulation is gradient_accumulation_steps (default 1).
	GradientAccumulation int
	// GradientClipping clips the gradient norm when positive.
	GradientClipping float64
	// GatherWeightsOnSave gathers the partitioned 16-bit weights into one
	// state dict when a checkpoint is saved
	// (stage3_gather_16bit_weights_on_model_save; ZeRO stage 3 only), so
	// that Hugging Face's Trainer writes loadable weights instead of ZeRO
	// shards (LLaMA-Factory's examples/deepspeed/ds_z3_config.json sets it).
	GatherWeightsOnSave bool
}

// dsConfig is DeepSpeed's JSON shape.
type dsConfig struct {
	MicroBatch       int        `json:"train_micro_batch_size_per_gpu"`
	Accumulation     int        `json:"gradient_accumulation_steps"`
	GradientClipping float64    `json:"gradient_clipping,omitempty"`
	BF16             *dsEnabled `json:"bf16,omitempty"`
	FP16             *dsEnabled `json:"fp16,omitempty"`
	ZeRO             dsZeRO     `json:"zero_optimization"`
}

type dsEnabled struct {
	Enabled bool `json:"enabled"`
}

type dsZeRO struct {
	Stage            int        `json:"stage"`
	OffloadOptimizer *dsOffload `json:"offload_optimizer,omitempty"`
	OffloadParam     *dsOffload `json:"offload_param,omitempty"`
	GatherOnSave     bool       `json:"stage3_gather_16bit_weights_on_model_save,omitempty"`
}

type dsOffload struct {
	Device    OffloadDevice `json:"device"`
	NVMePath  string        `json:"nvme_path,omitempty"`
	PinMemory bool          `json:"pin_memory,omitempty"`
}

// JSON renders the configuration as DeepSpeed reads it, after validating
// it; problems are reported under path.
func (c DeepSpeedConfig) JSON(p *field.Path) ([]byte, field.ErrorList) {
	var errs field.ErrorList
	cfg := dsConfig{MicroBatch: c.MicroBatchPerGPU, Accumulation: c.GradientAccumulation, GradientClipping: c.GradientClipping}
	if cfg.Accumulation == 0 {
		cfg.Accumulation = 1
	}
	if c.MicroBatchPerGPU < 1 {
		errs = append(errs, field.Invalid(p.Child("train_micro_batch_size_per_gpu"), c.MicroBatchPerGPU, "must be at least 1"))
	}
	if cfg.Accumulation < 1 {
		errs = append(errs, field.Invalid(p.Child("gradient_accumulation_steps"), c.GradientAccumulation, "must be at least 1"))
	}
	if c.GradientClipping < 0 {
		errs = append(errs, field.Invalid(p.Child("gradient_clipping"), c.GradientClipping, "must not be negative"))
	}
	switch c.Precision {
	case FP32:
	case BF16:
		cfg.BF16 = &dsEnabled{Enabled: true}
	case FP16:
		cfg.FP16 = &dsEnabled{Enabled: true}
	default:
		errs = append(errs, field.NotSupported(p.Child("precision"), c.Precision, []Precision{BF16, FP16, FP32}))
	}
	zPath := p.Child("zero_optimization")
	if c.ZeROStage < 0 || c.ZeROStage > 3 {
		errs = append(errs, field.Invalid(zPath.Child("stage"), c.ZeROStage, "must be 0, 1, 2 or 3"))
	}
	cfg.ZeRO.Stage = c.ZeROStage
	if c.GatherWeightsOnSave && c.ZeROStage != 3 {
		errs = append(errs, field.Forbidden(zPath.Child("stage3_gather_16bit_weights_on_model_save"), fmt.Sprintf("needs ZeRO stage 3, not %d", c.ZeROStage)))
	}
	cfg.ZeRO.GatherOnSave = c.GatherWeightsOnSave
	var offErrs field.ErrorList
	cfg.ZeRO.OffloadOptimizer, offErrs = c.OffloadOptimizer.render(zPath.Child("offload_optimizer"), c.ZeROStage, 1)
	errs = append(errs, offErrs...)
	cfg.ZeRO.OffloadParam, offErrs = c.OffloadParams.render(zPath.Child("offload_param"), c.ZeROStage, 3)
	errs = append(errs, offErrs...)
	if len(errs) > 0 {
		return nil, errs
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil { // the struct holds only plain values
		return nil, field.ErrorList{field.InternalError(p, err)}
	}
	return out, nil
}

// render checks an offload for a ZeRO stage that must be at least
// minStage (NVMe always needs stage 3).
func (o Offload) render(p *field.Path, stage, minStage int) (*dsOffload, field.ErrorList) {
	var errs field.ErrorList
	switch o.Device {
	case OffloadNone:
		if o.NVMePath != "" || o.PinMemory {
			errs = append(errs, field.Required(p.Child("device"), "set the device to offload to"))
		}
		return nil, errs
	case OffloadCPU:
		if o.NVMePath != "" {
			errs = append(errs, field.Forbidden(p.Child("nvme_path"), "only for nvme offload"))
		}
	case OffloadNVMe:
		minStage = 3
		if !path.IsAbs(o.NVMePath) {
			errs = append(errs, field.Invalid(p.Child("nvme_path"), o.NVMePath, "must be an absolute path on an NVMe volume"))
		}
	default:
		return nil, field.ErrorList{field.NotSupported(p.Child("device"), o.Device, []OffloadDevice{OffloadCPU, OffloadNVMe})}
	}
	if stage < minStage {
		errs = append(errs, field.Forbidden(p, fmt.Sprintf("%s offload needs ZeRO stage %d or higher, not %d", o.Device, minStage, stage)))
	}
	return &dsOffload{Device: o.Device, NVMePath: o.NVMePath, PinMemory: o.PinMemory}, errs
}

// DeepSpeedJob builds a DeepSpeed run as a training-operator PyTorchJob
// launched by torchrun, with its configuration rendered from a typed
// DeepSpeedConfig into a ConfigMap mounted at DeepSpeedConfigFile in every
// replica.
//
// Why a PyTorchJob and not an MPIJob with a hostfile: DeepSpeed's own
// launcher reaches the other nodes over ssh (pdsh or Open MPI), which needs
// sshd and keys in every image and a launcher pod holding no GPUs, and an
// MPIJob's workers are reached through kubectl exec, which DeepSpeed's
// launcher does not speak. DeepSpeed initializes from the RANK, WORLD_SIZE
// and MASTER_ADDR that torchrun sets, so under a PyTorchJob every pod runs
// the same torchrun command, the operator supplies the rendezvous, elastic
// ranges and gang scheduling work as for plain PyTorch, and Ascend NPUs
// need nothing different (torch_npu reads the same variables).
//
// Its settings are its own methods below (RoleResources, Torchrun and
// Config), every torchrun setting (go doc train.Torch), every pod setting (go doc pod.Builder) and every run-policy setting (go
// doc train.RunPolicy and go doc train.Lifecycle). Create one with
// DeepSpeed.
type DeepSpeedJob struct {
	pod.Builder[DeepSpeedJob]
	RunPolicy[DeepSpeedJob]
	Torch[DeepSpeedJob]
	roles  roleResources
	config DeepSpeedConfig
}

// DeepSpeed starts a DeepSpeed job named name with one Master and one
// Worker and ZeRO stage 0 with a micro batch of 1.
func DeepSpeed(name string) *DeepSpeedJob {
	j := &DeepSpeedJob{config: DeepSpeedConfig{MicroBatchPerGPU: 1}}
	initOperator(j, &j.Builder, &j.RunPolicy, "deepspeedjob", name)
	j.initTorch(j)
	return j
}

func (j *DeepSpeedJob) operator() operator[DeepSpeedJob] {
	return operator[DeepSpeedJob]{pod: &j.Builder, run: &j.RunPolicy, roles: j.roles}
}

// RoleResources gives the Master or the Worker role its own CPU and
// memory, as TFJob.RoleResources.
func (j *DeepSpeedJob) RoleResources(role kubeflowv1.ReplicaType, cpu, memory string) *DeepSpeedJob {
	if j == nil {
		return nil
	}
	j.roles.set(role, cpu, memory)
	return j
}

// Config replaces the DeepSpeed configuration.
func (j *DeepSpeedJob) Config(c DeepSpeedConfig) *DeepSpeedJob {
	if j == nil {
		return nil
	}
	j.config = c
	return j
}

// Torchrun replaces the command and arguments with TorchrunCommand(script,
// args...) followed by DeepSpeed's --deepspeed --deepspeed_config
// DeepSpeedConfigFile (the flags deepspeed.add_config_arguments defines).
// Scripts that take the path differently (Hugging Face's --deepspeed PATH)
// set Command themselves with DeepSpeedConfigFile.
func (j *DeepSpeedJob) Torchrun(script string, args ...string) *DeepSpeedJob {
	if j == nil {
		return nil
	}
	j.Command(TorchrunCommand(script, slices.Concat(args, []string{"--deepspeed", "--deepspeed_config", DeepSpeedConfigFile})...)...)
	return j.Args()
}

// configMapName names the ConfigMap holding ds_config.json.
func (j *DeepSpeedJob) configMapName() string { return podspec.Of(&j.Handle).Name() + "-deepspeed" }

func (j *DeepSpeedJob) build() (*kubeflowv1.PyTorchJob, *corev1.ConfigMap, field.ErrorList) {
	if j == nil || unmade(&j.Builder) {
		return nil, nil, unmadeErrors("train.DeepSpeedJob", "DeepSpeed")
	}
	data, errs := j.config.JSON(field.NewPath("deepspeedConfig"))
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: podspec.Of(&j.Handle).ObjectMeta(j.configMapName()),
		Data:       map[string]string{DeepSpeedConfigKey: string(data)},
	}
	job, jobErrs := buildPyTorchJob(j.operator(), &j.Torch.torch, nil)
	errs = append(errs, jobErrs...)
	errs = append(errs, mountConfigMap(job.Spec.PyTorchReplicaSpecs, deepSpeedVolume, cm.Name, DeepSpeedConfigDir)...)
	return job, cm, dedupe(errs)
}

const deepSpeedVolume = "deepspeed-config"

// mountConfigMap mounts a ConfigMap read-only at dir in the first
// container of every replica, reporting a volume or mount already there.
func mountConfigMap(specs map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec, volume, configMap, dir string) field.ErrorList {
	var errs field.ErrorList
	for _, typ := range slices.Sorted(maps.Keys(specs)) {
		pod := &specs[typ].Template.Spec
		podPath := field.NewPath("spec", pytorchSpecs).Key(string(typ)).Child("template", "spec")
		c := &pod.Containers[0]
		for i, m := range c.VolumeMounts {
			if path.Clean(m.MountPath) == dir {
				errs = append(errs, field.Duplicate(podPath.Child("containers").Index(0).Child("volumeMounts").Index(i).Child("mountPath"), m.MountPath))
			}
		}
		for i, v := range pod.Volumes {
			if v.Name == volume {
				errs = append(errs, field.Duplicate(podPath.Child("volumes").Index(i).Child("name"), v.Name))
			}
		}
		pod.Volumes = append(pod.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}},
		}})
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: dir, ReadOnly: true})
	}
	return errs
}

// Build validates the settings and returns the PyTorchJob (the ConfigMap
// comes with Objects), or every problem at once.
func (j *DeepSpeedJob) Build() (*kubeflowv1.PyTorchJob, error) {
	job, _, errs := j.build()
	return result(job, errs)
}

// Objects returns the ConfigMap with ds_config.json and the PyTorchJob; it
// implements cube.Workload.
func (j *DeepSpeedJob) Objects() ([]client.Object, error) {
	job, cm, errs := j.build()
	if err := errs.ToAggregate(); err != nil {
		return nil, err
	}
	return []client.Object{cm, job}, nil
}
