package podspec

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/quantity"
	"github.com/cubestudio/cube/internal/vgpuspec"
	"github.com/cubestudio/cube/vgpu"
)

// VolcanoQueueAnnotation puts a pod or PodGroup in a Volcano queue.
const VolcanoQueueAnnotation = "scheduling.volcano.sh/queue-name"

// Builder is the state behind pod.Builder and pod.Meta: the pod settings
// every cube workload shares, and the plumbing that renders them (Init,
// Template, SettingErrors, the metadata and the reads). Its setters are the
// implementation of pod.Builder's, which document them for users; a package
// of cube reaches it with Of.
type Builder[T any] struct {
	Meta[T]

	image           string
	pullPolicy      corev1.PullPolicy
	command, args   []string
	workingDir      string
	env             []corev1.EnvVar
	envFrom         []corev1.EnvFromSource
	requests        map[corev1.ResourceName]string
	limits          map[corev1.ResourceName]string
	profile         *hardware.Profile
	devices         int
	devicesSet      bool
	slice           *vgpu.Spec
	fabric          hardware.Fabric
	sharedMemory    string
	volumes         []mountedVolume
	nodeSelector    map[string]string
	tolerations     []corev1.Toleration
	affinity        *corev1.Affinity
	priorityClass   string
	serviceAccount  string
	pullSecrets     []string
	scheduler       string
	queue           string
	podLabels       map[string]string
	podAnnotations  map[string]string
	podSecurity     *corev1.PodSecurityContext
	containerSecure *corev1.SecurityContext
	ports           []corev1.ContainerPort
	hostNetwork     bool
	edge            *hardware.Edge
	problems        field.ErrorList
}

type mountedVolume struct {
	volume    corev1.Volume
	mountPath string
	subPath   string
	readOnly  bool
}

// Init binds b to the builder that embeds it; kind and name are as for InitMeta.
func (b *Builder[T]) Init(self *T, kind, name string) { b.InitMeta(self, kind, name) }

// Image sets the container image.
func (b *Builder[T]) Image(image string) *T { b.image = image; return b.ret() }

// ImagePullPolicy sets the image pull policy.
func (b *Builder[T]) ImagePullPolicy(p corev1.PullPolicy) *T { b.pullPolicy = p; return b.ret() }

// Command replaces the container's entrypoint.
func (b *Builder[T]) Command(cmd ...string) *T { b.command = slices.Clone(cmd); return b.ret() }

// Args replaces the container's arguments.
func (b *Builder[T]) Args(args ...string) *T { b.args = slices.Clone(args); return b.ret() }

// AddArgs appends arguments.
func (b *Builder[T]) AddArgs(args ...string) *T { b.args = append(b.args, args...); return b.ret() }

// WorkingDir sets the container's working directory.
func (b *Builder[T]) WorkingDir(dir string) *T { b.workingDir = dir; return b.ret() }

// Env sets an environment variable, replacing one of the same name. A
// literal that looks like a credential under a secret-named variable
// (SecretLiteral: HF_TOKEN=hf_…, OPENAI_API_KEY=sk-…) is refused, because
// the rendered objects would carry it in clear: use EnvFromSecret.
func (b *Builder[T]) Env(name, value string) *T {
	if SecretLiteral(name, value) {
		b.problems = append(b.problems, SecretLiteralError(field.NewPath("env").Key(name).Child("value"), name))
	}
	return b.setEnv(corev1.EnvVar{Name: name, Value: value})
}

// EnvFromSecret sets an environment variable from a key of a Secret
// (secretKeyRef), so the value never appears in the rendered objects.
func (b *Builder[T]) EnvFromSecret(name, secret, key string) *T {
	if secret == "" || key == "" {
		b.problems = append(b.problems, field.Required(field.NewPath("env").Key(name).Child("valueFrom", "secretKeyRef"), "secret name and key are required"))
	}
	return b.setEnv(corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key},
	}})
}

// EnvFromField sets an environment variable from a pod field (fieldRef),
// e.g. "status.podIP".
func (b *Builder[T]) EnvFromField(name, fieldPath string) *T {
	return b.setEnv(corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath}}})
}

