package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetconfig "sigs.k8s.io/jobset/api/config/v1alpha1"
)

// Kubeflow Trainer v2 and the JobSet controller it runs on. Both are built
// in the tools/trainer module (Trainer v2.3.0 requires JobSet v0.12.0, the
// version that runs), their CRDs join every environment's, and the node
// starts both, JobSet first, with their webhooks.
const (
	trainerVersion = "v2.3.0"
	jobsetVersion  = "v0.12.0"
)

func init() {
	clusterTools = append(clusterTools,
		clusterTool{name: "jobset-controller", module: "trainer", pkg: "sigs.k8s.io/jobset"},
		clusterTool{name: "trainer-controller-manager", module: "trainer", pkg: "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager"},
	)
	crdSources = append(crdSources,
		crdSource{"jobset", "sigs.k8s.io/jobset", jobsetVersion, "config/components/crd/bases"},
		crdSource{"trainer", "github.com/kubeflow/trainer/v2", trainerVersion, "manifests/base/crds"},
	)
}

// webhookCertRoot holds the serving certificate both controllers'
// certificate rotators (open-policy-agent/cert-controller v0.16.0) wait
// for, at a path fixed in each: sigs.k8s.io/jobset v0.12.0
// pkg/util/cert/cert.go (certDir) and github.com/kubeflow/trainer/v2
// v2.3.0 pkg/util/cert/cert.go (certDir); the Trainer's webhook server
// reads it there too (controller-runtime's default CertDir under
// TMPDIR=/tmp: its Configuration has no certDir). The training-operator
// writes its own certificate at the same place (trainingOperatorCertDir).
//
// So each of the two runs in a mount namespace of its own in which a
// private directory is bound over webhookCertRoot, and the node copies the
// controller's Secret into that directory once the rotator has filled it,
// as the Secret's volume would in a cluster. Without that copy (the first
// attempt at this) the rotator finds no tls.crt, gives up after its
// backoff ("could not mount certs", rotator.go ensureCertsMounted) and the
// manager never becomes ready.
const webhookCertRoot = "/tmp/k8s-webhook-server"

// startTrainerV2 starts the JobSet controller, then the Trainer.
func (n *node) startTrainerV2() error {
	if err := n.startJobSet(); err != nil {
		return err
	}
	return n.startTrainer()
}

// privateCerts returns the directory that stands for webhookCertRoot in
// name's mount namespace and the unshare arguments that run bin with args
// there. unshare and sh exec in place (no --fork), as for katib-controller,
// so the controller keeps the pid and death signal the launcher gave.
func (n *node) privateCerts(name, bin string, args ...string) (string, []string, error) {
	if err := os.MkdirAll(webhookCertRoot, 0o755); err != nil {
		return "", nil, err
	}
	own := filepath.Join(n.dir, name+"-webhook-server")
	if err := os.MkdirAll(own, 0o700); err != nil {
		return "", nil, err
	}
	return own, append([]string{
		"--mount", "--propagation", "private", "--",
		"/bin/sh", "-c", `mount --bind "$0" ` + webhookCertRoot + ` && exec "$@"`, own,
		bin,
	}, args...), nil
}

// waitCA waits until the rotator of p has put its CA into both webhook
// configurations, so that the first object is admitted.
func (n *node) waitCA(p *process, validatingName, mutatingName string) error {
	err := waitUntil(n.ctx, p, 200*time.Millisecond, func(ctx context.Context) bool {
		m, err := n.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, mutatingName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		v, err := n.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, validatingName, metav1.GetOptions{})
		if err != nil {
			return false
		}
		return allHaveCA(m.Webhooks, func(w admissionv1.MutatingWebhook) []byte { return w.ClientConfig.CABundle }) &&
			allHaveCA(v.Webhooks, func(w admissionv1.ValidatingWebhook) []byte { return w.ClientConfig.CABundle })
	})
	if err != nil {
		return p.failure(err)
	}
	return nil
}

// startJobSet runs the JobSet controller v0.12.0 with its webhooks
// (config/components/webhook: manifests.yaml, the pod webhooks limited to
// a JobSet's pods as patches/*-patch.yaml do, the configurations named as
// pkg/util/cert/cert.go's rotator expects).
func (n *node) startJobSet() error {
	const (
		namespace  = "jobset-system" // pkg/util/cert/cert.go, defaultNamespace off-cluster
		service    = jobsetconfig.DefaultWebhookServiceName
		secret     = jobsetconfig.DefaultWebhookSecretName
		validating = "jobset-validating-webhook-configuration"
		mutating   = "jobset-mutating-webhook-configuration"
	)
	hooks := operatorWebhooks{
		namespace: namespace, service: service, secret: secret,
		module: "sigs.k8s.io/jobset", version: jobsetVersion, manifest: "config/components/webhook/manifests.yaml",
		validating: validating, mutating: mutating,
		selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "jobset.sigs.k8s.io/jobset-name", Operator: metav1.LabelSelectorOpExists}}},
	}
	port, err := n.serveWebhooks(hooks)
	if err != nil {
		return err
	}
	_, probe, err := freePortPair()
	if err != nil {
		return err
	}
	// api/config/v1alpha1/configuration_types.go; main.go reads it with
	// --config, and its flags override it (--leader-elect).
	config := jobsetconfig.Configuration{
		TypeMeta: metav1.TypeMeta{APIVersion: jobsetconfig.GroupVersion.String(), Kind: "Configuration"},
		ControllerManager: jobsetconfig.ControllerManager{
			// pkg/config/config.go addTo: the webhook server reads
			// certDir, here the rotator's fixed directory in the
			// controller's own mount namespace.
			Webhook: jobsetconfig.ControllerWebhook{Port: ptr.To(port), CertDir: webhookCertRoot + "/serving-certs"},
			// "0" turns controller-runtime's metrics server off.
			Metrics: jobsetconfig.ControllerMetrics{BindAddress: "0"},
			Health:  jobsetconfig.ControllerHealth{HealthProbeBindAddress: "127.0.0.1:" + strconv.Itoa(probe)},
		},
		InternalCertManagement: &jobsetconfig.InternalCertManagement{Enable: ptr.To(true), WebhookServiceName: ptr.To(service), WebhookSecretName: ptr.To(secret)},
	}
	return n.startRotating("jobset", "jobset-controller", config, hooks, port, "--leader-elect=false")
}

