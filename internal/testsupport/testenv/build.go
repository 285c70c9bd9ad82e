package testenv

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/discovery"
)

const (
	kubernetesModule     = "k8s.io/kubernetes"
	etcdModule           = "go.etcd.io/etcd/server/v3"
	volcanoModule        = "volcano.sh/apis"
	controllerGenModule  = "sigs.k8s.io/controller-tools/cmd/controller-gen"
	controllerGenVersion = "v0.23.0"

	// cacheFormat changes whenever what this package puts in the cache
	// changes, so that a new layout is built beside an old one.
	cacheFormat = "3"
)

// crdSource is a directory of CRD manifests inside a Go module.
type crdSource struct {
	name    string // directory name under <cache>/crds
	module  string
	version string
	dir     string // directory inside the module
}

// crdSources are the third-party CRDs installed into every environment.
// Volcano ships no CRD manifests in its Go module; its CRDs are generated
// from volcano.sh/apis by controller-gen (see generateVolcanoCRDs).
var crdSources = []crdSource{
	{"training-operator", "github.com/kubeflow/training-operator", "v1.8.1", "manifests/base/crds"},
	{"katib", "github.com/kubeflow/katib", "v0.19.0", "manifests/v1beta1/components/crd"},
	{"argo-workflows", "github.com/argoproj/argo-workflows/v3", "v3.7.6", "manifests/base/crds/full"},
	{"lws", "sigs.k8s.io/lws", "v0.8.0", "config/crd/bases"},
	{"kuberay", "github.com/ray-project/kuberay/ray-operator", "v1.5.0", "config/crd/bases"},
	{"gateway-api", "sigs.k8s.io/gateway-api", "v1.6.3", "config/crd/standard"},
	// Kueue's bases, without the conversion webhooks of its kustomization:
	// the test API server serves v1beta2, the storage version, to cube
	// without Kueue running; the test cluster adds the webhooks (startKueue).
	{"kueue", "sigs.k8s.io/kueue", "v0.17.0", "config/components/crd/bases"},
}

const volcanoCRDDir = "volcano"

// volcanoPackages are the volcano.sh/apis packages whose CRDs are generated.
var volcanoPackages = []string{
	"volcano.sh/apis/pkg/apis/batch/v1alpha1",
	"volcano.sh/apis/pkg/apis/scheduling/v1beta1",
}

// artifacts are the cached binaries and CRD manifests of one cache key.
type artifacts struct {
	dir           string // <user cache>/cube-testenv/<key>
	kubeAPIServer string
	etcd          string
	controllerGen string
	crds          string // crds/<source>/*.yaml and crds/index.json
	etcdTemplate  string // etcd data with the CRDs installed
}

// crdIndex is the summary of the CRDs that a start waits for.
func (a artifacts) crdIndex() string { return filepath.Join(a.crds, "index.json") }

// layout describes where the sources are and where the build goes.
type layout struct {
	toolsDir          string // the nested tools module
	mainDir           string // the root of the main module
	goCmd             string
	kubernetesVersion string
	etcdVersion       string
	volcanoVersion    string
	artifacts         artifacts
}

// sourceDir returns the directory of this package's source. It comes from
// the compiled-in file name, so it works from any package's test binary,
// in cube and in a module that requires cube (the module cache); a binary
// built with -trimpath has no such path, and then the go command lists the
// package from the working directory, which go test sets to the package
// being tested.
func sourceDir(ctx context.Context, goCmd string) (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		dir := filepath.Dir(file)
		if _, err := os.Stat(filepath.Join(dir, "toolsmod")); err == nil {
			return dir, nil
		}
	}
	cmd := exec.CommandContext(ctx, goCmd, "list", "-f", "{{.Dir}}", thisPackage)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("find %s (built with -trimpath, and the go command cannot list it from here): %w", thisPackage, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// thisPackage is this package's import path.
const thisPackage = "github.com/cubestudio/cube/internal/testsupport/testenv"

// goCommand returns the go command of the toolchain that built this binary,
// falling back to the one on PATH.
func goCommand() (string, error) {
	// runtime.GOROOT is deprecated for finding a toolchain in general, but
	// here the toolchain that built the test binary is exactly the one wanted.
	if root := runtime.GOROOT(); root != "" {
		candidate := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(candidate); err == nil {
			return candidate, nil
		}
	}
	path, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("find go command: %w", err)
	}
	return path, nil
}

