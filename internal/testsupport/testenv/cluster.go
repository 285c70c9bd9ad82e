package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// Cluster is the shared one-node test cluster: the API server of Env with
// kube-controller-manager, kube-scheduler, a kubelet on containerd and runc,
// kube-proxy, CoreDNS, a host-path volume provisioner and the operators
// (training-operator, LeaderWorkerSet, Argo's workflow-controller, KubeRay)
// running for real, so pods are scheduled, run, resolve names and talk to
// Services. See the package documentation.
type Cluster struct {
	*Env
	// Images are the locally built images the node has.
	Images Images
	// NodeName is the name of the one Node.
	NodeName string
	// APIHost is the address pods reach the API server at directly (the
	// pod bridge's gateway); in-pod clients normally use the kubernetes
	// Service.
	APIHost string
	// ClusterStartup is how long the cluster took to start, as its daemon
	// measured it; zero when this test binary attached to a cluster already
	// running.
	ClusterStartup time.Duration
	// LogDir holds every component's log.
	LogDir string
}

// clusterState is what the cluster's daemon publishes for the test binaries
// that attach to it.
type clusterState struct {
	PID      int           `json:"pid"`
	Host     string        `json:"host"`
	Token    string        `json:"token"`
	CAFile   string        `json:"caFile"`
	NodeName string        `json:"nodeName"`
	APIHost  string        `json:"apiHost"`
	Images   Images        `json:"images"`
	Startup  time.Duration `json:"startup"`
	LogDir   string        `json:"logDir"`
}

// The daemon's files, in a fixed directory so that every test binary of a
// run finds the same cluster.
var clusterStateDir = filepath.Join(os.TempDir(), "cube-testcluster")

const (
	daemonEnv = "CUBE_TESTCLUSTER_DAEMON"
	// lingerEnv sets how long the cluster outlives its last user, as a Go
	// duration; go test ./... runs packages one after another, and a
	// package that uses the cluster should not wait for a new one.
	lingerEnv     = "CUBE_TESTCLUSTER_LINGER"
	defaultLinger = 2 * time.Minute
	// clusterStartTimeout bounds a cold start of the daemon (images are
	// imported into containerd on the first start).
	clusterStartTimeout = 10 * time.Minute
)

func stateFile() string     { return filepath.Join(clusterStateDir, "state.json") }
func startLockFile() string { return filepath.Join(clusterStateDir, "start.lock") }
func usersLockFile() string { return filepath.Join(clusterStateDir, "users.lock") }
func errorFile() string     { return filepath.Join(clusterStateDir, "error") }
func daemonLog() string     { return filepath.Join(clusterStateDir, "daemon.log") }

var sharedCluster struct {
	once    sync.Once
	cluster *Cluster
	err     error
	users   *os.File // held with a shared flock while this binary lives
}

// ClusterUnsupported says what this machine lacks to run the test cluster's
// node, or "" when it has everything.
func ClusterUnsupported() string {
	if runtime.GOOS != "linux" {
		return "the test cluster's node needs Linux, not " + runtime.GOOS
	}
	if os.Geteuid() != 0 {
		return "the test cluster's node needs root (containerd, network namespaces, iptables)"
	}
	if _, err := os.Stat("/sys/fs/cgroup"); err != nil {
		return "the test cluster's node needs cgroups (/sys/fs/cgroup is missing)"
	}
	var missing []string
	for _, bin := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "iptables", "iptables-save", "ip", "mmdebstrap"} {
		if _, err := exec.LookPath(bin); err != nil {
			missing = append(missing, bin)
		}
	}
	for _, file := range []string{busyboxPath, filepath.Join(postgresBin, "postgres"), filepath.Join(postgresBin, "initdb"), "/usr/bin/unshare", "/usr/bin/setpriv", filepath.Join(cniBinDir, "bridge"), filepath.Join(cniBinDir, "host-local"), filepath.Join(cniBinDir, "loopback")} {
		if _, err := os.Stat(file); err != nil {
			missing = append(missing, file)
		}
	}
	// Pod traffic on the bridge must pass iptables (br_netfilter, built in
	// or loaded).
	if _, err := os.Stat("/proc/sys/net/bridge/bridge-nf-call-iptables"); err != nil {
		if _, err := exec.LookPath("modprobe"); err != nil {
			missing = append(missing, "br_netfilter (or modprobe to load it)")
		}
	}
	if len(missing) > 0 {
		return "the test cluster's node needs " + strings.Join(missing, ", ") +
			" (Debian packages containerd, runc, containernetworking-plugins, iptables, iproute2, kmod, busybox-static, mmdebstrap, postgresql-15, util-linux)"
	}
	return ""
}

