package cli

// The commands against a real kube-apiserver (internal/testsupport/testenv):
// releases applied by cube, statuses written as the controllers write them
// (cubetest.MarkObject), pods and refusals recorded as the kubelet and the
// ReplicaSet controller record them, with the API server's own quota
// refusal. The plugin reaches the server through a kubeconfig file, as
// kubectl does.

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/kinds"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/train"
)

// cluster is a namespace of the test API server, a kubeconfig whose
// context selects it, and the library Client a user's program would have.
type cluster struct {
	env        *testenv.Env
	ns         string
	kubeconfig string
	client     *cube.Client
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["test"] = &clientcmdapi.Cluster{Server: env.Config.Host, CertificateAuthority: env.Config.CAFile, CertificateAuthorityData: env.Config.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: env.Config.BearerToken}
	cfg.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "admin", Namespace: ns}
	cfg.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	c, err := cube.New(env.Config, cube.Namespace(ns), cube.Kinds(kinds.All()...))
	require.NoError(t, err)
	return &cluster{env: env, ns: ns, kubeconfig: path, client: c}
}

// run runs the plugin with the cluster's kubeconfig, as a user would.
func (c *cluster) run(t *testing.T, args ...string) result {
	t.Helper()
	return c.runTo(t, &syncBuffer{}, args...)
}

func (c *cluster) runTo(t *testing.T, stdout *syncBuffer, args ...string) result {
	t.Helper()
	var stderr bytes.Buffer
	code := Run(t.Context(), append(args, "--kubeconfig", c.kubeconfig), stdout, &stderr)
	return result{code, stdout.String(), stderr.String()}
}

// syncBuffer is a buffer a running command writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func l4(t *testing.T) hardware.Profile {
	t.Helper()
	p, ok := hardware.Lookup("L4")
	require.True(t, ok)
	return p
}

// chat applies a served model; job a training job.
func (c *cluster) chat(t *testing.T) *cube.Release {
	t.Helper()
	rel, err := c.client.Apply(t.Context(), serve.VLLM("qwen-chat", qwen).On(l4(t)).Auto())
	require.NoError(t, err)
	return rel
}

func (c *cluster) job(t *testing.T, name string) *cube.Release {
	t.Helper()
	rel, err := c.client.Apply(t.Context(), train.PyTorch(name).Image("busybox:1.36").Command("true"))
	require.NoError(t, err)
	return rel
}

func (c *cluster) mark(t *testing.T, rel *cube.Release, kind string, phase cube.Phase, reason string) {
	t.Helper()
	for _, ref := range rel.Objects {
		if ref.Kind == kind {
			require.NoError(t, cubetest.MarkObject(t.Context(), c.env.Client, ref, phase, reason, ""))
		}
	}
}

// row finds the table row of a release.
func row(t *testing.T, table, ns, name string) []string {
	t.Helper()
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) >= 5 && f[0] == ns && f[1] == name {
			return f
		}
	}
	t.Fatalf("no row for %s/%s in\n%s", ns, name, table)
	return nil
}

