package testenv

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The operators of the test cluster, built with go install module@version
// from their own go.mod files (none of them has a replace directive), so the
// versions are the ones their projects tested with. Argo has a replace
// directive and is built in the nested module tools/argo instead.
var operatorInstalls = []struct {
	name    string // binary name in the cache
	pkg     string // package path
	version string
}{
	{"training-operator", "github.com/kubeflow/training-operator/cmd/training-operator.v1", "v1.8.1"},
	{"lws-controller", "sigs.k8s.io/lws/cmd", "v0.8.0"},
	{"kuberay-operator", "github.com/ray-project/kuberay/ray-operator", "v1.5.0"},
	{"coredns", "github.com/coredns/coredns", "v1.12.1"},
}

// nodeCommands are the Kubernetes commands the node runs, built in the tools
// module next to kube-apiserver.
var nodeCommands = []string{"kubelet", "kube-controller-manager", "kube-scheduler", "kube-proxy"}

// imageCommands are the static programs that go into images: from the
// tools modules (kubectl, argoexec) and from this module's test code
// (internal/testenv/cmd/...).
var imageCommands = []struct {
	name   string
	module string // "kubernetes", "argo" or "main"
	pkg    string
}{
	{"kubectl", "kubernetes", "k8s.io/kubernetes/cmd/kubectl"},
	{"argoexec", "argo", "github.com/argoproj/argo-workflows/v3/cmd/argoexec"},
	{"standin-engine", "main", "./internal/testenv/cmd/standin-engine"},
	{"kubectl-delivery", "main", "./internal/testenv/cmd/kubectl-delivery"},
	{"pause", "main", "./internal/testenv/cmd/pause"},
}

// clusterFormat changes whenever what the cluster build puts in its cache
// changes.
const clusterFormat = "1"

// clusterArtifacts are the cached binaries and images of the test cluster.
type clusterArtifacts struct {
	dir    string // <user cache>/cube-testcluster/<key>
	bin    string // host binaries
	static string // static binaries that go into images
	images string // OCI image archives
}

func (a clusterArtifacts) binary(name string) string { return filepath.Join(a.bin, name) }

// clusterLayout extends the API server's layout with the cluster's sources.
type clusterLayout struct {
	*layout
	argoDir   string
	artifacts clusterArtifacts
}

func newClusterLayout(l *layout) (*clusterLayout, error) {
	c := &clusterLayout{layout: l, argoDir: filepath.Join(l.toolsDir, "argo")}
	h := sha256.New()
	fmt.Fprintf(h, "format %s\n", clusterFormat)
	for _, f := range []string{filepath.Join(l.toolsDir, "go.sum"), filepath.Join(c.argoDir, "go.sum")} {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("cluster cache key: %w", err)
		}
		h.Write(data)
	}
	for _, o := range operatorInstalls {
		fmt.Fprintf(h, "install %s %s@%s\n", o.name, o.pkg, o.version)
	}
	for _, s := range imageCommands {
		fmt.Fprintf(h, "static %s %s %s\n", s.name, s.module, s.pkg)
	}
	binaries := hex.EncodeToString(h.Sum(nil))[:12]
	// The images also depend on this module's programs that go into them
	// and on the recipes in images.go: they get a directory of their own,
	// so that changing them does not rebuild the binaries.
	for _, s := range imageCommands {
		if s.module != "main" {
			continue
		}
		if err := hashTree(h, filepath.Join(l.mainDir, s.pkg)); err != nil {
			return nil, fmt.Errorf("cluster cache key: %w", err)
		}
	}
	for _, f := range []string{filepath.Join(l.mainDir, "internal", "testenv", "images.go"), filepath.Join(l.mainDir, "go.sum")} {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("cluster cache key: %w", err)
		}
		h.Write(data)
	}
	images := hex.EncodeToString(h.Sum(nil))[:12]
	cache, err := os.UserCacheDir()
	if err != nil {
		return nil, fmt.Errorf("find user cache dir: %w", err)
	}
	dir := filepath.Join(cache, "cube-testcluster", fmt.Sprintf("kubernetes-%s-%s", l.kubernetesVersion, binaries))
	c.artifacts = clusterArtifacts{
		dir:    dir,
		bin:    filepath.Join(dir, "bin"),
		static: filepath.Join(dir, "static"),
		images: filepath.Join(dir, "images-"+images),
	}
	return c, nil
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

