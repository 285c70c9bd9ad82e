package testenv

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/tenant"
)

func TestNamespaceBase(t *testing.T) {
	cases := map[string]string{
		"TestApply":                           "testapply",
		"TestApply/PyTorch_Job#01":            "testapply-pytorch-job-01",
		"Test__Double//Slash":                 "test-double-slash",
		"___":                                 "test",
		"Ünïcode":                             "n-code",
		"-Leading/and/trailing-":              "leading-and-trailing",
		strings.Repeat("a", 70):               strings.Repeat("a", maxNamespaceBase),
		strings.Repeat("a", 56) + "/b":        strings.Repeat("a", 56), // the cut lands on a dash
		"TestX/" + strings.Repeat("Long_", 9): "testx-long-long-long-long-long-long-long-long-long",
	}
	for in, want := range cases {
		assert.Equal(t, want, namespaceBase(in), "namespaceBase(%q)", in)
	}
}

func TestDecodeCRDs(t *testing.T) {
	const manifest = `
---
# an empty document
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: not-a-crd
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Cluster
  versions:
  - name: v1alpha1
    served: true
    storage: true
`
	crds, err := decodeCRDs(strings.NewReader(manifest), "test.yaml")
	require.NoError(t, err)
	require.Len(t, crds, 2)
	assert.Equal(t, "widgets.example.com", crds[0].Name)
	assert.Equal(t, "Widget", crds[0].Spec.Names.Kind)
	assert.Equal(t, "object", crds[0].Spec.Versions[0].Schema.OpenAPIV3Schema.Type)
	assert.Equal(t, "gadgets.example.com", crds[1].Name)
	assert.Equal(t, "Cluster", string(crds[1].Spec.Scope))

	_, err = decodeCRDs(strings.NewReader("apiVersion: apiextensions.k8s.io/v1\nkind: [unclosed\n"), "bad.yaml")
	require.Error(t, err)
	assert.ErrorContains(t, err, "decode bad.yaml document 0")
}

func TestLoadCRDs(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "empty"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "empty", "policy.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\n"), 0o644))
	_, err := loadCRDs(dir)
	require.Error(t, err)
	assert.ErrorContains(t, err, "no CustomResourceDefinition in "+filepath.Join(dir, "empty"))

	_, err = loadCRDs(filepath.Join(dir, "missing"))
	require.Error(t, err)
	assert.ErrorContains(t, err, "read crds")
}

func TestRequiredVersion(t *testing.T) {
	gomod := []byte(`module example.com/m

go 1.26.0

replace k8s.io/api => k8s.io/api v0.37.2

require k8s.io/kubernetes v1.37.2

require (
	go.etcd.io/etcd/server/v3 v3.7.0
	volcano.sh/apis v1.14.0 // indirect
)
`)
	for module, want := range map[string]string{
		"k8s.io/kubernetes":         "v1.37.2",
		"go.etcd.io/etcd/server/v3": "v3.7.0",
		"volcano.sh/apis":           "v1.14.0",
	} {
		got, err := requiredVersion(gomod, module)
		require.NoError(t, err, module)
		assert.Equal(t, want, got, module)
	}
	_, err := requiredVersion(gomod, "k8s.io/api")
	require.Error(t, err)
	assert.EqualError(t, err, "k8s.io/api is not required")
}

func TestLockFileExcludesSecondHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "build.lock")
	unlock, err := lockFile(t.Context(), path)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 700*time.Millisecond)
	defer cancel()
	_, err = lockFile(ctx, path)
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)

	unlock()
	unlockAgain, err := lockFile(t.Context(), path)
	require.NoError(t, err)
	unlockAgain()
}

func TestVersionLDFlags(t *testing.T) {
	l := &layout{kubernetesVersion: "v1.37.2"}
	assert.Equal(t,
		"-X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitTreeState=clean",
		l.versionLDFlags())
}

func TestLastLines(t *testing.T) {
	assert.Equal(t, "c\nd", lastLines("a\nb\nc\nd\n", 2))
	assert.Equal(t, "a", lastLines("a", 5))
}

