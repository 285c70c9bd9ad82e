package cube_test

// Statuses never lie, against the real kube-apiserver (internal/testsupport/testenv):
// a kind without a reader is Unknown, a deleted release Missing, a pod
// the cluster refused to create is reported, and Wait stops as soon as a
// phase cannot be reached.

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/kinds"
	"github.com/cubestudio/cube/train"
)

// A PyTorchJob read by a client that was not given train's kinds is
// Unknown, naming the kind, never Ready; Wait says at once that it can
// never be judged. Given the kinds, the same object is InProgress.
func TestAKindWithoutAReaderIsUnknown(t *testing.T) {
	c, env, ns := newClient(t)
	rel, err := c.Apply(t.Context(), train.PyTorch("mnist").Image("busybox:1.36").Command("true"))
	require.NoError(t, err)
	st, err := rel.Status(t.Context())
	require.NoError(t, err)
	assert.Equal(t, cube.Unknown, st.Phase, "%s", st)
	assert.Contains(t, st.Reason, "PyTorchJob.kubeflow.org")
	assert.Contains(t, st.Reason, "cube.Kinds")

	start := time.Now()
	for _, until := range []cube.Phase{cube.Ready, cube.Succeeded, cube.Failed} {
		_, err = rel.Wait(t.Context(), until, cube.Timeout(time.Minute))
		require.Error(t, err)
		assert.ErrorIs(t, err, cube.ErrNeverReaches, "until %s", until)
		assert.Contains(t, err.Error(), "PyTorchJob.kubeflow.org")
	}
	assert.Less(t, time.Since(start), 20*time.Second, "fails fast, not at the timeout")

	withKinds := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Kinds(kinds.All()...))
	back, err := withKinds.Release(t.Context(), ns, "mnist")
	require.NoError(t, err)
	st, err = back.Status(t.Context())
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase, "%s", st)
}

// The phase of an object depends on the client, not on what the program
// imports: a program importing only cube and one importing every package
// that builds a kind read a fresh PyTorchJob the same. (With the
// process-wide registry filled from init, the first read Ready and the
// second InProgress.)
func TestStatusDoesNotDependOnImports(t *testing.T) {
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	job := `{"apiVersion":"kubeflow.org/v1","kind":"PyTorchJob","metadata":{"name":"x","namespace":"a"}}`
	var outputs []string
	for _, probe := range []string{"onlycube", "everything"} {
		bin := filepath.Join(t.TempDir(), probe)
		build := exec.CommandContext(t.Context(), gobin, "build", "-o", bin, "./testdata/statusprobe/"+probe)
		out, err := build.CombinedOutput()
		require.NoError(t, err, "%s", out)
		out, err = exec.CommandContext(t.Context(), bin, job).CombinedOutput()
		require.NoError(t, err, "%s", out)
		outputs = append(outputs, strings.TrimSpace(string(out)))
	}
	assert.Equal(t, "Unknown NoReader", outputs[0])
	assert.Equal(t, outputs[0], outputs[1])
}

// playGC removes the foreground-deletion finalizer from the release's
// objects, as the garbage collector (which this API server lacks) does
// once an object has no dependents left.
func playGC(t *testing.T, env *testenv.Env, rel *cube.Release) {
	t.Helper()
	for _, ref := range rel.Objects {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(ref.GroupVersionKind)
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
			continue
		}
		u.SetFinalizers(nil)
		require.NoError(t, client.IgnoreNotFound(env.Client.Update(t.Context(), u)))
	}
}

// After Delete, a release reads Missing (not InProgress), Wait(Missing)
// returns, and the release can no longer be found by name.
func TestADeletedReleaseIsMissing(t *testing.T) {
	c, env, ns := newClient(t)
	rel, err := c.Apply(t.Context(), webApp("shop", "", 1))
	require.NoError(t, err)
	require.NoError(t, rel.Delete(t.Context()))

	st, err := rel.Status(t.Context())
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase, "foreground deletion waits for the garbage collector: %s", st)
	assert.Equal(t, "Terminating", st.Objects[0].Reason)

	done := make(chan error, 1)
	go func() {
		_, err := rel.Wait(t.Context(), cube.Missing, cube.Timeout(time.Minute))
		done <- err
	}()
	playGC(t, env, rel)
	require.NoError(t, <-done)
	st, err = rel.Status(t.Context())
	require.NoError(t, err)
	assert.Equal(t, cube.Missing, st.Phase, "%s", st)
	for _, o := range st.Objects {
		assert.Equal(t, cube.Missing, o.Phase)
		assert.Equal(t, "NotFound", o.Reason)
	}
	_, err = c.Release(t.Context(), ns, "shop")
	assert.ErrorIs(t, err, cube.ErrNotFound)

	// Waiting on it for anything but Missing stops at once.
	_, err = rel.Wait(t.Context(), cube.Ready, cube.Timeout(time.Minute))
	assert.ErrorIs(t, err, cube.ErrNeverReaches)
	assert.Contains(t, err.Error(), "apply the release again")
}

