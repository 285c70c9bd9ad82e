package serve

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/urlcheck"
	"github.com/cubestudio/cube/models"
)

// Labels and annotations the serving objects carry.
const (
	// LabelComponent marks the serving pods; the Service, the
	// PodDisruptionBudget and the Deployment select on it.
	LabelComponent = "app.kubernetes.io/component"
	// ComponentServer is the LabelComponent value of serving pods.
	ComponentServer = "server"
	// AnnotationConfigHash on the pod template changes with the engine's
	// config file, so that editing it rolls the pods.
	AnnotationConfigHash = "cube.dev/config-hash"
)

// rendering is what Objects works out before it builds the objects: the
// parsed source, the layout, the model's path in the container and what the
// engine adds to the pods.
type rendering struct {
	engine *engine
	src    Source
	facts  *models.Model

	profile    hardware.Profile
	hasProfile bool

	// Layout of one replica.
	tp, pp, nodes, devices int
	// templateDevices is what the pod template requests: devices, or 0
	// when devices is already reported as more than a node holds.
	templateDevices int
	// slice says the pod runs on a vgpu slice, which requests its devices.
	slice             bool
	maxModelLen       int
	memoryUtilization float64
	plan              *PlanResult

	// What the engine loads and calls it.
	modelArg           string
	servedName         string
	servedNameExplicit bool
	loras              []resolvedLoRA
	cached             bool

	// What the main container (the leader, for multi-node) gets.
	command, args  []string
	env            []corev1.EnvVar
	volumes        []corev1.Volume
	mounts         []corev1.VolumeMount
	initContainers []corev1.Container
	// files are the ConfigMap's keys, mounted at configMount; configItems,
	// when set, lay them out in subdirectories (a Triton repository).
	files       map[string]string
	configItems []corev1.KeyToPath
	configMount string

	// What multi-node workers get instead of command and args; they share
	// env, volumes and init containers with the leader.
	workerCommand, workerArgs []string
	// workerOwnArgs keeps the caller's Args off the workers, whose command
	// is not the engine's server.
	workerOwnArgs bool
	hostNetwork   bool
	// fabric is used when the caller set none (MindIE across nodes).
	fabric *hardware.Fabric
}

type resolvedLoRA struct{ name, path string }

// Objects validates the service and returns fresh objects: a ConfigMap when
// the engine reads a config file, the Deployment (or LeaderWorkerSet), the
// Service, a PodDisruptionBudget and a HorizontalPodAutoscaler when they
// apply. Every problem comes back at once as a field.ErrorList aggregate.
func (s *Service) Objects() ([]client.Object, error) {
	if err := s.unmade(); err != nil {
		return nil, err
	}
	objs, _, errs := s.render()
	if len(errs) > 0 {
		return nil, dedupe(errs).ToAggregate()
	}
	return objs, nil
}

// unmade reports a nil Service or one not made by a constructor (VLLM,
// SGLang, TGI, Ollama, MindIE, Triton), which has no engine to render.
func (s *Service) unmade() error {
	switch {
	case s == nil:
		return field.ErrorList{field.Required(field.NewPath("spec"), "the Service is nil: make one with serve.VLLM, SGLang, TGI, Ollama, MindIE or Triton")}.ToAggregate()
	case s.engine == nil:
		return field.ErrorList{field.Required(field.NewPath("spec", "engine"), "the Service was not made by a constructor: use serve.VLLM, SGLang, TGI, Ollama, MindIE or Triton")}.ToAggregate()
	}
	return nil
}

