package serve

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
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

// AutoPlan returns the plan Auto sized the service with: the layout it
// renders and what each device's memory holds (PlanResult.String prints
// it). It fails like Objects, and when the service does not use Auto.
func (s *Service) AutoPlan() (PlanResult, error) {
	if err := s.unmade(); err != nil {
		return PlanResult{}, err
	}
	if s.auto == nil {
		return PlanResult{}, field.ErrorList{field.Required(field.NewPath("spec", "auto"),
			"the service is not sized by the planner: call Auto")}.ToAggregate()
	}
	_, r, errs := s.render()
	if len(errs) > 0 {
		return PlanResult{}, dedupe(errs).ToAggregate()
	}
	if r.plan == nil {
		return PlanResult{}, field.ErrorList{field.InternalError(field.NewPath("spec", "auto"), errors.New("no plan was made"))}.ToAggregate()
	}
	return *r.plan, nil
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

// Endpoint is the in-cluster URL of the service's HTTP API, for NewClient:
// http://<name>-api.<namespace>:<port> (see ServiceName), or
// http://<name>-api:<port> from the same namespace when none was set; ""
// for a Service not made by a constructor.
func (s *Service) Endpoint() string {
	if s.unmade() != nil {
		return ""
	}
	host := s.ServiceName()
	if ns := podspec.Of(&s.Handle).NamespaceName(); ns != "" {
		host += "." + ns
	}
	return fmt.Sprintf("http://%s:%d", host, s.engine.port)
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

// checkHardware reports an engine on hardware it does not run on.
func (s *Service) checkHardware(r *rendering) field.ErrorList {
	e := s.engine
	on := field.NewPath("spec", "on")
	accelerated := r.hasProfile && r.profile.Accelerated()
	switch {
	case !e.cpu && !e.nvidia && (!accelerated || r.profile.Vendor != hardware.Huawei):
		return field.ErrorList{field.Required(on, e.title+" runs on Ascend NPUs: call On(hardware.Ascend910B3) or another 910B profile")}
	case !accelerated && e.gpuImage && podspec.Of(&s.Handle).ImageName() == "" && podspec.Of(&s.Handle).GPUCount() == 0 && s.auto == nil:
		// (GPUs and Auto without a profile are reported as a missing On.)
		return field.ErrorList{field.Required(field.NewPath("spec", "image"),
			fmt.Sprintf("the default %s image is built for GPUs: call On with an accelerator, or set Image to a CPU build", e.title))}
	case !accelerated:
		return nil
	case r.profile.Vendor == hardware.Huawei && !e.ascend:
		return field.ErrorList{field.Invalid(on, r.profile.Name, e.title+" does not run on Ascend NPUs; use MindIE or vLLM")}
	case r.profile.Vendor == hardware.Huawei && e.ascendImage == "" && podspec.Of(&s.Handle).ImageName() == "":
		return field.ErrorList{field.Required(field.NewPath("spec", "image"),
			fmt.Sprintf("cube pins no %s image for Ascend NPUs: set Image", e.title))}
	case r.profile.Vendor == hardware.NVIDIA && !e.nvidia:
		return field.ErrorList{field.Invalid(on, r.profile.Name, e.title+" does not run on NVIDIA GPUs")}
	case r.profile.Vendor != hardware.NVIDIA && r.profile.Vendor != hardware.Huawei && podspec.Of(&s.Handle).ImageName() == "" && e.defaultImage(r) == "":
		// The engine's default image is a CUDA build: on Hygon, Cambricon,
		// Kunlunxin, MetaX and the other vendors' devices it finds no
		// device and fails, or serves on the CPU.
		return field.ErrorList{field.Required(field.NewPath("spec", "image"),
			fmt.Sprintf("cube knows no %s image for %s %s devices (%s): set Image to a %s build for them",
				e.title, r.profile.Vendor, r.profile.Name, e.vendorHint(), e.title))}
	}
	return nil
}

// vendorHint says where a vendor image for the engine would come from.
func (e *engine) vendorHint() string {
	if e.vendorFramework == "" {
		return "its images are built for NVIDIA GPUs and CPUs only"
	}
	return "the profile has no " + string(e.vendorFramework) + " image; hardware.Profile.WithImages sets one"
}

// defaultImage is the engine's image for the profile: its CUDA (or CPU)
// image on NVIDIA GPUs and nodes without accelerators, its Ascend image on
// Ascend NPUs, and on other vendors' devices the vendor's build the
// hardware catalogue knows (hardware.Profile.Image), or "" when there is
// none.
func (e *engine) defaultImage(r *rendering) string {
	if !r.hasProfile || !r.profile.Accelerated() {
		return e.image
	}
	switch r.profile.Vendor {
	case hardware.NVIDIA:
		return e.image
	case hardware.Huawei:
		if e.ascendImage != "" {
			return e.ascendImage
		}
		return e.image // refused by checkHardware unless Image is set
	}
	if e.vendorFramework == "" {
		return ""
	}
	img, err := r.profile.Image(e.vendorFramework)
	if err != nil {
		return ""
	}
	return img
}

// objects builds the Kubernetes objects from the rendering.
func (s *Service) objects(r *rendering) ([]client.Object, field.ErrorList) {
	var objs []client.Object
	var errs field.ErrorList
	if len(r.files) > 0 {
		objs = append(objs, s.configMap(r))
	}
	target := autoscaleTarget{apiVersion: "apps/v1", kind: "Deployment"}
	if r.nodes > 1 {
		lws, lwsErrs := s.leaderWorkerSet(r)
		errs = append(errs, lwsErrs...)
		objs = append(objs, lws)
		target = autoscaleTarget{apiVersion: lwsAPIVersion, kind: "LeaderWorkerSet"}
	} else {
		dep, depErrs := s.deployment(r)
		errs = append(errs, depErrs...)
		objs = append(objs, dep)
	}
	objs = append(objs, s.service(r))
	if pdb := s.disruptionBudget(); pdb != nil {
		objs = append(objs, pdb)
	}
	if s.autoscale != nil {
		hpa, hpaErrs := s.horizontalPodAutoscaler(r, target, objs)
		errs = append(errs, hpaErrs...)
		if hpa != nil {
			objs = append(objs, hpa)
		}
	}
	return objs, errs
}

// selector selects the serving pods of the release.
func (s *Service) selector() map[string]string {
	return podspec.Of(&s.Handle).Identity().Selector(ComponentServer)
}

// replicaCount is the replica count rendered on the workload: nil when an
// autoscaler owns it.
func (s *Service) replicaCount() *int32 {
	if s.autoscale != nil {
		return nil
	}
	if s.replicas == nil {
		return ptr.To[int32](1)
	}
	return ptr.To(*s.replicas)
}

func (s *Service) startup() (timeoutSeconds int32) {
	d := s.startupTimeout
	if d == 0 {
		d = DefaultStartupTimeout
	}
	return int32(min(d.Seconds(), math.MaxInt32/2))
}

func (s *Service) deployment(r *rendering) (*appsv1.Deployment, field.ErrorList) {
	p := field.NewPath("spec", "template")
	tmpl, errs := s.podTemplate(r, p, roleSingle)
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: podspec.Of(&s.Handle).ObjectMeta(podspec.Of(&s.Handle).Name()),
		Spec: appsv1.DeploymentSpec{
			Replicas: s.replicaCount(),
			Selector: &metav1.LabelSelector{MatchLabels: s.selector()},
			Template: tmpl,
			// Model downloads outlast the 10-minute default; a Deployment
			// past its deadline reads as failed.
			ProgressDeadlineSeconds: ptr.To(s.startup() + 600),
		},
	}
	return d, errs
}

func (s *Service) service(r *rendering) *corev1.Service {
	e := s.engine
	meta := podspec.Of(&s.Handle).ObjectMeta(s.ServiceName())
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	if port, path := e.metricsTarget(); path != "" {
		meta.Annotations["prometheus.io/scrape"] = "true"
		meta.Annotations["prometheus.io/port"] = fmt.Sprint(port)
		meta.Annotations["prometheus.io/path"] = path
	}
	sel := s.selector()
	if r.nodes > 1 {
		// Only the leader of each group serves HTTP.
		sel[lwsWorkerIndexLabel] = "0"
	}
	var ports []corev1.ServicePort
	for _, cp := range e.containerPorts() {
		ports = append(ports, corev1.ServicePort{
			Name: cp.Name, Port: cp.ContainerPort, TargetPort: intstr.FromString(cp.Name), Protocol: corev1.ProtocolTCP,
		})
	}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta,
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: sel,
			Ports:    ports,
		},
	}
}

