package testenv

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// The node's network: a bridge of its own with no masquerade and no route
// off the machine. The bridge's address is also where the API server, the
// kubelet, CoreDNS and the operators' webhooks listen, so pods reach them.
const (
	bridgeName = "cube0"
	podSubnet  = "10.244.0.0/24"
	// serviceCIDR is the Services' virtual addresses (kube-apiserver's and
	// kube-controller-manager's --service-cluster-ip-range); pods route it
	// through the bridge, where kube-proxy's rules translate it.
	serviceCIDR = "10.0.0.0/24"
	gatewayIP   = "10.244.0.1"
	nodeName    = "cube-node"
	clusterDNS  = gatewayIP
	cniBinDir   = "/usr/lib/cni"
	storageName = "standard"
)

func signalNotify(c chan os.Signal) { signal.Notify(c, syscall.SIGTERM, syscall.SIGINT) }

// node is the running cluster, owned by the daemon.
type node struct {
	dir      string // run directory: credentials, data, logs
	logDir   string
	cache    *clusterLayout
	servers  *servers
	procs    []*process // started after the API server, stopped in reverse
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	images   Images
	config   *rest.Config
	client   kubernetes.Interface
	admin    string // admin kubeconfig
	socket   string // containerd's socket
	stopOnce sync.Once
	mu       sync.Mutex  // guards procs once components are supervised
	up       atomic.Bool // the node started: supervise restarts components
}

func (n *node) state() clusterState {
	return clusterState{
		Host: n.config.Host, Token: n.config.BearerToken, CAFile: n.config.CAFile,
		NodeName: nodeName, APIHost: gatewayIP, Images: n.images, LogDir: n.logDir,
	}
}

// startNode brings the whole cluster up. On an error the caller stops what
// was started.
func startNode(parent context.Context) (*node, error) {
	l, err := newLayout(parent)
	if err != nil {
		return nil, err
	}
	cache, err := newClusterLayout(l)
	if err != nil {
		return nil, err
	}
	if err := cache.ensure(parent); err != nil {
		return nil, err
	}
	dir := filepath.Join(clusterStateDir, "run")
	cleanupHost(dir)
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("remove old run dir: %w", err)
	}
	n := &node{dir: dir, logDir: filepath.Join(dir, "logs"), cache: cache}
	n.ctx, n.cancel = context.WithCancel(parent)
	for _, d := range []string{n.logDir, filepath.Join(dir, "cni")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return n, err
		}
	}
	if n.images, err = cache.readImages(); err != nil {
		return n, err
	}
	step := func(name string, f func() error) error {
		began := time.Now()
		if err := f(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Printf("%-22s %s\n", name, time.Since(began).Round(time.Millisecond))
		return nil
	}
	steps := []struct {
		name string
		f    func() error
	}{
		{"network", n.setupNetwork},
		{"api server", func() error { return n.startAPIServer(l) }},
		{"containerd", n.startContainerd},
		{"controllers", n.startControllers},
		{"kubelet", n.startKubelet},
		{"kube-proxy", n.startKubeProxy},
		{"coredns", n.startCoreDNS},
		{"storage", n.startProvisioner},
		{"operators", n.startOperators},
		{"node ready", n.waitReady},
		{"accelerators", n.advertiseGPUs},
		{"dra driver", n.startDRADriver},
	}
	for _, s := range steps {
		if err := step(s.name, s.f); err != nil {
			return n, err
		}
	}
	n.up.Store(true)
	n.publishPIDs()
	return n, nil
}