func (s *Service) render() ([]client.Object, *rendering, field.ErrorList) {
	e := s.engine
	errs := podspec.Of(&s.Handle).ValidateMeta(maxNameLength)
	if name := podspec.Of(&s.Handle).Name(); name != "" && !(name[0] >= 'a' && name[0] <= 'z') {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), name, "must start with a letter: it names the Service"))
	}
	errs = append(errs, s.problems...)
	errs = append(errs, s.checkSupport()...)
	errs = append(errs, s.checkLiteralSecrets()...)

	r := &rendering{engine: e}
	r.profile, r.hasProfile = podspec.Of(&s.Handle).Profile()
	var srcErrs field.ErrorList
	modelPath := field.NewPath("spec", "model")
	r.src, srcErrs = parseSource(s.model, modelPath, e.bare)
	errs = append(errs, srcErrs...)
	sourceOK := len(srcErrs) == 0
	if sourceOK && !e.supportsSource(r.src.Kind) {
		errs = append(errs, field.Invalid(modelPath, s.model,
			fmt.Sprintf("%s cannot load %s:// sources; it loads %s", e.title, r.src.Kind, schemes(e.sources))))
		sourceOK = false
	}
	errs = append(errs, s.checkHardware(r)...)
	if s.facts != nil {
		if err := s.facts.Validate(); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("spec", "modelFacts"), s.facts.Name, err.Error()))
		}
	}
	if sourceOK && (s.facts == nil || s.facts.Validate() == nil) {
		r.facts = s.modelFacts(r.src)
	}
	errs = append(errs, s.layout(r, sourceOK)...)
	if sourceOK {
		errs = append(errs, s.resolveModel(r)...)
		errs = append(errs, e.launch(s, r)...)
	}
	if r.nodes > 1 && r.hasProfile && r.profile.OnChipRoCE {
		// Ascend 910B nodes talk HCCL over the NPUs' own RoCE ports; the
		// caller's Fabric, if any, wins.
		roce := hardware.RoCE()
		r.fabric = &roce
	}
	objs, objErrs := s.objects(r)
	return objs, r, append(errs, objErrs...)
}

func schemes(kinds []SourceKind) string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = string(k) + "://"
	}
	return strings.Join(out, ", ")
}

const (
	roleSingle podRole = iota // a Deployment pod
	roleLeader                // the LeaderWorkerSet leader
	roleWorker                // a LeaderWorkerSet worker
)

// checkLiteralSecrets refuses credentials written into the objects: an
// --api-key flag with a literal value among the extra arguments.
func (s *Service) checkLiteralSecrets() field.ErrorList {
	var errs field.ErrorList
	_, args := podspec.Of(&s.Handle).CommandLine()
	argsPath := field.NewPath("spec", "args")
	for i, a := range args {
		value, isKey := "", false
		switch {
		case a == "--api-key":
			isKey = true
			if i+1 < len(args) {
				value = args[i+1]
			}
		case strings.HasPrefix(a, "--api-key="):
			isKey, value = true, strings.TrimPrefix(a, "--api-key=")
		}
		if isKey && !(strings.HasPrefix(value, "$(") && strings.HasSuffix(value, ")")) {
			// The value itself is never echoed.
			errs = append(errs, field.Forbidden(argsPath.Index(i),
				"an API key in the arguments is stored in the objects in clear: use APIKey"))
		}
	}
	// Literal credentials in the environment are refused by the shared pod
	// settings (pod.Builder's check), once for every workload.
	return errs
}

// redactUserinfo hides URL credentials in a value quoted back: a URL with
// a password given to any setting (a scheduler name, a model control mode)
// must not reach logs through the error that refuses it.
func redactUserinfo(v string) string { return urlcheck.RedactAll(v) }

// dedupe drops repeated errors (the shared pod settings are validated once
// per pod template, and a LeaderWorkerSet has two) and redacts URL
// credentials in the values and details they quote.
func dedupe(errs field.ErrorList) field.ErrorList {
	seen := map[string]bool{}
	var out field.ErrorList
	for _, e := range errs {
		v, isString := e.BadValue.(string)
		if isString && urlcheck.HasEmbedded(v) || urlcheck.HasEmbedded(e.Detail) || urlcheck.HasEmbedded(e.Field) {
			redacted := *e
			if isString {
				redacted.BadValue = redactUserinfo(v)
			}
			redacted.Field, redacted.Detail = redactUserinfo(e.Field), redactUserinfo(e.Detail)
			e = &redacted
		}
		key := e.Error()
		if rel := strings.Index(key, "spec.leaderWorkerTemplate.workerTemplate"); rel >= 0 {
			key = strings.Replace(key, "workerTemplate", "leaderTemplate", 1)
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, e)
	}
	return out
}

func sortedKeys[K ~string, V any](m map[K]V) []K { return slices.Sorted(maps.Keys(m)) }
