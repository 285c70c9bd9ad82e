package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// clusterTool is one program of the test cluster, built from the Go
// module proxy or from this module.
type clusterTool struct {
	name string
	// module is where it is built: a directory under tools (".", the
	// node's module next to kube-apiserver; "argo"; "lws"; "kueue"; "kubectl";
	// "coredns"),
	// "main" for this module's own programs (they go into images), or ""
	// for go install pkg@version with the project's own go.mod (none of
	// those has a replace directive).
	module  string
	pkg     string
	version string // for go install
	// static: built with cgo off, for an image (no C library there), or
	// to share the compiled packages of its module's static tools.
	static bool
	stamp  bool // the Kubernetes version in k8s.io/component-base/version
	// links are files that are symbolic links in the upstream repository.
	// Module zips leave symbolic links out, so a package that needs one
	// does not build from the module proxy's copy; the build restores them
	// in a copy of the module (see restoreLinks).
	links []upstreamLink
	// sources are further directories of the main module whose code a
	// main-module program runs, hashed into the images key with the
	// program's own directory so that a change there rebuilds its image.
	sources []string
}

// upstreamLink is a symbolic link of an upstream repository.
type upstreamLink struct {
	module string // module path
	path   string // the link, relative to the module's root
	target string // what it points at, relative to the link's directory
}

// clusterTools are the node's commands, the operators and the programs
// that go into images. Argo, LWS and CoreDNS are built in modules of their
// own: Argo's go.mod has a replace directive, which go install refuses, go
// install of LWS checks its deprecation through a version list the module
// proxy here refuses, and CoreDNS is built with only the plugins the node
// uses. Tools of one module with the same flags build one
// after another, so that the later ones find the module's packages
// compiled; the batches of different modules build side by side (see
// ensure), the heaviest declared first.
var clusterTools = []clusterTool{
	// Argo's two: the executor goes into an image, so both are static and
	// the controller shares the executor's compiled packages.
	{name: "workflow-controller", module: "argo", pkg: "github.com/argoproj/argo-workflows/v3/cmd/workflow-controller", static: true,
		links: argoLinks},
	{name: "argoexec", module: "argo", pkg: "github.com/argoproj/argo-workflows/v3/cmd/argoexec", static: true, links: argoLinks},
	// Kueue's manager, in a module of its own with the Kubernetes
	// libraries of Kueue's go.mod (see startKueue).
	{name: "kueue-manager", module: "kueue", pkg: "sigs.k8s.io/kueue/cmd/kueue"},
	// Katib v0.19.0 (its go.mod has no replace directive): the controller
	// and db-manager run on the host; the goptuna suggestion service
	// (random, tpe, cmaes, sobol) and the file metrics collector go into
	// images. All four are static, so that they share one build of
	// Katib's packages.
	{name: "katib-controller", pkg: "github.com/kubeflow/katib/cmd/katib-controller/v1beta1", version: "v0.19.0", static: true},
	{name: "katib-db-manager", pkg: "github.com/kubeflow/katib/cmd/db-manager/v1beta1", version: "v0.19.0", static: true},
	{name: "katib-suggestion-goptuna", pkg: "github.com/kubeflow/katib/cmd/suggestion/goptuna/v1beta1", version: "v0.19.0", static: true},
	{name: "katib-file-metricscollector", pkg: "github.com/kubeflow/katib/cmd/metricscollector/v1beta1/file-metricscollector", version: "v0.19.0", static: true},
	{name: "kuberay-operator", pkg: "github.com/ray-project/kuberay/ray-operator", version: "v1.5.0"},
	{name: "training-operator", pkg: "github.com/kubeflow/training-operator/cmd/training-operator.v1", version: "v1.8.1"},
	{name: "lws-controller", module: "lws", pkg: "sigs.k8s.io/lws/cmd"},
	// CoreDNS v1.12.1 with the six plugins the node's Corefile uses, in a
	// module of its own (tools/coredns): go install of the release builds
	// all seventy, the clouds' SDKs among them.
	{name: "coredns", module: "coredns", pkg: "."},
	// The node's four share the packages kube-apiserver compiled (the same
	// module, with cgo as it was built).
	{name: "kubelet", module: ".", pkg: "k8s.io/kubernetes/cmd/kubelet", stamp: true},
	{name: "kube-controller-manager", module: ".", pkg: "k8s.io/kubernetes/cmd/kube-controller-manager", stamp: true},
	{name: "kube-scheduler", module: ".", pkg: "k8s.io/kubernetes/cmd/kube-scheduler", stamp: true},
	{name: "kube-proxy", module: ".", pkg: "k8s.io/kubernetes/cmd/kube-proxy", stamp: true},
	{name: "kubectl", module: "kubectl", pkg: ".", static: true, stamp: true},
	// The stand-in serves package servetest's API, so its source is part
	// of the image key.
	{name: "standin-engine", module: "main", pkg: "./internal/testsupport/testenv/cmd/standin-engine", static: true, sources: []string{"serve/servetest"}},
	{name: "kubectl-delivery", module: "main", pkg: "./internal/testsupport/testenv/cmd/kubectl-delivery", static: true},
	{name: "pause", module: "main", pkg: "./internal/testsupport/testenv/cmd/pause", static: true},
	{name: "nslookup", module: "main", pkg: "./internal/testsupport/testenv/cmd/nslookup", static: true},
	// cube's own ML backend for Label Studio: what it serves is package
	// label's Backend asking a model through inference.Client.
	{name: "label-mlbackend", module: "main", pkg: "./label/labeltest/cmd/mlbackend", static: true, sources: []string{"label", "inference", "datasets", "retry"}},
}

