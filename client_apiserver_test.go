package cube_test

// These tests run against a real kube-apiserver and etcd (internal/testsupport/testenv).
// No controllers run there: where a test needs a status, it writes it
// through the status subresource as the controller would (cubetest.MarkObject).

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

func resourceMust(s string) resource.Quantity { return resource.MustParse(s) } // test constants only

func newClient(t testing.TB) (*cube.Client, *testenv.Env, string) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	return cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Clientset(env.Clientset)), env, ns
}

func resourceVersions(t *testing.T, env *testenv.Env, rel *cube.Release) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, ref := range rel.Objects {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(ref.GroupVersionKind)
		require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u))
		out[ref.String()] = u.GetResourceVersion()
	}
	return out
}

func TestApplyIsOrderedAndIdempotent(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()
	rel, err := c.Apply(ctx, webApp("shop", "", 2))
	require.NoError(t, err)
	assert.Equal(t, "shop", rel.Name)
	assert.Equal(t, ns, rel.Namespace)
	kinds := make([]string, len(rel.Objects))
	for i, ref := range rel.Objects {
		kinds[i] = ref.Kind
		assert.Equal(t, ns, ref.Namespace, "namespace filled from the client")
	}
	assert.Equal(t, []string{"ConfigMap", "Service", "Deployment"}, kinds, "configuration before services before workloads")

	var d appsv1.Deployment
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, &d))
	assert.Equal(t, int32(2), *d.Spec.Replicas)
	require.NotEmpty(t, d.ManagedFields)
	assert.Equal(t, "cube:"+ns+"/shop", d.ManagedFields[0].Manager, "each release is its own field manager")
	assert.Equal(t, metav1.ManagedFieldsOperationApply, d.ManagedFields[0].Operation)

	before := resourceVersions(t, env, rel)
	rel2, err := c.Apply(ctx, webApp("shop", "", 2))
	require.NoError(t, err)
	assert.Equal(t, before, resourceVersions(t, env, rel2), "a second identical apply changes no resourceVersion")

	rels, err := c.Releases(ctx, ns)
	require.NoError(t, err)
	require.Len(t, rels, 1)
	assert.Equal(t, rel.Objects, rels[0].Objects)
}

func TestApplyConflictAndForce(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()
	_, err := c.Apply(ctx, webApp("shop", "", 2))
	require.NoError(t, err)

	// Another field manager takes spec.replicas, as `kubectl scale --server-side` would.
	other := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "shop", "namespace": ns},
		"spec":     map[string]any{"replicas": int64(5)},
	}}
	require.NoError(t, env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(other), client.FieldOwner("autoscaler"), client.ForceOwnership))

	_, err = c.Apply(ctx, webApp("shop", "", 3))
	require.Error(t, err)
	assert.True(t, cube.IsConflict(err), "got %v", err)
	assert.True(t, apierrors.IsConflict(err), "the API error is still reachable")
	var ce *cube.ConflictError
	require.ErrorAs(t, err, &ce)
	require.Len(t, ce.Conflicts, 1)
	assert.Equal(t, ".spec.replicas", ce.Conflicts[0].Field)
	assert.Equal(t, "autoscaler", ce.Conflicts[0].Manager)
	assert.Contains(t, err.Error(), `.spec.replicas owned by "autoscaler"`)

	_, err = c.Apply(ctx, webApp("shop", "", 3), cube.Force)
	require.NoError(t, err)
	var d appsv1.Deployment
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, &d))
	assert.Equal(t, int32(3), *d.Spec.Replicas)
}

func TestDryRunStoresNothing(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()
	rel, err := c.Apply(ctx, webApp("shop", "", 1), cube.DryRun)
	require.NoError(t, err)
	assert.Len(t, rel.Objects, 3)
	for _, ref := range rel.Objects {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(ref.GroupVersionKind)
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u)
		assert.True(t, apierrors.IsNotFound(err), "%s: %v", ref, err)
	}
	rels, err := c.Releases(ctx, ns)
	require.NoError(t, err)
	assert.Empty(t, rels)
}

