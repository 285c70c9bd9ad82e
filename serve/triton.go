package serve

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultTritonVLLMImage is the Triton image with the vLLM backend, the
// release of DefaultTritonImage. A Triton service uses it when the
// repository cube generates holds a vLLM-backend model.
const DefaultTritonVLLMImage = "nvcr.io/nvidia/tritonserver:25.06-vllm-python-py3"

// TritonRepositoryPath is where the model repository cube generates (see
// AddTritonModel) is mounted: <path>/<model>/config.pbtxt and
// <path>/<model>/1/<file>.
const TritonRepositoryPath = "/models"

// tritonEngine is NVIDIA Triton Inference Server, `tritonserver`, serving a
// model repository (KServe v2 protocol over HTTP and gRPC).
var tritonEngine = &engine{
	kind: "triton", title: "Triton",
	image:  DefaultTritonImage,
	nvidia: true, cpu: true,
	port: 8000,
	ports: []corev1.ContainerPort{
		{Name: "grpc", ContainerPort: 8001, Protocol: corev1.ProtocolTCP},
		{Name: "metrics", ContainerPort: 8002, Protocol: corev1.ProtocolTCP},
	},
	readyPath: "/v2/health/ready", livePath: "/v2/health/live",
	metricsPath: "/metrics", metricsPort: 8002, queueMetric: "nv_inference_pending_request_count",
	bare:    SourceHuggingFace,
	sources: []SourceKind{SourcePVC, SourceS3},
}

// tritonVLLMEngine is Triton serving a generated repository with a model
// of its vLLM backend. The Service's source is the model's weights, which
// vLLM loads as `vllm serve` does; the engine settings are vLLM's, written
// to model.json instead of flags. Clients call the model by its name in
// the repository, so ServedModelName is not a setting; LoRA adapters would
// need the backend's multi_lora.json, which cube does not write.
var tritonVLLMEngine = func() *engine {
	e := *tritonEngine
	e.title = "Triton's vLLM backend"
	e.image = DefaultTritonVLLMImage
	e.cpu, e.gpuImage = false, true
	e.sources = slices.Clone(vllmEngine.sources)
	e.hub, e.modelScopeEnv = true, vllmEngine.modelScopeEnv
	f := vllmEngine.flags
	f.port, f.servedModelName, f.lora = "", "", nil
	e.flags = f
	e.autoSizes, e.pipeline = true, true
	return &e
}()

func init() {
	tritonEngine.launch = launchTriton
	tritonVLLMEngine.launch = launchTriton
}

func isTriton(e *engine) bool { return e == tritonEngine || e == tritonVLLMEngine }

// AddTritonModel adds a model to a model repository cube generates: its
// config.pbtxt (from cfg) and cfg.VersionFiles go into the ConfigMap, laid
// out in the pods as TritonRepositoryPath/<name>/config.pbtxt and
// TritonRepositoryPath/<name>/1/<file>, and Triton serves that repository
// instead of one at the Service's source. The source is then what the
// models load: for a vLLM-backend model (see TritonVLLMModel) its weights
// (hf://, modelscope://, pvc://, s3://), which cube writes with the
// engine settings (TensorParallel, MaxModelLen, MemoryUtilization,
// DType, Quantization, PrefixCaching…) into <name>/1/model.json, and the
// image becomes DefaultTritonVLLMImage. A Service has at most one
// vLLM-backend model. cfg is copied. Triton only.
func (s *Service) AddTritonModel(cfg TritonModelConfig) *Service {
	if s == nil {
		return nil
	}
	s.use("tritonModels")
	if cfg.Backend == TritonBackendVLLM && s.engine == tritonEngine {
		s.engine = tritonVLLMEngine
	}
	s.tritonConfigs = append(s.tritonConfigs, cfg.clone())
	return s
}

func launchTriton(s *Service, r *rendering) field.ErrorList {
	var errs field.ErrorList
	repository := r.modelArg
	generated := len(s.tritonConfigs) > 0
	if generated {
		repository = TritonRepositoryPath
		errs = append(errs, s.tritonRepository(r)...)
	}
	r.command = []string{"tritonserver"}
	r.args = []string{
		"--model-repository=" + repository,
		"--http-port=8000", "--grpc-port=8001", "--metrics-port=8002",
	}
	controlPath := field.NewPath("spec", "modelControl")
	if s.tritonControl != "" {
		r.args = append(r.args, "--model-control-mode="+s.tritonControl)
	}
	if len(s.tritonModels) > 0 && s.tritonControl != "explicit" {
		errs = append(errs, field.Invalid(controlPath, s.tritonControl,
			fmt.Sprintf("models to load (%v) need the explicit mode", s.tritonModels)))
	}
	var names []string
	for _, cfg := range s.tritonConfigs {
		names = append(names, cfg.Name)
	}
	for i, m := range s.tritonModels {
		if generated && !slices.Contains(names, m) {
			errs = append(errs, field.NotSupported(controlPath.Child("load").Index(i), m, names))
		}
		r.args = append(r.args, "--load-model="+m)
	}
	return errs
}

// maxConfigMapBytes is the API server's limit on a ConfigMap's data.
const maxConfigMapBytes = 1 << 20

