package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	katibconfig "github.com/kubeflow/katib/pkg/apis/config/v1beta1"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// Katib v0.19.0: PostgreSQL, katib-db-manager and katib-controller run on
// the host. The controller creates each Experiment's suggestion service as
// a Deployment of the local goptuna image and injects the local file
// metrics collector into trial pods.

const (
	katibNamespace = "kubeflow" // consts.DefaultKatibNamespace (pkg/controller.v1beta1/consts/const.go)
	// pkg/controller.v1beta1/consts/const.go: CertDir, where the
	// controller's webhook server reads its certificate, fixed.
	katibCertDir = "/tmp/cert"
	// The Service the controller's cert generator names in its
	// certificate and the Secret it fills (manifests/v1beta1/components/
	// controller and installs/katib-standalone-postgres/katib-config.yaml).
	katibWebhookService = "katib-controller"
	katibWebhookSecret  = "katib-webhook-cert"
	// consts.DefaultKatibDBManagerServiceIP and ...Port: the metrics
	// collector in a trial pod and the controller reach the db-manager at
	// katib-db-manager.kubeflow:6789 (pkg/common/v1beta1/katib_manager_util.go).
	katibDBManagerService = "katib-db-manager"
	katibDBManagerPort    = 6789
	postgresBin           = "/usr/lib/postgresql/15/bin" // Debian package postgresql-15
)

func (n *node) startKatib() error {
	if err := n.ensureNamespace(katibNamespace); err != nil {
		return err
	}
	pgPort, err := n.startPostgres()
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	if err := n.startKatibDBManager(pgPort); err != nil {
		return fmt.Errorf("katib-db-manager: %w", err)
	}
	return n.startKatibController()
}

// startPostgres runs PostgreSQL 15 as the postgres user on loopback, its
// data in the run's directory, and returns its port. Trust authentication:
// nothing but this machine's processes reach loopback.
func (n *node) startPostgres() (int, error) {
	uid, gid, err := lookupUser("postgres")
	if err != nil {
		return 0, err
	}
	// Outside the run's directory, which only root may enter; made anew
	// by every run (one cluster runs at a time).
	dir := postgresDir()
	data := filepath.Join(dir, "data")
	if err := os.RemoveAll(dir); err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	if err := os.Chown(dir, uid, gid); err != nil {
		return 0, err
	}
	asPostgres := &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	// The database user is katib, db-manager's default DB_USER
	// (pkg/db/v1beta1/common/const.go, DefaultPostgreSQLUser).
	initdb := exec.CommandContext(n.ctx, filepath.Join(postgresBin, "initdb"), "-D", data, "-U", "katib", "--auth=trust", "-E", "UTF8", "--no-sync")
	initdb.SysProcAttr = asPostgres
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("initdb: %w\n%s", err, lastLines(string(out), 20))
	}
	port, err := freePort()
	if err != nil {
		return 0, err
	}
	// setpriv execs the server in place: the process keeps the pid, the
	// process group and the death signal the launcher gave it.
	p, err := n.start("postgres", "/usr/bin/setpriv", []string{
		"--reuid=postgres", "--regid=postgres", "--clear-groups", "--",
		filepath.Join(postgresBin, "postgres"), "-D", data, "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-k", dir,
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "synchronous_commit=off",
	}, nil)
	if err != nil {
		return 0, err
	}
	err = waitUntil(n.ctx, p, 200*time.Millisecond, func(ctx context.Context) bool {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	if err != nil {
		return 0, p.failure(err)
	}
	return port, nil
}

// postgresDir holds PostgreSQL's socket and data directory.
func postgresDir() string { return filepath.Join(os.TempDir(), "cube-testcluster-postgres") }

func lookupUser(name string) (uid, gid int, err error) {
	u, err := user.Lookup(name)
	if err != nil {
		return 0, 0, fmt.Errorf("%w (is the Debian package postgresql-15 installed?)", err)
	}
	if uid, err = strconv.Atoi(u.Uid); err != nil {
		return 0, 0, err
	}
	gid, err = strconv.Atoi(u.Gid)
	return uid, gid, err
}

// startKatibDBManager runs db-manager on PostgreSQL (cmd/db-manager/v1beta1,
// pkg/db/v1beta1/postgres: DB_NAME=postgres, KATIB_POSTGRESQL_DB_*),
// listening on the bridge, behind a selector-less Service
// katib-db-manager.kubeflow.
func (n *node) startKatibDBManager(pgPort int) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: katibDBManagerService, Namespace: katibNamespace},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: "api", Port: katibDBManagerPort, TargetPort: intstr.FromInt(katibDBManagerPort), Protocol: corev1.ProtocolTCP,
		}}},
	}
	if _, err := n.client.CoreV1().Services(katibNamespace).Create(n.ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create service %s: %w", svc.Name, err)
	}
	//nolint:staticcheck // Endpoints are what a selector-less Service is given by hand.
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: katibDBManagerService, Namespace: katibNamespace},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: gatewayIP}},
			Ports:     []corev1.EndpointPort{{Name: "api", Port: katibDBManagerPort, Protocol: corev1.ProtocolTCP}},
		}},
	}
	if _, err := n.client.CoreV1().Endpoints(katibNamespace).Create(n.ctx, ep, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create endpoints %s: %w", ep.Name, err)
	}
	p, err := n.start("katib-db-manager", n.cache.binary("katib-db-manager"), []string{
		"--listen-address=" + net.JoinHostPort(gatewayIP, strconv.Itoa(katibDBManagerPort)),
	}, []string{
		"DB_NAME=postgres",
		"DB_USER=katib",
		// Not checked (trust), but not empty: postgres.go formats
		// "password=%s dbname=%s", and lib/pq reads an empty password
		// as the rest of the line.
		"DB_PASSWORD=katib",
		"KATIB_POSTGRESQL_DB_HOST=127.0.0.1",
		"KATIB_POSTGRESQL_DB_PORT=" + strconv.Itoa(pgPort),
		"KATIB_POSTGRESQL_DB_DATABASE=postgres",
	})
	if err != nil {
		return err
	}
	return n.waitListening(p, katibDBManagerPort)
}