// run runs a command and returns its combined output in the error.
func run(name string, args ...string) error {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

func (n *node) setupNetwork() error {
	// Bridged pod traffic must pass iptables for kube-proxy's Service
	// rules to apply between pods on the bridge.
	if _, err := os.Stat("/proc/sys/net/bridge"); err != nil {
		if err := run("modprobe", "br_netfilter"); err != nil {
			return err
		}
	}
	for key, value := range map[string]string{
		"net/bridge/bridge-nf-call-iptables": "1",
		"net/ipv4/ip_forward":                "1",
	} {
		if err := os.WriteFile(filepath.Join("/proc/sys", key), []byte(value), 0o644); err != nil {
			return fmt.Errorf("set %s: %w", key, err)
		}
	}
	if err := run("ip", "link", "add", bridgeName, "type", "bridge"); err != nil {
		return err
	}
	if err := run("ip", "addr", "add", gatewayIP+"/24", "dev", bridgeName); err != nil {
		return err
	}
	if err := run("ip", "link", "set", bridgeName, "up"); err != nil {
		return err
	}
	// This host's own connections to Service VIPs (tests reach Services
	// at their cluster IPs) go to the bridge too: kube-proxy's rules
	// translate them once it has programmed a Service, and before that
	// they find nobody, as on a node, instead of leaving the machine by
	// its default route.
	if err := run("ip", "route", "add", serviceCIDR, "dev", bridgeName); err != nil {
		return err
	}
	type ipamRange struct {
		Subnet  string `json:"subnet"`
		Gateway string `json:"gateway"`
	}
	type route struct {
		Dst string `json:"dst"`
	}
	type ipam struct {
		Type    string        `json:"type"`
		Ranges  [][]ipamRange `json:"ranges"`
		Routes  []route       `json:"routes"`
		DataDir string        `json:"dataDir"`
	}
	type plugin struct {
		Type         string          `json:"type"`
		Bridge       string          `json:"bridge,omitempty"`
		IsGateway    bool            `json:"isGateway,omitempty"`
		IPMasq       bool            `json:"ipMasq"`
		HairpinMode  bool            `json:"hairpinMode,omitempty"`
		IPAM         *ipam           `json:"ipam,omitempty"`
		Capabilities map[string]bool `json:"capabilities,omitempty"`
	}
	// The CNI configuration list format (containernetworking/cni
	// SPEC.md); the bridge plugin reuses the bridge made above.
	conf := struct {
		CNIVersion string   `json:"cniVersion"`
		Name       string   `json:"name"`
		Plugins    []plugin `json:"plugins"`
	}{"1.0.0", "cube", []plugin{
		{Type: "bridge", Bridge: bridgeName, IsGateway: true, IPMasq: false, HairpinMode: true,
			IPAM: &ipam{Type: "host-local", Ranges: [][]ipamRange{{{Subnet: podSubnet, Gateway: gatewayIP}}},
				// Pods reach the pod bridge and the Service VIPs, and no other
				// network: there is no default route (a route without gw goes
				// through the range's gateway).
				Routes:  []route{{Dst: serviceCIDR}},
				DataDir: filepath.Join(n.dir, "cni-ipam")}},
		{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}},
	}}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(n.dir, "cni", "10-cube.conflist"), data, 0o644)
}

// startAPIServer starts etcd from the CRD template and kube-apiserver on
// the bridge's address, with service accounts, the Node authorizer and a
// token for the kubelet.
func (n *node) startAPIServer(l *layout) error {
	nodeToken, err := randomHex(32)
	if err != nil {
		return err
	}
	opts := apiServerOptions{
		address: gatewayIP,
		tokens:  []string{nodeToken + `,system:node:` + nodeName + `,system:node:` + nodeName + `,"system:nodes"`},
		args: map[string]string{
			"--endpoint-reconciler-type":        "", // the default lease reconciler keeps the kubernetes Service's endpoints
			"--disable-admission-plugins":       "", // the controller-manager makes service accounts
			"--enable-admission-plugins":        "NodeRestriction",
			"--authorization-mode":              "Node,RBAC",
			"--kubelet-preferred-address-types": "InternalIP",
			// Webhooks of operators that run on this host are reached at
			// their endpoints, not through a Service VIP.
			"--enable-aggregator-routing": "true",
		},
	}
	if n.servers, err = launchServers(n.ctx, l.artifacts, n.dir, l.artifacts.etcdTemplate, opts); err != nil {
		return err
	}
	n.config = rest.CopyConfig(n.servers.config)
	n.config.WarningHandlerWithContext = rest.NoWarnings{}
	if n.client, err = kubernetes.NewForConfig(n.config); err != nil {
		return err
	}
	n.admin = filepath.Join(n.dir, "admin.kubeconfig")
	if err := writeKubeconfig(n.admin, n.config.Host, n.config.CAFile, n.config.BearerToken); err != nil {
		return err
	}
	return writeKubeconfig(filepath.Join(n.dir, "kubelet.kubeconfig"), n.config.Host, n.config.CAFile, nodeToken)
}