// argoLinks: in argo-workflows v3.7.6,
// workflow/executor/osspecific/signal_linux.go is a symbolic link to
// signal_darwin.go (Setpgid, Kill, Term); without it argoexec does not
// build for Linux. Both Argo tools build in the copy that restores it, so
// that they share one build of Argo's packages.
var argoLinks = []upstreamLink{{module: "github.com/argoproj/argo-workflows/v3", path: "workflow/executor/osspecific/signal_linux.go", target: "signal_darwin.go"}}

// clusterFormat changes whenever what the cluster build puts in its cache
// changes.
const clusterFormat = "4"

// clusterArtifacts are the cached binaries and images of the test cluster.
type clusterArtifacts struct {
	dir    string            // <user cache>/cube-testcluster/kubernetes-<version>
	paths  map[string]string // tool name → binary
	images string            // OCI image archives, and this module's programs
}

// clusterLayout extends the API server's layout with the cluster's sources.
type clusterLayout struct {
	*layout
	artifacts clusterArtifacts
}

// binary returns the cached path of a cluster tool.
func (c *clusterLayout) binary(name string) string { return c.artifacts.paths[name] }

// newClusterLayout computes where every tool and image is cached. Each
// binary's name carries a hash of what it is built from (its module's
// go.sum, or its version), so that changing one module rebuilds only its
// binaries; the images, and this module's programs that go into them, share
// a directory keyed by those programs, go.sum and the recipes.
func newClusterLayout(l *layout) (*clusterLayout, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, fmt.Errorf("find user cache dir: %w", err)
	}
	dir := filepath.Join(cache, "cube-testcluster", "kubernetes-"+l.kubernetesVersion)
	c := &clusterLayout{layout: l, artifacts: clusterArtifacts{dir: dir, paths: map[string]string{}}}
	images := sha256.New()
	fmt.Fprintf(images, "format %s\n", clusterFormat)
	for _, t := range clusterTools {
		h := sha256.New()
		fmt.Fprintf(h, "format %s\n%s %s %s %v %v\n", clusterFormat, t.module, t.pkg, t.version, t.static, t.stamp)
		for _, l := range t.links {
			fmt.Fprintf(h, "link %s %s %s\n", l.module, l.path, l.target)
		}
		switch t.module {
		case "":
		case "main":
			for _, dir := range append([]string{t.pkg}, t.sources...) {
				if err := hashTree(images, filepath.Join(l.mainDir, dir)); err != nil {
					return nil, fmt.Errorf("cluster cache key: %w", err)
				}
			}
			c.artifacts.paths[t.name] = "" // set below, once the images key is known
			continue
		default:
			sum, err := os.ReadFile(filepath.Join(c.moduleDir(t.module), "go.sum"))
			if err != nil {
				return nil, fmt.Errorf("cluster cache key: %w", err)
			}
			h.Write(sum)
			if t.pkg == "." {
				// The program is the module's own (kubectl, CoreDNS):
				// its source is part of what it is built from.
				if err := hashTree(h, c.moduleDir(t.module)); err != nil {
					return nil, fmt.Errorf("cluster cache key: %w", err)
				}
			}
		}
		c.artifacts.paths[t.name] = filepath.Join(dir, "bin", t.name+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	}
	for _, f := range []string{filepath.Join(l.mainDir, "internal", "testsupport", "testenv", "images.go"), filepath.Join(l.mainDir, "go.sum")} {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("cluster cache key: %w", err)
		}
		images.Write(data)
	}
	c.artifacts.images = filepath.Join(dir, "images-"+hex.EncodeToString(images.Sum(nil))[:12])
	for _, t := range clusterTools {
		if t.module == "main" {
			c.artifacts.paths[t.name] = filepath.Join(c.artifacts.images, "programs", t.name)
		}
	}
	return c, nil
}

