package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	lwsconfig "sigs.k8s.io/lws/api/config/v1alpha1"
	"sigs.k8s.io/yaml"
)

// The operators run as host processes with the admin credentials. Their
// webhooks listen on all addresses; the API server reaches them through a
// selector-less Service whose endpoints are the bridge's address, as it
// would reach an in-cluster webhook.

func (n *node) startOperators() error {
	for _, start := range []func() error{n.startTrainingOperator, n.startLWS, n.startArgo, n.startKubeRay, n.startKatib, n.startTrainerV2, n.startKueue} {
		if err := start(); err != nil {
			return err
		}
	}
	return nil
}

// hostService makes a Service with no selector in namespace whose
// endpoints are the bridge's address and port, for a webhook served on the
// host.
func (n *node) hostService(namespace, name string, port int) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "webhook", Port: 443, TargetPort: intstr.FromInt(port), Protocol: corev1.ProtocolTCP,
		}}},
	}
	if _, err := n.client.CoreV1().Services(namespace).Create(n.ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create service %s/%s: %w", namespace, name, err)
	}
	// The endpoint slice mirroring controller copies these Endpoints into
	// an EndpointSlice.
	//nolint:staticcheck // Endpoints are what a selector-less Service is given by hand.
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: gatewayIP}},
			Ports:     []corev1.EndpointPort{{Name: "webhook", Port: int32(port), Protocol: corev1.ProtocolTCP}},
		}},
	}
	if _, err := n.client.CoreV1().Endpoints(namespace).Create(n.ctx, ep, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create endpoints %s/%s: %w", namespace, name, err)
	}
	return nil
}

// certSecret creates the empty Secret an operator's certificate rotator
// (open-policy-agent/cert-controller) fills: the rotator updates it but
// does not create it; in a cluster the operator's manifests do.
func (n *node) certSecret(namespace, name string) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if _, err := n.client.CoreV1().Secrets(namespace).Create(n.ctx, secret, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create secret %s/%s: %w", namespace, name, err)
	}
	return nil
}

// copyCerts waits until the operator's certificate rotator has filled its
// Secret and writes the serving certificate where the webhook server reads
// it, as the Secret's volume would in a cluster.
func (n *node) copyCerts(namespace, secret, dir string) error {
	s, err := n.pollSecret(namespace, secret, "tls.crt", "tls.key", "ca.crt")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, k := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if err := os.WriteFile(filepath.Join(dir, k), s.Data[k], 0o600); err != nil {
			return err
		}
	}
	return nil
}

// waitListening waits until something accepts connections on the bridge's
// address at port, or p exits.
func (n *node) waitListening(p *process, port int) error {
	err := waitUntil(n.ctx, p, 200*time.Millisecond, func(ctx context.Context) bool {
		c, err := net.DialTimeout("tcp", net.JoinHostPort(gatewayIP, strconv.Itoa(port)), time.Second)
		if err != nil {
			return false
		}
		c.Close()
		return true
	})
	if err != nil {
		return p.failure(err)
	}
	return nil
}

// webhookManifests reads a webhook configuration manifest of an operator's
// Go module.
func (n *node) webhookManifests(module, version, file string) ([]admissionv1.ValidatingWebhookConfiguration, []admissionv1.MutatingWebhookConfiguration, error) {
	dir, err := n.cache.downloadModule(n.ctx, module, version)
	if err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return nil, nil, err
	}
	var (
		validating []admissionv1.ValidatingWebhookConfiguration
		mutating   []admissionv1.MutatingWebhookConfiguration
	)
	for _, doc := range bytes.Split(data, []byte("\n---")) {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", file, err)
		}
		switch meta.Kind {
		case "ValidatingWebhookConfiguration":
			var v admissionv1.ValidatingWebhookConfiguration
			if err := yaml.UnmarshalStrict(doc, &v); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", file, err)
			}
			validating = append(validating, v)
		case "MutatingWebhookConfiguration":
			var m admissionv1.MutatingWebhookConfiguration
			if err := yaml.UnmarshalStrict(doc, &m); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", file, err)
			}
			mutating = append(mutating, m)
		}
	}
	return validating, mutating, nil
}

func pointService(ref *admissionv1.WebhookClientConfig, namespace, name string) {
	if ref.Service != nil {
		ref.Service.Namespace = namespace
		ref.Service.Name = name
	}
}

// operatorWebhooks says how an operator's webhooks are served from the
// host: the namespace, Service and certificate Secret its manifests and
// certificate rotator name, and the manifest of webhook configurations in
// its Go module at version.
type operatorWebhooks struct {
	namespace, service, secret string
	module, version, manifest  string
	// validating and mutating rename the configurations ("" keeps the
	// manifest's name), as an operator's kustomization or its certificate
	// rotator expects them.
	validating, mutating string
	// selector, when set, gives the webhooks whose rules name pods an
	// object selector, as an operator's kustomize patches do.
	selector *metav1.LabelSelector
	// skipMutating leaves the manifest's mutating configurations out.
	skipMutating bool
}