// EnvFromSecretAll adds every key of a Secret as environment variables.
func (b *Builder[T]) EnvFromSecretAll(secret string) *T {
	b.envFrom = append(b.envFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}})
	return b.ret()
}

// EnvFromConfigMap adds every key of a ConfigMap as environment variables.
func (b *Builder[T]) EnvFromConfigMap(configMap string) *T {
	b.envFrom = append(b.envFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}})
	return b.ret()
}

func (b *Builder[T]) setEnv(v corev1.EnvVar) *T {
	if i := slices.IndexFunc(b.env, func(e corev1.EnvVar) bool { return e.Name == v.Name }); i >= 0 {
		b.env[i] = v
	} else {
		b.env = append(b.env, v)
	}
	return b.ret()
}

// CPU sets the CPU request and limit ("8", "500m").
func (b *Builder[T]) CPU(q string) *T { return b.Resource(corev1.ResourceCPU, q) }

// Memory sets the memory request and limit ("32Gi").
func (b *Builder[T]) Memory(q string) *T { return b.Resource(corev1.ResourceMemory, q) }

// Resource sets the request and limit of any resource.
func (b *Builder[T]) Resource(name corev1.ResourceName, q string) *T {
	b.Request(name, q)
	return b.Limit(name, q)
}

// Request sets a request only (the limit stays as set, or unset).
func (b *Builder[T]) Request(name corev1.ResourceName, q string) *T {
	if b.requests == nil {
		b.requests = map[corev1.ResourceName]string{}
	}
	b.requests[name] = q
	return b.ret()
}

// Limit sets a limit only.
func (b *Builder[T]) Limit(name corev1.ResourceName, q string) *T {
	if b.limits == nil {
		b.limits = map[corev1.ResourceName]string{}
	}
	b.limits[name] = q
	return b.ret()
}

// On selects the accelerator (or CPU) profile the pods run on. It decides
// resource names, node selectors, tolerations, mounts and the collective
// library's environment; the same builder moves from NVIDIA to Ascend by
// changing this one argument.
func (b *Builder[T]) On(p hardware.Profile) *T { b.profile = &p; return b.ret() }

// Accelerators sets how many whole accelerators each pod gets (GPUs or NPUs, per
// the profile). Without On, NVIDIA H100 is not assumed: the count needs a
// profile and Template reports it missing.
func (b *Builder[T]) Accelerators(n int) *T {
	if n < 0 {
		b.problems = append(b.problems, field.Invalid(field.NewPath("accelerators"), n, "must not be negative"))
	}
	b.devices, b.devicesSet = n, true
	return b.ret()
}

// Slice gives each pod a fraction of an accelerator instead of whole ones
// (HAMi, MIG, Volcano vGPU or Ascend vNPU); it also sets the profile.
func (b *Builder[T]) Slice(s *vgpu.Spec) *T {
	if s == nil {
		b.problems = append(b.problems, field.Required(field.NewPath("slice"), "slice is nil"))
		return b.ret()
	}
	b.slice = s
	p := vgpuspec.Of(s).Profile()
	b.profile = &p
	return b.ret()
}

// Fabric sets the network the collective library uses between pods
// (hardware.InfiniBand, hardware.RoCE, hardware.TCP).
func (b *Builder[T]) Fabric(f hardware.Fabric) *T { b.fabric = f; return b.ret() }

// SharedMemory sizes /dev/shm (a memory-backed emptyDir), e.g. "16Gi".
func (b *Builder[T]) SharedMemory(size string) *T { b.sharedMemory = size; return b.ret() }

// PVC mounts a PersistentVolumeClaim at mountPath.
func (b *Builder[T]) PVC(claim, mountPath string) *T {
	return b.AddVolume(corev1.Volume{Name: volumeName("pvc", claim), VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}}, mountPath)
}

// PVCSubPath mounts a sub-path of a claim at mountPath.
func (b *Builder[T]) PVCSubPath(claim, subPath, mountPath string) *T {
	b.PVC(claim, mountPath)
	b.volumes[len(b.volumes)-1].subPath = subPath
	b.volumes[len(b.volumes)-1].volume.Name = volumeName("pvc", claim+"-"+subPath)
	return b.ret()
}

