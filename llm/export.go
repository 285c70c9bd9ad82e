package llm

import (
	"path"
	"slices"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/train"
)

// ExportKey is the key of export.yaml in the export's ConfigMap.
const ExportKey = "export.yaml"

// Export merges a LoRA adapter into its base model with `llamafactory-cli
// export` (examples/merge_lora/*.yaml at v0.9.5), on one pod of a
// PyTorchJob, and writes the merged weights where serve reads them.
// Create one with FineTune.Merge.
type Export struct {
	job                     *train.PyTorchJob
	base, adapter, template string
	trustRemote             bool
	output                  string
	shardGB                 int
	autoImage               string
	problems                field.ErrorList
}

// Merge returns the export that merges the fine-tune's adapter (its
// Output) into the base model and writes the result to output
// (pvc://claim/path), on the CPU by default (export_device cpu, what
// LLaMA-Factory's example uses): set Job().On and GPUs to merge on an
// accelerator. Only LoRA and QLoRA fine-tunes have an adapter to merge;
// a QLoRA adapter is merged into the unquantized base.
func (f *FineTune) Merge(name, output string) *Export {
	e := &Export{job: train.PyTorch(name).Nodes(1), output: output, shardGB: 5}
	e.job.Command("llamafactory-cli", "export", ConfigDir+"/"+ExportKey)
	if f == nil || f.job == nil {
		e.problems = append(e.problems, field.Required(field.NewPath("fineTune"), "is nil or zero"))
		return e
	}
	if f.method != LoRA && f.method != QLoRA {
		e.problems = append(e.problems, field.Invalid(field.NewPath("fineTune", "finetuning_type"), string(f.method), "only a LoRA or QLoRA fine-tune has an adapter to merge"))
	}
	family, _ := FamilyOf(f.model)
	e.base, e.adapter, e.template, e.trustRemote = f.model, f.output, family.Template, family.TrustRemoteCode
	if f.template != "" {
		e.template = f.template
	}
	if f.trustRemote != nil {
		e.trustRemote = *f.trustRemote
	}
	return e
}

// Job returns the one-pod PyTorchJob the merge runs on, for pod settings.
func (e *Export) Job() *train.PyTorchJob {
	if e == nil || e.job == nil {
		return train.PyTorch("")
	}
	return e.job
}

// ShardSize sets the largest weight file in GB (export_size, default 5).
func (e *Export) ShardSize(gb int) *Export {
	if e != nil {
		e.shardGB = gb
	}
	return e
}

func (e *Export) build() ([]client.Object, field.ErrorList) {
	if e == nil || e.job == nil {
		return nil, field.ErrorList{field.Required(field.NewPath("llm.Export"), "is nil or zero: create it with FineTune.Merge")}
	}
	errs := slices.Clone(e.problems)
	cfg := exportConfig{Template: e.template, TrustRemoteCode: e.trustRemote, ExportSize: e.shardGB, ExportDevice: "cpu"}
	var claims []claimVolume
	base, bErrs := resolveModel(e.base, field.NewPath("model_name_or_path"), ModelRoot)
	errs = append(errs, bErrs...)
	cfg.ModelNameOrPath = base.value
	if base.claim != nil {
		claims = append(claims, claimVolume{claim: base.claim.claim, mountPath: base.claim.mountPath, readOnly: true})
	}
	var env []corev1.EnvVar
	if base.modelScope {
		env = append(env, corev1.EnvVar{Name: "USE_MODELSCOPE_HUB", Value: "1"})
	}
	if src, err := serve.ParseSource(e.adapter); err != nil || src.Kind != serve.SourcePVC || src.Path == "" {
		errs = append(errs, field.Invalid(field.NewPath("adapter_name_or_path"), e.adapter, "the fine-tune's Output must be pvc://claim/path"))
	} else {
		mount := path.Join("/adapters", src.Claim)
		cfg.AdapterNameOrPath = path.Join(mount, src.Path)
		claims = append(claims, claimVolume{claim: src.Claim, mountPath: mount, readOnly: true})
	}
	if src, err := serve.ParseSource(e.output); err != nil || src.Kind != serve.SourcePVC || src.Path == "" {
		errs = append(errs, field.Invalid(field.NewPath("export_dir"), e.output, "must be pvc://claim/path"))
	} else {
		cfg.ExportDir = path.Join(OutputRoot, src.Path)
		claims = append(claims, claimVolume{claim: src.Claim, mountPath: OutputRoot})
	}
	switch {
	case e.template == "":
		errs = append(errs, field.Required(field.NewPath("template"), "set the fine-tune's Template"))
	case !slices.Contains(templates, e.template):
		errs = append(errs, field.Invalid(field.NewPath("template"), e.template, "is not a template LLaMA-Factory v0.9.5 registers (data/template.py; llm.Templates lists them)"))
	}
	if e.shardGB < 1 {
		errs = append(errs, field.Invalid(field.NewPath("export_size"), e.shardGB, "must be at least 1"))
	}
	if p, ok := podspec.Of(&e.job.Handle).Profile(); ok && p.Accelerated() && podspec.Of(&e.job.Handle).GPUCount() > 0 {
		cfg.ExportDevice = "auto"
	}
	e.autoImage = pickImage(e.job, podspec.Of(&e.job.Handle), e.autoImage)
	objs, jobErr := e.job.Objects()
	if jobErr != nil {
		errs = append(errs, field.Invalid(field.NewPath("job"), podspec.Of(&e.job.Handle).Name(), jobErr.Error()))
	}
	if len(errs) > 0 {
		return nil, errs
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(field.NewPath("config"), err)}
	}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: podspec.Of(&e.job.Handle).ObjectMeta(podspec.Of(&e.job.Handle).Name() + "-llamafactory"),
		Data:       map[string]string{ExportKey: string(data)},
	}
	job := objs[0].(*kubeflowv1.PyTorchJob)
	volumes, mounts := configAndClaims(cm.Name, claims)
	if errs := addToReplicas(job, volumes, mounts, env); len(errs) > 0 {
		return nil, errs
	}
	return []client.Object{cm, job}, nil
}

// Objects validates the export and returns its ConfigMap and PyTorchJob;
// it implements cube.Workload.
func (e *Export) Objects() ([]client.Object, error) {
	objs, errs := e.build()
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return objs, nil
}

// Serve returns a vLLM service for the merged weights.
func (e *Export) Serve(name string) *serve.Service {
	if e == nil {
		return serve.VLLM(name, "")
	}
	return serve.VLLM(name, e.output)
}
