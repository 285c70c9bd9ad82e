package serve

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/podspec"
)

// ollamaEngine is Ollama (`ollama serve`), configured by its environment
// variables (envconfig/config.go). Its OpenAI-compatible API is under /v1.
var ollamaEngine = &engine{
	kind: "ollama", title: "Ollama",
	image:  DefaultOllamaImage,
	nvidia: true, cpu: true,
	port:      11434,
	readyPath: "/v1/models", livePath: "/",
	bare:    SourceOllama,
	sources: []SourceKind{SourceOllama, SourceHuggingFace, SourceModelScope},
	flags: flagSet{
		maxModelLen:     "OLLAMA_CONTEXT_LENGTH",
		servedModelName: "ollama cp",
	},
}

func init() { ollamaEngine.launch = launchOllama }

// ollamaModelsPath is Ollama's model store (OLLAMA_MODELS), on the cache
// volume so that the pull init container and the server share it.
const ollamaModelsPath = CachePath + "/ollama"

// ollamaPullScript starts a private server, pulls $1 and, when $2 is given,
// copies it to that name.
const ollamaPullScript = `ollama serve & server=$!
until ollama list >/dev/null 2>&1; do sleep 1; done
ollama pull "$1" || exit 1
if [ -n "$2" ]; then ollama cp "$1" "$2" || exit 1; fi
kill "$server"`

func launchOllama(s *Service, r *rendering) field.ErrorList {
	var errs field.ErrorList
	switch r.src.Kind {
	case SourceHuggingFace:
		// Ollama pulls GGUF repositories from the hub by host name.
		r.modelArg = "hf.co/" + r.src.Repo
		if r.src.Revision != "" {
			errs = append(errs, field.Invalid(field.NewPath("spec", "model"), s.model,
				"Ollama pulls a repository's GGUF files and takes no revision"))
		}
	case SourceModelScope:
		r.modelArg = "modelscope.cn/" + r.src.Repo
	}
	if !s.set["servedModelName"] {
		r.servedName, r.servedNameExplicit = r.modelArg, false
	}
	keepAlive := s.ollamaKeepAlive
	if keepAlive == "" {
		keepAlive = "-1" // a serving pod keeps its model loaded
	}
	models := corev1.EnvVar{Name: "OLLAMA_MODELS", Value: ollamaModelsPath}
	r.env = append(r.env,
		corev1.EnvVar{Name: "OLLAMA_HOST", Value: "0.0.0.0:" + strconv.Itoa(int(r.engine.port))},
		models,
		corev1.EnvVar{Name: "OLLAMA_KEEP_ALIVE", Value: keepAlive})
	if r.maxModelLen > 0 {
		r.env = append(r.env, corev1.EnvVar{Name: "OLLAMA_CONTEXT_LENGTH", Value: strconv.Itoa(r.maxModelLen)})
	}
	r.command = []string{"ollama", "serve"}

	pull := []string{"/bin/sh", "-c", ollamaPullScript, "pull", r.modelArg}
	if r.servedNameExplicit {
		pull = append(pull, r.servedName)
	}
	image := podspec.Of(&s.Handle).ImageName()
	if image == "" {
		image = r.engine.defaultImage(r)
	}
	r.initContainers = append(r.initContainers, corev1.Container{
		Name:    "pull",
		Image:   image,
		Command: pull,
		Env: []corev1.EnvVar{
			{Name: "OLLAMA_HOST", Value: "127.0.0.1:" + strconv.Itoa(int(r.engine.port))},
			models,
		},
		VolumeMounts: []corev1.VolumeMount{{Name: cacheVolume, MountPath: CachePath}},
	})
	return errs
}