func TestApplyRejectsUnknownFields(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "bad", "labels": map[string]any{cube.LabelRelease: "bad"}},
		"data":     map[string]any{"a": "b"},
		"dataz":    map[string]any{"typo": "x"},
	}}
	_, err := c.Apply(ctx, cube.Objects(bad))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dataz")
	var cm corev1.ConfigMap
	assert.True(t, apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bad"}, &cm)))
}

func TestApplyRejectsMixedReleasesAndUnlabelled(t *testing.T) {
	c, _, _ := newClient(t)
	a := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: cube.Identity{Kind: "x", Release: "a"}.ObjectMeta("a", "", nil, nil)}
	b := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: cube.Identity{Kind: "x", Release: "b"}.ObjectMeta("b", "", nil, nil)}
	plain := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "plain"}}
	_, err := c.Apply(t.Context(), cube.Objects(a, b, plain))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `belongs to release "b", not "a"`)
	assert.Contains(t, err.Error(), `ConfigMap "plain" has no cube.dev/release label`)
}

func TestWaitReadyOnStatusUpdate(t *testing.T) {
	c, env, _ := newClient(t)
	ctx := t.Context()
	rel, err := c.Apply(ctx, webApp("shop", "", 2))
	require.NoError(t, err)

	st, err := rel.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase)

	var phases []cube.Phase
	done := make(chan error, 1)
	firstSeen := make(chan struct{})
	var final cube.Status
	go func() {
		var err error
		final, err = rel.Wait(ctx, cube.Ready, cube.Timeout(30*time.Second), cube.OnProgress(func(s cube.Status) {
			if len(phases) == 0 {
				close(firstSeen)
			}
			phases = append(phases, s.Phase)
		}))
		done <- err
	}()
	<-firstSeen // Wait has seen the unready state
	deploy := rel.Objects[len(rel.Objects)-1]
	require.Equal(t, "Deployment", deploy.Kind)
	require.NoError(t, cubetest.MarkObject(ctx, env.Client, deploy, cube.Ready, "", ""))
	require.NoError(t, <-done)
	assert.Equal(t, cube.Ready, final.Phase)
	assert.Equal(t, []cube.Phase{cube.InProgress, cube.Ready}, phases)
	require.Len(t, final.Objects, 3)
	assert.Equal(t, "2/2 available", final.Objects[2].Message)
}

func TestWaitFailed(t *testing.T) {
	c, env, _ := newClient(t)
	ctx := t.Context()
	rel, err := c.Apply(ctx, webApp("shop", "", 1))
	require.NoError(t, err)
	deploy := rel.Objects[len(rel.Objects)-1]
	require.NoError(t, cubetest.MarkObject(ctx, env.Client, deploy, cube.Failed, "", "pods never became available"))
	st, err := rel.Wait(ctx, cube.Ready, cube.Timeout(30*time.Second))
	require.ErrorIs(t, err, cube.ErrFailed)
	assert.Equal(t, cube.Failed, st.Phase)
	assert.Contains(t, st.Reason, "ProgressDeadlineExceeded: pods never became available")
}

func TestWaitTimesOutWithLastStatus(t *testing.T) {
	c, _, _ := newClient(t)
	ctx := t.Context()
	rel, err := c.Apply(ctx, webApp("shop", "", 1))
	require.NoError(t, err)
	start := time.Now()
	_, err = rel.Wait(ctx, cube.Ready, cube.Timeout(500*time.Millisecond))
	assert.GreaterOrEqual(t, time.Since(start), 500*time.Millisecond)
	require.ErrorIs(t, err, cube.ErrTimeout)
	var we *cube.WaitError
	require.ErrorAs(t, err, &we)
	assert.Equal(t, cube.InProgress, we.Last.Phase)
	assert.Contains(t, we.Last.Reason, "Deployment.apps")
	assert.Contains(t, err.Error(), "last status: InProgress")
}

func TestWaitStopsWhenContextIsCancelled(t *testing.T) {
	c, _, _ := newClient(t)
	rel, err := c.Apply(t.Context(), webApp("shop", "", 1))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err = rel.Wait(ctx, cube.Ready)
	require.ErrorIs(t, err, context.Canceled)
	assert.False(t, errors.Is(err, cube.ErrTimeout))
}