// missingBinaries lists the cluster binaries not yet in the cache.
func (c *clusterLayout) missingBinaries() []string {
	var out []string
	for _, name := range nodeCommands {
		if _, err := os.Stat(c.artifacts.binary(name)); err != nil {
			out = append(out, name)
		}
	}
	for _, o := range operatorInstalls {
		if _, err := os.Stat(c.artifacts.binary(o.name)); err != nil {
			out = append(out, o.name)
		}
	}
	if _, err := os.Stat(c.artifacts.binary("workflow-controller")); err != nil {
		out = append(out, "workflow-controller")
	}
	for _, s := range imageCommands {
		if _, err := os.Stat(c.staticBinary(s.name, s.module)); err != nil {
			out = append(out, s.name)
		}
	}
	return out
}

// staticBinary is where a static program for the images is kept: with the
// binaries when it comes from a tools module, with the images when it is
// this module's own.
func (c *clusterLayout) staticBinary(name, module string) string {
	if module == "main" {
		return filepath.Join(c.artifacts.images, "programs", name)
	}
	return filepath.Join(c.artifacts.static, name)
}

// ensure builds what the cluster's cache lacks: the API server's artifacts
// first, then the node's binaries, the operators and the images, under one
// file lock.
func (c *clusterLayout) ensure(ctx context.Context) error {
	if err := c.layout.ensure(ctx); err != nil {
		return err
	}
	if len(c.missingBinaries()) == 0 && len(c.missingImages()) == 0 {
		return nil
	}
	for _, d := range []string{c.artifacts.bin, c.artifacts.static, filepath.Join(c.artifacts.images, "programs")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create cluster cache: %w", err)
		}
	}
	unlock, err := lockFile(ctx, c.artifacts.dir+".lock")
	if err != nil {
		return err
	}
	defer unlock()
	if missing := c.missingBinaries(); len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "testenv: building the test cluster's %s into %s; on a machine's first run this takes 20-30 minutes on 2 cores (run go run ./internal/testenv/cmd/prebuild first)\n",
			strings.Join(missing, ", "), c.artifacts.dir)
	}
	for _, name := range nodeCommands {
		dst := c.artifacts.binary(name)
		if _, err := os.Stat(dst); err == nil {
			continue
		}
		if err := c.buildIn(ctx, c.toolsDir, dst, "k8s.io/kubernetes/cmd/"+name, c.versionLDFlags(), false); err != nil {
			return err
		}
	}
	if dst := c.artifacts.binary("workflow-controller"); !exists(dst) {
		if err := c.buildIn(ctx, c.argoDir, dst, "github.com/argoproj/argo-workflows/v3/cmd/workflow-controller", "", false); err != nil {
			return err
		}
	}
	for _, o := range operatorInstalls {
		if dst := c.artifacts.binary(o.name); !exists(dst) {
			if err := c.install(ctx, dst, o.pkg, o.version); err != nil {
				return err
			}
		}
	}
	for _, s := range imageCommands {
		dst := c.staticBinary(s.name, s.module)
		if exists(dst) {
			continue
		}
		dir, ldflags := c.mainDir, ""
		switch s.module {
		case "kubernetes":
			dir, ldflags = c.toolsDir, c.versionLDFlags()
		case "argo":
			dir = c.argoDir
		}
		if err := c.buildIn(ctx, dir, dst, s.pkg, ldflags, true); err != nil {
			return err
		}
	}
	return c.buildImages(ctx)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// buildIn builds pkg in the module at dir to dst through a temporary name.
// Static binaries (for images, which have no C library) are built with cgo
// off.
func (c *clusterLayout) buildIn(ctx context.Context, dir, dst, pkg, ldflags string, static bool) error {
	tmp := fmt.Sprintf("%s.tmp-%d", dst, os.Getpid())
	defer os.Remove(tmp)
	args := []string{"build", "-o", tmp}
	if ldflags != "" {
		args = append(args, "-ldflags="+ldflags)
	}
	args = append(args, pkg)
	var extra []string
	if static {
		extra = append(extra, "CGO_ENABLED=0")
	}
	if _, err := c.runGo(ctx, dir, goEnv("-mod=readonly -buildvcs=false", extra...), args...); err != nil {
		return fmt.Errorf("build %s: %w", filepath.Base(dst), err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return fmt.Errorf("build %s: %w", filepath.Base(dst), err)
	}
	return nil
}

// install runs go install pkg@version into a temporary GOBIN and moves the
// one binary it makes to dst.
func (c *clusterLayout) install(ctx context.Context, dst, pkg, version string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dst), ".install-")
	if err != nil {
		return fmt.Errorf("install %s: %w", pkg, err)
	}
	defer os.RemoveAll(tmp)
	if _, err := c.runGo(ctx, tmp, goEnv("-buildvcs=false", "GOBIN="+tmp), "install", pkg+"@"+version); err != nil {
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
