package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// startAttempts bounds the retries when a port picked as free was taken by
// someone else before the process bound it.
const startAttempts = 3

// startUntilBound runs try up to startAttempts times. try starts a process
// on ports it picks and waits for it: an error starting it is returned at
// once; a process that did not become ready (ready != nil) is killed, and
// tried again only when it died because another process took its port
// between picking and binding. It returns the last failure, with the
// process's log.
func startUntilBound(try func(attempt int) (p *process, ready, err error)) error {
	var lastErr error
	for attempt := range startAttempts {
		p, ready, err := try(attempt)
		if err != nil {
			return err
		}
		if ready == nil {
			return nil
		}
		lastErr = p.failure(ready)
		retry := p.bindFailed()
		p.kill()
		if !retry {
			break
		}
	}
	return lastErr
}

// startTimeout bounds the wait for one process to become ready. A cold
// kube-apiserver on two busy cores takes well under a minute.
const startTimeout = 3 * time.Minute

// launcher starts child processes from one OS thread that stays locked
// until the environment stops. Pdeathsig fires when the thread that started
// a child exits, not the process; Go may retire threads, so children started
// from an arbitrary goroutine could be killed in the middle of the tests.
type launcher struct {
	requests chan launchRequest
	stop     chan struct{}
}

type launchRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func newLauncher() *launcher {
	l := &launcher{requests: make(chan launchRequest), stop: make(chan struct{})}
	go func() {
		// Never unlocked: when this goroutine returns, its thread exits and
		// the kernel sends SIGKILL to every child it started.
		runtime.LockOSThread()
		for {
			select {
			case req := <-l.requests:
				req.done <- req.cmd.Start()
			case <-l.stop:
				return
			}
		}
	}()
	return l
}

func (l *launcher) start(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	l.requests <- launchRequest{cmd: cmd, done: done}
	return <-done
}

func (l *launcher) close() { close(l.stop) }

// process is a running child with its output in a log file.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error
}

// startProcess runs bin in its own process group, killed with the test
// binary, with stdout and stderr appended to logPath.
func startProcess(l *launcher, name, bin string, args []string, logPath string) (*process, error) {
	return startProcessEnv(l, name, bin, args, nil, logPath)
}

// startProcessEnv is startProcess with env added to this process's
// environment.
func startProcessEnv(l *launcher, name, bin string, args, env []string, logPath string) (*process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	fmt.Fprintf(logFile, "=== %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := l.start(cmd); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		_ = logFile.Close()
		close(p.exited)
	}()
	return p, nil
}

// kill ends the process group and waits for the process.
func (p *process) kill() {
	if p == nil {
		return
	}
	select {
	case <-p.exited:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
	}
}

// terminate asks the process to shut down cleanly and waits for it, killing
// it if it takes longer than timeout.
func (p *process) terminate(timeout time.Duration) {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.kill()
	}
}

// hasExited reports whether the process has ended.
func (p *process) hasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// failure describes why the process did not come up, with the tail of its
// log.
func (p *process) failure(err error) error {
	state := "running"
	if p.hasExited() {
		state = fmt.Sprintf("exited: %v", p.waitErr)
	}
	return fmt.Errorf("start %s (%s): %w\n--- last lines of %s ---\n%s", p.name, state, err, p.logPath, logTail(p.logPath, 40))
}

// bindFailed reports whether the process died because its port was taken.
func (p *process) bindFailed() bool {
	return p.hasExited() && strings.Contains(logTail(p.logPath, 40), "address already in use")
}

// logTail returns the last n lines of the file at path.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	const maxRead = 64 << 10
	if info, err := f.Stat(); err == nil && info.Size() > maxRead {
		_, _ = f.Seek(-maxRead, io.SeekEnd)
	}
	data, _ := io.ReadAll(f)
	return lastLines(string(data), n)
}

