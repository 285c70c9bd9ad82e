package cube_test

// A release owns what it created and nothing else, against the real
// kube-apiserver (internal/testsupport/testenv). No garbage collector or namespace
// controller runs there: a deleted Namespace stays Terminating and a
// foreground deletion leaves the object marked, which `deleted` counts.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/kinds"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
)

// newTenant applies a Tenant that creates its own namespace (not one the
// test environment made), and deletes its cluster-scoped queue and
// namespace afterwards.
func newTenant(t *testing.T, env *testenv.Env, opts ...cube.Option) (*cube.Client, *cube.Release, string) {
	t.Helper()
	name := "tn-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	name = strings.Trim(name[:min(len(name), 40)], "-") + fmt.Sprintf("-%d", time.Now().UnixNano()%100000)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = env.Client.Delete(ctx, &vcscheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}})
		_ = env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	c := cube.NewFromClient(env.Client, append([]cube.Option{cube.Namespace(name), cube.Kinds(kinds.All()...)}, opts...)...)
	rel, err := c.Apply(t.Context(), tenant.New(name).Accelerators(hardware.H100, 1))
	require.NoError(t, err)
	return c, rel, name
}

func nsRef(name string) cube.ObjectRef {
	return cube.ObjectRef{GroupVersionKind: corev1.SchemeGroupVersion.WithKind("Namespace"), Name: name}
}

// The case the issue opened with: a PyTorchJob named like the tenant it
// runs in would have pruned the whole tenant, Namespace included.
func TestApplyRefusesANameTakenByAnotherKind(t *testing.T) {
	env := testenv.Get(t)
	c, team, ns := newTenant(t, env)
	assert.Equal(t, "tenant", team.Kind)
	assert.Len(t, team.UID, 32)

	job := train.PyTorch(ns).Namespace(ns).Image("busybox:1.36").Command("true")
	_, err := c.Apply(t.Context(), job)
	require.Error(t, err)
	assert.ErrorIs(t, err, cube.ErrNameTaken)
	assert.Contains(t, err.Error(), "is a tenant release")
	assert.Contains(t, err.Error(), "pytorchjob")
	assert.NotContains(t, err.Error(), "\n")
	// A dry run is refused the same way.
	_, err = c.Apply(t.Context(), job, cube.DryRun)
	assert.ErrorIs(t, err, cube.ErrNameTaken)

	// Nothing of the tenant was touched.
	for _, ref := range team.Objects {
		assert.False(t, deleted(t, env, ref), "%s", ref)
	}
	back, err := c.Release(t.Context(), ns, ns)
	require.NoError(t, err)
	assert.Equal(t, "tenant", back.Kind)
	assert.Equal(t, team.UID, back.UID)
	assert.ElementsMatch(t, team.Objects, back.Objects)

	// Under another name the job goes in beside the tenant.
	rel, err := c.Apply(t.Context(), train.PyTorch("train").Namespace(ns).Image("busybox:1.36").Command("true"))
	require.NoError(t, err)
	assert.Equal(t, "pytorchjob", rel.Kind)
	listed, err := c.Releases(t.Context(), ns, cube.OfKind("pytorchjob"))
	require.NoError(t, err)
	require.Len(t, listed, 1)
	assert.Equal(t, "train", listed[0].Name)
	all, err := c.Releases(t.Context(), ns)
	require.NoError(t, err)
	assert.Len(t, all, 2)
}

// Deleting a Tenant's release deletes the Namespace it created; a
// Namespace that existed before (an administrator's) is adopted and never
// deleted, and prune never deletes a Namespace.
func TestTenantNamespaceGoesOnlyWithTheTenantThatCreatedIt(t *testing.T) {
	env := testenv.Get(t)
	c, team, ns := newTenant(t, env)
	require.NoError(t, team.Delete(t.Context()))
	assert.True(t, deleted(t, env, nsRef(ns)), "the tenant created its namespace: it goes with it")

	// An administrator's namespace made a tenant stays when the tenant goes.
	admin := env.Namespace(t)
	c = cube.NewFromClient(env.Client, cube.Namespace(admin))
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &vcscheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: admin}})
	})
	rel, err := c.Apply(t.Context(), tenant.New(admin).CPU("4"))
	require.NoError(t, err)
	require.NoError(t, rel.Delete(t.Context()))
	assert.False(t, deleted(t, env, nsRef(admin)), "an adopted namespace is not the release's to delete")
	var quota corev1.ResourceQuota
	err = env.Client.Get(t.Context(), client.ObjectKey{Namespace: admin, Name: admin}, &quota)
	assert.True(t, apierrors.IsNotFound(err) || quota.DeletionTimestamp != nil, "what the tenant created in it goes: %v", err)
}