// HostPath mounts a directory of the node at mountPath.
func (b *Builder[T]) HostPath(hostPath, mountPath string) *T {
	return b.AddVolume(corev1.Volume{Name: volumeName("host", hostPath), VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: hostPath},
	}}, mountPath)
}

// NFS mounts an NFS export at mountPath.
func (b *Builder[T]) NFS(server, exportPath, mountPath string) *T {
	return b.AddVolume(corev1.Volume{Name: volumeName("nfs", server+exportPath), VolumeSource: corev1.VolumeSource{
		NFS: &corev1.NFSVolumeSource{Server: server, Path: exportPath},
	}}, mountPath)
}

// ConfigMapVolume mounts a ConfigMap's keys as files under mountPath.
func (b *Builder[T]) ConfigMapVolume(configMap, mountPath string) *T {
	return b.AddVolume(corev1.Volume{Name: volumeName("cm", configMap), VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}},
	}}, mountPath)
}

// SecretVolume mounts a Secret's keys as files under mountPath, read-only.
func (b *Builder[T]) SecretVolume(secret, mountPath string) *T {
	b.AddVolume(corev1.Volume{Name: volumeName("secret", secret), VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: secret},
	}}, mountPath)
	b.volumes[len(b.volumes)-1].readOnly = true
	return b.ret()
}

// EmptyDir mounts a scratch directory at mountPath.
func (b *Builder[T]) EmptyDir(name, mountPath string) *T {
	return b.AddVolume(corev1.Volume{Name: volumeName("scratch", name), VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{},
	}}, mountPath)
}

// AddVolume adds any volume, mounted at mountPath in the main container
// (an empty mountPath adds the volume without mounting it).
func (b *Builder[T]) AddVolume(v corev1.Volume, mountPath string) *T {
	b.volumes = append(b.volumes, mountedVolume{volume: *v.DeepCopy(), mountPath: mountPath})
	return b.ret()
}

// NodeSelector adds a node selector.
func (b *Builder[T]) NodeSelector(key, value string) *T {
	if b.nodeSelector == nil {
		b.nodeSelector = map[string]string{}
	}
	b.nodeSelector[key] = value
	return b.ret()
}

// AddToleration adds a toleration.
func (b *Builder[T]) AddToleration(t corev1.Toleration) *T {
	b.tolerations = append(b.tolerations, t)
	return b.ret()
}

// Affinity replaces the pod affinity.
func (b *Builder[T]) Affinity(a *corev1.Affinity) *T { b.affinity = a.DeepCopy(); return b.ret() }

// PriorityClass sets the pod priority class.
func (b *Builder[T]) PriorityClass(name string) *T {
	b.checkObjectName("priorityClass", name)
	b.priorityClass = name
	return b.ret()
}

// ServiceAccount sets the pod's service account.
func (b *Builder[T]) ServiceAccount(name string) *T {
	b.checkObjectName("serviceAccount", name)
	b.serviceAccount = name
	return b.ret()
}

// checkObjectName records a problem with the name of an object a setting
// refers to (a DNS-1123 subdomain, as the API server checks it on pods;
// empty: none).
func (b *Builder[T]) checkObjectName(setting, name string) {
	if name == "" {
		return
	}
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		b.problems = append(b.problems, field.Invalid(field.NewPath(setting), name, msg))
	}
}

// ImagePullSecret adds an image pull secret.
func (b *Builder[T]) ImagePullSecret(name string) *T {
	b.pullSecrets = append(b.pullSecrets, name)
	return b.ret()
}

// Scheduler sets the scheduler name (e.g. "volcano", "hami-scheduler").
func (b *Builder[T]) Scheduler(name string) *T {
	b.checkObjectName("scheduler", name)
	b.scheduler = name
	return b.ret()
}