// freePort returns a TCP port that was free a moment ago on every IPv4
// address of the host. The cluster's components listen on the node's
// gateway address, not on loopback: a port asked of loopback alone can be
// one kube-apiserver already holds on the gateway, and a webhook server
// given it then cannot bind while its readiness check reaches the API
// server instead (a cold run saw Katib's webhook calls answered with the
// API server's certificate). A wildcard bind conflicts with a port bound
// on any address, so the kernel picks one free on all of them.
func freePort() (int, error) {
	ln, err := net.Listen("tcp4", "0.0.0.0:0")
	if err != nil {
		return 0, fmt.Errorf("find free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// freePortPair returns two loopback ports that were free a moment ago: a
// component's metrics and health ports.
func freePortPair() (int, int, error) {
	a, err := freePort()
	if err != nil {
		return 0, 0, err
	}
	b, err := freePort()
	return a, b, err
}

// waitUntil polls ready every interval until it returns true, the process
// exits, or ctx ends.
func waitUntil(ctx context.Context, p *process, interval time.Duration, ready func(context.Context) bool) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if ready(ctx) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w", ctx.Err())
		case <-p.exited:
			return errors.New("exited before it was ready")
		case <-ticker.C:
		}
	}
}

// etcdServer is what startEtcd hands back.
type etcdServer struct {
	proc    *process
	url     string // client URL
	dataDir string
}

// startEtcd starts etcd on free loopback ports and waits until it is
// healthy. Its data directory starts as a copy of template, or empty when
// template is "".
func startEtcd(ctx context.Context, l *launcher, bin, dir, template string, extraArgs ...string) (*etcdServer, error) {
	var server *etcdServer
	err := startUntilBound(func(attempt int) (*process, error, error) {
		clientPort, err := freePort()
		if err != nil {
			return nil, nil, err
		}
		peerPort, err := freePort()
		if err != nil {
			return nil, nil, err
		}
		clientURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
		peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
		dataDir := filepath.Join(dir, fmt.Sprintf("etcd-data-%d", attempt))
		if template != "" {
			if err := copyDir(template, dataDir); err != nil {
				return nil, nil, fmt.Errorf("copy etcd template: %w", err)
			}
		}
		args := []string{
			"--name=testenv",
			"--data-dir=" + dataDir,
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=testenv=" + peerURL,
			// Test data is thrown away: skipping fsync makes every write
			// far cheaper.
			"--unsafe-no-fsync=true",
			"--quota-backend-bytes=" + strconv.Itoa(4<<30),
			// Argo's full CRDs are larger than etcd's default 1.5 MiB
			// request limit.
			"--max-request-bytes=" + strconv.Itoa(16<<20),
			"--log-level=warn",
		}
		if template != "" {
			// The copied data remembers the member and peer URL of the
			// etcd that wrote it; this makes it a new one-member cluster
			// on the URLs above.
			args = append(args, "--force-new-cluster=true")
		}
		args = append(args, extraArgs...)
		p, err := startProcess(l, "etcd", bin, args, filepath.Join(dir, "etcd.log"))
		if err != nil {
			return nil, nil, err
		}
		httpClient := &http.Client{Timeout: time.Second}
		err = waitUntil(ctx, p, 50*time.Millisecond, func(ctx context.Context) bool {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientURL+"/health", nil)
			if err != nil {
				return false
			}
			resp, err := httpClient.Do(req)
			if err != nil {
				return false
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusOK && strings.Contains(string(body), `"health":"true"`)
		})
		server = &etcdServer{proc: p, url: clientURL, dataDir: dataDir}
		return p, err, nil
	})
	if err != nil {
		return nil, err
	}
	return server, nil
}

// servers are an etcd and a kube-apiserver that keep their data,
// credentials and logs in dir.
type servers struct {
	dir       string
	launcher  *launcher
	etcd      *etcdServer
	apiServer *process
	config    *rest.Config
	// apiServerArgs, with the binary, are kube-apiserver's command line,
	// so that restartAPIServer starts it again as it was: same port,
	// credentials and certificates.
	apiServerBin  string
	apiServerArgs []string
}

