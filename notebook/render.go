package notebook

import (
	"errors"
	"maps"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/podspec"
)

// Names of what a notebook renders, for callers that look them up.
const (
	// ContainerName is the notebook's only container.
	ContainerName = "notebook"
	// PortName names the UI port on the container and both Services.
	PortName = "http"
	// HomeVolume is the volume claim template of the home directory; the
	// StatefulSet controller names the claim home-<name>-0.
	HomeVolume = "home"
)

// HeadlessServiceName is the governing Service of the notebook's StatefulSet,
// which gives its pod a stable DNS name.
func HeadlessServiceName(name string) string { return name + "-headless" }

// HomeClaimName is the PersistentVolumeClaim the StatefulSet controller
// creates for the notebook's home directory.
func HomeClaimName(name string) string { return HomeVolume + "-" + name + "-0" }

// Objects validates the notebook and returns, freshly built, its
// NetworkPolicy, the headless Service governing the StatefulSet, the
// ClusterIP Service of the UI and the StatefulSet. Every problem is reported
// at once as a field.ErrorList aggregate.
func (n *Notebook) Objects() ([]client.Object, error) {
	if n == nil {
		return nil, errNilNotebook
	}
	r, errs := n.render()
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return []client.Object{r.policy, r.headless, r.ui, r.sts}, nil
}

// Build validates the notebook and returns its StatefulSet alone.
func (n *Notebook) Build() (*appsv1.StatefulSet, error) {
	if n == nil {
		return nil, errNilNotebook
	}
	r, errs := n.render()
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return r.sts, nil
}

// errNilNotebook is what Objects and Build return on a nil *Notebook. A nil
// receiver records nothing: its chained methods return nil.
var errNilNotebook = errors.New("notebook: the *Notebook is nil: make one with Jupyter, VSCode or RStudio")

type rendered struct {
	policy   *networkingv1.NetworkPolicy
	headless *corev1.Service
	ui       *corev1.Service
	sts      *appsv1.StatefulSet
}

func (n *Notebook) render() (rendered, field.ErrorList) {
	srv, ok := servers[n.ide]
	if !ok {
		// A zero Notebook: nothing else about it can be judged.
		return rendered{}, field.ErrorList{field.Required(field.NewPath("ide"), "a notebook made without its constructor: use Jupyter, VSCode or RStudio")}
	}
	errs := append(field.ErrorList{}, n.problems...)
	errs = append(errs, n.validateIdentity()...)
	errs = append(errs, n.validateLauncher()...)

	port := srv.port
	if n.port != 0 {
		port = n.port
	}
	for _, msg := range validation.IsValidPortNum(int(port)) {
		errs = append(errs, field.Invalid(field.NewPath("serverPort"), port, msg))
	}
	home := srv.home
	if n.homeDir != "" {
		home = n.homeDir
	}
	if !path.IsAbs(home) || path.Clean(home) != home || home == "/" {
		errs = append(errs, field.Invalid(field.NewPath("homeDir"), home, "must be a clean absolute path below /"))
	}
	baseURL, baseErrs := n.resolveBaseURL(srv)
	errs = append(errs, baseErrs...)
	errs = append(errs, n.validateSecret()...)
	claim, claimErrs := n.homeClaim()
	errs = append(errs, claimErrs...)
	errs = append(errs, n.validateAllow()...)

	tmplPath := field.NewPath("spec", "template")
	labels := n.notebookLabels()
	tmpl, tmplErrs := podspec.Of(&n.Handle).Template(tmplPath, podspec.TemplateOptions{
		Container:    ContainerName,
		DefaultImage: srv.image,
		Labels:       labels,
	})
	errs = append(errs, tmplErrs...)
	if len(tmpl.Spec.Containers) == 1 {
		errs = append(errs, n.shapeServer(&tmpl, srv, port, home, baseURL, tmplPath.Child("spec"))...)
	}
	if len(errs) > 0 {
		return rendered{}, errs
	}

	name := podspec.Of(&n.Handle).Name()
	id := podspec.Of(&n.Handle).Identity()
	selector := id.Selector("")
	annotations := map[string]string{}
	if srv.takesBaseURL {
		annotations[AnnotationBaseURL] = baseURL
	}
	if n.maxLifetime > 0 {
		annotations[AnnotationMaxLifetime] = n.maxLifetime.String()
	}

	stsMeta := n.meta(name, labels)
	if len(annotations) > 0 {
		if stsMeta.Annotations == nil {
			stsMeta.Annotations = map[string]string{}
		}
		maps.Copy(stsMeta.Annotations, annotations)
	}
	claim.ObjectMeta = metav1.ObjectMeta{Name: HomeVolume, Labels: n.meta(HomeVolume, labels).Labels}
	sts := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: stsMeta,
		Spec: appsv1.StatefulSetSpec{
			// Replicas is left to the API server's default of one so that
			// Stop and Start own the field: applying the notebook again
			// neither restarts a stopped notebook nor conflicts with them.
			ServiceName:          HeadlessServiceName(name),
			UpdateStrategy:       appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType},
			Selector:             &metav1.LabelSelector{MatchLabels: selector},
			Template:             tmpl,
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim},
			// The home volume outlives both Stop (scale to zero) and the
			// StatefulSet itself.
			PersistentVolumeClaimRetentionPolicy: &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
				WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
				WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			},
		},
	}
	servicePort := corev1.ServicePort{Name: PortName, Port: port, TargetPort: intstr.FromString(PortName), Protocol: corev1.ProtocolTCP}
	headless := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: n.meta(HeadlessServiceName(name), labels),
		Spec: corev1.ServiceSpec{
			ClusterIP: corev1.ClusterIPNone,
			Selector:  maps.Clone(selector),
			Ports:     []corev1.ServicePort{servicePort},
		},
	}
	ui := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: n.meta(name, labels),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: maps.Clone(selector),
			Ports:    []corev1.ServicePort{servicePort},
		},
	}
	from := make([]networkingv1.NetworkPolicyPeer, len(n.allow))
	for i := range n.allow {
		from[i] = *n.allow[i].DeepCopy()
	}
	policy := &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: n.meta(name, labels),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: maps.Clone(selector)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				Ports: []networkingv1.NetworkPolicyPort{{
					Protocol: ptr.To(corev1.ProtocolTCP),
					Port:     ptr.To(intstr.FromInt32(port)),
				}},
				From: from,
			}},
		},
	}
	return rendered{policy: policy, headless: headless, ui: ui, sts: sts}, nil
}

