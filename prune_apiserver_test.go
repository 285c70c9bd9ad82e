package cube_test

// Pruning against the real kube-apiserver (internal/testsupport/testenv). No garbage
// collector runs there: a foreground deletion leaves the object marked for
// deletion, which is what the tests look for.

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

// recordRef names the ConfigMap that records release name.
func recordRef(ns, name string) cube.ObjectRef {
	return cube.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Namespace: ns, Name: "cube-release-" + name}
}

// without is w minus its objects of kind.
func without(w cube.Workload, kind string) cube.Workload {
	return cube.WorkloadFunc(func() ([]client.Object, error) {
		objs, err := w.Objects()
		var out []client.Object
		for _, o := range objs {
			if o.GetObjectKind().GroupVersionKind().Kind != kind {
				out = append(out, o)
			}
		}
		return out, err
	})
}

func kindsOf(refs []cube.ObjectRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Kind
	}
	return out
}

// deleted reports whether ref is gone or marked for deletion.
func deleted(t *testing.T, env *testenv.Env, ref cube.ObjectRef) bool {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ref.GroupVersionKind)
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u)
	if apierrors.IsNotFound(err) {
		return true
	}
	require.NoError(t, err)
	return u.GetDeletionTimestamp() != nil
}

func TestApplyPrunesWhatTheReleaseNoLongerHas(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()
	first, err := c.Apply(ctx, webApp("shop", "", 1))
	require.NoError(t, err)
	svc := first.Objects[1]
	require.Equal(t, "Service", svc.Kind)
	record := resourceVersions(t, env, &cube.Release{Objects: []cube.ObjectRef{recordRef(ns, "shop")}})

	// An identical apply prunes nothing and leaves the record untouched.
	again, err := c.Apply(ctx, webApp("shop", "", 1))
	require.NoError(t, err)
	assert.Empty(t, again.Pruned)
	assert.Equal(t, record, resourceVersions(t, env, &cube.Release{Objects: []cube.ObjectRef{recordRef(ns, "shop")}}))

	// A dry run reports what would go and deletes nothing.
	dry, err := c.Apply(ctx, without(webApp("shop", "", 1), "Service"), cube.DryRun)
	require.NoError(t, err)
	assert.Equal(t, []cube.ObjectRef{svc}, dry.Pruned)
	assert.False(t, deleted(t, env, svc))

	// NoPrune keeps the Service, and the record still lists it.
	kept, err := c.Apply(ctx, without(webApp("shop", "", 1), "Service"), cube.NoPrune)
	require.NoError(t, err)
	assert.Empty(t, kept.Pruned)
	assert.False(t, deleted(t, env, svc))
	read, err := c.Release(ctx, ns, "shop")
	require.NoError(t, err)
	assert.Equal(t, []string{"ConfigMap", "Service", "Deployment"}, kindsOf(read.Objects))

	// Without it the Service goes, and the record forgets it.
	pruned, err := c.Apply(ctx, without(webApp("shop", "", 1), "Service"))
	require.NoError(t, err)
	assert.Equal(t, []cube.ObjectRef{svc}, pruned.Pruned)
	assert.Equal(t, []string{"ConfigMap", "Deployment"}, kindsOf(pruned.Objects))
	assert.True(t, deleted(t, env, svc))
	read, err = c.Release(ctx, ns, "shop")
	require.NoError(t, err)
	assert.Equal(t, []string{"ConfigMap", "Deployment"}, kindsOf(read.Objects))
}

// An object someone else has taken over (relabelled) is not pruned.
func TestApplyDoesNotPruneWhatItNoLongerOwns(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()
	_, err := c.Apply(ctx, webApp("shop", "", 1))
	require.NoError(t, err)
	svc := &corev1.Service{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, svc))
	svc.Labels[cube.LabelRelease] = "storefront"
	require.NoError(t, env.Client.Update(ctx, svc))

	rel, err := c.Apply(ctx, without(webApp("shop", "", 1), "Service"))
	require.NoError(t, err)
	assert.Empty(t, rel.Pruned)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "shop"}, svc))
	assert.Nil(t, svc.DeletionTimestamp)
}

// An apply that stops halfway records exactly what may exist, so Delete
// finds it; one that applied nothing leaves no release behind.
func TestApplyThatFailsHalfwayKeepsAnHonestRecord(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()
	id := cube.Identity{Kind: "web", Release: "half"}
	good := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: id.ObjectMeta("half-config", "", nil, nil)}
	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": "half", "labels": map[string]any{cube.LabelRelease: "half"}},
		"spec":     map[string]any{"ports": []any{map[string]any{"port": int64(80)}}, "typo": true},
	}}
	_, err := c.Apply(ctx, cube.Objects(good, bad))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "typo")
	rel, err := c.Release(ctx, ns, "half")
	require.NoError(t, err)
	assert.Equal(t, []string{"ConfigMap"}, kindsOf(rel.Objects), "the ConfigMap was applied; the Service was not")
	require.NoError(t, rel.Delete(ctx))
	assert.True(t, deleted(t, env, rel.Objects[0]))

	_, err = c.Apply(ctx, cube.Objects(bad))
	require.Error(t, err)
	rels, err := c.Releases(ctx, ns)
	require.NoError(t, err)
	assert.Empty(t, rels, "nothing was applied, so no release is recorded")
}