// moduleDir is the directory of a tool's module.
func (c *clusterLayout) moduleDir(module string) string {
	switch module {
	case "main":
		return c.mainDir
	case ".":
		return c.toolsDir
	default:
		return filepath.Join(c.toolsDir, module)
	}
}

// hashTree hashes the names and contents of the files under dir, in order,
// tests aside.
func hashTree(h interface{ Write([]byte) (int, error) }, dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, "_test.go") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fmt.Fprintf(h, "file %s %d\n", rel, len(data))
		_, err = h.Write(data)
		return err
	})
}

// missingBinaries lists the cluster tools not yet in the cache.
func (c *clusterLayout) missingBinaries() []string {
	var out []string
	for _, t := range clusterTools {
		if !exists(c.binary(t.name)) {
			out = append(out, t.name)
		}
	}
	return out
}

// ensure builds what the cluster's cache lacks: the API server's artifacts,
// the node's binaries, the operators and the images, under one file lock.
// The batches of tools (see toolBatches) and the images that depend on no
// tool build side by side, buildParallelism at a time, beside the API
// server's artifacts: on 2 cores one go command leaves a core idle while it
// downloads modules, loads packages and links, installing the CRDs into the
// etcd template mostly waits on the API server, and mmdebstrap mostly
// waits for the Debian mirror. Only the node's programs wait for
// kube-apiserver, whose compiled packages they share.
func (c *clusterLayout) ensure(ctx context.Context) error {
	if len(c.missingBinaries()) == 0 && len(c.missingImages()) == 0 {
		return c.layout.ensure(ctx)
	}
	for _, d := range []string{filepath.Join(c.artifacts.dir, "bin"), filepath.Join(c.artifacts.images, "programs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create cluster cache: %w", err)
		}
	}
	unlock, err := lockFile(ctx, c.artifacts.dir+".lock")
	if err != nil {
		return err
	}
	defer unlock()
	missing := c.missingBinaries()
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "testenv: building the test cluster's %s into %s; on a machine's first run this takes 50 to 60 minutes on 2 cores, the test API server's included (run go run ./internal/testsupport/testenv/cmd/prebuild first)\n",
			strings.Join(missing, ", "), c.artifacts.dir)
	}
	var node []clusterTool
	jobs := []func(context.Context) error{nil, c.buildMachineImages}
	for _, batch := range toolBatches(missing) {
		if batch[0].module == "." {
			node = batch
			continue
		}
		jobs = append(jobs, func(ctx context.Context) error { return c.buildBatch(ctx, batch) })
	}
	jobs[0] = func(ctx context.Context) error {
		if err := c.layout.ensure(ctx); err != nil || node == nil {
			return err
		}
		return c.buildBatch(ctx, node)
	}
	if err := runJobs(ctx, buildParallelism(), jobs); err != nil {
		return err
	}
	return c.buildImages(ctx)
}