// Queue puts the pods in a Volcano queue; job builders also set it on the
// job's scheduling policy. A queue is a cluster-scoped Volcano object, so
// its name is a DNS-1123 subdomain, and Volcano refuses jobs in its root
// queue (pkg/webhooks/admission/jobs/validate/admit_job.go).
func (b *Builder[T]) Queue(name string) *T {
	p := field.NewPath("queue")
	if name != "" { // empty: no queue
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			b.problems = append(b.problems, field.Invalid(p, name, msg))
		}
	}
	if name == "root" {
		b.problems = append(b.problems, field.Invalid(p, name, "Volcano accepts no jobs in the root queue; use a leaf queue"))
	}
	b.queue = name
	return b.ret()
}

// PodLabel adds a label to the pods only.
func (b *Builder[T]) PodLabel(key, value string) *T {
	if b.podLabels == nil {
		b.podLabels = map[string]string{}
	}
	b.podLabels[key] = value
	return b.ret()
}

// PodAnnotation adds an annotation to the pods only.
func (b *Builder[T]) PodAnnotation(key, value string) *T {
	if b.podAnnotations == nil {
		b.podAnnotations = map[string]string{}
	}
	b.podAnnotations[key] = value
	return b.ret()
}

// PodSecurityContext replaces the pod security context.
func (b *Builder[T]) PodSecurityContext(sc *corev1.PodSecurityContext) *T {
	b.podSecurity = sc.DeepCopy()
	return b.ret()
}

// SecurityContext replaces the main container's security context.
func (b *Builder[T]) SecurityContext(sc *corev1.SecurityContext) *T {
	b.containerSecure = sc.DeepCopy()
	return b.ret()
}

// Port exposes a named container port on the main container; Template
// reports a number outside 1-65535 or a name that is not an IANA service
// name (at most 15 lowercase letters, digits and '-').
func (b *Builder[T]) Port(name string, port int32) *T {
	b.ports = append(b.ports, corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP})
	return b.ret()
}

// Edge places the pods on KubeEdge edge nodes (hardware.Edge: node
// selection, tolerations, host networking, resources checked against the
// edge device); the edge settings are applied after the hardware profile.
// It replaces an earlier Edge.
func (b *Builder[T]) Edge(e hardware.Edge) *T {
	e.NodeLabels = maps.Clone(e.NodeLabels)
	e.Capacity = e.Capacity.DeepCopy()
	b.edge = &e
	return b.ret()
}

// HostNetwork runs the pods in the node's network namespace.
func (b *Builder[T]) HostNetwork(on bool) *T { b.hostNetwork = on; return b.ret() }

// SliceSetting returns the slice set with Slice (nil when none).
func (b *Builder[T]) SliceSetting() *vgpu.Spec { return b.slice }

// GPUCount returns the whole accelerators per pod set with Accelerators (0 when unset
// or when a slice is used).
func (b *Builder[T]) GPUCount() int {
	if b.slice != nil {
		return 0
	}
	return b.devices
}

// Profile returns the accelerator profile set with On or Slice, if any.
func (b *Builder[T]) Profile() (hardware.Profile, bool) {
	if b.profile == nil {
		return hardware.Profile{}, false
	}
	return *b.profile, true
}

// FabricSetting returns the fabric set with Fabric (the zero value when none).
func (b *Builder[T]) FabricSetting() hardware.Fabric { return b.fabric }

// QueueName returns the Volcano queue set with Queue.
func (b *Builder[T]) QueueName() string { return b.queue }

// SchedulerName returns the scheduler set with Scheduler.
func (b *Builder[T]) SchedulerName() string { return b.scheduler }

// PriorityClassName returns the priority class set with PriorityClass.
func (b *Builder[T]) PriorityClassName() string { return b.priorityClass }

// ImageName returns the image set with Image.
func (b *Builder[T]) ImageName() string { return b.image }

// CommandLine returns copies of the command and args set.
func (b *Builder[T]) CommandLine() (command, args []string) {
	return slices.Clone(b.command), slices.Clone(b.args)
}

// EnvVars returns a copy of the environment set on the builder.
func (b *Builder[T]) EnvVars() []corev1.EnvVar {
	out := make([]corev1.EnvVar, len(b.env))
	for i := range b.env {
		out[i] = *b.env[i].DeepCopy()
	}
	return out
}

