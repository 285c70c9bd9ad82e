package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"time"

	trainerconfig "github.com/kubeflow/trainer/v2/pkg/apis/config/v1alpha1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	componentconfig "k8s.io/component-base/config/v1alpha1"
	"k8s.io/utils/ptr"
	jobsetconfig "sigs.k8s.io/jobset/api/config/v1alpha1"
	"sigs.k8s.io/yaml"
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

// webhookCertRoot is where both controllers' certificate rotators
// (open-policy-agent/cert-controller) write their serving certificate,
// fixed: sigs.k8s.io/jobset v0.12.0 pkg/util/cert/cert.go (certDir) and
// github.com/kubeflow/trainer/v2 v2.3.0 pkg/util/cert/cert.go (certDir),
// under /tmp/k8s-webhook-server/serving-certs, where the training-operator
// writes its own. Each runs in a mount namespace of its own in which a
// private directory is bound over it, so that the three do not overwrite
// one another's certificate.
const webhookCertRoot = "/tmp/k8s-webhook-server"

// startTrainerV2 starts the JobSet controller, then the Trainer.
func (n *node) startTrainerV2() error {
	if err := n.startJobSet(); err != nil {
		return err
	}
	return n.startTrainer()
}

// privateCerts returns the arguments that run bin with args in a mount
// namespace where a directory of its own (under the node's directory) is
// bound over webhookCertRoot. unshare and sh exec in place (no --fork), as
// for katib-controller.
func (n *node) privateCerts(name, bin string, args ...string) ([]string, error) {
	if err := os.MkdirAll(webhookCertRoot, 0o755); err != nil {
		return nil, err
	}
	own := filepath.Join(n.dir, name+"-webhook-server")
	if err := os.MkdirAll(own, 0o700); err != nil {
		return nil, err
	}
	return append([]string{
		"--mount", "--propagation", "private", "--",
		"/bin/sh", "-c", `mount --bind "$0" ` + webhookCertRoot + ` && exec "$@"`, own,
		bin,
	}, args...), nil
}