func writeKubeconfig(path, host, caFile, token string) error {
	config := clientcmdapi.NewConfig()
	config.Clusters["test"] = &clientcmdapi.Cluster{Server: host, CertificateAuthority: caFile}
	config.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: token}
	config.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	config.CurrentContext = "test"
	return clientcmd.WriteToFile(*config, path)
}

// startProcess starts a component with its log in the log directory and
// remembers it for stop.
// writeConfig writes a component's configuration v as YAML to name in the
// node's directory and returns the file's path.
func (n *node) writeConfig(name string, v any) (string, error) {
	data, err := yaml.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	path := filepath.Join(n.dir, name)
	return path, os.WriteFile(path, data, 0o644)
}

func (n *node) start(name, bin string, args, env []string) (*process, error) {
	p, err := startProcessEnv(n.servers.launcher, name, bin, args, env, filepath.Join(n.logDir, name+".log"))
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	n.procs = append(n.procs, p)
	n.mu.Unlock()
	n.supervise(name, bin, args, env, p)
	return p, nil
}

// containerdRoot keeps containerd's content and snapshots between runs, so
// the images are imported once per machine.
func (n *node) containerdRoot() string {
	return filepath.Join(filepath.Dir(n.cache.artifacts.dir), "containerd")
}

func (n *node) startContainerd() error {
	state := filepath.Join(n.dir, "containerd-state")
	n.socket = filepath.Join(n.dir, "containerd.sock")
	// containerd's configuration format, version 2. restrict_oom_score_adj
	// because lowering oom_score_adj is not permitted here; runc because
	// crun refuses the hybrid cgroup layout; the pause image is imported
	// below, as nothing can be pulled.
	config := fmt.Sprintf(`version = 2
root = %q
state = %q
[grpc]
  address = %q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %q
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %q
    conf_dir = %q
`, n.containerdRoot(), state, n.socket, n.images.Pause, cniBinDir, filepath.Join(n.dir, "cni"))
	configFile := filepath.Join(n.dir, "containerd.toml")
	if err := os.WriteFile(configFile, []byte(config), 0o644); err != nil {
		return err
	}
	p, err := n.start("containerd", "containerd", []string{"--config", configFile}, nil)
	if err != nil {
		return err
	}
	if err := waitUntil(n.ctx, p, 100*time.Millisecond, func(context.Context) bool {
		return exec.Command("ctr", "-a", n.socket, "version").Run() == nil
	}); err != nil {
		return p.failure(err)
	}
	out, err := exec.Command("ctr", "-a", n.socket, "-n", "k8s.io", "images", "ls", "-q").Output()
	if err != nil {
		return fmt.Errorf("list images: %w", err)
	}
	have := strings.Fields(string(out))
	for _, r := range n.cache.recipes(&n.images) {
		ref := *r.field
		if slices.Contains(have, ref) {
			continue
		}
		began := time.Now()
		if err := run("ctr", "-a", n.socket, "-n", "k8s.io", "images", "import", n.cache.imageArchive(ref)); err != nil {
			return err
		}
		fmt.Printf("  imported %s in %s\n", ref, time.Since(began).Round(time.Millisecond))
	}
	return nil
}

func (n *node) startControllers() error {
	bin := n.cache.binary
	if err := n.startOnFreePort("kube-controller-manager", bin("kube-controller-manager"), func(port int) []string {
		return []string{
			"--kubeconfig=" + n.admin,
			"--authentication-kubeconfig=" + n.admin,
			"--authorization-kubeconfig=" + n.admin,
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--leader-elect=false",
			"--service-account-private-key-file=" + filepath.Join(n.dir, "service-account.key"),
			"--root-ca-file=" + n.config.CAFile,
			"--service-cluster-ip-range=" + serviceCIDR,
			"--use-service-account-credentials=false",
			// Pods get addresses from host-local IPAM: no node CIDRs are
			// allocated (--allocate-node-cidrs stays off).
			"--node-monitor-grace-period=40s",
		}
	}); err != nil {
		return err
	}
	return n.startOnFreePort("kube-scheduler", bin("kube-scheduler"), func(port int) []string {
		return []string{
			"--kubeconfig=" + n.admin,
			"--authentication-kubeconfig=" + n.admin,
			"--authorization-kubeconfig=" + n.admin,
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(port),
			"--leader-elect=false",
		}
	})
}

