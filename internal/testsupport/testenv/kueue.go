package testenv

import (
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Kueue v0.17.0 in the test cluster. Its manager runs on the host like the
// other operators; its webhooks (job defaulting and suspension, the pod,
// Deployment, StatefulSet and LeaderWorkerSet integrations, the queue
// objects' validation) and the conversion webhooks of its CRDs are served
// through a selector-less Service.
const (
	kueueVersion   = "v0.17.0"
	kueueNamespace = "kueue-system"
	// The rotator names the webhook configurations after the Service:
	// <service without -webhook-service>-{validating,mutating}-webhook-configuration
	// (pkg/util/cert/cert.go, buildCertRotatorConfig).
	kueueService = "kueue-webhook-service"
	kueueSecret  = "kueue-webhook-server-cert"
)

// kueueFrameworks are the integrations the cluster enables, by the names
// of Kueue v0.17.0's integration registry (config/components/manager/
// controller_manager_config.yaml lists them): the Job, the training
// operator's v1 jobs the cluster runs (its MPIJob is kubeflow.org/v1, not
// the mpi-operator's v2beta1 that Kueue's mpijob integration manages),
// RayJob and RayCluster, JobSet and TrainJob (active once their CRDs are
// served: Kueue waits for an integration's API, jobframework/setup.go
// waitForAPI), and the pod-based integrations serving and notebooks use.
// LeaderWorkerSet, Deployment and StatefulSet need "pod".
var kueueFrameworks = []string{
	"batch/job",
	"kubeflow.org/pytorchjob",
	"kubeflow.org/tfjob",
	"kubeflow.org/xgboostjob",
	"kubeflow.org/paddlejob",
	"ray.io/rayjob",
	"ray.io/raycluster",
	"jobset.x-k8s.io/jobset",
	"trainer.kubeflow.org/trainjob",
	"pod",
	"deployment",
	"statefulset",
	"leaderworkerset.x-k8s.io/leaderworkerset",
}

// kueueConversionCRDs are the CRDs whose versions Kueue converts by webhook
// (config/components/crd/kustomization.yaml, patches/webhook_in_*.yaml):
// its rotator injects the CA into exactly these (cert.go), and fails while
// one has no webhook client configuration.
var kueueConversionCRDs = []string{
	"localqueues.kueue.x-k8s.io",
	"clusterqueues.kueue.x-k8s.io",
	"workloads.kueue.x-k8s.io",
	"cohorts.kueue.x-k8s.io",
	"multikueueclusters.kueue.x-k8s.io",
}

// kueueTenantLabel is tenant.LabelQueueing, which a Kueue tenant's
// Namespace carries with the value Kueue.
const kueueTenantLabel = "cube.dev/queueing"

// kueueConfig mirrors the fields of Kueue's Configuration
// (sigs.k8s.io/kueue v0.17.0 apis/config/v1beta2/configuration_types.go)
// the cluster sets. Importing the package would put sigs.k8s.io/kueue in
// the main module's graph, whose requirements raise the training
// operator's API module to v1.9.3, which has no MXJob.
type kueueConfig struct {
	APIVersion             string                `json:"apiVersion"`
	Kind                   string                `json:"kind"`
	Namespace              string                `json:"namespace"`
	Webhook                kueueWebhook          `json:"webhook"`
	LeaderElection         kueueLeaderElection   `json:"leaderElection"`
	Metrics                kueueBind             `json:"metrics"`
	Health                 kueueHealth           `json:"health"`
	ManageJobsWithoutQueue bool                  `json:"manageJobsWithoutQueueName"`
	ManagedJobsNamespaces  *metav1.LabelSelector `json:"managedJobsNamespaceSelector,omitempty"`
	InternalCertManagement kueueInternalCerts    `json:"internalCertManagement"`
	WaitForPodsReady       kueueWaitForPodsReady `json:"waitForPodsReady"`
	Integrations           kueueIntegrations     `json:"integrations"`
	FairSharing            kueueFairSharing      `json:"fairSharing"`
	ClientConnection       kueueClientConnection `json:"clientConnection"`
}

type kueueWebhook struct {
	Port    int    `json:"port"`
	CertDir string `json:"certDir"`
}

type kueueLeaderElection struct {
	LeaderElect bool `json:"leaderElect"`
}

type kueueBind struct {
	BindAddress string `json:"bindAddress"`
}

type kueueHealth struct {
	HealthProbeBindAddress string `json:"healthProbeBindAddress"`
}

type kueueInternalCerts struct {
	Enable             bool   `json:"enable"`
	WebhookServiceName string `json:"webhookServiceName"`
	WebhookSecretName  string `json:"webhookSecretName"`
}

// kueueWaitForPodsReady: present, the feature is on (v1beta2 has no enable
// field, pkg/util/waitforpodsready Enabled). Timeout is how long an
// admitted workload may take to have all its pods ready before Kueue
// evicts and requeues it; blockAdmission admits the next workload only
// once the previous one's pods are ready, so that two half-started gangs
// never hold the node between them.
type kueueWaitForPodsReady struct {
	Timeout        metav1.Duration `json:"timeout"`
	BlockAdmission bool            `json:"blockAdmission"`
}

type kueueIntegrations struct {
	Frameworks []string `json:"frameworks"`
}

// kueueFairSharing: present, fair sharing is on (cmd/kueue/main.go,
// cfg.FairSharing != nil); the ClusterQueues' fairSharing.weight then
// decides whose borrowed quota is reclaimed first.
type kueueFairSharing struct {
	PreemptionStrategies []string `json:"preemptionStrategies"`
}

type kueueClientConnection struct {
	QPS   float32 `json:"qps"`
	Burst int32   `json:"burst"`
}

// startKueue runs Kueue's manager v0.17.0 with its webhooks, the
// integrations of kueueFrameworks, waitForPodsReady and fair sharing.
func (n *node) startKueue() error {
	if err := n.ensureNamespace(kueueNamespace); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	if err := n.certSecret(kueueNamespace, kueueSecret); err != nil {
		return err
	}
	if err := n.hostService(kueueNamespace, kueueService, port); err != nil {
		return err
	}
	if err := n.kueueWebhooks(); err != nil {
		return err
	}
	if err := n.kueueConversion(); err != nil {
		return err
	}
	metrics, probe, err := freePortPair()
	if err != nil {
		return err
	}
	certDir := filepath.Join(n.dir, "kueue-certs")
	config := kueueConfig{
		APIVersion: "config.kueue.x-k8s.io/v1beta2",
		Kind:       "Configuration",
		Namespace:  kueueNamespace,
		Webhook:    kueueWebhook{Port: port, CertDir: certDir},
		Metrics:    kueueBind{BindAddress: "127.0.0.1:" + strconv.Itoa(metrics)},
		Health:     kueueHealth{HealthProbeBindAddress: "127.0.0.1:" + strconv.Itoa(probe)},
		InternalCertManagement: kueueInternalCerts{
			Enable: true, WebhookServiceName: kueueService, WebhookSecretName: kueueSecret,
		},
		// Five minutes for a gang's pods to be ready on one node that
		// pulls no image over the network.
		WaitForPodsReady: kueueWaitForPodsReady{Timeout: metav1.Duration{Duration: 5 * time.Minute}, BlockAdmission: false},
		Integrations:     kueueIntegrations{Frameworks: kueueFrameworks},
		// Kueue manages pod-based workloads only in Kueue tenants'
		// namespaces (tenant.LabelQueueing), as a platform sets it up:
		// elsewhere its pod webhook would look up each pod's owning job in
		// its cache and refuse a pod whose job it has not seen yet.
		ManagedJobsNamespaces: &metav1.LabelSelector{MatchLabels: map[string]string{kueueTenantLabel: "Kueue"}},
		// The two strategies of Kueue's sample configuration, in its order.
		FairSharing:      kueueFairSharing{PreemptionStrategies: []string{"LessThanOrEqualToFinalShare", "LessThanInitialShare"}},
		ClientConnection: kueueClientConnection{QPS: 50, Burst: 100},
	}
	configFile, err := n.writeConfig("kueue-config.yaml", config)
	if err != nil {
		return err
	}
	p, err := n.start("kueue-manager", n.cache.binary("kueue-manager"), []string{
		"--config=" + configFile,
		// The visibility API server (pending workloads) would need an
		// APIService and its own delegated authentication; cube reads
		// the Workload objects instead.
		"--feature-gates=VisibilityOnDemand=false",
	}, []string{"KUBECONFIG=" + n.admin})
	if err != nil {
		return err
	}
	// The rotator waits for the certificate files in certDir, where a
	// cluster mounts its Secret, before it injects the CA.
	if err := n.copyCerts(kueueNamespace, kueueSecret, certDir); err != nil {
		return p.failure(err)
	}
	return n.waitListening(p, port)
}

// kueueWebhooks creates Kueue's webhook configurations from its module's
// config/components/webhook/manifests.yaml, named as its rotator expects,
// pointed at the host Service, and with the namespace selectors of
// config/components/webhook/kustomization.yaml on the pod, Deployment and
// StatefulSet webhooks: Kueue's own namespace and kube-system are left
// alone.
func (n *node) kueueWebhooks() error {
	validating, mutating, err := n.webhookManifests("sigs.k8s.io/kueue", kueueVersion, "config/components/webhook/manifests.yaml")
	if err != nil {
		return err
	}
	notSystem := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
		Key: "kubernetes.io/metadata.name", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"kube-system", kueueNamespace},
	}}}
	selected := map[string]bool{
		"mpod.kb.io": true, "mdeployment.kb.io": true, "mstatefulset.kb.io": true,
		"vpod.kb.io": true, "vdeployment.kb.io": true, "vstatefulset.kb.io": true,
	}
	for _, v := range validating {
		v.Name = "kueue-validating-webhook-configuration"
		for i := range v.Webhooks {
			pointService(&v.Webhooks[i].ClientConfig, kueueNamespace, kueueService)
			if selected[v.Webhooks[i].Name] {
				v.Webhooks[i].NamespaceSelector = notSystem.DeepCopy()
			}
		}
		if _, err := n.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(n.ctx, &v, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create kueue validating webhooks: %w", err)
		}
	}
	for _, m := range mutating {
		m.Name = "kueue-mutating-webhook-configuration"
		for i := range m.Webhooks {
			pointService(&m.Webhooks[i].ClientConfig, kueueNamespace, kueueService)
			if selected[m.Webhooks[i].Name] {
				m.Webhooks[i].NamespaceSelector = notSystem.DeepCopy()
			}
		}
		if _, err := n.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(n.ctx, &m, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create kueue mutating webhooks: %w", err)
		}
	}
	return nil
}

// kueueConversion gives Kueue's multi-version CRDs the conversion webhook
// of config/components/crd/patches/webhook_in_*.yaml. The test API
// server's CRDs have none (nothing serves it there; cube uses the storage
// version, v1beta2, which needs no conversion).
func (n *node) kueueConversion() error {
	c, err := newCRDClient(n.config)
	if err != nil {
		return err
	}
	for _, name := range kueueConversionCRDs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := c.Get(n.ctx, client.ObjectKey{Name: name}, crd); err != nil {
			return fmt.Errorf("get crd %s: %w", name, err)
		}
		if crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter {
			continue // a daemon started again
		}
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig: &apiextensionsv1.WebhookClientConfig{Service: &apiextensionsv1.ServiceReference{
					Namespace: kueueNamespace, Name: kueueService, Path: ptr.To("/convert"),
				}},
				ConversionReviewVersions: []string{"v1"},
			},
		}
		if err := c.Update(n.ctx, crd); err != nil {
			return fmt.Errorf("configure conversion of crd %s: %w", name, err)
		}
	}
	return nil
}