// under runs check without a path and, only when it finds problems, again
// under path(): a valid template needs no field paths, and building them
// was most of its allocations (a compiled pipeline renders ten thousand
// templates).
func under(check func(*field.Path) field.ErrorList, path func() *field.Path) field.ErrorList {
	if len(check(nil)) == 0 {
		return nil
	}
	return check(path())
}

// requestAboveLimit says whether a request exceeds its limit.
func requestAboveLimit(reqs, lims corev1.ResourceList) bool {
	for rn, req := range reqs {
		if l, ok := lims[rn]; ok && req.Cmp(l) > 0 {
			return true
		}
	}
	return false
}

// TemplateOptions say how a workload wants its pod template.
type TemplateOptions struct {
	// Container names the main container (e.g. "pytorch", "tensorflow").
	Container string
	// DefaultImage is used when Image was not called; without either,
	// Template reports the image as required.
	DefaultImage string
	// NoGPUs renders the pod without accelerators, for roles such as a
	// parameter server or an MPI launcher, while keeping the rest.
	NoGPUs bool
	// Labels are added to the pod (component and role labels).
	Labels map[string]string
	// RestartPolicy of the pod; empty leaves the API default.
	RestartPolicy corev1.RestartPolicy
	// Resources sets the request and limit of these resources for this
	// template only, in place of the pod settings' values: a small CPU and
	// memory for an MPI launcher or a parameter server beside large
	// workers. Values are parsed like CPU and Memory.
	Resources map[corev1.ResourceName]string
	// ScheduledByVolcano says that Volcano's scheduler places the pods
	// although the template's schedulerName is not (yet) volcano: a
	// training operator or KubeRay sets it on a gang-scheduled job's pods.
	// Only Volcano writes the pod annotation Ascend profiles read
	// ASCEND_VISIBLE_DEVICES from; the template of any other scheduler's
	// pods leaves that variable to the device plugin
	// (hardware.DropAnnotationVisibleDevices).
	ScheduledByVolcano bool
	// OmitSettingErrors leaves out the problems recorded while chaining
	// (a negative Accelerators, a bad Queue, a literal secret in Env): a workload
	// that renders several templates from one Builder reports them once,
	// from SettingErrors, instead of once per template.
	OmitSettingErrors bool
}

// SettingErrors returns the problems recorded while chaining, under the
// name of the setting (accelerators, queue, env[HF_TOKEN].value…). Template
// reports them too unless TemplateOptions.OmitSettingErrors is set.
func (b *Builder[T]) SettingErrors() field.ErrorList {
	out := make(field.ErrorList, len(b.problems))
	for i, e := range b.problems {
		c := *e
		out[i] = &c
	}
	return out
}