// GetCluster returns the shared test cluster, starting it if no test binary
// of this machine runs one, and attaching to it otherwise. Where the machine
// cannot run a node (see ClusterUnsupported) it skips tb, except under
// CI=true, where it fails. A cluster that cannot start fails tb with the
// end of the failing component's log.
func GetCluster(tb testing.TB) *Cluster {
	tb.Helper()
	if !shared.mainCalled.Load() {
		tb.Fatal("testenv: the package's TestMain must call testenv.Main(m)")
	}
	if reason := ClusterUnsupported(); reason != "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("testenv: %s; CI=true, so this fails instead of skipping", reason)
		}
		tb.Skipf("testenv: %s", reason)
	}
	sharedCluster.once.Do(func() {
		// Not tb's context: the cluster outlives the test that starts it.
		ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
		defer cancel()
		began := time.Now()
		sharedCluster.cluster, sharedCluster.err = attachCluster(ctx)
		if sharedCluster.cluster != nil {
			sharedCluster.cluster.StartupTime = time.Since(began)
		}
	})
	if sharedCluster.err != nil {
		tb.Fatalf("testenv: %v", sharedCluster.err)
	}
	return sharedCluster.cluster
}

// PrepareCluster builds whatever the test cluster needs and the cache
// lacks: the API server's artifacts, the node's binaries, the operators and
// the images (see cmd/prebuild).
func PrepareCluster(ctx context.Context) error {
	l, err := newLayout(ctx)
	if err != nil {
		return err
	}
	c, err := newClusterLayout(l)
	if err != nil {
		return err
	}
	return c.ensure(ctx)
}

// attachCluster finds the running cluster or starts its daemon, and takes a
// shared lock that keeps the daemon up while this process lives.
func attachCluster(ctx context.Context) (*Cluster, error) {
	l, err := newLayout(ctx)
	if err != nil {
		return nil, err
	}
	cl, err := newClusterLayout(l)
	if err != nil {
		return nil, err
	}
	if err := cl.ensure(ctx); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(clusterStateDir, 0o700); err != nil {
		return nil, fmt.Errorf("create cluster state dir: %w", err)
	}
	unlock, err := lockFile(ctx, startLockFile())
	if err != nil {
		return nil, err
	}
	defer unlock()

	state, err := readState()
	began := time.Now()
	fresh := false
	if err != nil || !processAlive(state.PID) {
		if state, err = spawnDaemon(ctx); err != nil {
			return nil, err
		}
		fresh = true
	}
	users, err := os.OpenFile(usersLockFile(), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open cluster users lock: %w", err)
	}
	// The daemon takes this lock exclusively only while it holds the start
	// lock, which this process holds now: the shared lock is immediate.
	if err := syscall.Flock(int(users.Fd()), syscall.LOCK_SH); err != nil {
		users.Close()
		return nil, fmt.Errorf("lock cluster users: %w", err)
	}
	sharedCluster.users = users

	index, err := readIndex(l.artifacts.crdIndex())
	if err != nil {
		return nil, err
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Env: &Env{Scheme: scheme, controllers: true}, Images: state.Images, NodeName: state.NodeName, APIHost: state.APIHost, LogDir: state.LogDir}
	if fresh {
		c.ClusterStartup = state.Startup
	}
	config := &rest.Config{Host: state.Host, BearerToken: state.Token, TLSClientConfig: rest.TLSClientConfig{CAFile: state.CAFile}, QPS: 1000, Burst: 2000}
	if err := c.connect(ctx, config, index); err != nil {
		return nil, fmt.Errorf("attach to the test cluster (daemon pid %d, logs in %s): %w", state.PID, state.LogDir, err)
	}
	if fresh {
		fmt.Fprintf(os.Stderr, "testenv: started the test cluster in %s (logs in %s)\n", time.Since(began).Round(time.Second), state.LogDir)
	}
	return c, nil
}

func readState() (clusterState, error) {
	var s clusterState
	data, err := os.ReadFile(stateFile())
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(data, &s)
}