// apiServerOptions are what the test cluster changes in kube-apiserver.
type apiServerOptions struct {
	// address is the bind and advertise address; "" is loopback. Anything
	// else also lets kube-apiserver keep the kubernetes Service's endpoints
	// (a loopback advertise address needs --endpoint-reconciler-type=none).
	address string
	// tokens are extra lines of the token file.
	tokens []string
	// args replace the defaults of the same flag and add others.
	args map[string]string
}

// launchServers starts etcd, on a copy of template unless it is "", and
// kube-apiserver on top of it.
func launchServers(ctx context.Context, art artifacts, dir, template string, opts apiServerOptions, etcdArgs ...string) (_ *servers, err error) {
	s := &servers{dir: dir, launcher: newLauncher()}
	defer func() {
		if err != nil {
			s.kill()
		}
	}()
	if s.etcd, err = startEtcd(ctx, s.launcher, art.etcd, dir, template, etcdArgs...); err != nil {
		return nil, err
	}
	server, err := startAPIServer(ctx, s.launcher, art.kubeAPIServer, dir, s.etcd.url, opts)
	if err != nil {
		return nil, err
	}
	s.apiServer, s.config = server.proc, server.config
	s.apiServerBin, s.apiServerArgs = art.kubeAPIServer, server.args
	return s, nil
}

// stopAPIServer kills kube-apiserver (SIGKILL: a crash, not a clean
// shutdown) and waits for it to exit; etcd keeps running.
func (s *servers) stopAPIServer() { s.apiServer.kill() }

// startAPIServerAgain starts kube-apiserver again with the command line it
// had, on the same port and etcd, and waits for /readyz.
func (s *servers) startAPIServerAgain(ctx context.Context) error {
	if !s.apiServer.hasExited() {
		return errors.New("kube-apiserver is running")
	}
	// The port was this server's a moment ago; another process may bind it
	// in between, and then nothing helps but trying again.
	return startUntilBound(func(int) (*process, error, error) {
		p, err := startProcess(s.launcher, "kube-apiserver", s.apiServerBin, s.apiServerArgs, s.apiServer.logPath)
		if err != nil {
			return nil, nil, err
		}
		s.apiServer = p
		return p, waitAPIServerReady(ctx, p, s.config), nil
	})
}

// kill ends both processes at once.
func (s *servers) kill() {
	if s == nil {
		return
	}
	s.apiServer.kill()
	if s.etcd != nil {
		s.etcd.proc.kill()
	}
	s.launcher.close()
}

// apiServer is what startAPIServer hands back.
type apiServer struct {
	proc   *process
	config *rest.Config
	args   []string
}

// startAPIServer writes the credentials, starts kube-apiserver against
// etcdURL and waits for /readyz.
func startAPIServer(ctx context.Context, l *launcher, bin, dir, etcdURL string, opts apiServerOptions) (*apiServer, error) {
	token, err := randomHex(32)
	if err != nil {
		return nil, err
	}
	tokenFile := filepath.Join(dir, "tokens.csv")
	// token,user,uid,"groups": system:masters is bound to cluster-admin.
	tokens := append([]string{token + `,testenv-admin,testenv-admin,"system:masters"`}, opts.tokens...)
	if err := os.WriteFile(tokenFile, []byte(strings.Join(tokens, "\n")+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("write token file: %w", err)
	}
	keyFile := filepath.Join(dir, "service-account.key")
	if err := writeRSAKey(keyFile); err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "certs")

	var server *apiServer
	err = startUntilBound(func(int) (*process, error, error) {
		port, err := freePort()
		if err != nil {
			return nil, nil, err
		}
		address := opts.address
		if address == "" {
			address = "127.0.0.1"
		}
		defaults := []string{
			"--etcd-servers=" + etcdURL,
			"--cert-dir=" + certDir,
			"--secure-port=" + strconv.Itoa(port),
			"--bind-address=" + address,
			"--advertise-address=" + address,
			"--endpoint-reconciler-type=none",
			"--service-cluster-ip-range=" + serviceCIDR,
			"--service-account-issuer=https://kubernetes.default.svc",
			"--service-account-key-file=" + keyFile,
			"--service-account-signing-key-file=" + keyFile,
			"--token-auth-file=" + tokenFile,
			"--authorization-mode=RBAC",
			"--allow-privileged=true",
			// No controller-manager creates the default service account,
			// so the ServiceAccount plugin would reject every pod.
			// PodSecurity and ResourceQuota stay on.
			"--disable-admission-plugins=ServiceAccount",
			"--profiling=false",
		}
		args := mergeFlags(defaults, opts.args)
		p, err := startProcess(l, "kube-apiserver", bin, args, filepath.Join(dir, "kube-apiserver.log"))
		if err != nil {
			return nil, nil, err
		}
		config := &rest.Config{
			Host:        "https://" + net.JoinHostPort(address, strconv.Itoa(port)),
			BearerToken: token,
			// kube-apiserver writes a self-signed certificate and its CA
			// into --cert-dir before it listens.
			TLSClientConfig: rest.TLSClientConfig{CAFile: filepath.Join(certDir, "apiserver.crt")},
			// Tests create many objects quickly; client-side throttling
			// would only slow them down.
			QPS:   1000,
			Burst: 2000,
		}
		server = &apiServer{proc: p, config: config, args: args}
		return p, waitAPIServerReady(ctx, p, config), nil
	})
	if err != nil {
		return nil, err
	}
	return server, nil
}

