package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
	"strings"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/train"
)

// deepSpeed is the DeepSpeed configuration of the run. Its batch,
// accumulation, precision and clipping are the training arguments' own:
// Hugging Face's Trainer refuses a DeepSpeed file whose values differ
// from its arguments (integrations/deepspeed.py, trainer_config_finalize).
//
// Values the fine-tune's own checks refuse are replaced by harmless ones
// here, so that a bad batch is reported once, under its training
// argument, and not again by the DeepSpeed configuration.
func (f *FineTune) deepSpeed() train.DeepSpeedConfig {
	cfg := train.DeepSpeedConfig{
		ZeROStage: f.zero, Precision: f.precision,
		MicroBatchPerGPU: max(f.batch, 1), GradientAccumulation: max(f.accumulation, 1), GradientClipping: f.clipping,
		GatherWeightsOnSave: f.zero == 3,
	}
	if !(f.clipping >= 0) || math.IsInf(f.clipping, 0) {
		cfg.GradientClipping = 0
	}
	if !slices.Contains([]train.Precision{train.BF16, train.FP16, train.FP32}, f.precision) {
		cfg.Precision = train.BF16
	}
	if f.offloadOptimizer {
		cfg.OffloadOptimizer = train.Offload{Device: train.OffloadCPU, PinMemory: true}
	}
	if f.offloadParams {
		cfg.OffloadParams = train.Offload{Device: train.OffloadCPU, PinMemory: true}
	}
	return cfg
}

// imageProblems says what the run needs that LLaMA-Factory's own images
// lack, when the job runs one of them. Both are built from v0.9.5's
// pyproject.toml, which pins trl to 0.18-0.24, plus only the metrics and
// deepspeed extras (docker/docker-cuda/Dockerfile,
// docker/docker-npu/Dockerfile): no bitsandbytes, no s3fs. An image the
// caller sets is theirs to vouch for.
func (f *FineTune) imageProblems(image string) field.ErrorList {
	if image != DefaultImage && image != DefaultAscendImage {
		return nil
	}
	const set = ": set an image that has it with Job().Image"
	var errs field.ErrorList
	if f.stage == StagePPO {
		errs = append(errs, field.Forbidden(field.NewPath("stage"), "PPO needs trl>=0.8.6,<=0.9.6 (train/ppo/trainer.py:90 at v0.9.5), and LLaMA-Factory's image has trl 0.18-0.24 (pyproject.toml)"+set))
	}
	if f.method == QLoRA {
		errs = append(errs, field.Forbidden(field.NewPath("quantization_bit"), "QLoRA needs bitsandbytes (model/model_utils/quantization.py:169 at v0.9.5), which LLaMA-Factory's image does not install"+set))
	}
	for i, d := range append(slices.Clone(f.datasets), f.evalDatasets...) {
		if !strings.HasPrefix(d.Source, "s3://") {
			continue
		}
		p := field.NewPath("dataset").Index(i)
		if i >= len(f.datasets) {
			p = field.NewPath("eval_dataset").Index(i - len(f.datasets))
		}
		errs = append(errs, field.Forbidden(p.Child("source"), "s3:// needs s3fs (fsspec.filesystem(\"s3\"), data/data_utils.py:162 at v0.9.5), which LLaMA-Factory's image does not install"+set+
			", and the credentials with Job().EnvFromSecret (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)"))
	}
	return errs
}

// configMapName names the ConfigMap with train.yaml and dataset_info.json.
func (f *FineTune) configMapName() string { return podspec.Of(&f.job.Handle).Name() + "-llamafactory" }

func (f *FineTune) build() ([]client.Object, field.ErrorList) {
	if f == nil || f.job == nil {
		return nil, field.ErrorList{field.Required(field.NewPath("llm.FineTune"), "is nil or zero: create it with llm.SFT, RewardModel, DPO, KTO, ORPO, SimPO or PPO")}
	}
	r, errs := f.render()
	// The image default and the DeepSpeed configuration go on a copy of
	// the job: Objects leaves the caller's builder as it was, so a second
	// call, or a profile set after the first, renders from the settings
	// alone.
	job := *f.job
	image := defaultImage(podspec.Of(&job.Handle))
	errs = append(errs, f.imageProblems(image)...)
	job.Config(f.deepSpeed())
	objs, jobErr := job.Objects()
	errs = append(errs, nestedErrors(field.NewPath("job"), jobErr)...)
	if len(errs) > 0 {
		return nil, errs
	}
	trainYAML, err := yaml.Marshal(r.config)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(field.NewPath("config"), err)}
	}
	infoJSON, err := json.MarshalIndent(r.datasets, "", "  ")
	if err != nil {
		return nil, field.ErrorList{field.InternalError(field.NewPath("dataset_info"), err)}
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: podspec.Of(&f.job.Handle).ObjectMeta(f.configMapName()),
		Data:       map[string]string{ConfigKey: string(trainYAML), DatasetsKey: string(infoJSON)},
	}
	var pytorchJob *kubeflowv1.PyTorchJob
	for _, o := range objs {
		if j, ok := o.(*kubeflowv1.PyTorchJob); ok {
			pytorchJob = j
		}
	}
	if pytorchJob.Spec.ElasticPolicy != nil {
		// Without a Master the operator sets no PET_NODE_RANK, and
		// LLaMA-Factory's launcher goes elastic only from RDZV_ID,
		// MIN_NNODES and MAX_NNODES, which cube does not render.
		return nil, field.ErrorList{field.Forbidden(field.NewPath("job", "spec", "elasticPolicy"), "LLaMA-Factory runs are not elastic here: use Nodes, not Elastic")}
	}
	volumes, mounts := configAndClaims(cm.Name, r.claims)
	if f.runtime != "" {
		tj, tjErrs := f.trainJob(&job, pytorchJob, volumes, mounts, r.env)
		if len(tjErrs) > 0 {
			return nil, tjErrs
		}
		out := []client.Object{cm}
		for _, o := range objs {
			if _, ok := o.(*kubeflowv1.PyTorchJob); !ok {
				out = append(out, o) // the DeepSpeed ConfigMap
			}
		}
		return append(out, tj), nil
	}
	errs = append(errs, addToReplicas(pytorchJob, volumes, mounts, r.env)...)
	if len(errs) > 0 {
		return nil, errs
	}
	return append([]client.Object{cm}, objs...), nil
}