// configKeyChars are the characters of a ConfigMap key.
var configKeyChars = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// tritonRepository validates the generated models and renders them into
// the ConfigMap's files, with the volume items that lay the repository out.
func (s *Service) tritonRepository(r *rendering) field.ErrorList {
	p := field.NewPath("spec", "tritonModels")
	var errs field.ErrorList
	files := map[string]string{}
	var items []corev1.KeyToPath
	size := 0
	add := func(at *field.Path, file, content string) {
		// ConfigMap keys hold no '/': the item's path restores it.
		key := strings.ReplaceAll(file, "/", ".")
		if _, dup := files[key]; dup {
			errs = append(errs, field.Duplicate(at, file))
			return
		}
		files[key] = content
		size += len(key) + len(content)
		items = append(items, corev1.KeyToPath{Key: key, Path: file})
	}
	vllmIndex := -1
	for i, cfg := range s.tritonConfigs {
		mp := p.Index(i)
		cfgErrs := cfg.validate(mp)
		if cfg.Name != "" && slices.ContainsFunc(s.tritonConfigs[:i], func(o TritonModelConfig) bool { return o.Name == cfg.Name }) {
			cfgErrs = append(cfgErrs, field.Duplicate(mp.Child("name"), cfg.Name))
		}
		vllm := cfg.Backend == TritonBackendVLLM
		if vllm {
			if vllmIndex >= 0 {
				cfgErrs = append(cfgErrs, field.Invalid(mp.Child("backend"), cfg.Backend,
					fmt.Sprintf("a Service serves one vLLM-backend model, whose weights are its source (tritonModels[%d] is one)", vllmIndex)))
			} else {
				vllmIndex = i
			}
			cfgErrs = append(cfgErrs, checkVLLMInstances(mp, cfg, r)...)
		}
		for _, name := range sortedKeys(cfg.VersionFiles) {
			fp := mp.Child("versionFiles").Key(name)
			switch {
			case !configKeyChars.MatchString(name) || name == "." || name == "..":
				cfgErrs = append(cfgErrs, field.Invalid(fp, name, "must be a file name of letters, digits, '-', '_' and '.'"))
			case vllm && name == "model.json":
				cfgErrs = append(cfgErrs, field.Forbidden(fp, "cube writes the vLLM backend's model.json from the Service's settings"))
			}
		}
		if len(cfgErrs) > 0 {
			errs = append(errs, cfgErrs...)
			continue
		}
		add(mp.Child("name"), path.Join(cfg.Name, "config.pbtxt"), cfg.pbtxt())
		if vllm {
			modelJSON, err := vllmModelJSON(s, r)
			if err != nil {
				errs = append(errs, field.InternalError(mp, fmt.Errorf("render model.json: %w", err)))
				continue
			}
			add(mp.Child("name"), path.Join(cfg.Name, "1", "model.json"), modelJSON)
		}
		for _, name := range sortedKeys(cfg.VersionFiles) {
			add(mp.Child("versionFiles").Key(name), path.Join(cfg.Name, "1", name), cfg.VersionFiles[name])
		}
	}
	if size > maxConfigMapBytes {
		errs = append(errs, field.TooLong(p, size, maxConfigMapBytes))
	}
	r.files, r.configItems, r.configMount = files, items, TritonRepositoryPath
	return errs
}

// checkVLLMInstances reports instance groups the vLLM backend refuses: a
// KIND_GPU instance holds one GPU, so a model across several (tensor or
// pipeline parallel) needs KIND_MODEL.
func checkVLLMInstances(p *field.Path, cfg TritonModelConfig, r *rendering) field.ErrorList {
	if r.tp*r.pp <= 1 {
		return nil
	}
	var errs field.ErrorList
	for i, g := range cfg.InstanceGroups {
		if g.Kind == TritonKindGPU {
			errs = append(errs, field.Invalid(p.Child("instance_group").Index(i).Child("kind"), g.Kind,
				fmt.Sprintf("the vLLM backend runs a model across %d GPUs only as KIND_MODEL", r.tp*r.pp)))
		}
	}
	return errs
}

// vllmModelJSON renders the vLLM backend's model.json, the keyword
// arguments of vLLM's AsyncEngineArgs, from the settings `vllm serve` gets
// as flags (engineSettings with vLLM's flag set): each flag is an
// EngineArgs field spelled with dashes (--max-model-len is max_model_len),
// so the values are the ones the vLLM engine renders. The server's own
// host and port are not engine arguments.
func vllmModelJSON(s *Service, r *rendering) (string, error) {
	f := r.engine.flags
	engineArgs := map[string]any{"model": r.modelArg}
	for _, st := range engineSettings(f, s, r) {
		switch st.flag {
		case f.host, f.port:
			continue
		case f.prefixOff:
			engineArgs[engineArgName(f.prefixOn)] = false
			continue
		}
		engineArgs[engineArgName(st.flag)] = st.value
	}
	data, err := json.MarshalIndent(engineArgs, "", "  ")
	if err != nil {
		return "", fmt.Errorf("encode engine arguments: %w", err)
	}
	return string(data) + "\n", nil
}

func engineArgName(flag string) string {
	return strings.ReplaceAll(strings.TrimPrefix(flag, "--"), "-", "_")
}

// ModelControl sets Triton's --model-control-mode (none, poll or explicit)
// and, for explicit, the models to load at startup (--load-model). Triton
// only.
func (s *Service) ModelControl(mode string, load ...string) *Service {
	if s == nil {
		return nil
	}
	s.use("modelControl")
	if !slices.Contains([]string{"none", "poll", "explicit"}, mode) {
		s.fail(field.NotSupported(field.NewPath("spec", "modelControl"), mode, []string{"none", "poll", "explicit"}))
	}
	s.tritonControl = mode
	s.tritonModels = slices.Clone(load)
	return s
}