// waitAPIServerReady waits until kube-apiserver p answers /readyz.
func waitAPIServerReady(ctx context.Context, p *process, config *rest.Config) error {
	return waitUntil(ctx, p, 100*time.Millisecond, func(ctx context.Context) bool {
		if _, err := os.Stat(config.CAFile); err != nil {
			return false
		}
		clientset, err := kubernetes.NewForConfig(config)
		if err != nil {
			return false
		}
		_, err = clientset.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil
	})
}

// mergeFlags returns defaults (--name=value each) with the flags in
// overrides replacing those of the same name and the rest appended, in
// order; an override of "" drops the flag.
func mergeFlags(defaults []string, overrides map[string]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range defaults {
		name, _, _ := strings.Cut(f, "=")
		if v, ok := overrides[name]; ok {
			seen[name] = true
			if v != "" {
				out = append(out, name+"="+v)
			}
			continue
		}
		out = append(out, f)
	}
	var rest []string
	for name, v := range overrides {
		if !seen[name] && v != "" {
			rest = append(rest, name+"="+v)
		}
	}
	slices.Sort(rest)
	return append(out, rest...)
}

// writeRSAKey writes a fresh RSA private key for signing service account
// tokens.
func writeRSAKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generate service account key: %w", err)
	}
	block := &pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}
	if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
		return fmt.Errorf("write service account key: %w", err)
	}
	return nil
}

func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("read random bytes: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// copyDir copies the regular files and directories under src to dst.
func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o700)
		}
		return copyFile(path, target)
	})
}

// compactEtcd drops all history before the current revision and
// defragments, through etcd's JSON gateway, so that a template holds only
// the live data.
func compactEtcd(ctx context.Context, etcdURL string) error {
	var status struct {
		Header struct {
			Revision json.Number `json:"revision"`
		} `json:"header"`
	}
	// A range over an empty key reads nothing but returns the revision.
	if err := etcdGateway(ctx, etcdURL, "/v3/kv/range", map[string]any{"key": "AA=="}, &status); err != nil {
		return err
	}
	revision := strings.Trim(string(status.Header.Revision), `"`)
	if revision == "" {
		return errors.New("compact etcd: no revision in range response")
	}
	if err := etcdGateway(ctx, etcdURL, "/v3/kv/compaction", map[string]any{"revision": revision, "physical": true}, nil); err != nil {
		return err
	}
	return etcdGateway(ctx, etcdURL, "/v3/maintenance/defragment", map[string]any{}, nil)
}

// etcdGateway posts body as JSON to an etcd gateway path and decodes the
// answer into out unless it is nil.
func etcdGateway(ctx context.Context, etcdURL, path string, body, out any) error {
	payload, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, etcdURL+path, bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("etcd %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s: %s", path, resp.Status, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("etcd %s: %w", path, err)
		}
	}
	return nil
}