// buildParallelism is how many builds run at once: half the cores, and
// at least two.
func buildParallelism() int { return max(2, runtime.NumCPU()/2) }

// toolBatches groups the named tools, in clusterTools' order, into batches
// of one module at one version built with the same flags.
func toolBatches(names []string) [][]clusterTool {
	var batches [][]clusterTool
	index := map[string]int{}
	for _, t := range clusterTools {
		if !slices.Contains(names, t.name) {
			continue
		}
		key := fmt.Sprintf("%s %s %s %v %v %v", t.module, t.version, installRoot(t), t.static, t.stamp, t.links)
		i, ok := index[key]
		if !ok {
			i = len(batches)
			index[key] = i
			batches = append(batches, nil)
		}
		batches[i] = append(batches[i], t)
	}
	return batches
}

// installRoot is the repository of a tool built with go install
// pkg@version: its package path up to the repository's name.
func installRoot(t clusterTool) string {
	if t.module != "" {
		return ""
	}
	parts := strings.SplitN(t.pkg, "/", 4)
	return strings.Join(parts[:min(3, len(parts))], "/")
}

// runJobs runs jobs, n at a time, until all have finished or one has
// failed; a failure cancels the others, and every failure is returned.
func runJobs(ctx context.Context, n int, jobs []func(context.Context) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	queue := make(chan func(context.Context) error, len(jobs))
	for _, j := range jobs {
		queue <- j
	}
	close(queue)
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for range min(n, len(jobs)) {
		wg.Go(func() {
			for job := range queue {
				if ctx.Err() != nil {
					return
				}
				if err := job(ctx); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					cancel()
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// buildBatch builds the tools of one batch, one after another.
func (c *clusterLayout) buildBatch(ctx context.Context, batch []clusterTool) error {
	first := batch[0]
	if first.module == "" {
		for _, t := range batch {
			if err := c.install(ctx, c.binary(t.name), t.pkg, t.version, t.static); err != nil {
				return err
			}
		}
		return nil
	}
	ldflags := ""
	if first.stamp {
		ldflags = c.versionLDFlags()
	}
	dir := c.moduleDir(first.module)
	if len(first.links) > 0 {
		var (
			cleanup func()
			err     error
		)
		if dir, cleanup, err = c.restoreLinks(ctx, dir, first.links); err != nil {
			return fmt.Errorf("build %s: %w", first.name, err)
		}
		defer cleanup()
	}
	for _, t := range batch {
		if err := c.buildIn(ctx, dir, c.binary(t.name), t.pkg, ldflags, t.static); err != nil {
			return err
		}
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// stripFlags link the test API server's and the cluster's programs
// without their symbol table and DWARF (go tool link -s -w, as Kubernetes'
// release builds do): nobody debugs them, a panic still prints its stack
// (from the pclntab), and on a cold machine the links of some twenty
// large programs cost minutes of the build.
const stripFlags = "-s -w"

// noDWARF compiles a program's packages without DWARF (go tool compile
// -dwarf=false): some tenth less compiler work for the operators, whose
// packages (at their own Kubernetes versions, or without cgo) nothing
// else shares. The node's programs of module "." keep the default, so
// that they share the packages kube-apiserver and the tests compiled.
const noDWARF = "-gcflags=all=-dwarf=false"

// buildIn builds pkg in the module at dir to dst through a temporary name.
// Static binaries (for images, which have no C library) are built with cgo
// off.
func (c *clusterLayout) buildIn(ctx context.Context, dir, dst, pkg, ldflags string, static bool) error {
	tmp := fmt.Sprintf("%s.tmp-%d", dst, os.Getpid())
	defer os.Remove(tmp)
	args := []string{"build", "-o", tmp, "-ldflags=" + strings.TrimSpace(stripFlags+" "+ldflags)}
	if dir != c.moduleDir(".") {
		args = append(args, noDWARF)
	}
	args = append(args, pkg)
	var extra []string
	if static {
		extra = append(extra, "CGO_ENABLED=0")
	}
	if err := timed(filepath.Base(dst), func() error {
		_, err := c.runGo(ctx, dir, goEnv("-mod=readonly -buildvcs=false", extra...), args...)
		return err
	}); err != nil {
		return fmt.Errorf("build %s: %w", filepath.Base(dst), err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("build %s: %w", filepath.Base(dst), err)
	}
	return nil
}

// install runs go install pkg@version into a temporary GOBIN and moves the
// one binary it makes to dst.
func (c *clusterLayout) install(ctx context.Context, dst, pkg, version string, static bool) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".install-")
	if err != nil {
		return fmt.Errorf("install %s: %w", pkg, err)
	}
	defer os.RemoveAll(tmp)
	extra := []string{"GOBIN=" + tmp}
	if static {
		extra = append(extra, "CGO_ENABLED=0")
	}
	if err := timed(filepath.Base(dst), func() error {
		_, err := c.runGo(ctx, tmp, goEnv("-buildvcs=false", extra...), "install", "-ldflags="+stripFlags, noDWARF, pkg+"@"+version)
		return err
	}); err != nil {
		return fmt.Errorf("install %s: %w", pkg, err)
	}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return fmt.Errorf("install %s: %w", pkg, err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 {
		return fmt.Errorf("install %s: expected one binary, got %v", pkg, slices.Sorted(slices.Values(names)))
	}
	if err := os.Rename(filepath.Join(tmp, names[0]), dst); err != nil {
		return fmt.Errorf("install %s: %w", pkg, err)
	}
	return nil
}

// restoreLinks makes a copy of the tools module at dir whose go.mod replaces
// each linked module with a copy of it from the module cache in which the
// links are restored. It returns the copy's directory and a function that
// removes it.
func (c *clusterLayout) restoreLinks(ctx context.Context, dir string, links []upstreamLink) (string, func(), error) {
	tmp, err := os.MkdirTemp(c.artifacts.dir, ".src-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	fail := func(err error) (string, func(), error) {
		cleanup()
		return "", nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fail(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return fail(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, e.Name()), data, 0o644); err != nil {
			return fail(err)
		}
	}
	var replaces strings.Builder
	copied := map[string]string{}
	for _, l := range links {
		src, ok := copied[l.module]
		if !ok {
			out, err := c.runGo(ctx, dir, goEnv("-mod=readonly"), "list", "-m", "-f", "{{.Dir}}", l.module)
			if err != nil {
				return fail(err)
			}
			src = filepath.Join(tmp, "upstream", strings.NewReplacer("/", "_", ".", "_").Replace(l.module))
			if err := os.CopyFS(src, os.DirFS(strings.TrimSpace(string(out)))); err != nil {
				return fail(fmt.Errorf("copy %s: %w", l.module, err))
			}
			copied[l.module] = src
			fmt.Fprintf(&replaces, "\nreplace %s => %s\n", l.module, src)
		}
		if err := os.Symlink(l.target, filepath.Join(src, filepath.FromSlash(l.path))); err != nil {
			return fail(fmt.Errorf("restore %s in %s: %w", l.path, l.module, err))
		}
	}
	f, err := os.OpenFile(filepath.Join(tmp, "go.mod"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fail(err)
	}
	_, werr := f.WriteString(replaces.String())
	if err := errors.Join(werr, f.Close()); err != nil {
		return fail(err)
	}
	return tmp, cleanup, nil
}