// startOnFreePort starts a component that serves on a loopback port
// chosen by freePort and waits until it listens there. The port is free
// when chosen but may be taken before the component binds it (another
// component chose it too): a component that exits because the address is
// in use is started again on another port, as etcd and the API server
// are.
func (n *node) startOnFreePort(name, bin string, args func(port int) []string) error {
	return startUntilBound(func(int) (*process, error, error) {
		port, err := freePort()
		if err != nil {
			return nil, nil, err
		}
		p, err := n.start(name, bin, args(port), nil)
		if err != nil {
			return nil, nil, err
		}
		return p, waitUntil(n.ctx, p, 200*time.Millisecond, func(ctx context.Context) bool {
			c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
			if err == nil {
				c.Close()
			}
			return err == nil
		}), nil
	})
}

func (n *node) startKubelet() error {
	root := filepath.Join(n.dir, "kubelet")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	config := kubeletv1beta1.KubeletConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubelet.config.k8s.io/v1beta1", Kind: "KubeletConfiguration"},
		// cgroup v1 (hybrid) here: allowed explicitly, with the cgroupfs
		// driver (no systemd).
		FailCgroupV1:             ptr.To(false),
		CgroupDriver:             "cgroupfs",
		FailSwapOn:               ptr.To(false),
		ContainerRuntimeEndpoint: "unix://" + n.socket,
		EnforceNodeAllocatable:   []string{"none"},
		Authentication: kubeletv1beta1.KubeletAuthentication{
			Anonymous: kubeletv1beta1.KubeletAnonymousAuthentication{Enabled: ptr.To(true)},
			Webhook:   kubeletv1beta1.KubeletWebhookAuthentication{Enabled: ptr.To(false)},
		},
		Authorization:      kubeletv1beta1.KubeletAuthorization{Mode: kubeletv1beta1.KubeletAuthorizationModeAlwaysAllow},
		ClusterDNS:         []string{clusterDNS},
		ClusterDomain:      "cluster.local",
		ResolverConfig:     ptr.To(""),
		HealthzBindAddress: "127.0.0.1",
		HealthzPort:        ptr.To[int32](0),
		ReadOnlyPort:       0,
		// Images cannot be pulled again: never collect them; and evict
		// only when the machine is really short. The disk's thresholds
		// are sizes, not shares: 1% of a 250 GB disk is 2.5 GB, and a
		// machine whose caches had left less than that free tainted the
		// node with DiskPressure in the middle of a run, rejecting pods
		// that needed a few megabytes.
		ImageGCHighThresholdPercent: ptr.To[int32](100),
		ImageGCLowThresholdPercent:  ptr.To[int32](99),
		EvictionHard:                map[string]string{"memory.available": "100Mi", "nodefs.available": "512Mi", "imagefs.available": "512Mi", "nodefs.inodesFree": "1%"},
		MaxPods:                     200,
		SerializeImagePulls:         ptr.To(false),
		// Pods' volumes and status update quickly in tests.
		SyncFrequency:      metav1.Duration{Duration: 10 * time.Second},
		FileCheckFrequency: metav1.Duration{Duration: 5 * time.Second},
	}
	configFile, err := n.writeConfig("kubelet.yaml", config)
	if err != nil {
		return err
	}
	_, err = n.start("kubelet", n.cache.binary("kubelet"), []string{
		"--config=" + configFile,
		"--kubeconfig=" + filepath.Join(n.dir, "kubelet.kubeconfig"),
		"--root-dir=" + root,
		"--cert-dir=" + filepath.Join(n.dir, "kubelet-pki"),
		"--hostname-override=" + nodeName,
		// The bridge's address: the API server reaches the kubelet there
		// (logs, exec), and the Node reports it as its InternalIP.
		"--node-ip=" + gatewayIP,
		"--node-labels=" + GPUProductLabel + "=" + GPUProduct,
		"--v=1",
	}, nil)
	return err
}