// serveWebhooks makes what an operator's webhook server needs from the
// cluster (the namespace, the Secret its rotator fills, the Service the
// API server calls, pointed at a free port on the bridge) and registers its
// webhook configurations; it returns the port the server must listen on.
func (n *node) serveWebhooks(w operatorWebhooks) (int, error) {
	if err := n.ensureNamespace(w.namespace); err != nil {
		return 0, err
	}
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	if err := n.certSecret(w.namespace, w.secret); err != nil {
		return 0, err
	}
	if err := n.hostService(w.namespace, w.service, port); err != nil {
		return 0, err
	}
	validating, mutating, err := n.webhookManifests(w.module, w.version, w.manifest)
	if err != nil {
		return 0, err
	}
	hooks := n.client.AdmissionregistrationV1()
	for _, v := range validating {
		if w.validating != "" {
			v.Name = w.validating
		}
		for i := range v.Webhooks {
			w.retarget(&v.Webhooks[i].ClientConfig, v.Webhooks[i].Rules, &v.Webhooks[i].ObjectSelector)
		}
		if _, err := hooks.ValidatingWebhookConfigurations().Create(n.ctx, &v, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return 0, err
		}
	}
	for _, m := range mutating {
		if w.skipMutating {
			break
		}
		if w.mutating != "" {
			m.Name = w.mutating
		}
		for i := range m.Webhooks {
			w.retarget(&m.Webhooks[i].ClientConfig, m.Webhooks[i].Rules, &m.Webhooks[i].ObjectSelector)
		}
		if _, err := hooks.MutatingWebhookConfigurations().Create(n.ctx, &m, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return 0, err
		}
	}
	return port, nil
}

// retarget points a webhook at the operator's Service and, for webhooks
// on pods, sets the selector.
func (w operatorWebhooks) retarget(ref *admissionv1.WebhookClientConfig, rules []admissionv1.RuleWithOperations, selector **metav1.LabelSelector) {
	pointService(ref, w.namespace, w.service)
	if w.selector == nil {
		return
	}
	for _, r := range rules {
		if slices.Contains(r.Resources, "pods") {
			*selector = w.selector
			return
		}
	}
}

// trainingOperatorCertDir is fixed in training-operator v1.8.1
// (pkg/cert/cert.go, certDir).
const trainingOperatorCertDir = "/tmp/k8s-webhook-server/serving-certs"

// startTrainingOperator runs training-operator v1.8.1 with every job kind
// enabled, its validating webhook served, the PyTorch init container on the
// busybox image and the MPI launcher's kubectl delivered by the local
// kubectl-delivery image.
func (n *node) startTrainingOperator() error {
	const namespace = "kubeflow"
	// manifests/base/webhook: manifests.yaml, renamed and pointed at the
	// Service as patch.yaml and the kustomization do.
	port, err := n.serveWebhooks(operatorWebhooks{
		namespace: namespace, service: "training-operator", secret: "training-operator-webhook-cert",
		module: "github.com/kubeflow/training-operator", version: "v1.8.1", manifest: "manifests/base/webhook/manifests.yaml",
		validating: "validator.training-operator.kubeflow.org", skipMutating: true,
	})
	if err != nil {
		return err
	}
	metrics, probe, err := freePortPair()
	if err != nil {
		return err
	}
	p, err := n.start("training-operator", n.cache.binary("training-operator"), []string{
		"--webhook-server-port=" + strconv.Itoa(port),
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metrics),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(probe),
		"--pytorch-init-container-image=" + n.images.PyTorchInit,
		"--mpi-kubectl-delivery-image=" + n.images.KubectlDelivery,
		"--leader-elect=false",
	}, []string{"KUBECONFIG=" + n.admin, "MY_POD_NAMESPACE=" + namespace,
		// Its certificate rotator writes to the fixed trainingOperatorCertDir
		// while its webhook server reads controller-runtime's default,
		// os.TempDir()/k8s-webhook-server/serving-certs: with TMPDIR set
		// elsewhere (a CI runner's, or a second cache tree) the server finds
		// no certificate and the manager stops.
		"TMPDIR=/tmp"})
	if err != nil {
		return err
	}
	if err := n.copyCerts(namespace, "training-operator-webhook-cert", trainingOperatorCertDir); err != nil {
		return p.failure(err)
	}
	return n.waitListening(p, port)
}

