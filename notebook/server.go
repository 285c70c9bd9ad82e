package notebook

import (
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/cubestudio/cube/internal/podspec"
)

// shapeServer turns the shared pod template into the IDE's server: command
// line, credential, ports, probes, home volume, scratch directories and a
// non-root security context.
func (n *Notebook) shapeServer(tmpl *corev1.PodTemplateSpec, srv server, port int32, home, baseURL string, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	c := &tmpl.Spec.Containers[0]
	cPath := specPath.Child("containers").Index(0)

	// Command line: the IDE's server unless the caller replaced the command.
	if cmd, args := podspec.Of(&n.Handle).CommandLine(); cmd == nil {
		c.Command, c.Args = n.serverCommand(srv, port, home, baseURL)
		c.Args = append(c.Args, args...)
	}

	// Credential and server environment; the caller may not set them.
	extraEnv := maps.Clone(srv.extraEnv)
	if srv.takesBaseURL {
		if extraEnv == nil {
			extraEnv = map[string]string{}
		}
		extraEnv[envBaseURL] = strings.TrimSuffix(baseURL, "/")
	}
	reserved := []string{srv.credentialEnv}
	for k := range extraEnv {
		reserved = append(reserved, k)
	}
	for _, e := range podspec.Of(&n.Handle).EnvVars() {
		if slices.Contains(reserved, e.Name) {
			errs = append(errs, field.Invalid(field.NewPath("env").Key(e.Name), e.Name, "is set by the notebook (use Credential for the credential)"))
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: srv.credentialEnv, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: n.secretName}, Key: n.secretKey},
	}})
	for _, k := range slices.Sorted(maps.Keys(extraEnv)) {
		c.Env = append(c.Env, corev1.EnvVar{Name: k, Value: extraEnv[k]})
	}
	// An image without the Docker Stacks' scripts may have no passwd entry
	// for the notebook's user, whose HOME is then "/": Jupyter Server puts
	// its runtime and data directories under $HOME (jupyter_core.paths)
	// and fails there. HOME is the home volume, unless the caller sets it.
	if n.ide == IDEJupyter && n.launcher == LaunchJupyterServer && !slices.ContainsFunc(podspec.Of(&n.Handle).EnvVars(), func(e corev1.EnvVar) bool { return e.Name == "HOME" }) {
		c.Env = append(c.Env, corev1.EnvVar{Name: "HOME", Value: home})
	}

	// The UI port.
	for _, p := range c.Ports {
		if p.Name == PortName || p.ContainerPort == port {
			errs = append(errs, field.Duplicate(cPath.Child("ports"), p.Name))
		}
	}
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: PortName, ContainerPort: port, Protocol: corev1.ProtocolTCP})

	// Probes on the server's health endpoint: a startup probe that allows
	// five minutes for the first start (large images, restoring a home),
	// then readiness. No liveness probe: a notebook busy in a long cell
	// must not be restarted under its user.
	health := srv.healthPath
	if srv.takesBaseURL {
		health = baseURL + srv.healthPath
	}
	get := &corev1.HTTPGetAction{Path: health, Port: intstr.FromString(PortName), Scheme: corev1.URISchemeHTTP}
	c.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: get.DeepCopy()}, PeriodSeconds: 5, TimeoutSeconds: 3, FailureThreshold: 60}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: get.DeepCopy()}, PeriodSeconds: 10, TimeoutSeconds: 3, FailureThreshold: 3}

	// Home and scratch volumes.
	mounts := []corev1.VolumeMount{{Name: HomeVolume, MountPath: home}}
	for _, s := range srv.scratch {
		tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, corev1.Volume{Name: s.volume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
		mounts = append(mounts, corev1.VolumeMount{Name: s.volume, MountPath: s.path})
	}
	for _, m := range mounts {
		if slices.ContainsFunc(c.VolumeMounts, func(have corev1.VolumeMount) bool { return path.Clean(have.MountPath) == m.MountPath }) {
			errs = append(errs, field.Duplicate(cPath.Child("volumeMounts"), m.MountPath))
		}
	}
	for i, v := range tmpl.Spec.Volumes {
		if v.Name == HomeVolume || slices.ContainsFunc(tmpl.Spec.Volumes[i+1:], func(o corev1.Volume) bool { return o.Name == v.Name }) {
			errs = append(errs, field.Duplicate(specPath.Child("volumes").Index(i).Child("name"), v.Name))
		}
	}
	c.VolumeMounts = append(c.VolumeMounts, mounts...)

	secureDefaults(tmpl, srv)
	return errs
}