// An apply interrupted after some of its objects are stored (its context
// cancelled, as a program stopping would) leaves a record that lists every
// object of the release that exists, so Delete removes them all: the
// record is written before the objects, never after.
func TestInterruptedApplyLeavesNothingDeleteCannotFind(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var applied atomic.Int32
	interrupting := interceptor.NewClient(env.Client, interceptor.Funcs{
		Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			err := c.Apply(ctx, obj, opts...)
			if applied.Add(1) == 5 {
				cancel()
			}
			return err
		},
	})
	c := cube.NewFromClient(interrupting, cube.Namespace(ns), cube.ApplyParallelism(2))
	const n = 40
	_, err := c.Apply(ctx, cube.Objects(deployments("cut", ns, n)...))
	require.ErrorIs(t, err, context.Canceled)

	var stored appsv1.DeploymentList
	require.NoError(t, env.Client.List(t.Context(), &stored, client.InNamespace(ns), client.MatchingLabels{cube.LabelRelease: "cut"}))
	require.NotEmpty(t, stored.Items, "the apply stopped after it had stored some objects")
	require.Less(t, len(stored.Items), n, "and before it had stored them all")
	rel, err := cube.NewFromClient(env.Client, cube.Namespace(ns)).Release(t.Context(), ns, "cut")
	require.NoError(t, err)
	recorded := map[string]bool{}
	for _, ref := range rel.Objects {
		recorded[ref.Name] = true
	}
	for _, d := range stored.Items {
		assert.True(t, recorded[d.Name], "%s exists but is not in the record", d.Name)
	}
	require.NoError(t, rel.Delete(t.Context()))
	for _, d := range stored.Items {
		ref := cube.ObjectRef{GroupVersionKind: appsv1.SchemeGroupVersion.WithKind("Deployment"), Namespace: ns, Name: d.Name}
		assert.True(t, deleted(t, env, ref), d.Name)
	}
}

// A release that creates the namespace its record lives in (a tenant) gets
// the namespace first.
func TestApplyCreatesTheNamespaceItIsRecordedIn(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := "fresh-" + strings.ToLower(rand.Text()[:8])
	t.Cleanup(func() {
		// No namespace controller runs here: the namespace stays
		// Terminating, which is enough to keep runs apart.
		if err := env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	})
	id := cube.Identity{Kind: "tenant", Release: "fresh"}
	w := cube.Objects(
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: id.ObjectMeta("settings", ns, nil, nil)},
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: id.ObjectMeta(ns, "", nil, nil)},
	)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns))
	rel, err := c.Apply(ctx, w)
	require.NoError(t, err)
	assert.Equal(t, ns, rel.Namespace)
	rels, err := c.Releases(ctx, ns)
	require.NoError(t, err)
	require.Len(t, rels, 1)
	assert.Equal(t, []string{"Namespace", "ConfigMap"}, kindsOf(rels[0].Objects))
}

// Objects of one rank go to the server together: every failure of that rank
// comes back at once, and the record keeps exactly the ones that were
// stored. With a parallelism of 1 Apply stops at the first failure.
func TestApplyReportsEveryFailureOfARank(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	id := cube.Identity{Kind: "cfg", Release: "many"}
	objs := []client.Object{}
	for i := range 8 {
		objs = append(objs, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: id.ObjectMeta(fmt.Sprintf("cm-%d", i), "", nil, nil), Data: map[string]string{"i": fmt.Sprint(i)}})
	}
	bad := func(name string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "labels": map[string]any{cube.LabelRelease: "many"}},
			"dataz":    map[string]any{"typo": "x"},
		}}
	}
	objs = append(objs[:3], append([]client.Object{bad("bad-1")}, objs[3:]...)...)
	objs = append(objs, bad("bad-2"))

	c := cube.NewFromClient(env.Client, cube.Namespace(ns))
	_, err := c.Apply(ctx, cube.Objects(objs...))
	require.Error(t, err)
	assert.Contains(t, err.Error(), `ConfigMap `+ns+`/bad-1`)
	assert.Contains(t, err.Error(), `ConfigMap `+ns+`/bad-2`)
	assert.NotContains(t, err.Error(), "\n", "every failure, on one line")
	rel, err := c.Release(ctx, ns, "many")
	require.NoError(t, err)
	assert.Len(t, rel.Objects, 8, "the eight good ConfigMaps were stored and recorded")

	serial := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.ApplyParallelism(1))
	id2 := cube.Identity{Kind: "cfg", Release: "serial"}
	first := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: id2.ObjectMeta("s-0", "", nil, nil)}
	last := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: id2.ObjectMeta("s-2", "", nil, nil)}
	b := bad("s-1")
	b.SetLabels(map[string]string{cube.LabelRelease: "serial"})
	_, err = serial.Apply(ctx, cube.Objects(first, b, last))
	require.Error(t, err)
	rel, err = serial.Release(ctx, ns, "serial")
	require.NoError(t, err)
	assert.Equal(t, []string{"s-0"}, namesOf(rel.Objects), "in order, stopped at the failure")
	var cm corev1.ConfigMap
	assert.True(t, apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "s-2"}, &cm)))
}

func namesOf(refs []cube.ObjectRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Name
	}
	return out
}