// configAndClaims returns the volumes and read-only mounts of the
// LLaMA-Factory ConfigMap (at ConfigDir, when configMap is not empty) and
// of each claim, named llm-claim-<i>.
func configAndClaims(configMap string, claims []claimVolume) ([]corev1.Volume, []corev1.VolumeMount) {
	var volumes []corev1.Volume
	var mounts []corev1.VolumeMount
	if configMap != "" {
		volumes = append(volumes, corev1.Volume{Name: "llamafactory-config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}},
		}})
		mounts = append(mounts, corev1.VolumeMount{Name: "llamafactory-config", MountPath: ConfigDir, ReadOnly: true})
	}
	for i, c := range claims {
		name := fmt.Sprintf("llm-claim-%d", i)
		volumes = append(volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.claim, ReadOnly: c.readOnly},
		}})
		mounts = append(mounts, corev1.VolumeMount{Name: name, MountPath: c.mountPath, ReadOnly: c.readOnly})
	}
	return volumes, mounts
}

// addToReplicas adds the fine-tune's volumes, mounts and env to every
// replica's training container.
func addToReplicas(job *kubeflowv1.PyTorchJob, volumes []corev1.Volume, mounts []corev1.VolumeMount, env []corev1.EnvVar) field.ErrorList {
	var templates []*corev1.PodTemplateSpec
	var paths []*field.Path
	for _, typ := range []kubeflowv1.ReplicaType{kubeflowv1.PyTorchJobReplicaTypeMaster, kubeflowv1.PyTorchJobReplicaTypeWorker} {
		if spec := job.Spec.PyTorchReplicaSpecs[typ]; spec != nil {
			templates = append(templates, &spec.Template)
			paths = append(paths, field.NewPath("spec", "pytorchReplicaSpecs").Key(string(typ)).Child("template", "spec"))
		}
	}
	return addToTemplates(templates, paths, volumes, mounts, env)
}

// addToTemplates adds volumes, mounts and env to the first container of
// each pod template, reporting a volume name or mount path already taken
// under the template's path.
func addToTemplates(templates []*corev1.PodTemplateSpec, paths []*field.Path, volumes []corev1.Volume, mounts []corev1.VolumeMount, env []corev1.EnvVar) field.ErrorList {
	var errs field.ErrorList
	for i, t := range templates {
		p, pod := paths[i], &t.Spec
		for _, v := range volumes {
			if slices.ContainsFunc(pod.Volumes, func(x corev1.Volume) bool { return x.Name == v.Name }) {
				errs = append(errs, field.Duplicate(p.Child("volumes"), v.Name))
			}
		}
		pod.Volumes = append(pod.Volumes, volumes...)
		c := &pod.Containers[0]
		for _, m := range mounts {
			if slices.ContainsFunc(c.VolumeMounts, func(x corev1.VolumeMount) bool { return path.Clean(x.MountPath) == m.MountPath }) {
				errs = append(errs, field.Duplicate(p.Child("containers").Index(0).Child("volumeMounts"), m.MountPath))
			}
		}
		c.VolumeMounts = append(c.VolumeMounts, mounts...)
		c.Env = append(c.Env, env...)
	}
	return errs
}

// defaultImage gives job, a copy of the caller's job that is about to be
// rendered, LLaMA-Factory's image for its profile unless the caller set
// one, and returns the image it runs.
func defaultImage[T any](job *podspec.Builder[T]) string {
	if image := job.ImageName(); image != "" {
		return image
	}
	image := DefaultImage
	if p, ok := job.Profile(); ok && p.Vendor == hardware.Huawei {
		image = DefaultAscendImage
	}
	job.Image(image)
	return image
}

// nestedErrors returns the problems an inner builder's Objects reported
// (a field.ErrorList's aggregate), each under p with its own field path,
// so that a fine-tune's job problem reads job.spec.pytorchReplicaSpecs…
// rather than one string. An error that is not a list of field errors is
// reported whole under p.
func nestedErrors(p *field.Path, err error) field.ErrorList {
	if err == nil {
		return nil
	}
	var agg utilerrors.Aggregate
	if !errors.As(err, &agg) {
		return field.ErrorList{field.InternalError(p, err)}
	}
	var out field.ErrorList
	for _, e := range agg.Errors() {
		var fe *field.Error
		if !errors.As(e, &fe) {
			out = append(out, field.InternalError(p, e))
			continue
		}
		placed := *fe
		placed.Field = p.String()
		if fe.Field != "" && fe.Field != "<nil>" {
			placed.Field += "." + fe.Field
		}
		out = append(out, &placed)
	}
	return out
}

// Objects validates the fine-tune and returns the ConfigMap with
// train.yaml and dataset_info.json, the DeepSpeed ConfigMap and the
// PyTorchJob; it implements cube.Workload.
func (f *FineTune) Objects() ([]client.Object, error) {
	objs, errs := f.build()
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return objs, nil
}