// newLayout reads the versions and computes the cache key.
func newLayout(ctx context.Context) (*layout, error) {
	goCmd, err := goCommand()
	if err != nil {
		return nil, err
	}
	src, err := sourceDir(ctx, goCmd)
	if err != nil {
		return nil, err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, fmt.Errorf("find user cache dir: %w", err)
	}
	l := &layout{
		toolsDir: filepath.Join(src, "tools"),
		mainDir:  filepath.Dir(filepath.Dir(filepath.Dir(src))),
		goCmd:    goCmd,
	}
	if _, err := os.Stat(filepath.Join(l.toolsDir, "go.mod")); err != nil {
		// cube is a dependency in the module cache, whose zip has no
		// nested modules: build from the snapshot of tools/.
		if l.toolsDir, err = materializeTools(cache); err != nil {
			return nil, err
		}
	}
	toolsMod, err := os.ReadFile(filepath.Join(l.toolsDir, "go.mod"))
	if err != nil {
		return nil, fmt.Errorf("read tools module: %w", err)
	}
	if l.kubernetesVersion, err = requiredVersion(toolsMod, kubernetesModule); err != nil {
		return nil, fmt.Errorf("read tools module: %w", err)
	}
	if l.etcdVersion, err = requiredVersion(toolsMod, etcdModule); err != nil {
		return nil, fmt.Errorf("read tools module: %w", err)
	}
	mainMod, err := os.ReadFile(filepath.Join(l.mainDir, "go.mod"))
	if err != nil {
		return nil, fmt.Errorf("read main module: %w", err)
	}
	if l.volcanoVersion, err = requiredVersion(mainMod, volcanoModule); err != nil {
		return nil, fmt.Errorf("read main module: %w", err)
	}
	toolsSum, err := os.ReadFile(filepath.Join(l.toolsDir, "go.sum"))
	if err != nil {
		return nil, fmt.Errorf("read tools module: %w", err)
	}

	// The key names the two versions that matter most and hashes everything
	// else an artifact depends on, so that changing any of it builds afresh
	// next to the old build instead of reusing a stale one.
	// The binaries have a key of their own, which the CRD sources are not
	// part of: a CRD added or moved to another version rebuilds the CRDs and
	// the etcd template (minutes) but not kube-apiserver and etcd (tens of
	// minutes on a busy machine).
	bins := sha256.New()
	bins.Write(toolsSum)
	fmt.Fprintf(bins, "\nformat %s\ncontroller-gen %s\n", cacheFormat, controllerGenVersion)
	h := sha256.New()
	h.Write(bins.Sum(nil))
	fmt.Fprintf(h, "\nvolcano %s\n", l.volcanoVersion)
	for _, s := range crdSources {
		fmt.Fprintf(h, "crd %s %s@%s/%s\n", s.name, s.module, s.version, s.dir)
	}
	versions := fmt.Sprintf("kubernetes-%s-etcd-%s", l.kubernetesVersion, l.etcdVersion)
	key := versions + "-" + hex.EncodeToString(h.Sum(nil))[:12]
	bin := filepath.Join(cache, "cube-testenv", "bin-"+versions+"-"+hex.EncodeToString(bins.Sum(nil))[:12])

	dir := filepath.Join(cache, "cube-testenv", key)
	l.artifacts = artifacts{
		dir:           dir,
		kubeAPIServer: filepath.Join(bin, "kube-apiserver"),
		etcd:          filepath.Join(bin, "etcd"),
		controllerGen: filepath.Join(bin, "controller-gen"),
		crds:          filepath.Join(dir, "crds"),
		etcdTemplate:  filepath.Join(dir, "etcd-template"),
	}
	return l, nil
}

// requiredVersion finds the version of module in the require directives of a
// go.mod file.
func requiredVersion(gomod []byte, module string) (string, error) {
	scanner := bufio.NewScanner(bytes.NewReader(gomod))
	inRequire := false
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		switch {
		case len(fields) == 0:
			continue
		case fields[0] == "require" && len(fields) >= 2 && fields[1] == "(":
			inRequire = true
			continue
		case inRequire && fields[0] == ")":
			inRequire = false
			continue
		case fields[0] == "require":
			fields = fields[1:]
		case !inRequire:
			continue
		}
		if len(fields) >= 2 && fields[0] == module {
			return fields[1], nil
		}
	}
	return "", fmt.Errorf("%s is not required", module)
}