// list shows every release with the kind, phase and reason the library
// reads, narrows by kind and state, and finds the cluster through the
// kubeconfig rules (--kubeconfig, KUBECONFIG, --context).
func TestListOnTheAPIServer(t *testing.T) {
	c := newCluster(t)
	chat := c.chat(t)
	done := c.job(t, "mnist")
	c.mark(t, done, "PyTorchJob", cube.Succeeded, "PyTorchJobSucceeded")
	failed := c.job(t, "broken")
	c.mark(t, failed, "PyTorchJob", cube.Failed, "BackoffLimitExceeded")

	r := c.run(t, "list")
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	require.Len(t, lines, 4, r.stdout)
	assert.Equal(t, []string{"NAMESPACE", "NAME", "KIND", "PHASE", "AGE", "REASON"}, strings.Fields(lines[0]))
	for i, rel := range []*cube.Release{failed, done, chat} { // sorted by name
		st, err := rel.Status(t.Context())
		require.NoError(t, err)
		f := strings.Fields(lines[i+1])
		assert.Equal(t, []string{c.ns, rel.Name, rel.Kind, string(st.Phase)}, f[:4], lines[i+1])
		assert.Regexp(t, `^[0-9]+[sm]$`, f[4], "age of a release applied moments ago")
		assert.True(t, strings.HasSuffix(lines[i+1], reasonOf(st)), "%q ends with %q", lines[i+1], reasonOf(st))
	}
	assert.Equal(t, "Failed", row(t, r.stdout, c.ns, "broken")[3])
	assert.Contains(t, lines[1], "BackoffLimitExceeded")
	assert.Equal(t, "InProgress", row(t, r.stdout, c.ns, "qwen-chat")[3])

	// -o json: the same releases and phases, for scripts.
	r = c.run(t, "list", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var listed struct {
		Items []releaseView `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &listed), r.stdout)
	require.Len(t, listed.Items, 3, r.stdout)
	for i, rel := range []*cube.Release{failed, done, chat} {
		st, err := rel.Status(t.Context())
		require.NoError(t, err)
		got := listed.Items[i]
		assert.Equal(t, []string{c.ns, rel.Name, rel.Kind, rel.UID}, []string{got.Namespace, got.Name, got.Kind, got.UID})
		require.NotNil(t, got.Status, r.stdout)
		assert.Equal(t, st.Phase, got.Status.Phase)
		assert.Equal(t, st.Reason, got.Status.Reason)
		require.Len(t, got.Status.Objects, len(st.Objects))
		for j, o := range st.Objects {
			assert.Equal(t, objectView{Object: o.Ref.String(), Phase: o.Phase, Reason: o.Reason, Message: o.Message}, got.Status.Objects[j])
		}
		require.NotNil(t, got.Created)
		assert.True(t, got.Created.Equal(rel.Created), "%v vs %v", got.Created, rel.Created)
	}
	r = c.run(t, "list", "-o", "json", "--state", "Failed")
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &listed), r.stdout)
	require.Len(t, listed.Items, 1, r.stdout)
	assert.Equal(t, "broken", listed.Items[0].Name)
	assert.Contains(t, listed.Items[0].Status.Reason+listed.Items[0].Status.Objects[0].Reason, "BackoffLimitExceeded")

	r = c.run(t, "list", "--kind", "pytorchjob", "--state", "succeeded")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Len(t, strings.Split(strings.TrimSpace(r.stdout), "\n"), 2, r.stdout)
	row(t, r.stdout, c.ns, "mnist")

	r = c.run(t, "list", "--kind", "vllm", "--state", "Failed")
	assert.Equal(t, 0, r.code)
	assert.Empty(t, r.stdout)
	assert.Equal(t, "No releases of kind vllm in phase Failed found in namespace "+c.ns+".\n", r.stderr)

	// -A lists every namespace's releases; -n another namespace's.
	r = c.run(t, "list", "-A", "--kind", "vllm")
	require.Equal(t, 0, r.code, r.stderr)
	row(t, r.stdout, c.ns, "qwen-chat")
	other := c.env.Namespace(t)
	r = c.run(t, "list", "-n", other)
	assert.Equal(t, 0, r.code)
	assert.Equal(t, "No releases found in namespace "+other+".\n", r.stderr)
	r = c.run(t, "list", "-A", "-n", other)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "-A/--all-namespaces and -n/--namespace")

	// KUBECONFIG is read when --kubeconfig is not given; --context names
	// a context of it.
	t.Setenv("KUBECONFIG", c.kubeconfig)
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, Run(t.Context(), []string{"list", "--state", "Succeeded"}, &stdout, &stderr), stderr.String())
	row(t, stdout.String(), c.ns, "mnist")
	stderr.Reset()
	assert.Equal(t, 1, Run(t.Context(), []string{"list", "--context", "prod"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), `context "prod" does not exist`)
	stderr.Reset()
	assert.Equal(t, 1, Run(t.Context(), []string{"list", "-n", "Bad_NS"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), `-n/--namespace "Bad_NS"`)
}

// status says why a release is stuck: the pods its ReplicaSet could not
// create because the API server refused them over the namespace's quota
// (the server's own refusal, recorded as the controller records it), and
// a pod that cannot pull its image; wait --fail-on-stuck-pods gives up at
// once with the refusal.
func TestStatusSaysWhyOnTheAPIServer(t *testing.T) {
	c := newCluster(t)
	ctx := t.Context()
	rel := c.chat(t)

	// A quota of no GPUs, counted as the quota controller counts it.
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "team-gpus", Namespace: c.ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("0")}},
	}
	require.NoError(t, c.env.Client.Create(ctx, quota))
	quota.Status.Hard = quota.Spec.Hard
	quota.Status.Used = corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("0")}
	require.NoError(t, c.env.Client.Status().Update(ctx, quota))

	// The ReplicaSet controller creates a pod from the Deployment's
	// template; the API server refuses it.
	var deploy appsv1.Deployment
	require.NoError(t, c.env.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: "qwen-chat"}, &deploy))
	rs := "qwen-chat-5d9c7b8f4"
	refused := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: rs + "-x7k2p", Namespace: c.ns, Labels: deploy.Spec.Template.Labels}, Spec: deploy.Spec.Template.Spec}
	var err error
	require.Eventually(t, func() bool {
		err = c.env.Client.Create(ctx, refused.DeepCopy())
		return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota")
	}, 30*time.Second, 100*time.Millisecond, "the quota refuses the pod: %v", err)
	now := metav1.NewTime(time.Now().Add(time.Second))
	require.NoError(t, c.env.Client.Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: c.ns, Name: rs + ".refused"},
		InvolvedObject: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: c.ns, Name: rs},
		// k8s.io/kubernetes pkg/controller/controller_utils.go:
		// FailedCreatePodReason, "Error creating: %v".
		Reason: "FailedCreate", Type: corev1.EventTypeWarning, Message: "Error creating: " + err.Error(),
		FirstTimestamp: now, LastTimestamp: now, Count: 4,
		Source: corev1.EventSource{Component: "replicaset-controller"},
	}))

	// Another pod of the release, created before the quota counted GPUs,
	// cannot pull its image.
	stuck := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: rs + "-abcde", Namespace: c.ns, Labels: deploy.Spec.Template.Labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai:typo"}}},
	}
	require.NoError(t, c.env.Client.Create(ctx, stuck))
	stuck.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "vllm", Image: "vllm/vllm-openai:typo",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "vllm/vllm-openai:typo"`}},
	}}}
	require.NoError(t, c.env.Client.Status().Update(ctx, stuck))

	st, err := rel.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st.Refusals, 1, "%s", st)
	require.NotNil(t, st.Refusals[0].Quota)
	require.Len(t, st.Pods, 1, "%s", st)

	r := c.run(t, "status", "qwen-chat")
	require.Equal(t, 0, r.code, r.stderr)
	out := r.stdout
	assert.Contains(t, out, "Release:   "+c.ns+"/qwen-chat\n")
	assert.Contains(t, out, "Kind:      vllm\n")
	assert.Contains(t, out, "Phase:     "+string(st.Phase)+"\n")
	for _, o := range st.Objects {
		assert.Regexp(t, `(?m)^`+regexpQuote(o.Ref.String())+` +`+string(o.Phase)+` `, out)
	}
	ref := st.Refusals[0]
	assert.Regexp(t, `(?m)^`+regexpQuote(ref.Object.String())+` +QuotaExceeded +4 +[0-9]+s ago +`+regexpQuote(ref.Quota.Error())+`$`, out)
	assert.Contains(t, ref.Quota.Error(), "team-gpus", "the server named the quota")
	assert.Regexp(t, `(?m)^`+rs+`-abcde +vllm +ImagePullBackOff +0 +true +Back-off pulling image "vllm/vllm-openai:typo"$`, out)

	// -o json says the same, as data.
	r = c.run(t, "status", "qwen-chat", "-o", "json")
	require.Equal(t, 0, r.code, r.stderr)
	var view releaseView
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &view), r.stdout)
	require.NotNil(t, view.Status, r.stdout)
	assert.Equal(t, st.Phase, view.Status.Phase)
	require.Len(t, view.Status.Refusals, 1)
	assert.Equal(t, refusalView{Object: ref.Object.String(), Reason: "QuotaExceeded", Message: ref.Quota.Error(), Count: 4, Last: view.Status.Refusals[0].Last}, view.Status.Refusals[0])
	require.NotNil(t, view.Status.Refusals[0].Last)
	assert.True(t, view.Status.Refusals[0].Last.Equal(ref.Last))
	assert.Equal(t, []podView{{Pod: rs + "-abcde", Container: "vllm", Reason: "ImagePullBackOff", Message: `Back-off pulling image "vllm/vllm-openai:typo"`, Stuck: true}}, view.Status.Pods)

	// wait gives up at once on the refusal, naming the quota.
	start := time.Now()
	r = c.run(t, "wait", "qwen-chat", "--for", "Ready", "--fail-on-stuck-pods", "--timeout", "1m")
	assert.Equal(t, 1, r.code)
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.Contains(t, r.stderr, "team-gpus")
	assert.NotContains(t, r.stdout, "\r", "plain lines when stdout is not a terminal")

	// logs: no pod of the release has started, so there are none; the
	// error is the library's.
	_, want := rel.Logs(ctx)
	require.Error(t, want)
	r = c.run(t, "logs", "qwen-chat")
	assert.Equal(t, 1, r.code)
	assert.Equal(t, "error: "+want.Error()+"\n", r.stderr)
}