func (s *Service) configMapName() string { return podspec.Of(&s.Handle).Name() + "-config" }

func (s *Service) configMap(r *rendering) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: podspec.Of(&s.Handle).ObjectMeta(s.configMapName()),
		Data:       maps.Clone(r.files),
	}
}

// configHash is a digest of the config files, stable across calls.
func configHash(files map[string]string) string {
	h := sha256.New()
	for _, k := range sortedKeys(files) {
		fmt.Fprintf(h, "%s\x00%s\x00", k, files[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

type podRole int

const (
	roleSingle podRole = iota // a Deployment pod
	roleLeader                // the LeaderWorkerSet leader
	roleWorker                // a LeaderWorkerSet worker
)

// podTemplate renders the pod of one role: the shared pod settings through
// pod.Builder.Template (which applies the hardware), then the engine's
// command, environment, ports, volumes, init containers and probes. The
// caller's own env, ports, command and volumes win over the engine's.
func (s *Service) podTemplate(r *rendering, p *field.Path, role podRole) (corev1.PodTemplateSpec, field.ErrorList) {
	e := s.engine
	// A shallow copy carries the layout into the shared builder without
	// changing s: GPUs, Fabric and HostNetwork only assign fields.
	c := *s
	if r.templateDevices != podspec.Of(&s.Handle).GPUCount() {
		c.Accelerators(r.templateDevices)
	}
	if r.fabric != nil && podspec.Of(&c.Handle).FabricSetting().IsZero() {
		c.Fabric(*r.fabric)
	}
	if r.hostNetwork {
		c.HostNetwork(true)
	}
	image := e.defaultImage(r)
	if image == "" {
		image = e.image // refused by checkHardware, which names the accelerator
	}
	tmpl, errs := podspec.Of(&c.Handle).Template(p, podspec.TemplateOptions{
		Container:    e.kind,
		DefaultImage: image,
		Labels:       map[string]string{LabelComponent: ComponentServer},
	})
	if len(tmpl.Spec.Containers) == 0 {
		return tmpl, errs
	}
	main := &tmpl.Spec.Containers[0]
	cPath := p.Child("spec", "containers").Index(0)

	userCommand, userArgs := podspec.Of(&s.Handle).CommandLine()
	command, args := r.command, r.args
	if role == roleWorker {
		command, args = r.workerCommand, r.workerArgs
	}
	if len(userCommand) > 0 {
		main.Command = userCommand
	} else {
		main.Command = slices.Clone(command)
	}
	if role == roleWorker && r.workerOwnArgs {
		userArgs = nil
	}
	main.Args = append(slices.Clone(args), userArgs...)
	if len(main.Args) == 0 {
		main.Args = nil
	}

	for _, v := range r.env {
		if !slices.ContainsFunc(main.Env, func(have corev1.EnvVar) bool { return have.Name == v.Name }) {
			main.Env = append(main.Env, *v.DeepCopy())
		}
	}
	for _, port := range e.containerPorts() {
		if !slices.ContainsFunc(main.Ports, func(have corev1.ContainerPort) bool { return have.Name == port.Name }) {
			main.Ports = append(main.Ports, port)
		}
	}

	volumes := slices.Clone(r.volumes)
	mounts := slices.Clone(r.mounts)
	if len(r.files) > 0 {
		volumes = append(volumes, corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: s.configMapName()},
				Items:                slices.Clone(r.configItems),
				// MindIE refuses config files others may write.
				DefaultMode: ptr.To[int32](0o640),
			},
		}})
		mounts = append(mounts, corev1.VolumeMount{Name: "config", MountPath: r.configMount, ReadOnly: true})
		if tmpl.Annotations == nil {
			tmpl.Annotations = map[string]string{}
		}
		tmpl.Annotations[AnnotationConfigHash] = configHash(r.files)
	}
	for _, v := range volumes {
		if i := slices.IndexFunc(tmpl.Spec.Volumes, func(have corev1.Volume) bool { return have.Name == v.Name }); i >= 0 {
			errs = append(errs, field.Duplicate(p.Child("spec", "volumes").Index(i).Child("name"), v.Name))
			continue
		}
		tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, *v.DeepCopy())
	}
	for _, m := range mounts {
		if i := slices.IndexFunc(main.VolumeMounts, func(have corev1.VolumeMount) bool { return have.MountPath == m.MountPath }); i >= 0 {
			errs = append(errs, field.Duplicate(cPath.Child("volumeMounts").Index(i).Child("mountPath"), m.MountPath))
			continue
		}
		main.VolumeMounts = append(main.VolumeMounts, m)
	}
	for _, ic := range r.initContainers {
		ic := ic.DeepCopy()
		if ic.SecurityContext == nil {
			ic.SecurityContext = podspec.HelperSecurityContext(main)
		}
		tmpl.Spec.InitContainers = append(tmpl.Spec.InitContainers, *ic)
	}
	if tmpl.Spec.HostNetwork {
		tmpl.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
	if role != roleWorker {
		s.setProbes(main)
	}
	return tmpl, errs
}

// setProbes gives the serving container a startup probe long enough to
// download and load the model, a readiness probe on the engine's health
// (or model list) endpoint and a liveness probe.
func (s *Service) setProbes(c *corev1.Container) {
	e := s.engine
	readyPort := e.readyPort
	if readyPort == 0 {
		readyPort = e.port
	}
	ready := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: e.readyPath, Port: intstr.FromInt32(readyPort)}}
	const period = 10
	c.StartupProbe = &corev1.Probe{
		ProbeHandler:     *ready.DeepCopy(),
		PeriodSeconds:    period,
		TimeoutSeconds:   5,
		FailureThreshold: (s.startup() + period - 1) / period,
	}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: ready, PeriodSeconds: period, TimeoutSeconds: 5, FailureThreshold: 3}
	live := corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(e.port)}}
	if e.livePath != "" {
		live = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: e.livePath, Port: intstr.FromInt32(e.port)}}
	}
	c.LivenessProbe = &corev1.Probe{ProbeHandler: live, PeriodSeconds: 30, TimeoutSeconds: 10, FailureThreshold: 5}
}

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
				"an API key in the arguments is stored in the objects in clear: use APIKeyFromSecret"))
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