func (n *node) startKubeProxy() error {
	metrics, healthz, err := freePortPair()
	if err != nil {
		return err
	}
	_, err = n.start("kube-proxy", n.cache.binary("kube-proxy"), []string{
		"--kubeconfig=" + n.admin,
		"--hostname-override=" + nodeName,
		"--proxy-mode=iptables",
		"--cluster-cidr=" + podSubnet,
		// Leave the host's conntrack table size alone.
		"--conntrack-max-per-core=0",
		"--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metrics),
		"--healthz-bind-address=127.0.0.1:" + strconv.Itoa(healthz),
	}, nil)
	return err
}

// startCoreDNS serves cluster DNS on the bridge's address, the kubelet's
// clusterDNS. There is no upstream: nothing outside resolves here.
func (n *node) startCoreDNS() error {
	health, ready, err := freePortPair()
	if err != nil {
		return err
	}
	corefile := fmt.Sprintf(`.:53 {
    bind %s
    errors
    health 127.0.0.1:%d
    ready 127.0.0.1:%d
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s test
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 2
    }
    cache 2
}
`, gatewayIP, health, ready, n.admin)
	file := filepath.Join(n.dir, "Corefile")
	if err := os.WriteFile(file, []byte(corefile), 0o644); err != nil {
		return err
	}
	p, err := n.start("coredns", n.cache.binary("coredns"), []string{"-conf", file}, nil)
	if err != nil {
		return err
	}
	resolver := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(gatewayIP, "53"))
	}}
	if err := waitUntil(n.ctx, p, 200*time.Millisecond, func(ctx context.Context) bool {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		addrs, err := resolver.LookupHost(ctx, "kubernetes.default.svc.cluster.local")
		return err == nil && len(addrs) > 0
	}); err != nil {
		return p.failure(err)
	}
	return nil
}

// waitReady waits for the Node to be Ready and the default service
// account to exist in the default namespace.
func (n *node) waitReady() error {
	ctx, cancel := context.WithTimeout(n.ctx, 3*time.Minute)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		node, err := n.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("node %s not ready: %w\n--- last lines of the kubelet's log ---\n%s", nodeName, err, logTail(filepath.Join(n.logDir, "kubelet.log"), 30))
	}
	return wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := n.client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// The node poses as a node with GPUProduct GPUs: it carries the product
// label NVIDIA's GPU feature discovery sets, and advertises GPUs devices of
// GPUResource as a node-level extended resource (a status patch, as the
// Kubernetes documentation "Advertise Extended Resources for a Node" does)
// with no device plugin and no device behind them. The scheduler, quota and
// kubelet admission count them as they count real GPUs; nothing in a pod
// can use one.
const (
	GPUResource     = "nvidia.com/gpu"
	GPUProductLabel = "nvidia.com/gpu.product"
	GPUProduct      = "Tesla-T4"
	GPUs            = 4
)

// advertiseGPUs adds GPUs to the Node's capacity.
func (n *node) advertiseGPUs() error {
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"capacity": map[string]string{GPUResource: strconv.Itoa(GPUs)}}})
	if err != nil {
		return err
	}
	if _, err := n.client.CoreV1().Nodes().Patch(n.ctx, nodeName, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("advertise %s: %w", GPUResource, err)
	}
	// The kubelet derives allocatable from capacity at its next status
	// update.
	ctx, cancel := context.WithTimeout(n.ctx, time.Minute)
	defer cancel()
	return wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		node, err := n.client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		q := node.Status.Allocatable[GPUResource]
		return q.Value() == GPUs, nil
	})
}

// stop ends every process in reverse order and cleans the host.
func (n *node) stop() {
	n.stopOnce.Do(func() {
		if n.cancel != nil {
			n.cancel()
		}
		n.wg.Wait()
		_ = os.Remove(pidsFile())
		for i := len(n.procs) - 1; i >= 0; i-- {
			n.procs[i].terminate(5 * time.Second)
		}
		n.servers.kill()
		cleanupHost(n.dir)
	})
}

