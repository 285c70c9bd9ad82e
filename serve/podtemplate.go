package serve

import (
	"slices"

	"github.com/cubestudio/cube/internal/podspec"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

type podRole int

// podTemplate renders the pod of one role: the shared pod settings through
// pod.Builder.Template (which applies the hardware), then the engine's
// command, environment, ports, volumes, init containers and probes. The
// caller's own env, ports, command and volumes win over the engine's.
func (s *Service) podTemplate(r *rendering, p *field.Path, role podRole) (corev1.PodTemplateSpec, field.ErrorList) {
	e := s.engine
	// A shallow copy carries the layout into the shared builder without
	// changing s: Accelerators, Fabric and HostNetwork only assign fields.
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