// startRotating runs a controller whose certificate rotator waits for its
// Secret's certificate in the fixed webhookCertRoot: with config written
// to name-config.yaml and passed as --config, in its own mount namespace
// (privateCerts) with the Secret's certificate copied into it; then it
// waits for the webhook port and the CA in the webhook configurations.
func (n *node) startRotating(name, binary string, config any, hooks operatorWebhooks, port int, args ...string) error {
	configFile, err := n.writeConfig(name+"-config.yaml", config)
	if err != nil {
		return err
	}
	own, args, err := n.privateCerts(name, n.cache.binary(binary), append([]string{"--config=" + configFile}, args...)...)
	if err != nil {
		return err
	}
	p, err := n.start(binary, "/usr/bin/unshare", args, []string{"KUBECONFIG=" + n.admin, "TMPDIR=/tmp"})
	if err != nil {
		return err
	}
	if err := n.copyCerts(hooks.namespace, hooks.secret, filepath.Join(own, "serving-certs")); err != nil {
		return p.failure(err)
	}
	if err := n.waitListening(p, port); err != nil {
		return err
	}
	return n.waitCA(p, hooks.validating, hooks.mutating)
}

// trainerConfig mirrors the fields of the Trainer's Configuration
// (github.com/kubeflow/trainer/v2 v2.3.0
// pkg/apis/config/v1alpha1/configuration_types.go) the cluster sets; the
// manager decodes it strictly (pkg/config/config.go). Importing the
// package would put the Trainer's module, whose API packages do not
// compile with this module's Kubernetes libraries, into the main module.
type trainerConfig struct {
	APIVersion     string                `json:"apiVersion"`
	Kind           string                `json:"kind"`
	Webhook        trainerWebhook        `json:"webhook"`
	LeaderElection trainerLeaderElection `json:"leaderElection"`
	Metrics        kueueBind             `json:"metrics"`
	Health         kueueHealth           `json:"health"`
	CertManagement trainerCertManagement `json:"certManagement"`
}

type trainerWebhook struct {
	Port int32 `json:"port"`
}

type trainerLeaderElection struct {
	LeaderElect bool `json:"leaderElect"`
}

type trainerCertManagement struct {
	Enable             bool   `json:"enable"`
	WebhookServiceName string `json:"webhookServiceName"`
	WebhookSecretName  string `json:"webhookSecretName"`
}

// startTrainer runs the Kubeflow Trainer v2.3.0 controller manager with
// its webhooks (manifests/base/webhook: manifests.yaml, named as
// cmd/trainer-controller-manager/main.go's rotator expects) and no runtimes
// installed: a test installs the ClusterTrainingRuntime it uses.
func (n *node) startTrainer() error {
	const (
		namespace = "kubeflow-system" // pkg/util/cert/cert.go, defaultNamespace off-cluster
		// pkg/apis/config/v1alpha1/defaults.go
		service    = "kubeflow-trainer-controller-manager"
		secret     = "kubeflow-trainer-webhook-cert"
		validating = "validator.trainer.kubeflow.org"
		mutating   = "defaulter.trainer.kubeflow.org"
	)
	hooks := operatorWebhooks{
		namespace: namespace, service: service, secret: secret,
		module: "github.com/kubeflow/trainer/v2", version: trainerVersion, manifest: "manifests/base/webhook/manifests.yaml",
		validating: validating, mutating: mutating,
	}
	port, err := n.serveWebhooks(hooks)
	if err != nil {
		return err
	}
	_, probe, err := freePortPair()
	if err != nil {
		return err
	}
	config := trainerConfig{
		APIVersion: "config.trainer.kubeflow.org/v1alpha1",
		Kind:       "Configuration",
		Webhook:    trainerWebhook{Port: int32(port)},
		// "0" turns controller-runtime's metrics server off.
		Metrics:        kueueBind{BindAddress: "0"},
		Health:         kueueHealth{HealthProbeBindAddress: "127.0.0.1:" + strconv.Itoa(probe)},
		CertManagement: trainerCertManagement{Enable: true, WebhookServiceName: service, WebhookSecretName: secret},
	}
	return n.startRotating("trainer", "trainer-controller-manager", config, hooks, port)
}
