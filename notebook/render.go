package notebook

import (
	"errors"
	"maps"
	"path"

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