// katibConfig is the controller's KatibConfig: the init part as the
// --katib-config file, the runtime part (suggestion and metrics collector
// images) in the katib-config ConfigMap, where the controller reads it for
// every Suggestion and trial pod (pkg/util/v1beta1/katibconfig/config.go).
func (n *node) katibConfig(webhookPort, metrics, probe int) katibconfig.KatibConfig {
	suggestion := func(algorithm string) katibconfig.SuggestionConfig {
		return katibconfig.SuggestionConfig{AlgorithmName: algorithm, Container: corev1.Container{
			Image: n.images.KatibSuggestion, ImagePullPolicy: corev1.PullIfNotPresent,
		}}
	}
	collector := func(kind string) katibconfig.MetricsCollectorConfig {
		return katibconfig.MetricsCollectorConfig{CollectorKind: kind, Image: n.images.KatibMetricsCollector, ImagePullPolicy: corev1.PullIfNotPresent}
	}
	return katibconfig.KatibConfig{
		TypeMeta: metav1.TypeMeta{APIVersion: "config.kubeflow.org/v1beta1", Kind: "KatibConfig"},
		InitConfig: katibconfig.InitConfig{
			ControllerConfig: katibconfig.ControllerConfig{
				WebhookPort: ptr.To(webhookPort),
				MetricsAddr: "127.0.0.1:" + strconv.Itoa(metrics),
				HealthzAddr: "127.0.0.1:" + strconv.Itoa(probe),
				// Katib's default trialResources (pkg/apis/config/v1beta1/defaults.go).
				TrialResources: []string{"Job.v1.batch", "TFJob.v1.kubeflow.org", "PyTorchJob.v1.kubeflow.org", "MPIJob.v1.kubeflow.org", "XGBoostJob.v1.kubeflow.org"},
			},
			CertGeneratorConfig: katibconfig.CertGeneratorConfig{Enable: true, WebhookServiceName: katibWebhookService, WebhookSecretName: katibWebhookSecret},
		},
		RuntimeConfig: katibconfig.RuntimeConfig{
			// The goptuna service's algorithms (pkg/suggestion/v1beta1/goptuna).
			SuggestionConfigs:       []katibconfig.SuggestionConfig{suggestion("random"), suggestion("tpe"), suggestion("cmaes"), suggestion("sobol")},
			MetricsCollectorConfigs: []katibconfig.MetricsCollectorConfig{collector("StdOut"), collector("File")},
		},
	}
}