// startLWS runs the LeaderWorkerSet controller v0.8.0 with its webhooks,
// which set the LWS_* environment of every pod of a group.
func (n *node) startLWS() error {
	const (
		namespace = "lws-system" // pkg/utils GetOperatorNamespace's default off-cluster
		service   = "lws-webhook-service"
		secret    = "lws-webhook-server-cert"
	)
	// config/webhook/{mutating,validating}-patch.yaml give the pod
	// webhooks an object selector: only pods of a LeaderWorkerSet; the
	// configurations' names are pkg/cert/cert.go's.
	port, err := n.serveWebhooks(operatorWebhooks{
		namespace: namespace, service: service, secret: secret,
		module: "sigs.k8s.io/lws", version: "v0.8.0", manifest: "config/webhook/manifests.yaml",
		validating: "lws-validating-webhook-configuration", mutating: "lws-mutating-webhook-configuration",
		selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "leaderworkerset.sigs.k8s.io/name", Operator: metav1.LabelSelectorOpExists}}},
	})
	if err != nil {
		return err
	}
	metrics, probe, err := freePortPair()
	if err != nil {
		return err
	}
	certDir := filepath.Join(n.dir, "lws-certs")
	config := lwsconfig.Configuration{
		TypeMeta: metav1.TypeMeta{APIVersion: lwsconfig.GroupVersion.String(), Kind: "Configuration"},
		ControllerManager: lwsconfig.ControllerManager{
			Webhook: lwsconfig.ControllerWebhook{Port: ptr.To(port), CertDir: certDir},
			Metrics: lwsconfig.ControllerMetrics{BindAddress: "127.0.0.1:" + strconv.Itoa(metrics)},
			Health:  lwsconfig.ControllerHealth{HealthProbeBindAddress: "127.0.0.1:" + strconv.Itoa(probe)},
		},
		InternalCertManagement: &lwsconfig.InternalCertManagement{Enable: ptr.To(true), WebhookServiceName: ptr.To(service), WebhookSecretName: ptr.To(secret)},
	}
	config.LeaderElection = nil
	configFile, err := n.writeConfig("lws-config.yaml", config)
	if err != nil {
		return err
	}
	p, err := n.start("lws-controller", n.cache.binary("lws-controller"), []string{
		"--config=" + configFile,
		"--leader-elect=false",
	}, []string{"KUBECONFIG=" + n.admin})
	if err != nil {
		return err
	}
	if err := n.copyCerts(namespace, secret, certDir); err != nil {
		return p.failure(err)
	}
	return n.waitListening(p, port)
}

// startArgo runs Argo's workflow-controller v3.7.6 cluster-wide, with the
// local argoexec image as its executor.
func (n *node) startArgo() error {
	const namespace = "argo"
	if err := n.ensureNamespace(namespace); err != nil {
		return err
	}
	// The controller exits when its ConfigMap is missing (it watches it,
	// cmd/workflow-controller). Its configuration, in the "config" key as
	// config/controller.go reads it: metrics off, so that it takes no
	// fixed port (9090) beyond its health check's.
	// (The two fields of config.Config, mirrored: importing Argo's config
	// package would bring OpenTelemetry's SDK into this module.)
	type enabled struct {
		Enabled *bool `json:"enabled"`
	}
	metricsOff, err := yaml.Marshal(struct {
		MetricsConfig   enabled `json:"metricsConfig"`
		TelemetryConfig enabled `json:"telemetryConfig"`
	}{enabled{ptr.To(false)}, enabled{ptr.To(false)}})
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "workflow-controller-configmap", Namespace: namespace},
		Data:       map[string]string{"config": string(metricsOff)},
	}
	if _, err := n.client.CoreV1().ConfigMaps(namespace).Create(n.ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create configmap %s/%s: %w", namespace, cm.Name, err)
	}
	p, err := n.start("workflow-controller", n.cache.binary("workflow-controller"), []string{
		"--kubeconfig=" + n.admin,
		"--namespace=" + namespace,
		"--executor-image=" + n.images.Argoexec,
		"--executor-image-pull-policy=IfNotPresent",
		"--loglevel=info",
	}, []string{"LEADER_ELECTION_DISABLE=true"})
	if err != nil {
		return err
	}
	// Its health check listens on :6060, fixed (cmd/workflow-controller/main.go).
	return waitUntil(n.ctx, p, 200*time.Millisecond, func(ctx context.Context) bool {
		resp, err := http.Get("http://127.0.0.1:6060/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

// startKubeRay runs the KubeRay operator v1.5.0 (no webhooks: they are off
// unless ENABLE_WEBHOOKS=true).
func (n *node) startKubeRay() error {
	metrics, probe, err := freePortPair()
	if err != nil {
		return err
	}
	p, err := n.start("kuberay-operator", n.cache.binary("kuberay-operator"), []string{
		"--metrics-addr=127.0.0.1:" + strconv.Itoa(metrics),
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(probe),
		"--enable-leader-election=false",
	}, []string{"KUBECONFIG=" + n.admin})
	if err != nil {
		return err
	}
	return waitUntil(n.ctx, p, 200*time.Millisecond, func(ctx context.Context) bool {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(probe), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}