func TestDeleteRemovesTheRelease(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()
	rel, err := c.Apply(ctx, webApp("shop", "", 1))
	require.NoError(t, err)
	_, err = c.Apply(ctx, webApp("other", "", 1))
	require.NoError(t, err)
	require.NoError(t, rel.Delete(ctx))

	for _, ref := range rel.Objects {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(ref.GroupVersionKind)
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u)
		if apierrors.IsNotFound(err) {
			continue
		}
		// Foreground deletion hands owners to the garbage collector, which
		// does not run here: the object must be marked for deletion.
		require.NoError(t, err)
		assert.NotNil(t, u.GetDeletionTimestamp(), "%s not being deleted", ref)
		assert.Contains(t, u.GetFinalizers(), metav1.FinalizerDeleteDependents, ref.String())
	}
	rels, err := c.Releases(ctx, ns)
	require.NoError(t, err)
	require.Len(t, rels, 1)
	assert.Equal(t, "other", rels[0].Name)
	_, err = c.Release(ctx, ns, "shop")
	assert.ErrorIs(t, err, cube.ErrNotFound)
	assert.Equal(t, "get release "+ns+"/shop: release not found", err.Error(), "the storage stays hidden")
}

// BenchmarkApply1000Deployments applies one release of 1,000 Deployments
// with cube.Client.Apply at its default settings and, in the same
// iteration, 1,000 others with plain controller-runtime server-side apply
// from 8 goroutines (each object converted to unstructured first, as
// cube does), alternating which goes first so that neither always meets
// a warmer server (run an even number of iterations: -benchtime 4x). It reports both rates and cube/ssa, the ratio of the
// times (the target is at most 1/0.95).
func BenchmarkApply1000Deployments(b *testing.B) {
	const n, workers = 1000, 8
	env := testenv.Get(b)
	ns := env.Namespace(b)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns))
	ctx := b.Context()
	// Warm the server (schema caches, etcd) and the client (REST mapping,
	// the converter's field cache) with as many objects both ways first:
	// a fresh API server's first thousands of Deployments take up to three
	// times as long, and whichever side met them would pay for it alone.
	if _, err := c.Apply(ctx, cube.Objects(deployments("warm", ns, n)...)); err != nil {
		b.Fatal(err)
	}
	if err := parallelSSA(ctx, env.Client, deployments("warm-ssa", ns, n), workers); err != nil {
		b.Fatal(err)
	}
	// The baseline runs in the same loop, interleaved with cube's applies
	// (alternating which goes first), so both meet the same server state.
	b.ReportAllocs()
	var cubeTime, ssaTime time.Duration
	round := 0
	for b.Loop() {
		round++
		release := cube.Objects(deployments(fmt.Sprintf("c%d", round), ns, n)...)
		plain := deployments(fmt.Sprintf("p%d", round), ns, n)
		apply := func() {
			start := time.Now()
			if _, err := c.Apply(ctx, release); err != nil {
				b.Fatal(err)
			}
			cubeTime += time.Since(start)
		}
		ssa := func() {
			start := time.Now()
			if err := parallelSSA(ctx, env.Client, plain, workers); err != nil {
				b.Fatal(err)
			}
			ssaTime += time.Since(start)
		}
		if round%2 == 1 {
			apply()
			ssa()
		} else {
			ssa()
			apply()
		}
	}
	b.ReportMetric(float64(n*round)/cubeTime.Seconds(), "cube-objects/s")
	b.ReportMetric(float64(n*round)/ssaTime.Seconds(), "ssa-objects/s")
	b.ReportMetric(float64(cubeTime)/float64(ssaTime), "cube/ssa")
}

// parallelSSA is what a program without cube does to apply objs fast:
// server-side apply from workers goroutines.
func parallelSSA(ctx context.Context, c client.Client, objs []client.Object, workers int) error {
	next := make(chan client.Object)
	errs := make(chan error, workers)
	for range workers {
		go func() {
			var first error
			for o := range next {
				u, err := cube.ToUnstructured(o)
				if err == nil {
					err = c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner("plain"))
				}
				if err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		}()
	}
	for _, o := range objs {
		next <- o
	}
	close(next)
	var all []error
	for range workers {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}