// ensureNamespace creates a namespace unless it exists.
func (n *node) ensureNamespace(name string) error {
	_, err := n.client.CoreV1().Namespaces().Create(n.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// cleanupHost removes what a node leaves on the machine: containers and
// their shims, mounts under dir, the pod network namespaces, the bridge,
// and the iptables chains of the kubelet and kube-proxy. It is safe to run
// when nothing is left.
func cleanupHost(dir string) {
	socket := filepath.Join(dir, "containerd.sock")
	// Shims and the containers under them: every process whose command
	// line names this node's containerd socket, and its process group.
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(socket)) {
			continue
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	// Containers left by the shims (pause and the pods' processes) live in
	// cgroups under kubepods; kill what is there.
	for _, cg := range []string{"/sys/fs/cgroup/pids/kubepods", "/sys/fs/cgroup/memory/kubepods", "/sys/fs/cgroup/cpu,cpuacct/kubepods", "/sys/fs/cgroup/unified/kubepods"} {
		killCgroup(cg)
	}
	unmountUnder(dir)
	unmountUnder(filepath.Join(os.TempDir(), "cube-testcluster"))
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if name, _, _ := strings.Cut(strings.TrimSpace(line), " "); strings.HasPrefix(name, "cni-") {
				_ = run("ip", "netns", "delete", name)
			}
		}
	}
	_ = run("ip", "link", "delete", bridgeName)
	for _, cmd := range []string{"iptables", "ip6tables"} {
		removeKubeChains(cmd)
	}
	_ = os.RemoveAll("/tmp/k8s-webhook-server")
	_ = os.RemoveAll(katibCertDir)
	_ = os.RemoveAll(postgresDir())
}

// killCgroup kills every process in the cgroup tree under path.
func killCgroup(path string) {
	_ = filepathWalkDirs(path, func(dir string) {
		data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			return
		}
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

func filepathWalkDirs(root string, f func(dir string)) error {
	return filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			f(path)
		}
		return nil
	})
}

// unmountUnder lazily unmounts every mount point under dir, deepest first.
func unmountUnder(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var points []string
	for _, line := range strings.Split(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		point := unescapeMount(fields[4])
		if point == dir || strings.HasPrefix(point, dir+"/") {
			points = append(points, point)
		}
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		_ = syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space...).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// removeKubeChains deletes the KUBE-* chains of every table, and the rules
// of other chains that jump to them.
func removeKubeChains(cmd string) {
	for _, table := range []string{"filter", "nat", "mangle"} {
		out, err := exec.Command(cmd+"-save", "-t", table).Output()
		if err != nil {
			continue
		}
		var chains []string
		for _, line := range strings.Split(string(out), "\n") {
			if name, ok := strings.CutPrefix(line, ":"); ok {
				name, _, _ = strings.Cut(name, " ")
				if strings.HasPrefix(name, "KUBE-") {
					chains = append(chains, name)
				}
			}
		}
		for _, line := range strings.Split(string(out), "\n") {
			rule, ok := strings.CutPrefix(line, "-A ")
			if !ok {
				continue
			}
			chain, _, _ := strings.Cut(rule, " ")
			if strings.HasPrefix(chain, "KUBE-") {
				continue
			}
			for _, target := range chains {
				if strings.Contains(rule, "-j "+target) {
					_ = run(cmd, append([]string{"-t", table, "-D"}, splitRule(rule)...)...)
					break
				}
			}
		}
		for _, c := range chains {
			_ = run(cmd, "-t", table, "-F", c)
		}
		for _, c := range chains {
			_ = run(cmd, "-t", table, "-X", c)
		}
	}
}

// splitRule splits an iptables-save rule into arguments, keeping quoted
// comments whole.
func splitRule(rule string) []string {
	var (
		args  []string
		cur   strings.Builder
		quote bool
	)
	for _, r := range rule {
		switch {
		case r == '"':
			quote = !quote
		case r == ' ' && !quote:
			if cur.Len() > 0 {
				args = append(args, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		args = append(args, cur.String())
	}
	return args
}

// pollSecret waits for a Secret to carry every key and returns it.
func (n *node) pollSecret(namespace, name string, keys ...string) (*corev1.Secret, error) {
	var secret *corev1.Secret
	err := wait.PollUntilContextTimeout(n.ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := n.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, k := range keys {
			if len(s.Data[k]) == 0 {
				return false, nil
			}
		}
		secret = s
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("wait for secret %s/%s: %w", namespace, name, err)
	}
	return secret, nil
}