// missing lists the artifacts not yet in the cache.
func (a artifacts) missing() []string {
	var out []string
	for _, p := range []string{a.kubeAPIServer, a.etcd, a.controllerGen, a.crds, a.etcdTemplate} {
		if _, err := os.Stat(p); err != nil {
			out = append(out, filepath.Base(p))
		}
	}
	return out
}

// ensure builds whatever is missing from the cache. A file lock keeps
// parallel test binaries (go test ./... runs packages in parallel) from
// building twice: the first one builds, the others wait and then find
// everything in place.
func (l *layout) ensure(ctx context.Context) error {
	if len(l.artifacts.missing()) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(l.artifacts.kubeAPIServer), 0o755); err != nil {
		return fmt.Errorf("create cache dir: %w", err)
	}
	if err := os.MkdirAll(l.artifacts.dir, 0o755); err != nil {
		return fmt.Errorf("create cache dir: %w", err)
	}
	unlock, err := lockFile(ctx, l.artifacts.dir+".lock")
	if err != nil {
		return err
	}
	defer unlock()

	missing := l.artifacts.missing()
	if len(missing) == 0 {
		return nil // another test binary built it while this one waited
	}
	fmt.Fprintf(os.Stderr, "testenv: building %s (kubernetes %s, etcd %s) into %s; the first build on a machine takes 8-10 minutes on 2 idle cores and 20 or more on a busy machine (run go run github.com/cubestudio/cube/cubetest/envtest/cmd/prebuild first, or go test -timeout 45m); later starts take seconds\n",
		strings.Join(missing, ", "), l.kubernetesVersion, l.etcdVersion, l.artifacts.dir)

	if _, err := os.Stat(l.artifacts.etcd); err != nil {
		if err := l.buildBinary(ctx, l.artifacts.etcd, "./cmd/etcd", ""); err != nil {
			return err
		}
	}
	if _, err := os.Stat(l.artifacts.kubeAPIServer); err != nil {
		if err := l.buildBinary(ctx, l.artifacts.kubeAPIServer, kubernetesModule+"/cmd/kube-apiserver", l.versionLDFlags()); err != nil {
			return err
		}
	}
	if _, err := os.Stat(l.artifacts.controllerGen); err != nil {
		if err := l.installControllerGen(ctx); err != nil {
			return err
		}
	}
	if _, err := os.Stat(l.artifacts.crds); err != nil {
		if err := l.collectCRDs(ctx); err != nil {
			return err
		}
	}
	if _, err := os.Stat(l.artifacts.etcdTemplate); err != nil {
		if err := l.buildEtcdTemplate(ctx); err != nil {
			return err
		}
	}
	return nil
}

