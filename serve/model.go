package serve

import (
	"fmt"
	"path"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/podspec"
)

// Where models live in the serving pods.
const (
	// ModelPath is where a pvc:// source's claim is mounted, read-only.
	ModelPath = "/mnt/models"
	// LoRAPath is where pvc:// LoRA adapters are mounted, one directory each.
	LoRAPath = "/mnt/lora"
	// CachePath holds downloaded models: the ModelCache claim, or scratch
	// space when a download needs somewhere to go.
	CachePath = "/model-cache"

	cacheVolume = "model-cache"
)

// resolveModel works out what the engine is given for the model, its served
// name and adapters, and wires the source into the pods: Hugging Face and
// ModelScope settings, the model claim, the cache and the S3 download.
func (s *Service) resolveModel(r *rendering) field.ErrorList {
	e := s.engine
	spec := field.NewPath("spec")
	var errs field.ErrorList

	r.servedName, r.servedNameExplicit = s.servedName, s.servedName != ""
	if r.servedName == "" {
		r.servedName = podspec.Of(&s.Handle).Name()
		if r.src.Kind == SourceHuggingFace || r.src.Kind == SourceModelScope {
			r.servedName = r.src.Repo
		}
		// A model on a volume would otherwise be called by its path.
		r.servedNameExplicit = r.src.Kind == SourcePVC || r.src.Kind == SourceS3
	}

	if s.cacheClaim != "" {
		for _, msg := range validation.IsDNS1123Subdomain(s.cacheClaim) {
			errs = append(errs, field.Invalid(spec.Child("modelCache"), s.cacheClaim, msg))
		}
	}
	needCache := r.src.Kind == SourceS3 || r.src.Kind == SourceOllama || e == ollamaEngine
	r.cached = s.cacheClaim != "" || needCache
	if r.cached {
		vol := corev1.Volume{Name: cacheVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
		if s.cacheClaim != "" {
			vol.VolumeSource = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: s.cacheClaim}}
		}
		r.volumes = append(r.volumes, vol)
		r.mounts = append(r.mounts, corev1.VolumeMount{Name: cacheVolume, MountPath: CachePath})
	}
	if s.hfToken != nil {
		r.env = append(r.env, secretEnv("HF_TOKEN", s.hfToken.name, s.hfToken.key))
	}
	if k, f := s.apiKey, e.flags; k != nil {
		switch {
		case f.apiKeyEnv != "":
			r.env = append(r.env, secretEnv(f.apiKeyEnv, k.name, k.key))
		case f.apiKey != "":
			r.env = append(r.env, secretEnv(apiKeyVar, k.name, k.key))
		}
	}
	if s.hfEndpoint != "" {
		r.env = append(r.env, corev1.EnvVar{Name: "HF_ENDPOINT", Value: s.hfEndpoint})
	}
	if s.cacheClaim != "" && e.hub {
		r.env = append(r.env, corev1.EnvVar{Name: "HF_HOME", Value: CachePath + "/huggingface"})
		if r.src.Kind == SourceModelScope {
			r.env = append(r.env, corev1.EnvVar{Name: "MODELSCOPE_CACHE", Value: CachePath + "/modelscope"})
		}
	}

	switch r.src.Kind {
	case SourceHuggingFace, SourceModelScope, SourceOllama:
		r.modelArg = r.src.Repo
		if r.src.Kind == SourceModelScope && e.modelScopeEnv.Name != "" {
			r.env = append(r.env, e.modelScopeEnv)
		}
	case SourcePVC:
		r.volumes = append(r.volumes, corev1.Volume{Name: "model", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: r.src.Claim, ReadOnly: true},
		}})
		r.mounts = append(r.mounts, corev1.VolumeMount{Name: "model", MountPath: ModelPath, ReadOnly: true})
		r.modelArg = path.Join(ModelPath, r.src.Path)
	case SourceS3:
		r.modelArg = path.Join(CachePath, "s3", r.src.Bucket, r.src.Prefix)
		r.initContainers = append(r.initContainers, s.s3Download(r.src, r.modelArg))
	}
	if r.src.Kind != SourceS3 {
		// Only the s3:// download reads these (s3Download); on another
		// source they would be dropped without a word.
		for _, set := range []struct {
			name string
			on   bool
		}{{"s3Credentials", s.s3Secret != ""}, {"s3Endpoint", s.s3Endpoint != ""}, {"s3Region", s.s3Region != ""}} {
			if set.on {
				errs = append(errs, field.Forbidden(spec.Child(set.name),
					fmt.Sprintf("S3 settings apply only to an s3:// model source; this one is %s", r.src.Kind)))
			}
		}
	}

	if len(e.loraSources) == 0 {
		return errs // checkSupport reports the adapters
	}
	for i, l := range s.loras {
		p := spec.Child("loras").Index(i)
		for _, msg := range validation.IsDNS1123Label(l.name) {
			errs = append(errs, field.Invalid(p.Child("name"), l.name, msg))
		}
		if slices.ContainsFunc(s.loras[:i], func(o loraAdapter) bool { return o.name == l.name }) {
			errs = append(errs, field.Duplicate(p.Child("name"), l.name))
		}
		src, srcErrs := parseSource(l.source, p.Child("source"), SourceHuggingFace)
		errs = append(errs, srcErrs...)
		if len(srcErrs) > 0 {
			continue
		}
		if !slices.Contains(e.loraSources, src.Kind) {
			errs = append(errs, field.Invalid(p.Child("source"), l.source,
				fmt.Sprintf("%s loads LoRA adapters from %s", e.title, schemes(e.loraSources))))
			continue
		}
		switch src.Kind {
		case SourcePVC:
			vol := "lora-" + l.name
			r.volumes = append(r.volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: src.Claim, ReadOnly: true},
			}})
			// The adapter's directory itself sits at LoRAPath/name.
			r.mounts = append(r.mounts, corev1.VolumeMount{Name: vol, MountPath: path.Join(LoRAPath, l.name), SubPath: src.Path, ReadOnly: true})
			r.loras = append(r.loras, resolvedLoRA{name: l.name, path: path.Join(LoRAPath, l.name)})
		default:
			r.loras = append(r.loras, resolvedLoRA{name: l.name, path: src.Repo})
		}
	}
	return errs
}

// s3Download is the init container that copies an s3:// source into the
// cache volume; `aws s3 sync` skips files already there.
func (s *Service) s3Download(src Source, to string) corev1.Container {
	var env []corev1.EnvVar
	if s.s3Secret != "" {
		env = append(env,
			secretEnv("AWS_ACCESS_KEY_ID", s.s3Secret, "AWS_ACCESS_KEY_ID"),
			secretEnv("AWS_SECRET_ACCESS_KEY", s.s3Secret, "AWS_SECRET_ACCESS_KEY"))
	}
	if s.s3Endpoint != "" {
		env = append(env, corev1.EnvVar{Name: "AWS_ENDPOINT_URL", Value: s.s3Endpoint})
	}
	if s.s3Region != "" {
		env = append(env, corev1.EnvVar{Name: "AWS_DEFAULT_REGION", Value: s.s3Region})
	}
	return corev1.Container{
		Name:         "download",
		Image:        DefaultS3Image,
		Command:      []string{"aws", "s3", "sync", src.String(), to, "--no-progress"},
		Env:          env,
		VolumeMounts: []corev1.VolumeMount{{Name: cacheVolume, MountPath: CachePath}},
	}
}

func secretEnv(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key,
	}}}
}

func fieldEnv(name, fieldPath string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath}}}
}