func TestPruneNeverDeletesANamespace(t *testing.T) {
	c, env, ns := newClient(t)
	name := ns + "-extra"
	id := cube.Identity{Kind: "bundle", Release: "bundle"}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
	withNS := cube.Objects(
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: id.ObjectMeta(name, "", nil, nil)},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: id.ObjectMeta("settings", ns, nil, nil)},
	)
	first, err := c.Apply(t.Context(), withNS)
	require.NoError(t, err)
	second, err := c.Apply(t.Context(), without(withNS, "Namespace"))
	require.NoError(t, err)
	assert.Empty(t, second.Pruned)
	assert.False(t, deleted(t, env, nsRef(name)))
	// It stays in the record, so that an explicit Delete removes it.
	back, err := c.Release(t.Context(), ns, "bundle")
	require.NoError(t, err)
	assert.Contains(t, back.Objects, nsRef(name))
	require.NoError(t, first.Delete(t.Context()))
	assert.True(t, deleted(t, env, nsRef(name)))
}

// clusterRole is a cluster-scoped object of release name: the same object
// for a release of that name in any namespace.
func clusterRole(release, name string) cube.Workload {
	id := cube.Identity{Kind: "rbac", Release: release}
	return cube.Objects(&rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: id.ObjectMeta(name, "", nil, nil),
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
	})
}

// Releases of one name in two namespaces are two releases: an object one
// of them made is not the other's to change or delete.
func TestANameReusedAcrossNamespacesIsAnotherRelease(t *testing.T) {
	env := testenv.Get(t)
	nsA, nsB := env.Namespace(t), env.Namespace(t)
	role := "cube-test-" + nsA
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}})
	})
	a := cube.NewFromClient(env.Client, cube.Namespace(nsA))
	b := cube.NewFromClient(env.Client, cube.Namespace(nsB))
	relA, err := a.Apply(t.Context(), clusterRole("reader", role))
	require.NoError(t, err)

	// The same release name in another namespace applies the same
	// cluster-scoped object: refused, naming the release that has it.
	_, err = b.Apply(t.Context(), clusterRole("reader", role))
	require.Error(t, err)
	assert.ErrorIs(t, err, cube.ErrNameTaken)
	assert.True(t, cube.IsConflict(err))
	assert.Contains(t, err.Error(), "belongs to release "+nsA+"/reader")
	assert.NotContains(t, err.Error(), "\n")

	var stored rbacv1.ClusterRole
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Name: role}, &stored))
	assert.Equal(t, relA.UID, stored.Labels[cube.LabelReleaseUID], "the first release's object is untouched")

	// B's failed release, deleted, leaves A's object alone.
	relB, err := b.Release(t.Context(), nsB, "reader")
	if err == nil {
		require.NoError(t, relB.Delete(t.Context()))
	}
	assert.False(t, deleted(t, env, relA.Objects[0]))
	require.NoError(t, relA.Delete(t.Context()))
	assert.True(t, deleted(t, env, relA.Objects[0]))
}