// Template returns a fresh pod template from the settings, with the hardware
// profile, slice and fabric applied by hardware.Apply and vgpu, and every
// problem reported under path (the path of the template in the workload's
// object, e.g. spec.pytorchReplicaSpecs[Worker].template).
func (b *Builder[T]) Template(p *field.Path, opts TemplateOptions) (corev1.PodTemplateSpec, field.ErrorList) {
	// Problems recorded while chaining name the setting (accelerators, env[X]…);
	// place them under the template so a multi-template workload says
	// which template they belong to.
	var errs field.ErrorList
	for _, e := range b.problems {
		if opts.OmitSettingErrors {
			break
		}
		placed := *e
		placed.Field = p.String() + "." + e.Field
		errs = append(errs, &placed)
	}
	specPath := p.Child("spec")
	cPath := specPath.Child("containers").Index(0)
	name := opts.Container
	if name == "" {
		name = "main"
	}
	image := b.image
	if image == "" {
		image = opts.DefaultImage
	}
	if image == "" {
		errs = append(errs, field.Required(cPath.Child("image"), "an image is required"))
	} else if strings.TrimSpace(image) != image || strings.ContainsAny(image, " \t\n") {
		errs = append(errs, field.Invalid(cPath.Child("image"), image, "must not contain whitespace"))
	}
	c := corev1.Container{
		Name:            name,
		Image:           image,
		ImagePullPolicy: b.pullPolicy,
		Command:         slices.Clone(b.command),
		Args:            slices.Clone(b.args),
		WorkingDir:      b.workingDir,
		Env:             b.EnvVars(),
		Ports:           slices.Clone(b.ports),
		SecurityContext: b.containerSecure.DeepCopy(),
	}
	for _, ef := range b.envFrom {
		c.EnvFrom = append(c.EnvFrom, *ef.DeepCopy())
	}
	for i, e := range c.Env {
		for _, msg := range validation.IsEnvVarName(e.Name) {
			errs = append(errs, field.Invalid(cPath.Child("env").Index(i).Child("name"), e.Name, msg))
		}
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil && ref.SecretKeyRef.Name != "" && ref.SecretKeyRef.Key != "" {
			errs = append(errs, ValidateSecretKey(cPath.Child("env").Index(i).Child("valueFrom", "secretKeyRef"),
				ref.SecretKeyRef.Name, ref.SecretKeyRef.Key)...)
		}
	}
	for i, port := range c.Ports {
		pp := cPath.Child("ports").Index(i)
		for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
			errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, msg))
		}
		for _, msg := range validation.IsValidPortName(port.Name) {
			errs = append(errs, field.Invalid(pp.Child("name"), port.Name, msg))
		}
	}
	if b.slice != nil && b.devicesSet && !opts.NoGPUs {
		errs = append(errs, field.Forbidden(p.Child("accelerators"), fmt.Sprintf(
			"Accelerators(%d) and Slice both set: a slice gives the pod its own devices (vgpu Spec.Accelerators); drop one", b.devices)))
	}
	requests, limits := b.requests, b.limits
	if len(opts.Resources) > 0 {
		requests, limits = overrideResources(requests, opts.Resources), overrideResources(limits, opts.Resources)
	}
	reqPath := func() *field.Path { return cPath.Child("resources", "requests") }
	limPath := func() *field.Path { return cPath.Child("resources", "limits") }
	// Parsed without a path, and again under it only to report problems.
	reqs, reqErrs := quantity.ParseResourceList(requests, nil)
	if reqErrs != nil {
		_, reqErrs = quantity.ParseResourceList(requests, reqPath())
	}
	lims, limErrs := quantity.ParseResourceList(limits, nil)
	if limErrs != nil {
		_, limErrs = quantity.ParseResourceList(limits, limPath())
	}
	errs = append(errs, reqErrs...)
	errs = append(errs, limErrs...)
	errs = append(errs, under(func(p *field.Path) field.ErrorList { return wholeBytes(reqs, p) }, reqPath)...)
	errs = append(errs, under(func(p *field.Path) field.ErrorList { return wholeBytes(lims, p) }, limPath)...)
	if len(reqs) > 0 {
		c.Resources.Requests = reqs
	}
	if len(lims) > 0 {
		c.Resources.Limits = lims
	}
	if requestAboveLimit(reqs, lims) { // in name order only when reporting
		for _, rn := range sortedKeys(reqs) {
			req := reqs[rn]
			if l, ok := lims[rn]; ok && req.Cmp(l) > 0 {
				errs = append(errs, field.Invalid(reqPath().Key(string(rn)), req.String(), "must not exceed the limit "+l.String()))
			}
		}
	}

	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      b.podLabelsWith(b.podLabels, opts.Labels),
			Annotations: maps.Clone(b.podAnnotations),
		},
		Spec: corev1.PodSpec{
			RestartPolicy:      opts.RestartPolicy,
			NodeSelector:       maps.Clone(b.nodeSelector),
			Affinity:           b.affinity.DeepCopy(),
			PriorityClassName:  b.priorityClass,
			ServiceAccountName: b.serviceAccount,
			SchedulerName:      b.schedulerFor(p, &errs),
			SecurityContext:    b.podSecurity.DeepCopy(),
			HostNetwork:        b.hostNetwork,
		},
	}
	errs = append(errs, under(func(q *field.Path) field.ErrorList { return ValidateLabels(tmpl.Labels, q) },
		func() *field.Path { return p.Child("metadata", "labels") })...)
	// Node selectors are label selectors: the same syntax.
	errs = append(errs, under(func(q *field.Path) field.ErrorList { return ValidateLabels(b.nodeSelector, q) },
		func() *field.Path { return specPath.Child("nodeSelector") })...)
	for _, t := range b.tolerations {
		tmpl.Spec.Tolerations = append(tmpl.Spec.Tolerations, *t.DeepCopy())
	}
	for _, s := range b.pullSecrets {
		tmpl.Spec.ImagePullSecrets = append(tmpl.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	if b.queue != "" {
		if tmpl.Annotations == nil {
			tmpl.Annotations = map[string]string{}
		}
		tmpl.Annotations[VolcanoQueueAnnotation] = b.queue
	}
	errs = append(errs, b.addVolumes(&tmpl.Spec, &c, specPath)...)
	tmpl.Spec.Containers = []corev1.Container{c}

	errs = append(errs, b.applyHardware(&tmpl, name, p, opts.NoGPUs)...)
	if tmpl.Spec.SchedulerName != VolcanoScheduler && !opts.ScheduledByVolcano {
		hardware.DropAnnotationVisibleDevices(&tmpl)
	}
	if b.edge != nil {
		errs = append(errs, hardware.ApplyEdge(&tmpl, name, *b.edge, p)...)
	}
	return tmpl, errs
}

// ValidateSecretKey checks a reference to key of Secret name as the API
// server does: a DNS-1123 subdomain and a ConfigMap-style key.
func ValidateSecretKey(p *field.Path, name, key string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(p.Child("name"), name, msg))
	}
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(p.Child("key"), key, msg))
	}
	return errs
}