// buildEtcdTemplate installs the CRDs into a fresh etcd and keeps its data
// as the starting point of every environment. Installing ~40 CRDs, some of
// them megabytes of schema, costs the API server about a minute of CPU (far
// more on a busy machine); starting from the template costs nothing of the
// kind, and the start still checks that every CRD is served.
func (l *layout) buildEtcdTemplate(ctx context.Context) error {
	crds, err := loadCRDs(l.artifacts.crds)
	if err != nil {
		return fmt.Errorf("build etcd template: %w", err)
	}
	tmp, err := os.MkdirTemp(l.artifacts.dir, ".etcd-template-")
	if err != nil {
		return fmt.Errorf("build etcd template: %w", err)
	}
	defer os.RemoveAll(tmp)
	srv, err := launchServers(ctx, l.artifacts, tmp, "", apiServerOptions{})
	if err != nil {
		return fmt.Errorf("build etcd template: %w", err)
	}
	defer srv.kill()

	c, err := newCRDClient(srv.config)
	if err != nil {
		return fmt.Errorf("build etcd template: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(srv.config)
	if err != nil {
		return fmt.Errorf("build etcd template: %w", err)
	}
	if err := installCRDs(ctx, c, disc, crds); err != nil {
		return fmt.Errorf("build etcd template: %w", srv.apiServer.failure(err))
	}
	// Stop the API server first so that nothing writes while etcd compacts
	// and shuts down cleanly.
	srv.apiServer.kill()
	if err := compactEtcd(ctx, srv.etcd.url); err != nil {
		return fmt.Errorf("build etcd template: %w", err)
	}
	srv.etcd.proc.terminate(time.Minute)
	if err := os.Rename(srv.etcd.dataDir, l.artifacts.etcdTemplate); err != nil {
		return fmt.Errorf("build etcd template: %w", err)
	}
	return nil
}

// lockFile takes an exclusive flock on path, waiting for it while ctx
// allows. The lock goes with the process, so a killed build never leaves a
// stale lock behind.
func lockFile(ctx context.Context, path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, fmt.Errorf("wait for build lock %s: %w", path, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// versionLDFlags stamps the Kubernetes version into kube-apiserver, as the
// release build does, so that /version reports it.
func (l *layout) versionLDFlags() string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(l.kubernetesVersion, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	const pkg = "k8s.io/component-base/version"
	return fmt.Sprintf("-X %[1]s.gitVersion=%[2]s -X %[1]s.gitMajor=%[3]s -X %[1]s.gitMinor=%[4]s -X %[1]s.gitTreeState=clean",
		pkg, l.kubernetesVersion, major, minor)
}

// goEnv is the environment for go commands: the caller's, with GOFLAGS and
// GOWORK set so that a -mod flag or a workspace of the caller cannot change
// what is built.
func goEnv(goflags string, extra ...string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOFLAGS=") || strings.HasPrefix(kv, "GOWORK=")
	})
	return append(append(env, "GOFLAGS="+goflags, "GOWORK=off"), extra...)
}

// runGo runs the go command in dir and returns its standard output; a
// failure carries the end of its standard error.
func (l *layout) runGo(ctx context.Context, dir string, env []string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, l.goCmd, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, lastLines(stderr.String(), 30))
	}
	return stdout.Bytes(), nil
}

// timed runs one step of a cold build and says on standard error how long
// it took, so that a first run shows where its minutes go.
func timed(what string, step func() error) error {
	start := time.Now()
	err := step()
	if err == nil {
		fmt.Fprintf(os.Stderr, "testenv: built %s in %s\n", what, time.Since(start).Round(time.Second))
	}
	return err
}

