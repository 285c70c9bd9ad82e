package label

import (
	"errors"
	"maps"
	"strings"
	"unicode"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pod"
)

// BackendPort is the port an ML backend listens on (label-studio-ml-backend's
// default, 9090, _wsgi.py of its examples).
const BackendPort = 9090

// BackendKind is the cube.dev/kind of an MLBackend's objects.
const BackendKind = "labelbackend"

// MLBackendServer deploys a program that serves a Backend (built with
// BackendFromEnv) as a Deployment and its Service, which Label Studio
// reaches at BackendURL. The model it asks is set with Model; its API key
// and basic-auth password come from Secrets.
//
// Its settings are its own methods and every pod setting of the embedded
// pod.Builder (resources, placement, extra env, security).
type MLBackendServer struct {
	pod.Builder[MLBackendServer]

	modelURL, model, version string
	embedURL, embedModel     string
	replicas                 int32
	problems                 field.ErrorList
}

// MLBackend returns an ML backend named name running image, a program that
// serves label.BackendFromEnv() on BackendPort.
func MLBackend(name, image string) *MLBackendServer {
	m := &MLBackendServer{replicas: 1}
	podspec.Of(&m.Handle).Init(m, BackendKind, name)
	m.Image(image)
	return m
}

// Model sets the OpenAI-compatible endpoint (a serve.Service's Endpoint)
// and served model name the backend asks.
func (m *MLBackendServer) Model(endpoint, servedModel string) *MLBackendServer {
	if m == nil {
		return nil
	}
	m.modelURL, m.model = endpoint, servedModel
	return m
}

// EmbeddingModel sets the endpoint and model of nearest-label suggestions.
func (m *MLBackendServer) EmbeddingModel(endpoint, servedModel string) *MLBackendServer {
	if m == nil {
		return nil
	}
	m.embedURL, m.embedModel = endpoint, servedModel
	return m
}

// APIKey passes the model's API key from key of Secret secret.
func (m *MLBackendServer) APIKey(ref pod.SecretKeyRef) *MLBackendServer {
	if m == nil {
		return nil
	}
	return m.EnvFromSecret(EnvModelAPIKey, ref)
}

// BasicAuth requires basic auth with the user and password read from
// the two Secret keys, on every call but /health
// (which the probes ask). Connect it with Client.ConnectBackend and
// BackendBasicAuth, so that Label Studio sends them.
func (m *MLBackendServer) BasicAuth(user, password pod.SecretKeyRef) *MLBackendServer {
	if m == nil {
		return nil
	}
	return m.EnvFromSecret(EnvBasicUser, user).EnvFromSecret(EnvBasicPass, password)
}

// ModelVersion sets the version recorded with predictions.
func (m *MLBackendServer) ModelVersion(v string) *MLBackendServer {
	if m == nil {
		return nil
	}
	m.version = v
	return m
}

// Replicas sets how many pods serve predictions (default 1).
func (m *MLBackendServer) Replicas(n int) *MLBackendServer {
	if m == nil {
		return nil
	}
	path := field.NewPath("replicas")
	if n < 1 {
		m.problems = append(m.problems, field.Invalid(path, n, "must be at least 1"))
	}
	r, err := podspec.Int32(path, n)
	if err != nil {
		m.problems = append(m.problems, err)
	}
	m.replicas = r
	return m
}

// BackendURL is the URL Label Studio in namespace reaches the backend at,
// for Client.ConnectBackend.
func BackendURL(name, namespace string) string {
	return "http://" + name + "." + namespace + ".svc:9090"
}

var errNilMLBackend = errors.New("label: the *MLBackendServer is nil: make one with MLBackend")

// Objects validates the backend and returns its Service and Deployment.
func (m *MLBackendServer) Objects() ([]client.Object, error) {
	if m == nil {
		return nil, errNilMLBackend
	}
	errs := append(field.ErrorList{}, m.problems...)
	errs = append(errs, podspec.Of(&m.Handle).ValidateServiceMeta(63)...)
	for _, u := range []struct{ path, value string }{{"model.endpoint", m.modelURL}, {"embeddingModel.endpoint", m.embedURL}} {
		if u.value == "" && u.path == "embeddingModel.endpoint" {
			continue
		}
		// The URL is a literal in the Deployment: the key goes in
		// APIKey.
		if err := checkHTTPURL(field.NewPath(u.path), u.value, "an OpenAI-compatible endpoint (its key goes in APIKey)"); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case strings.TrimSpace(m.model) == "":
		errs = append(errs, field.Required(field.NewPath("model", "servedModel"), "the served model name"))
	case strings.TrimSpace(m.model) != m.model || strings.ContainsFunc(m.model, unicode.IsControl):
		// inference.NewClient refuses it in the pod (BackendFromEnv), which
		// would crash-loop.
		errs = append(errs, field.Invalid(field.NewPath("model", "servedModel"), m.model, "must not start or end with spaces or hold control characters"))
	}
	selector := podspec.Of(&m.Handle).Identity().Selector("ml-backend")
	tmpl, tmplErrs := podspec.Of(&m.Handle).Template(field.NewPath("spec", "template"), podspec.TemplateOptions{
		Container: "ml-backend", Labels: map[string]string{"app.kubernetes.io/component": "ml-backend"},
	})
	errs = append(errs, tmplErrs...)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	c := &tmpl.Spec.Containers[0]
	for _, e := range []corev1.EnvVar{{Name: EnvModelURL, Value: m.modelURL}, {Name: EnvModel, Value: m.model},
		{Name: EnvModelVersion, Value: m.version}, {Name: EnvEmbedURL, Value: m.embedURL}, {Name: EnvEmbedModel, Value: m.embedModel}} {
		if e.Value != "" && !hasEnv(c.Env, e.Name) {
			c.Env = append(c.Env, e)
		}
	}
	c.Ports = append(c.Ports, corev1.ContainerPort{Name: "http", ContainerPort: BackendPort, Protocol: corev1.ProtocolTCP})
	health := corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("http")}}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: *health.DeepCopy(), PeriodSeconds: 10, TimeoutSeconds: 5}
	c.LivenessProbe = &corev1.Probe{ProbeHandler: health, PeriodSeconds: 30, TimeoutSeconds: 10, FailureThreshold: 5}
	maps.Copy(tmpl.Labels, selector)
	name := podspec.Of(&m.Handle).Name()
	deploy := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: podspec.Of(&m.Handle).ObjectMeta(name),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(m.replicas),
			Selector: &metav1.LabelSelector{MatchLabels: selector},
			Template: tmpl,
		},
	}
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: podspec.Of(&m.Handle).ObjectMeta(name),
		Spec: corev1.ServiceSpec{
			Selector: maps.Clone(selector),
			Ports:    []corev1.ServicePort{{Name: "http", Port: BackendPort, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
		},
	}
	return []client.Object{svc, deploy}, nil
}