// VolcanoScheduler is the schedulerName of Volcano's scheduler.
const VolcanoScheduler = "volcano"

// schedulerFor is the pod's schedulerName: the one set with Scheduler or,
// for a Volcano vGPU slice, Volcano's. The Volcano vGPU device plugin
// allocates only to pods Volcano's scheduler annotated (bind phase,
// assigned node: getOldestPod in
// Project-HAMi/volcano-vgpu-device-plugin pkg/plugin/vgpu/util/util.go),
// so another scheduler leaves such a pod pending forever.
func (b *Builder[T]) schedulerFor(p *field.Path, errs *field.ErrorList) string {
	if b.slice == nil || vgpuspec.Of(b.slice).Backend() != string(vgpu.Volcano) {
		return b.scheduler
	}
	if b.scheduler != "" && b.scheduler != VolcanoScheduler {
		*errs = append(*errs, field.Invalid(p.Child("spec", "schedulerName"), b.scheduler,
			"a Volcano vGPU slice is allocated only to pods Volcano's scheduler placed: drop Scheduler or set \"volcano\""))
	}
	return VolcanoScheduler
}

func (b *Builder[T]) addVolumes(spec *corev1.PodSpec, c *corev1.Container, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	mounts := map[string]bool{}
	for i, mv := range b.volumes {
		vPath := specPath.Child("volumes").Index(i)
		if names[mv.volume.Name] {
			errs = append(errs, field.Duplicate(vPath.Child("name"), mv.volume.Name))
			continue
		}
		names[mv.volume.Name] = true
		errs = append(errs, validateVolumeSource(mv.volume, vPath)...)
		spec.Volumes = append(spec.Volumes, *mv.volume.DeepCopy())
		if mv.mountPath == "" {
			continue
		}
		mPath := specPath.Child("containers").Index(0).Child("volumeMounts").Index(len(c.VolumeMounts)).Child("mountPath")
		switch {
		case !path.IsAbs(mv.mountPath):
			errs = append(errs, field.Invalid(mPath, mv.mountPath, "must be an absolute path"))
		case mounts[path.Clean(mv.mountPath)]:
			errs = append(errs, field.Duplicate(mPath, mv.mountPath))
		}
		mounts[path.Clean(mv.mountPath)] = true
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{
			Name: mv.volume.Name, MountPath: mv.mountPath, SubPath: mv.subPath, ReadOnly: mv.readOnly,
		})
	}
	return errs
}