// meta is the metadata of one top-level object: the builder's labels and
// annotations plus the notebook's labels.
func (n *Notebook) meta(name string, labels map[string]string) metav1.ObjectMeta {
	m := podspec.Of(&n.Handle).ObjectMeta(name)
	maps.Copy(m.Labels, labels)
	return m
}

// notebookLabels are the IDE and, when valid, the user labels; an invalid
// user is reported once, under "user".
func (n *Notebook) notebookLabels() map[string]string {
	labels := map[string]string{LabelIDE: string(n.ide)}
	if len(validation.IsValidLabelValue(n.user)) == 0 {
		labels[LabelUser] = n.user
	}
	return labels
}

// envBaseURL carries a Jupyter notebook's base URL without its trailing
// slash, as Kubeflow's notebook controller sets it and Kubeflow's images
// read it (--ServerApp.base_url=${NB_PREFIX}).
const envBaseURL = "NB_PREFIX"

// kubeflowPort and kubeflowHome are what Kubeflow's Jupyter images fix in
// their s6 service (jupyter lab --port=8888 --notebook-dir=$HOME).
const (
	kubeflowPort = 8888
	kubeflowHome = "/home/jovyan"
)

func (n *Notebook) validateLauncher() field.ErrorList {
	p := field.NewPath("launcher")
	if !n.launcherSet {
		return nil
	}
	if n.ide != IDEJupyter {
		return field.ErrorList{field.Forbidden(p, "only Jupyter notebooks take a launcher")}
	}
	var errs field.ErrorList
	switch n.launcher {
	case LaunchDockerStacks, LaunchJupyterServer:
	case LaunchKubeflow:
		if n.port != 0 && n.port != kubeflowPort {
			errs = append(errs, field.Invalid(field.NewPath("serverPort"), n.port, "Kubeflow's images listen on 8888, which their s6 service fixes"))
		}
		if n.homeDir != "" && n.homeDir != kubeflowHome {
			errs = append(errs, field.Invalid(field.NewPath("homeDir"), n.homeDir, "Kubeflow's images serve their $HOME, /home/jovyan, which their s6 service fixes"))
		}
		if cmd, args := podspec.Of(&n.Handle).CommandLine(); cmd == nil && len(args) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("args"), args, "Kubeflow's images take no arguments: their s6 service starts Jupyter"))
		}
	default:
		errs = append(errs, field.NotSupported(p, n.launcher, []Launcher{LaunchDockerStacks, LaunchKubeflow, LaunchJupyterServer}))
	}
	return errs
}

func (n *Notebook) validateIdentity() field.ErrorList {
	// The UI Service carries the notebook's name.
	errs := podspec.Of(&n.Handle).ValidateServiceMeta(MaxNameLength)
	userPath := field.NewPath("user")
	switch {
	case n.user == "":
		errs = append(errs, field.Required(userPath, "the notebook's owner is required"))
	default:
		for _, msg := range validation.IsValidLabelValue(n.user) {
			errs = append(errs, field.Invalid(userPath, n.user, msg))
		}
	}
	return errs
}