// Wait takes any phase it can reach, refuses Unknown, and knows at once
// that a release of Deployments and Services never succeeds.
func TestWaitForAPhaseTheReleaseCanNeverReach(t *testing.T) {
	c, _, _ := newClient(t)
	rel, err := c.Apply(t.Context(), webApp("shop", "", 1))
	require.NoError(t, err)

	start := time.Now()
	_, err = rel.Wait(context.Background(), cube.Succeeded) // no timeout, no deadline: still returns
	require.Error(t, err)
	assert.ErrorIs(t, err, cube.ErrNeverReaches)
	assert.Contains(t, err.Error(), "nothing in the release runs to completion")
	assert.Contains(t, err.Error(), "Deployment")
	assert.Less(t, time.Since(start), 5*time.Second)

	_, err = rel.Wait(t.Context(), cube.Unknown)
	assert.ErrorContains(t, err, "until must be")

	st, err := rel.Wait(t.Context(), cube.InProgress, cube.Timeout(time.Minute))
	require.NoError(t, err, "no controller runs here: the Deployment stays in progress")
	assert.Equal(t, cube.InProgress, st.Phase)

	_, err = rel.Wait(t.Context(), cube.Ready, cube.Timeout(300*time.Millisecond))
	require.Error(t, err)
	assert.ErrorIs(t, err, cube.ErrTimeout)
	assert.NotContains(t, err.Error(), "\n", "one line for one-line logs")
}

// A new Tenant is Ready only once its quota is enforceable: the quota
// controller has filled status.hard.
func TestATenantIsReadyOnlyOnceItsQuotaIsCounted(t *testing.T) {
	env := testenv.Get(t)
	_, team, ns := newTenant(t, env)
	st, err := team.Status(t.Context())
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase, "%s", st)
	assert.Contains(t, st.Reason, "ResourceQuota")
	assert.Contains(t, st.Reason, "NotCounted")

	var quota corev1.ResourceQuota
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: ns}, &quota))
	quota.Status.Hard = quota.Spec.Hard.DeepCopy()
	require.NoError(t, env.Client.Status().Update(t.Context(), &quota))
	st, err = team.Status(t.Context())
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase, "%s", st)
	assert.Contains(t, st.Reason, "NotOpened", "Volcano's controller does not run here")

	// Play Volcano's queue controller, which opens a new queue.
	var queue vcscheduling.Queue
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, &queue))
	queue.Status.State = vcscheduling.QueueStateOpen
	require.NoError(t, env.Client.Status().Update(t.Context(), &queue))
	st, err = team.Wait(t.Context(), cube.Ready, cube.Timeout(time.Minute))
	require.NoError(t, err, "%s", st)
}

// quotaEvent is the Warning event the ReplicaSet controller records when
// the API server refuses a pod over a quota (k8s.io/kubernetes
// pkg/controller/controller_utils.go: FailedCreatePodReason, "Error
// creating: %v").
func quotaEvent(ns, rs, quota string, at time.Time) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: rs + ".refused"},
		InvolvedObject: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: ns, Name: rs},
		Reason:         "FailedCreate",
		Type:           corev1.EventTypeWarning,
		Message: `Error creating: pods "` + rs + `-x7k2p" is forbidden: exceeded quota: ` + quota +
			`, requested: requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=1`,
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at), Count: 3,
		Source: corev1.EventSource{Component: "replicaset-controller"},
	}
}

// A pod refused by a quota is reported by Status and fails
// Wait(FailOnStuckPods) at once, naming the quota; a pod created later
// clears it.
func TestARefusedPodIsReported(t *testing.T) {
	c, env, ns := newClient(t)
	rel, err := c.Apply(t.Context(), webApp("shop", "", 1))
	require.NoError(t, err)
	now := time.Now().Add(time.Second)
	require.NoError(t, env.Client.Create(t.Context(), quotaEvent(ns, "shop-5d9c7b8f4", "team-a", now)))
	// An event of another Deployment's ReplicaSet is not the release's.
	require.NoError(t, env.Client.Create(t.Context(), quotaEvent(ns, "shop-canary-6b7c8d9f5", "team-b", now)))

	st, err := rel.Status(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Refusals, 1, "%s", st)
	r := st.Refusals[0]
	assert.Equal(t, "QuotaExceeded", r.Reason)
	assert.Equal(t, "Deployment", r.Object.Kind)
	require.NotNil(t, r.Quota)
	assert.Equal(t, "team-a", r.Quota.Quota)
	assert.Equal(t, "requests.nvidia.com/gpu=2", r.Quota.Requested)
	assert.Equal(t, "requests.nvidia.com/gpu=1", r.Quota.Limited)
	assert.Contains(t, st.String(), "exceeded quota team-a")

	start := time.Now()
	st, err = rel.Wait(t.Context(), cube.Ready, cube.FailOnStuckPods, cube.Timeout(time.Minute))
	require.Error(t, err)
	assert.ErrorIs(t, err, cube.ErrFailed)
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.Equal(t, cube.Failed, st.Phase)
	assert.Contains(t, st.Reason, "exceeded quota team-a")
	assert.Contains(t, st.Reason, "requests.nvidia.com/gpu=2")

	// The quota was raised and the controller created the pod.
	ok := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: "shop-5d9c7b8f4.created"},
		InvolvedObject: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: ns, Name: "shop-5d9c7b8f4"},
		Reason:         "SuccessfulCreate", Type: corev1.EventTypeNormal, Message: "Created pod: shop-5d9c7b8f4-abcde",
		FirstTimestamp: metav1.NewTime(now.Add(2 * time.Second)), LastTimestamp: metav1.NewTime(now.Add(2 * time.Second)),
	}
	require.NoError(t, env.Client.Create(t.Context(), ok))
	st, err = rel.Status(t.Context())
	require.NoError(t, err)
	assert.Empty(t, st.Refusals, "%s", st)
}