// A record lost (deleted by hand) starts a new release: what the old one
// made keeps the old UID, and neither prune nor Delete of the new release
// touches it.
func TestALostRecordNeverDeletesTheOldReleasesObjects(t *testing.T) {
	c, env, ns := newClient(t)
	old, err := c.Apply(t.Context(), webApp("shop", "", 1))
	require.NoError(t, err)
	require.NoError(t, env.Client.Delete(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cube-release-shop"}}))
	_, err = c.Release(t.Context(), ns, "shop")
	assert.ErrorIs(t, err, cube.ErrNotFound)
	assert.NotContains(t, err.Error(), "cube-release-", "the storage stays hidden")

	renewed, err := c.Apply(t.Context(), without(webApp("shop", "", 1), "Service"))
	require.NoError(t, err)
	assert.NotEqual(t, old.UID, renewed.UID)
	require.NoError(t, renewed.Delete(t.Context()))
	svc := old.Objects[1]
	require.Equal(t, "Service", svc.Kind)
	assert.False(t, deleted(t, env, svc), "the Service carries the lost release's UID")
	for _, ref := range renewed.Objects {
		assert.True(t, deleted(t, env, ref), "%s", ref)
	}
}

// A record edited by hand to list an object cube did not make: neither
// prune nor Delete removes it.
func TestAnEditedRecordNeverDeletesWhatCubeDidNotMake(t *testing.T) {
	c, env, ns := newClient(t)
	rel, err := c.Apply(t.Context(), webApp("shop", "", 1))
	require.NoError(t, err)
	foreign := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "team-settings", Labels: map[string]string{cube.LabelRelease: "shop", cube.LabelManagedBy: cube.ManagedBy}},
	}
	require.NoError(t, env.Client.Create(t.Context(), foreign))
	var record corev1.ConfigMap
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "cube-release-shop"}, &record))
	record.Data["objects"] += "\nv1 ConfigMap " + ns + " team-settings\nv1 Namespace - " + ns
	require.NoError(t, env.Client.Update(t.Context(), &record))

	again, err := c.Apply(t.Context(), webApp("shop", "", 1))
	require.NoError(t, err)
	assert.Empty(t, again.Pruned, "objects without the release's UID are not pruned")
	require.NoError(t, rel.Delete(t.Context()))
	assert.False(t, deleted(t, env, cube.ObjectRef{GroupVersionKind: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Namespace: ns, Name: "team-settings"}))
	assert.False(t, deleted(t, env, nsRef(ns)))
}

// Two services embedding cube own their fields apart: the second changing
// the first's value is a conflict naming the first, unless forced.
func TestTwoFieldOwnersConflict(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	portalA := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.FieldOwner("portal-a"))
	portalB := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.FieldOwner("portal-b"))
	_, err := portalA.Apply(t.Context(), webApp("shop", "", 1))
	require.NoError(t, err)
	var d corev1.ConfigMap
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "shop-config"}, &d))
	managers := map[string]bool{}
	for _, mf := range d.ManagedFields {
		managers[mf.Manager] = true
	}
	assert.True(t, managers["portal-a:"+ns+"/shop"], "%v", managers)

	_, err = portalB.Apply(t.Context(), webApp("shop", "", 3))
	require.Error(t, err)
	assert.True(t, cube.IsConflict(err), "%v", err)
	assert.Contains(t, err.Error(), "portal-a:"+ns+"/shop")
	_, err = portalB.Apply(t.Context(), webApp("shop", "", 3), cube.Force)
	require.NoError(t, err)

	_, err = cube.New(env.Config, cube.FieldOwner("bad owner"))
	assert.ErrorContains(t, err, `field owner "bad owner"`)
	_, err = cube.New(env.Config, cube.FieldOwner(""))
	assert.Error(t, err)
}

// Applies racing on one name: of one kind, both land in one release; of
// two kinds, exactly one wins and the other is refused.
func TestApplyRacingApplyOnOneName(t *testing.T) {
	c, env, ns := newClient(t)
	other := cube.NewFromClient(env.Client, cube.Namespace(ns))
	var wg sync.WaitGroup
	rels := make([]*cube.Release, 2)
	errs := make([]error, 2)
	for i, cl := range []*cube.Client{c, other} {
		wg.Go(func() { rels[i], errs[i] = cl.Apply(t.Context(), webApp("shop", "", 1)) })
	}
	wg.Wait()
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	assert.Equal(t, rels[0].UID, rels[1].UID, "one release")

	for round := range 5 {
		name := fmt.Sprintf("race-%d", round)
		web := webApp(name, "", 1)
		job := train.PyTorch(name).Image("busybox:1.36").Command("true")
		wg.Go(func() { _, errs[0] = c.Apply(t.Context(), web) })
		wg.Go(func() { _, errs[1] = other.Apply(t.Context(), job) })
		wg.Wait()
		failed := 0
		for _, err := range errs {
			if err != nil {
				failed++
				assert.ErrorIs(t, err, cube.ErrNameTaken)
			}
		}
		assert.Equal(t, 1, failed, "round %d: %v", round, errors.Join(errs...))
		back, err := c.Release(t.Context(), ns, name)
		require.NoError(t, err)
		switch back.Kind {
		case "web":
			assert.NoError(t, errs[0])
		case "pytorchjob":
			assert.NoError(t, errs[1])
		default:
			t.Fatalf("round %d: release kind %q", round, back.Kind)
		}
	}
}