func processAlive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}

// spawnDaemon starts this test binary again as the cluster's daemon, in a
// session of its own so that it outlives this process, and waits until it
// publishes the cluster or fails.
func spawnDaemon(ctx context.Context) (clusterState, error) {
	_ = os.Remove(stateFile())
	_ = os.Remove(errorFile())
	self, err := os.Executable()
	if err != nil {
		return clusterState{}, fmt.Errorf("start cluster daemon: %w", err)
	}
	logFile, err := os.OpenFile(daemonLog(), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return clusterState{}, fmt.Errorf("start cluster daemon: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), daemonEnv+"=1")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = clusterStateDir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return clusterState{}, fmt.Errorf("start cluster daemon: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ctx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		if state, err := readState(); err == nil && state.PID == cmd.Process.Pid {
			return state, nil
		}
		select {
		case err := <-exited:
			msg, _ := os.ReadFile(errorFile())
			return clusterState{}, fmt.Errorf("the test cluster did not start (%v): %s\n--- last lines of %s ---\n%s", err, msg, daemonLog(), logTail(daemonLog(), 30))
		case <-ctx.Done():
			_ = cmd.Process.Signal(syscall.SIGTERM)
			return clusterState{}, fmt.Errorf("the test cluster did not start in %s: %w\n--- last lines of %s ---\n%s", clusterStartTimeout, ctx.Err(), daemonLog(), logTail(daemonLog(), 30))
		case <-ticker.C:
		}
	}
}

// runDaemonIfAsked runs the cluster daemon and exits when this process was
// started as one (see spawnDaemon). Main calls it first.
func runDaemonIfAsked() {
	if os.Getenv(daemonEnv) != "1" {
		return
	}
	if err := runDaemon(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv cluster daemon:", err)
		_ = os.WriteFile(errorFile(), []byte(err.Error()), 0o600)
		os.Exit(1)
	}
	os.Exit(0)
}

// runDaemon starts the cluster, publishes it, and stops it once no test
// binary has used it for the linger time.
func runDaemon() error {
	linger := defaultLinger
	if v := os.Getenv(lingerEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%s: %w", lingerEnv, err)
		}
		linger = d
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	terminate := make(chan os.Signal, 1)
	signalNotify(terminate)

	began := time.Now()
	n, err := startNode(ctx)
	if err != nil {
		if n != nil {
			n.stop()
		}
		return err
	}
	defer n.stop()
	state := n.state()
	state.PID = os.Getpid()
	state.Startup = time.Since(began)
	data, err := json.Marshal(state)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(stateFile(), data); err != nil {
		return err
	}
	fmt.Printf("cluster up in %s\n", state.Startup.Round(time.Millisecond))

	users, err := os.OpenFile(usersLockFile(), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer users.Close()
	idleSince := time.Now()
	ticker := time.NewTicker(2 * time.Second)
	defer ticker.Stop()
	for {
		select {
		case sig := <-terminate:
			fmt.Println("stopping on", sig)
			_ = os.Remove(stateFile())
			return nil
		case <-ticker.C:
		}
		unlock, err := lockFile(ctx, startLockFile())
		if err != nil {
			return err
		}
		if syscall.Flock(int(users.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = syscall.Flock(int(users.Fd()), syscall.LOCK_UN)
			if time.Since(idleSince) > linger {
				fmt.Printf("no users for %s: stopping\n", linger)
				// Stop while holding the start lock, so that nobody attaches
				// to a cluster going away; the next user starts a new one.
				_ = os.Remove(stateFile())
				n.stop()
				unlock()
				return nil
			}
		} else {
			idleSince = time.Now()
		}
		unlock()
	}
}

// StopCluster stops the test cluster's daemon, if one runs, and waits until
// it has cleaned the machine. Tests never need it (the daemon stops by
// itself once unused); scripts call it to leave nothing running.
func StopCluster(ctx context.Context) error {
	state, err := readState()
	if err != nil || !processAlive(state.PID) {
		return nil
	}
	if err := syscall.Kill(state.PID, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop test cluster (pid %d): %w", state.PID, err)
	}
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	for processAlive(state.PID) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("stop test cluster (pid %d): %w", state.PID, ctx.Err())
		case <-ticker.C:
		}
	}
	return nil
}