// startKatibController runs katib-controller with its webhooks
// (manifests/v1beta1/components/webhook/webhooks.yaml) served on the host
// and its cert generator filling the Secret and the configurations' CA.
//
// The controller dials each Suggestion's service by name,
// <experiment>-<algorithm>.<namespace>:6789
// (pkg/controller.v1beta1/util/suggestion.go, GetAlgorithmEndpoint), and
// the db-manager as katib-db-manager.kubeflow:6789, names only cluster DNS
// knows; so it runs in a mount namespace of its own whose /etc/resolv.conf
// names CoreDNS with a pod's search path.
func (n *node) startKatibController() error {
	// The pod webhook skips the controller's own service account (a
	// matchCondition); the host process is the admin user.
	port, err := n.serveWebhooks(operatorWebhooks{
		namespace: katibNamespace, service: katibWebhookService, secret: katibWebhookSecret,
		module: "github.com/kubeflow/katib", version: "v0.19.0", manifest: "manifests/v1beta1/components/webhook/webhooks.yaml",
	})
	if err != nil {
		return err
	}
	metrics, probe, err := freePortPair()
	if err != nil {
		return err
	}
	cfg := n.katibConfig(port, metrics, probe)
	initOnly := cfg
	initOnly.RuntimeConfig = katibconfig.RuntimeConfig{}
	configFile, err := n.writeConfig("katib-config.yaml", initOnly)
	if err != nil {
		return err
	}
	all, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "katib-config", Namespace: katibNamespace}, // consts.KatibConfigMapName
		Data:       map[string]string{"katib-config.yaml": string(all)},                // consts.LabelKatibConfigTag
	}
	if _, err := n.client.CoreV1().ConfigMaps(katibNamespace).Create(n.ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create configmap %s: %w", cm.Name, err)
	}
	resolv := filepath.Join(n.dir, "katib-resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver "+clusterDNS+"\nsearch svc.cluster.local cluster.local\noptions ndots:5\n"), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(katibCertDir, 0o700); err != nil {
		return err
	}
	// unshare and sh exec in place (no --fork): the controller keeps the
	// pid, process group and death signal the launcher gave unshare.
	p, err := n.start("katib-controller", "/usr/bin/unshare", []string{
		"--mount", "--propagation", "private", "--",
		"/bin/sh", "-c", `mount --bind "$0" /etc/resolv.conf && exec "$@"`, resolv,
		n.cache.binary("katib-controller"), "--katib-config=" + configFile,
	}, []string{"KUBECONFIG=" + n.admin, "KATIB_CORE_NAMESPACE=" + katibNamespace, "GODEBUG=netdns=go"})
	if err != nil {
		return err
	}
	// The cert generator (open-policy-agent/cert-controller) fills the
	// Secret and waits for the certificate to appear in CertDir, as the
	// Secret's volume would put it there in a cluster.
	if err := n.copyCerts(katibNamespace, katibWebhookSecret, katibCertDir); err != nil {
		return p.failure(err)
	}
	if err := n.waitListening(p, port); err != nil {
		return err
	}
	// Wait for the cert generator to have put its CA into the webhook
	// configurations, so that the first Experiment is admitted.
	return waitUntil(n.ctx, p, 200*time.Millisecond, func(ctx context.Context) bool {
		m, err := n.client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "katib.kubeflow.org", metav1.GetOptions{})
		if err != nil {
			return false
		}
		v, err := n.client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, "katib.kubeflow.org", metav1.GetOptions{})
		if err != nil {
			return false
		}
		return allHaveCA(m.Webhooks, func(w admissionv1.MutatingWebhook) []byte { return w.ClientConfig.CABundle }) &&
			allHaveCA(v.Webhooks, func(w admissionv1.ValidatingWebhook) []byte { return w.ClientConfig.CABundle })
	})
}

func allHaveCA[W any](ws []W, ca func(W) []byte) bool {
	for _, w := range ws {
		if len(ca(w)) == 0 {
			return false
		}
	}
	return len(ws) > 0
}