func (n *Notebook) resolveBaseURL(srv server) (string, field.ErrorList) {
	p := field.NewPath("baseURL")
	if !srv.takesBaseURL {
		if n.baseURLSet {
			return "", field.ErrorList{field.Forbidden(p, "only Jupyter serves under a base URL; put "+string(n.ide)+" behind a proxy that strips the prefix")}
		}
		return "/", nil
	}
	if !n.baseURLSet {
		if podspec.Of(&n.Handle).NamespaceName() == "" {
			return "", field.ErrorList{field.Required(field.NewPath("metadata", "namespace"), "the default base URL /notebook/<namespace>/<name>/ needs a namespace: set Namespace or BaseURL")}
		}
		return srv.defaultBaseURL(podspec.Of(&n.Handle).NamespaceName(), podspec.Of(&n.Handle).Name()), nil
	}
	return n.baseURL, validateBaseURL(n.baseURL, p)
}

// validateBaseURL accepts an absolute, clean URL path ending in a slash,
// made of unreserved and sub-delimiter characters only: it is passed on the
// server's command line and matched by proxies verbatim.
func validateBaseURL(s string, p *field.Path) field.ErrorList {
	const msg = "must be a clean absolute path ending in '/', e.g. /notebook/team/alice/"
	if !strings.HasPrefix(s, "/") || !strings.HasSuffix(s, "/") {
		return field.ErrorList{field.Invalid(p, s, msg)}
	}
	if s != "/" && path.Clean(s)+"/" != s {
		return field.ErrorList{field.Invalid(p, s, msg)}
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Host != "" || u.RawQuery != "" || u.Fragment != "" || u.Path != s {
		return field.ErrorList{field.Invalid(p, s, "must be a URL path without scheme, host, query, fragment or escapes")}
	}
	for _, r := range s {
		if !isPathRune(r) {
			return field.ErrorList{field.Invalid(p, s, "may contain only letters, digits and -._~/ characters")}
		}
	}
	return nil
}

func isPathRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("-._~/", r)
}

func (n *Notebook) validateSecret() field.ErrorList {
	p := field.NewPath("credential")
	if !n.secretSet {
		return field.ErrorList{field.Required(p, "name the Secret and key holding the notebook's "+credentialWord(n.ide)+" with Credential")}
	}
	var errs field.ErrorList
	if n.secretName == "" {
		errs = append(errs, field.Required(p.Child("name"), "a Secret name is required"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(n.secretName) {
			errs = append(errs, field.Invalid(p.Child("name"), n.secretName, msg))
		}
	}
	if n.secretKey == "" {
		errs = append(errs, field.Required(p.Child("key"), "a Secret key is required"))
	} else {
		for _, msg := range validation.IsConfigMapKey(n.secretKey) {
			errs = append(errs, field.Invalid(p.Child("key"), n.secretKey, msg))
		}
	}
	return errs
}

func credentialWord(ide IDE) string {
	if ide == IDEJupyter {
		return "token"
	}
	return "password"
}

func (n *Notebook) homeClaim() (corev1.PersistentVolumeClaim, field.ErrorList) {
	var errs field.ErrorList
	p := field.NewPath("storage")
	size, err := podspec.ParseStorageSize(p.Child("size"), n.storageSize)
	if err != nil {
		errs = append(errs, err)
	}
	claim := corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
	}}
	if n.storageClass != "" {
		for _, msg := range validation.IsDNS1123Subdomain(n.storageClass) {
			errs = append(errs, field.Invalid(p.Child("storageClass"), n.storageClass, msg))
		}
		claim.Spec.StorageClassName = ptr.To(n.storageClass)
	}
	return claim, errs
}

func (n *Notebook) validateAllow() field.ErrorList {
	p := field.NewPath("networkPolicy", "from")
	if len(n.allow) == 0 {
		return field.ErrorList{field.Required(p, "name who may reach the notebook with AllowNamespace or AllowPods (an ingress controller, a gateway, the culler)")}
	}
	var errs field.ErrorList
	for i, peer := range n.allow {
		if ns := peer.NamespaceSelector; ns != nil {
			nsPath := p.Index(i).Child("namespaceSelector")
			if peer.PodSelector == nil && len(ns.MatchLabels) == 0 {
				errs = append(errs, field.Invalid(nsPath, "{}", "must not be empty: it would admit every namespace"))
			}
			errs = append(errs, podspec.ValidateLabels(ns.MatchLabels, nsPath.Child("matchLabels"))...)
		}
		if ps := peer.PodSelector; ps != nil {
			errs = append(errs, podspec.ValidateLabels(ps.MatchLabels, p.Index(i).Child("podSelector", "matchLabels"))...)
		}
	}
	return errs
}

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