func regexpQuote(s string) string { return regexpMeta.Replace(s) }

var regexpMeta = strings.NewReplacer(`\`, `\\`, `.`, `\.`, `+`, `\+`, `*`, `\*`, `?`, `\?`, `(`, `\(`, `)`, `\)`,
	`[`, `\[`, `]`, `\]`, `{`, `\{`, `}`, `\}`, `^`, `\^`, `$`, `\$`, `|`, `\|`)

// wait prints one plain line a status change when stdout is not a
// terminal, then the phase reached; it fails on a timeout and at once on a
// phase the release can never reach.
func TestWaitPrintsPlainLinesWhenNotATerminal(t *testing.T) {
	c := newCluster(t)
	ctx := t.Context()
	rel := c.job(t, "mnist")
	first, err := rel.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, cube.InProgress, first.Phase)

	var stdout syncBuffer
	results := make(chan result, 1)
	go func() { results <- c.runTo(t, &stdout, "wait", "mnist", "--for", "Succeeded", "--timeout", "1m") }()
	require.Eventually(t, func() bool { return stdout.String() != "" }, 30*time.Second, 50*time.Millisecond)
	c.mark(t, rel, "PyTorchJob", cube.Succeeded, "PyTorchJobSucceeded")
	var r result
	select {
	case r = <-results:
	case <-time.After(time.Minute):
		t.Fatal("wait did not return")
	}
	require.Equal(t, 0, r.code, r.stderr)
	last, err := rel.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, cube.Succeeded, last.Phase)
	assert.Equal(t, first.String()+"\n"+last.String()+"\nrelease "+c.ns+"/mnist is Succeeded\n", r.stdout)
	assert.Empty(t, r.stderr)

	chat := c.chat(t)
	start := time.Now()
	r = c.run(t, "wait", chat.Name, "--for", "Ready", "--timeout", "2s")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, cube.ErrTimeout.Error())
	assert.GreaterOrEqual(t, time.Since(start), 2*time.Second)

	r = c.run(t, "wait", chat.Name, "--for", "Succeeded", "--timeout", "1m")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, cube.ErrNeverReaches.Error())

	r = c.run(t, "wait", "nobody", "--for", "Ready")
	assert.Equal(t, 1, r.code)
	assert.Equal(t, `error: release "nobody" not found in namespace "`+c.ns+`" (kubectl cube list -A lists every release)`+"\n", r.stderr)
}

// delete deletes what the release created and nothing else: an object a
// person took over (it no longer carries the release's UID) and objects
// of other releases stay.
func TestDeleteDeletesOnlyWhatTheReleaseMade(t *testing.T) {
	c := newCluster(t)
	ctx := t.Context()
	c.chat(t)
	other := c.job(t, "mnist")

	var svc corev1.Service
	require.NoError(t, c.env.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: "qwen-chat-api"}, &svc))
	delete(svc.Labels, cube.LabelReleaseUID)
	require.NoError(t, c.env.Client.Update(ctx, &svc))

	r := c.run(t, "delete", "qwen-chat")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "release "+c.ns+"/qwen-chat deleted\n", r.stdout)

	var deploy appsv1.Deployment
	err := c.env.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: "qwen-chat"}, &deploy)
	if err == nil {
		assert.NotNil(t, deploy.DeletionTimestamp, "foreground deletion under way")
	} else {
		assert.True(t, apierrors.IsNotFound(err), "%v", err)
	}
	require.NoError(t, c.env.Client.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: "qwen-chat-api"}, &svc), "the Service a person took over stays")
	assert.Nil(t, svc.DeletionTimestamp)
	_, err = c.client.Release(ctx, c.ns, "qwen-chat")
	assert.ErrorIs(t, err, cube.ErrNotFound, "the record is gone")
	st, err := other.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase, "another release is untouched")

	r = c.run(t, "delete", "qwen-chat")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, `release "qwen-chat" not found`)
	r = c.run(t, "status", "qwen-chat")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, `release "qwen-chat" not found`)
}