func validateVolumeSource(v corev1.Volume, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	src := v.VolumeSource
	switch {
	case src.PersistentVolumeClaim != nil:
		for _, msg := range validation.IsDNS1123Subdomain(src.PersistentVolumeClaim.ClaimName) {
			errs = append(errs, field.Invalid(p.Child("persistentVolumeClaim", "claimName"), src.PersistentVolumeClaim.ClaimName, msg))
		}
	case src.HostPath != nil:
		if !path.IsAbs(src.HostPath.Path) {
			errs = append(errs, field.Invalid(p.Child("hostPath", "path"), src.HostPath.Path, "must be an absolute path"))
		}
	case src.NFS != nil:
		if src.NFS.Server == "" {
			errs = append(errs, field.Required(p.Child("nfs", "server"), "an NFS server is required"))
		}
		if !path.IsAbs(src.NFS.Path) {
			errs = append(errs, field.Invalid(p.Child("nfs", "path"), src.NFS.Path, "must be an absolute path"))
		}
	case src.ConfigMap != nil:
		for _, msg := range validation.IsDNS1123Subdomain(src.ConfigMap.Name) {
			errs = append(errs, field.Invalid(p.Child("configMap", "name"), src.ConfigMap.Name, msg))
		}
	case src.Secret != nil:
		for _, msg := range validation.IsDNS1123Subdomain(src.Secret.SecretName) {
			errs = append(errs, field.Invalid(p.Child("secret", "secretName"), src.Secret.SecretName, msg))
		}
	}
	for _, msg := range validation.IsDNS1123Label(v.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), v.Name, msg))
	}
	return errs
}

func (b *Builder[T]) applyHardware(tmpl *corev1.PodTemplateSpec, container string, p *field.Path, noDevices bool) field.ErrorList {
	var errs field.ErrorList
	var shm resource.Quantity
	if b.sharedMemory != "" {
		q, err := quantity.ParseField(p.Child("sharedMemory"), b.sharedMemory, quantity.Positive)
		if err != nil {
			errs = append(errs, err)
		}
		shm = q
	}
	if b.profile == nil {
		if b.devicesSet && b.devices > 0 {
			errs = append(errs, field.Required(p.Child("on"), fmt.Sprintf("%d accelerators asked for without a hardware profile: call On(hardware.H100) or similar", b.devices)))
		}
		if !shm.IsZero() || !b.fabric.IsZero() {
			errs = append(errs, hardware.Apply(tmpl, container, hardware.Placement{Profile: hardware.CPU, Fabric: b.fabric, SharedMemory: shm}, p)...)
		}
		return errs
	}
	count := b.devices
	if noDevices || b.slice != nil || count < 0 {
		count = 0 // a negative count is reported by Accelerators, once
	}
	placement := hardware.Placement{Profile: *b.profile, Accelerators: count, Fabric: b.fabric, SharedMemory: shm}
	if noDevices {
		placement.Fabric = hardware.Fabric{} // a role without devices does not join the collective
	}
	errs = append(errs, hardware.Apply(tmpl, container, placement, p)...)
	if b.slice != nil && !noDevices {
		errs = append(errs, vgpuspec.Of(b.slice).Apply(tmpl, container, p)...)
	}
	return errs
}

// overrideResources returns a copy of base with the values of over.
func overrideResources(base, over map[corev1.ResourceName]string) map[corev1.ResourceName]string {
	out := make(map[corev1.ResourceName]string, len(base)+len(over))
	maps.Copy(out, base)
	maps.Copy(out, over)
	return out
}

func volumeName(kind, source string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, source)
	name := strings.Trim(kind+"-"+strings.Trim(clean, "-"), "-")
	for strings.Contains(name, "--") {
		name = strings.ReplaceAll(name, "--", "-")
	}
	if len(name) > validation.DNS1123LabelMaxLength {
		name = strings.TrimRight(name[:validation.DNS1123LabelMaxLength], "-")
	}
	return name
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}