// registerWebhooks creates an operator's webhook configurations, renamed
// and pointed at the host Service, with objectSelector on the webhooks
// whose rules cover pods.
func (n *node) registerWebhooks(validating []admissionv1.ValidatingWebhookConfiguration, mutating []admissionv1.MutatingWebhookConfiguration,
	validatingName, mutatingName, namespace, service string, pods *metav1.LabelSelector) error {
	isPods := func(rules []admissionv1.RuleWithOperations) bool {
		for _, r := range rules {
			for _, res := range r.Resources {
				if res == "pods" {
					return true
				}
			}
		}
		return false
	}
	for _, v := range validating {
		v.Name = validatingName
		for i := range v.Webhooks {
			pointService(&v.Webhooks[i].ClientConfig, namespace, service)
			if pods != nil && isPods(v.Webhooks[i].Rules) {
				v.Webhooks[i].ObjectSelector = pods
			}
		}
		if _, err := n.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(n.ctx, &v, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	for _, m := range mutating {
		m.Name = mutatingName
		for i := range m.Webhooks {
			pointService(&m.Webhooks[i].ClientConfig, namespace, service)
			if pods != nil && isPods(m.Webhooks[i].Rules) {
				m.Webhooks[i].ObjectSelector = pods
			}
		}
		if _, err := n.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(n.ctx, &m, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// waitCA waits until the rotator of p has put its CA into both webhook
// configurations, so that the first object is admitted.
func (n *node) waitCA(p *process, validatingName, mutatingName string) error {
	return waitUntil(n.ctx, p, 200*time.Millisecond, func(ctx context.Context) bool {
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
}

// startJobSet runs the JobSet controller v0.12.0 with its webhooks
// (config/components/webhook: manifests.yaml, the pod webhooks limited to
// a JobSet's pods as patches/*-patch.yaml do, named as
// pkg/util/cert/cert.go's rotator expects).
func (n *node) startJobSet() error {
	const (
		namespace  = "jobset-system" // pkg/util/cert/cert.go, defaultNamespace off-cluster
		service    = jobsetconfig.DefaultWebhookServiceName
		secret     = jobsetconfig.DefaultWebhookSecretName
		validating = "jobset-validating-webhook-configuration"
		mutating   = "jobset-mutating-webhook-configuration"
	)
	if err := n.ensureNamespace(namespace); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	if err := n.certSecret(namespace, secret); err != nil {
		return err
	}
	if err := n.hostService(namespace, service, port); err != nil {
		return err
	}
	v, m, err := n.webhookManifests("sigs.k8s.io/jobset", jobsetVersion, "config/components/webhook/manifests.yaml")
	if err != nil {
		return err
	}
	pods := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "jobset.sigs.k8s.io/jobset-name", Operator: metav1.LabelSelectorOpExists}}}
	if err := n.registerWebhooks(v, m, validating, mutating, namespace, service, pods); err != nil {
		return err
	}
	_, probe, err := freePortPair()
	if err != nil {
		return err
	}
	config := jobsetconfig.Configuration{
		TypeMeta: metav1.TypeMeta{APIVersion: jobsetconfig.GroupVersion.String(), Kind: "Configuration"},
		ControllerManager: jobsetconfig.ControllerManager{
			Webhook: jobsetconfig.ControllerWebhook{Port: ptr.To(port), CertDir: webhookCertRoot + "/serving-certs"},
			// "0" turns controller-runtime's metrics server off.
			Metrics:        jobsetconfig.ControllerMetrics{BindAddress: "0"},
			Health:         jobsetconfig.ControllerHealth{HealthProbeBindAddress: "127.0.0.1:" + strconv.Itoa(probe)},
			LeaderElection: &componentconfig.LeaderElectionConfiguration{LeaderElect: ptr.To(false)},
		},
		InternalCertManagement: &jobsetconfig.InternalCertManagement{Enable: ptr.To(true), WebhookServiceName: ptr.To(service), WebhookSecretName: ptr.To(secret)},
	}
	data, err := yaml.Marshal(config)
	if err != nil {
		return err
	}
	configFile := filepath.Join(n.dir, "jobset-config.yaml")
	if err := os.WriteFile(configFile, data, 0o644); err != nil {
		return err
	}
	args, err := n.privateCerts("jobset", n.cache.binary("jobset-controller"), "--config="+configFile, "--leader-elect=false")
	if err != nil {
		return err
	}
	p, err := n.start("jobset-controller", "/usr/bin/unshare", args, []string{"KUBECONFIG=" + n.admin, "TMPDIR=/tmp"})
	if err != nil {
		return err
	}
	if err := n.waitListening(p, port); err != nil {
		return err
	}
	return n.waitCA(p, validating, mutating)
}

// startTrainer runs the Kubeflow Trainer v2.3.0 controller manager with
// its webhooks (manifests/base/webhook: manifests.yaml named and pointed
// as patch_*.yaml do) and no runtimes installed: a test installs the
// ClusterTrainingRuntime it uses.
func (n *node) startTrainer() error {
	const (
		namespace  = "kubeflow-system" // pkg/util/cert/cert.go, defaultNamespace off-cluster
		service    = "kubeflow-trainer-controller-manager"
		secret     = "kubeflow-trainer-webhook-cert"
		validating = "validator.trainer.kubeflow.org" // cmd/trainer-controller-manager/main.go
		mutating   = "defaulter.trainer.kubeflow.org"
	)
	if err := n.ensureNamespace(namespace); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	if err := n.certSecret(namespace, secret); err != nil {
		return err
	}
	if err := n.hostService(namespace, service, port); err != nil {
		return err
	}
	v, m, err := n.webhookManifests("github.com/kubeflow/trainer/v2", trainerVersion, "manifests/base/webhook/manifests.yaml")
	if err != nil {
		return err
	}
	if err := n.registerWebhooks(v, m, validating, mutating, namespace, service, nil); err != nil {
		return err
	}
	_, probe, err := freePortPair()
	if err != nil {
		return err
	}
	config := trainerconfig.Configuration{
		TypeMeta:       metav1.TypeMeta{APIVersion: trainerconfig.GroupVersion.String(), Kind: "Configuration"},
		Webhook:        trainerconfig.ControllerWebhook{Port: ptr.To(int32(port))},
		LeaderElection: &componentconfig.LeaderElectionConfiguration{LeaderElect: ptr.To(false)},
		Metrics:        trainerconfig.ControllerMetrics{BindAddress: "0"},
		Health:         trainerconfig.ControllerHealth{HealthProbeBindAddress: "127.0.0.1:" + strconv.Itoa(probe)},
		CertManagement: &trainerconfig.CertManagement{Enable: ptr.To(true), WebhookServiceName: service, WebhookSecretName: secret},
	}
	data, err := yaml.Marshal(config)
	if err != nil {
		return err
	}
	configFile := filepath.Join(n.dir, "trainer-config.yaml")
	if err := os.WriteFile(configFile, data, 0o644); err != nil {
		return err
	}
	args, err := n.privateCerts("trainer", n.cache.binary("trainer-controller-manager"), "--config="+configFile)
	if err != nil {
		return err
	}
	p, err := n.start("trainer-controller-manager", "/usr/bin/unshare", args, []string{"KUBECONFIG=" + n.admin, "TMPDIR=/tmp"})
	if err != nil {
		return err
	}
	if err := n.waitListening(p, port); err != nil {
		return err
	}
	return n.waitCA(p, validating, mutating)
}