// serverCommand is the IDE's server command line, listening on all
// addresses on port, with its home as working directory.
func (n *Notebook) serverCommand(srv server, port int32, home, baseURL string) (command, args []string) {
	p := strconv.Itoa(int(port))
	switch n.ide {
	case IDEJupyter:
		serverApp := []string{
			"--ServerApp.ip=0.0.0.0",
			"--ServerApp.port=" + p,
			"--ServerApp.base_url=" + baseURL,
			"--ServerApp.root_dir=" + home,
		}
		switch n.launcher {
		case LaunchKubeflow:
			// The image's s6 service starts Jupyter itself, reading
			// NB_PREFIX.
			return nil, nil
		case LaunchJupyterServer:
			return []string{"jupyter", "server"}, append(serverApp, "--ServerApp.open_browser=False")
		}
		// The Docker Stacks' entrypoint (tini, start.sh) stays; the token
		// comes from JUPYTER_TOKEN, which Jupyter Server reads itself.
		return nil, append([]string{"start-notebook.py"}, serverApp...)
	case IDEVSCode:
		// The image's entrypoint takes the server's flags; the password
		// comes from PASSWORD.
		return []string{"/usr/bin/entrypoint.sh"}, []string{
			"--bind-addr", "0.0.0.0:" + p,
			"--auth", "password",
			"--disable-telemetry",
			home,
		}
	default: // IDERStudio
		// Rocker's /init (s6) needs root; rserver alone runs as the image's
		// rstudio user and checks PASSWORD through Rocker's pam-helper.
		return []string{"/usr/lib/rstudio-server/bin/rserver"}, []string{
			"--server-daemonize=0",
			"--www-address=0.0.0.0",
			"--www-port=" + p,
			"--server-user=rstudio",
			"--auth-none=0",
			"--auth-pam-helper-path=pam-helper",
		}
	}
}

// secureDefaults fills what the caller left unset of a non-root security
// context matching the image's user: runAsUser/runAsGroup/fsGroup (so the
// home volume is writable), no privilege escalation, no capabilities beyond
// those hardware.Apply added (IPC_LOCK for RDMA), the runtime's seccomp
// profile.
func secureDefaults(tmpl *corev1.PodTemplateSpec, srv server) {
	ps := tmpl.Spec.SecurityContext
	if ps == nil {
		ps = &corev1.PodSecurityContext{}
		tmpl.Spec.SecurityContext = ps
	}
	if ps.RunAsNonRoot == nil {
		ps.RunAsNonRoot = ptr.To(true)
	}
	if ps.RunAsUser == nil {
		ps.RunAsUser = ptr.To(srv.uid)
	}
	if ps.RunAsGroup == nil {
		ps.RunAsGroup = ptr.To(srv.gid)
	}
	if ps.FSGroup == nil {
		ps.FSGroup = ptr.To(srv.gid)
	}
	if ps.FSGroupChangePolicy == nil {
		// A large home is not walked on every start.
		ps.FSGroupChangePolicy = ptr.To(corev1.FSGroupChangeOnRootMismatch)
	}
	if ps.SeccompProfile == nil {
		ps.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	c := &tmpl.Spec.Containers[0]
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	if c.SecurityContext.AllowPrivilegeEscalation == nil {
		c.SecurityContext.AllowPrivilegeEscalation = ptr.To(false)
	}
	if c.SecurityContext.Capabilities == nil {
		c.SecurityContext.Capabilities = &corev1.Capabilities{}
	}
	if len(c.SecurityContext.Capabilities.Drop) == 0 {
		c.SecurityContext.Capabilities.Drop = []corev1.Capability{"ALL"}
	}
}