func TestIndexRoundTrip(t *testing.T) {
	crds, err := decodeCRDs(strings.NewReader(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true}
  - {name: v1beta1, served: false, storage: false}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Cluster
  versions:
  - {name: v1alpha1, served: true, storage: true}
`), "index.yaml")
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "index.json")
	require.NoError(t, writeIndex(path, crds))

	index, err := readIndex(path)
	require.NoError(t, err)
	assert.Equal(t, []servedCRD{
		{Name: "widgets.example.com", Group: "example.com", Kind: "Widget", Plural: "widgets", Namespaced: true, Versions: []string{"v1"}},
		{Name: "gadgets.example.com", Group: "example.com", Kind: "Gadget", Plural: "gadgets", Namespaced: false, Versions: []string{"v1alpha1"}},
	}, index)
}

func TestReadIndexErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := readIndex(filepath.Join(dir, "missing.json"))
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)

	for name, content := range map[string]string{"bad.json": "{", "empty.json": "[]"} {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
		_, err := readIndex(path)
		require.Error(t, err, name)
		assert.ErrorContains(t, err, "read crd index "+path)
	}
}

func TestCopyDir(t *testing.T) {
	src := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(src, "member", "wal"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(src, "member", "wal", "0.wal"), []byte("wal"), 0o400))
	require.NoError(t, os.WriteFile(filepath.Join(src, "top"), []byte("top"), 0o644))

	dst := filepath.Join(t.TempDir(), "copy")
	require.NoError(t, copyDir(src, dst))
	data, err := os.ReadFile(filepath.Join(dst, "member", "wal", "0.wal"))
	require.NoError(t, err)
	assert.Equal(t, "wal", string(data))
	data, err = os.ReadFile(filepath.Join(dst, "top"))
	require.NoError(t, err)
	assert.Equal(t, "top", string(data))
	info, err := os.Stat(filepath.Join(dst, "member", "wal", "0.wal"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), info.Mode().Perm(), "copies are writable for etcd")

	require.Error(t, copyDir(filepath.Join(src, "missing"), filepath.Join(t.TempDir(), "x")))
}

// TestReportResources logs what the shared environment costs: how long it
// took to start and the memory of its two processes.
func TestReportResources(t *testing.T) {
	env := Get(t)
	rss := func(p *process) string {
		require.False(t, p.hasExited(), "%s is running", p.name)
		status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.cmd.Process.Pid), "status"))
		require.NoError(t, err)
		for _, line := range strings.Split(string(status), "\n") {
			if value, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				return strings.TrimSpace(value)
			}
		}
		t.Fatalf("no VmRSS for %s", p.name)
		return ""
	}
	t.Logf("started in %s; kube-apiserver RSS %s, etcd RSS %s", env.StartupTime.Round(time.Millisecond), rss(env.servers.apiServer), rss(env.servers.etcd.proc))
}

// The test cluster's Kueue manages the namespaces a Kueue tenant labels.
func TestKueueManagesKueueTenants(t *testing.T) {
	objs, err := tenant.New("team-a").CPU("8").Memory("8Gi").Queueing(tenant.Kueue).Objects()
	require.NoError(t, err)
	assert.Equal(t, tenant.LabelQueueing, kueueTenantLabel)
	assert.Equal(t, "Kueue", objs[0].GetLabels()[kueueTenantLabel], "the tenant's Namespace")
}

// The cluster's tools build in batches of one module, version and set of
// flags: Katib's four go install runs share one build of Katib's packages,
// Argo's two build in the one copy that restores its link, and a batch
// keeps clusterTools' order.
func TestToolBatches(t *testing.T) {
	var all []string
	for _, tool := range clusterTools {
		all = append(all, tool.name)
	}
	batches := toolBatches(all)
	names := map[string][]string{}
	seen := 0
	for _, b := range batches {
		var ns []string
		for _, tool := range b {
			ns = append(ns, tool.name)
		}
		names[b[0].name] = ns
		seen += len(b)
	}
	assert.Equal(t, len(clusterTools), seen, "every tool in one batch")
	assert.Equal(t, []string{"workflow-controller", "argoexec"}, names["workflow-controller"])
	assert.Equal(t, []string{"katib-controller", "katib-db-manager", "katib-suggestion-goptuna", "katib-file-metricscollector"}, names["katib-controller"])
	assert.Equal(t, []string{"kubelet", "kube-controller-manager", "kube-scheduler", "kube-proxy"}, names["kubelet"])
	assert.Equal(t, []string{"kuberay-operator"}, names["kuberay-operator"], "go install of another repository is a batch of its own")
	assert.Equal(t, []string{"jobset-controller", "trainer-controller-manager"}, names["jobset-controller"])

	// Only the named tools, still by module.
	assert.Equal(t, [][]clusterTool{{clusterTools[1]}, {clusterTools[3]}}, toolBatches([]string{"katib-controller", "argoexec"}))
}

// runJobs runs every job at most n at a time; the first failure cancels
// the jobs running and those not started, and every failure comes back.
func TestRunJobs(t *testing.T) {
	var (
		mu                  sync.Mutex
		running, peak, done int
	)
	job := func(ctx context.Context) error {
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		running--
		done++
		mu.Unlock()
		return nil
	}
	require.NoError(t, runJobs(t.Context(), 2, []func(context.Context) error{job, job, job, job, job}))
	assert.Equal(t, 5, done)
	assert.Equal(t, 2, peak)

	var started atomic.Int32
	failA := errors.New("a failed")
	// The failure waits until blocked runs: otherwise, on a loaded
	// machine, it can cancel before the other worker, which has taken
	// blocked from the queue, starts it, and that worker then rightly
	// starts nothing (one job started, no cancelled one).
	blockedRuns := make(chan struct{})
	fail := func(err error) func(context.Context) error {
		return func(context.Context) error { <-blockedRuns; started.Add(1); return err }
	}
	blocked := func(ctx context.Context) error {
		started.Add(1)
		close(blockedRuns)
		<-ctx.Done() // cancelled by the other worker's failure
		return fmt.Errorf("blocked: %w", ctx.Err())
	}
	later := func(context.Context) error { started.Add(1); return nil }
	err := runJobs(t.Context(), 2, []func(context.Context) error{blocked, fail(failA), later, later})
	require.Error(t, err)
	assert.ErrorIs(t, err, failA)
	assert.ErrorIs(t, err, context.Canceled)
	assert.EqualValues(t, 2, started.Load(), "no job starts after a failure")
}

// A tool whose program is its module's own (CoreDNS with the node's
// plugins, kubectl) is keyed by that program's source as well as go.sum:
// another plugin list builds another binary, and the other tools keep
// theirs.
func TestProgramSourceIsInItsKey(t *testing.T) {
	l, err := newLayout(t.Context())
	require.NoError(t, err)
	before, err := newClusterLayout(l)
	require.NoError(t, err)

	tools := filepath.Join(t.TempDir(), "tools")
	require.NoError(t, copyDir(l.toolsDir, tools))
	main := filepath.Join(tools, "coredns", "main.go")
	src, err := os.ReadFile(main)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(main, append(src, "\n// another plugin list\n"...), 0o644))
	moved := *l
	moved.toolsDir = tools
	after, err := newClusterLayout(&moved)
	require.NoError(t, err)

	assert.NotEqual(t, filepath.Base(before.binary("coredns")), filepath.Base(after.binary("coredns")))
	for _, name := range []string{"kubectl", "kubelet", "lws-controller", "katib-controller"} {
		assert.Equal(t, filepath.Base(before.binary(name)), filepath.Base(after.binary(name)), name)
	}
}

// freePort gives a port free on every address: never one that a listener
// holds on another address than loopback (the node's components listen
// on the gateway's), which a port asked of loopback alone can be.
func TestFreePortIsFreeOnEveryAddress(t *testing.T) {
	held := map[int]bool{}
	for range 300 {
		ln, err := net.Listen("tcp4", "127.0.0.2:0")
		require.NoError(t, err)
		t.Cleanup(func() { ln.Close() })
		held[ln.Addr().(*net.TCPAddr).Port] = true
	}
	for range 2000 {
		port, err := freePort()
		require.NoError(t, err)
		require.False(t, held[port], "port %d is held on 127.0.0.2", port)
	}
}
