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
	if b.profile.DRA() && !noDevices && (count > 0 || b.slice != nil) && !b.rendersClaims {
		return append(errs, field.Forbidden(p.Child("on"), fmt.Sprintf(
			"profile %s asks for its devices through a DRA claim (flavour %s), which this kind of workload does not create yet: use a device-plugin flavour", b.profile.Name, b.profile.Flavour)))
	}
	placement := hardware.Placement{Profile: *b.profile, Accelerators: count, Fabric: b.fabric, SharedMemory: shm, Claim: b.ClaimRef()}
	if noDevices {
		placement.Fabric = hardware.Fabric{} // a role without devices does not join the collective
	}
	errs = append(errs, hardware.Apply(tmpl, container, placement, p)...)
	switch {
	case b.slice == nil || noDevices:
	case b.profile.DRA():
		// The slice's claim, named as the object Claims renders.
		r, rErrs := vgpuspec.Of(b.slice).Request(p)
		if errs = append(errs, rErrs...); len(rErrs) == 0 && r.Claim != nil {
			r.Claim.ClaimRef = b.ClaimRef()
			errs = append(errs, hardware.ApplyDevices(tmpl, container, r, p)...)
		}
	default:
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