// buildBinary builds pkg of the tools module to dst, through a temporary
// name so that dst appears complete or not at all, linked without symbol
// table and DWARF (stripFlags). The compile flags stay the default, so
// that kube-apiserver shares its compiled packages with the node's
// programs and the tests.
func (l *layout) buildBinary(ctx context.Context, dst, pkg, ldflags string) error {
	tmp := fmt.Sprintf("%s.tmp-%d", dst, os.Getpid())
	defer os.Remove(tmp)
	args := []string{"build", "-o", tmp, "-ldflags=" + strings.TrimSpace(stripFlags+" "+ldflags), pkg}
	if err := timed(filepath.Base(dst), func() error {
		_, err := l.runGo(ctx, l.toolsDir, goEnv("-mod=readonly -buildvcs=false"), args...)
		return err
	}); err != nil {
		return fmt.Errorf("build %s: %w", filepath.Base(dst), err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("build %s: %w", filepath.Base(dst), err)
	}
	return nil
}

// installControllerGen installs controller-gen into a temporary GOBIN and
// moves it into the cache.
func (l *layout) installControllerGen(ctx context.Context) error {
	tmp, err := os.MkdirTemp(filepath.Dir(l.artifacts.controllerGen), ".controller-gen-")
	if err != nil {
		return fmt.Errorf("install controller-gen: %w", err)
	}
	defer os.RemoveAll(tmp)
	if _, err := l.runGo(ctx, tmp, goEnv("-buildvcs=false", "GOBIN="+tmp), "install", "-ldflags="+stripFlags, controllerGenModule+"@"+controllerGenVersion); err != nil {
		return fmt.Errorf("install controller-gen: %w", err)
	}
	if err := os.Rename(filepath.Join(tmp, "controller-gen"), l.artifacts.controllerGen); err != nil {
		return fmt.Errorf("install controller-gen: %w", err)
	}
	return nil
}

// collectCRDs copies the CRD manifests out of their Go modules and
// generates Volcano's, all into a temporary directory that is then renamed
// to crds.
func (l *layout) collectCRDs(ctx context.Context) error {
	tmp, err := os.MkdirTemp(l.artifacts.dir, ".crds-")
	if err != nil {
		return fmt.Errorf("collect crds: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, s := range crdSources {
		moduleDir, err := l.downloadModule(ctx, s.module, s.version)
		if err != nil {
			return fmt.Errorf("collect crds: %w", err)
		}
		if err := copyManifests(filepath.Join(moduleDir, s.dir), filepath.Join(tmp, s.name)); err != nil {
			return fmt.Errorf("collect crds of %s@%s: %w", s.module, s.version, err)
		}
	}
	if err := l.generateVolcanoCRDs(ctx, filepath.Join(tmp, volcanoCRDDir)); err != nil {
		return fmt.Errorf("collect crds: %w", err)
	}
	// Parsing the YAML takes seconds; starts read the small index instead.
	crds, err := loadCRDs(tmp)
	if err != nil {
		return fmt.Errorf("collect crds: %w", err)
	}
	if err := writeIndex(filepath.Join(tmp, "index.json"), crds); err != nil {
		return fmt.Errorf("collect crds: %w", err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // MkdirTemp made it private
		return fmt.Errorf("collect crds: %w", err)
	}
	if err := os.Rename(tmp, l.artifacts.crds); err != nil {
		return fmt.Errorf("collect crds: %w", err)
	}
	return nil
}

// downloadModule fetches module@version into the module cache and returns
// its directory. It runs outside any module so that no go.mod is touched.
func (l *layout) downloadModule(ctx context.Context, module, version string) (string, error) {
	tmp, err := os.MkdirTemp("", "cube-testenv-download-")
	if err != nil {
		return "", fmt.Errorf("download %s@%s: %w", module, version, err)
	}
	defer os.RemoveAll(tmp)
	out, err := l.runGo(ctx, tmp, goEnv("-mod=mod"), "mod", "download", "-json", module+"@"+version)
	if err != nil {
		return "", fmt.Errorf("download %s@%s: %w", module, version, err)
	}
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("download %s@%s: %w", module, version, err)
	}
	if info.Error != "" || info.Dir == "" {
		return "", fmt.Errorf("download %s@%s: %s", module, version, info.Error)
	}
	return info.Dir, nil
}

// copyManifests copies the YAML files of src, except kustomization files,
// into dst. Files that hold no CRD (Gateway API ships an admission policy
// beside its CRDs) are skipped when the manifests are read.
func copyManifests(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	copied := 0
	for _, e := range entries {
		name := e.Name()
		ext := filepath.Ext(name)
		if e.IsDir() || (ext != ".yaml" && ext != ".yml") || strings.HasPrefix(name, "kustomization.") {
			continue
		}
		if err := copyFile(filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			return err
		}
		copied++
	}
	if copied == 0 {
		return fmt.Errorf("no manifests in %s", src)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	// Module cache files are read-only; the copy must not be, so that the
	// cache can be deleted with plain rm -r.
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// generateVolcanoCRDs runs controller-gen on volcano.sh/apis as the main
// module requires it. -mod=readonly keeps it from editing the main module's
// go.mod and go.sum.
func (l *layout) generateVolcanoCRDs(ctx context.Context, dst string) error {
	// The flags of Volcano's own Makefile: without
	// generateEmbeddedObjectMeta the API server prunes the labels and
	// annotations of task pod templates.
	args := []string{"crd:crdVersions=v1,generateEmbeddedObjectMeta=true"}
	for _, p := range volcanoPackages {
		args = append(args, "paths="+p)
	}
	args = append(args, "output:crd:dir="+dst)
	cmd := exec.CommandContext(ctx, l.artifacts.controllerGen, args...)
	cmd.Dir = l.mainDir
	// controller-gen loads packages with the go command found on PATH; put
	// this toolchain's first.
	cmd.Env = goEnv("-mod=readonly", "PATH="+filepath.Dir(l.goCmd)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("generate volcano crds: %w\n%s", err, lastLines(string(out), 30))
	}
	entries, err := os.ReadDir(dst)
	if err != nil || len(entries) == 0 {
		return fmt.Errorf("generate volcano crds: no output in %s", dst)
	}
	return nil
}

// lastLines returns at most n trailing lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
