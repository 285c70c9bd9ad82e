package cube_test

// A release owns what it created and nothing else, against the real
// kube-apiserver (internal/testsupport/testenv). No garbage collector or namespace
// controller runs there: a deleted Namespace stays Terminating and a
// foreground deletion leaves the object marked, which `deleted` counts.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
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

func TestClientRules(t *testing.T) {
	rules, err := cube.ClientRules(webApp("shop", "", 1))
	require.NoError(t, err)
	all := []string{"create", "delete", "get", "list", "patch", "watch"}
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: all},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: all},
	}, rules)

	// Without a ConfigMap of its own, a release still writes its record.
	rules, err = cube.ClientRules(deploymentOnly(webApp("shop", "", 1)))
	require.NoError(t, err)
	assert.Equal(t, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create", "delete", "get", "list", "patch"}}, rules[0])

	_, err = cube.ClientRules(webApp("shop", "", 1), nil)
	require.ErrorContains(t, err, "workload 1: workload is nil")
}

// deploymentOnly keeps the Deployment of w: the same release with its
// Service and ConfigMap dropped, which Apply prunes.
func deploymentOnly(w cube.Workload) cube.Workload {
	return cube.WorkloadFunc(func() ([]client.Object, error) {
		objs, err := w.Objects()
		return slices.DeleteFunc(objs, func(o client.Object) bool { _, ok := o.(*appsv1.Deployment); return !ok }), err
	})
}

// withIPCLock is w with IPC_LOCK added to its Deployment's container, which
// the baseline level refuses.
func withIPCLock(w cube.Workload) cube.Workload {
	return cube.WorkloadFunc(func() ([]client.Object, error) {
		objs, err := w.Objects()
		for _, o := range objs {
			if d, ok := o.(*appsv1.Deployment); ok {
				d.Spec.Template.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{
					Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"IPC_LOCK"}}}
			}
		}
		return objs, err
	})
}

// asUser binds user to a Role of exactly rules in ns and returns a
// Client authenticated as that user (impersonated by the admin
// credentials), once the RBAC authorizer knows the binding.
func asUser(t *testing.T, env *testenv.Env, ns, user string, rules []rbacv1.PolicyRule) *cube.Client {
	t.Helper()
	ctx := t.Context()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns}, Rules: rules}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: user, Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	require.NoError(t, env.Client.Create(ctx, role))
	require.NoError(t, env.Client.Create(ctx, binding))
	// RBAC reads roles and bindings through informers: wait until the
	// authorizer grants one of the rules.
	var probe authorizationv1.ResourceAttributes
	for _, r := range rules {
		if len(r.Verbs) > 0 {
			probe = authorizationv1.ResourceAttributes{Namespace: ns, Verb: r.Verbs[0], Group: r.APIGroups[0], Resource: r.Resources[0]}
			if r.Resources[0] == "namespaces" {
				probe.Name = ns
			}
			break
		}
	}
	require.Eventually(t, func() bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &probe}}
		return env.Client.Create(ctx, sar) == nil && sar.Status.Allowed
	}, 30*time.Second, 50*time.Millisecond, "the binding of %s reaches the authorizer", user)

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cl, err := client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return cube.NewFromClient(cl, cube.Namespace(ns), cube.Clientset(cs))
}

// lifecycle does with c what a program running cube does with a release,
// and returns the steps that did not work, each with why. Every step
// also says what it proves the rules needed.
func lifecycle(ctx context.Context, t *testing.T, env *testenv.Env, c *cube.Client, ns, release string) []string {
	t.Helper()
	var failed []string
	fail := func(step string, err error) { failed = append(failed, fmt.Sprintf("%s: %v", step, err)) }

	// Apply the Deployment, Service and ConfigMap (create, patch) and the
	// record (configmaps create).
	rel, err := c.Apply(ctx, webApp(release, "", 1))
	if err != nil {
		return append(failed, fmt.Sprintf("apply: %v", err)) // nothing else can follow
	}
	// The Pod Security check reads the namespace (namespaces get).
	_, err = c.Apply(ctx, withIPCLock(webApp(release+"-rdma", "", 1)))
	if ps := (*cube.PodSecurityError)(nil); !errors.As(err, &ps) {
		fail("pod security check", fmt.Errorf("want a *PodSecurityError, got %v", err))
	}
	// The quota refused a pod of the Deployment, as its ReplicaSet's
	// controller reports it: Wait follows the events (list, watch) and
	// fails at once; Status lists them (events list).
	refused := quotaEvent(ns, release+"-5d9c7b8f4", "team", time.Now())
	require.NoError(t, env.Client.Create(ctx, refused))
	if _, err := rel.Wait(ctx, cube.Ready, cube.FailOnStuckPods, cube.Timeout(5*time.Second)); !errors.Is(err, cube.ErrFailed) || !strings.Contains(err.Error(), "exceeded quota team") {
		fail("wait for a refusal", fmt.Errorf("want the refused pod to fail the wait, got %v", err))
	}
	if st, err := rel.Status(ctx); err != nil {
		fail("status of a refusal", err)
	} else if len(st.Refusals) != 1 {
		fail("status of a refusal", fmt.Errorf("want the refusal, got %v", st.Refusals))
	}
	// The controller created the pod after all: the refusal is over.
	created := quotaEvent(ns, release+"-5d9c7b8f4", "team", time.Now().Add(2*time.Second))
	created.Name, created.Reason, created.Type, created.Message = created.Name+"-ok", "SuccessfulCreate", corev1.EventTypeNormal, "Created pod"
	require.NoError(t, env.Client.Create(ctx, created))

	// A pod of the release that cannot pull its image, as a ReplicaSet
	// and the kubelet would leave it.
	p := &corev1.Pod{
		ObjectMeta: cube.Identity{Kind: "web", Release: release, PartOf: "shop"}.ObjectMeta(release+"-pod", ns, nil, nil),
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
	}
	require.NoError(t, env.Client.Create(ctx, p))
	p.Status = pullBackOff
	require.NoError(t, env.Client.Status().Update(ctx, p))

	// Wait follows the objects (list, watch) and the pods (pods list,
	// watch): it fails at once on the stuck pod instead of timing out.
	if _, err := rel.Wait(ctx, cube.Ready, cube.FailOnStuckPods, cube.Timeout(5*time.Second)); !errors.Is(err, cube.ErrFailed) {
		fail("wait", fmt.Errorf("want the stuck pod to fail the wait, got %v", err))
	}
	// Status reads each object (get) and the pods (pods list).
	if st, err := rel.Status(ctx); err != nil {
		fail("status", err)
	} else if len(st.Pods) != 1 {
		fail("status", fmt.Errorf("want the stuck pod, got %v", st.Pods))
	}
	// Logs lists the pods and asks for their logs (pods/log get) of
	// containers that have started (it leaves out one still waiting, as
	// the stuck pod is): the pod runs now. The pod has no node, so the
	// server answers with an error; only a refusal counts.
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "web", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
	}}}
	require.NoError(t, env.Client.Status().Update(ctx, p))
	if r, err := rel.Logs(ctx); err == nil {
		r.Close()
	} else if apierrors.IsForbidden(err) {
		fail("logs", err)
	}
	// The release is found again from its record (configmaps get, list).
	if _, err := c.Release(ctx, ns, release); err != nil {
		fail("release", err)
	}
	if rels, err := c.Releases(ctx, ns); err != nil {
		fail("releases", err)
	} else if !slices.ContainsFunc(rels, func(r *cube.Release) bool { return r.Name == release }) {
		fail("releases", fmt.Errorf("%s is not listed", release))
	}
	// Applying the release without its Service and ConfigMap prunes them
	// (get, delete) and rewrites the record (configmaps patch).
	slim, err := c.Apply(ctx, deploymentOnly(webApp(release, "", 1)))
	switch {
	case err != nil:
		fail("prune", err)
	case len(slim.Pruned) != 2:
		fail("prune", fmt.Errorf("want the Service and the ConfigMap pruned, got %v", slim.Pruned))
	}
	// Delete removes the objects and the record (delete).
	if err := rel.Delete(ctx); err != nil {
		fail("delete", err)
	}
	return failed
}

// TestClientRulesAreEnoughAndEachIsNeeded runs a release's whole life as a
// user bound to a Role of exactly ClientRules: every step works. Then,
// for every verb of every rule, as a user whose Role lacks only that
// verb: some step fails, so the rules hold nothing cube does not use.
func TestClientRulesAreEnoughAndEachIsNeeded(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	var nsObj corev1.Namespace
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: ns}, &nsObj))
	if nsObj.Labels == nil {
		nsObj.Labels = map[string]string{}
	}
	nsObj.Labels[tenant.LabelPodSecurityEnforce] = string(tenant.PodSecurityBaseline)
	require.NoError(t, env.Client.Update(ctx, &nsObj))

	rules, err := cube.ClientRules(webApp("shop", "", 1))
	require.NoError(t, err)

	c := asUser(t, env, ns, "cube-runner", rules)
	require.Empty(t, lifecycle(ctx, t, env, c, ns, "full"), "every step works with exactly ClientRules")

	n := 0
	for i, r := range rules {
		for j, verb := range r.Verbs {
			n++
			less := make([]rbacv1.PolicyRule, len(rules))
			for k := range rules {
				less[k] = *rules[k].DeepCopy()
			}
			less[i].Verbs = slices.Delete(slices.Clone(r.Verbs), j, j+1)
			if len(less[i].Verbs) == 0 {
				less = slices.Delete(less, i, i+1)
			}
			what := verb + " " + r.Resources[0]
			t.Run(what, func(t *testing.T) {
				c := asUser(t, env, ns, fmt.Sprintf("cube-runner-%d", n), less)
				failed := lifecycle(ctx, t, env, c, ns, fmt.Sprintf("less-%d", n))
				assert.NotEmpty(t, failed, "without %s every step still works: the rule is not needed", what)
				t.Logf("without %s: %v", what, failed)
			})
		}
	}
}

// A namespace that warns on the restricted Pod Security level accepts a
// Deployment whose pods would violate it, with a warning: Release.Warnings
// carries the API server's words, once each, and a release in a namespace
// without the label has none. The handler the rest config had still sees
// every warning.
func TestApplyReportsTheAPIServersWarnings(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	warned, quiet := env.Namespace(t), env.Namespace(t)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{
		"pod-security.kubernetes.io/warn":         "restricted",
		"pod-security.kubernetes.io/warn-version": "latest",
	}}})
	require.NoError(t, err)
	_, err = env.Clientset.CoreV1().Namespaces().Patch(ctx, warned, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)

	cfg := rest.CopyConfig(env.Config)
	seen := &countingHandler{}
	cfg.WarningHandlerWithContext = seen
	c, err := cube.New(cfg)
	require.NoError(t, err)

	rel, err := c.Apply(ctx, webApp("shop", warned, 1))
	require.NoError(t, err)
	require.Len(t, rel.Warnings, 1, "%q", rel.Warnings)
	assert.Contains(t, rel.Warnings[0], `would violate PodSecurity "restricted:latest"`)
	assert.Contains(t, rel.Warnings[0], "allowPrivilegeEscalation != false")
	assert.Positive(t, seen.n.Load(), "the config's own handler still hears the warnings")

	again, err := c.Apply(ctx, webApp("shop", warned, 2))
	require.NoError(t, err)
	assert.Equal(t, rel.Warnings, again.Warnings, "every Apply reports what the server said to it")

	other, err := c.Apply(ctx, webApp("shop", quiet, 1))
	require.NoError(t, err)
	assert.Empty(t, other.Warnings)
}

type countingHandler struct{ n atomic.Int32 }

func (h *countingHandler) HandleWarningHeaderWithContext(_ context.Context, code int, _, _ string) {
	if code == 299 {
		h.n.Add(1)
	}
}

// Pod diagnostics against the real kube-apiserver (internal/testsupport/testenv). No
// kubelet or scheduler runs there: the test creates the pods a ReplicaSet
// would create, with the release's labels, and writes their status through
// the status subresource as the scheduler and the kubelet would.

// releasePod creates a pod of release shop, as the Deployment's ReplicaSet
// would, and returns it.
func releasePod(t *testing.T, env *testenv.Env, ns, name string) *corev1.Pod {
	t.Helper()
	id := cube.Identity{Kind: "web", Release: "shop", PartOf: "shop"}
	p := &corev1.Pod{
		ObjectMeta: id.ObjectMeta(name, ns, nil, nil),
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
	}
	require.NoError(t, env.Client.Create(t.Context(), p))
	return p
}

func setPodStatus(t *testing.T, env *testenv.Env, p *corev1.Pod, st corev1.PodStatus) {
	t.Helper()
	p.Status = st
	require.NoError(t, env.Client.Status().Update(t.Context(), p))
}

var unschedulable = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
	Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
	Message: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.", LastTransitionTime: metav1.Now(),
}}}

var pullBackOff = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
	Name: "web", Image: "nginx:1.27",
	State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "nginx:1.27"`}},
}}}

func TestStatusAndWaitReportPodProblems(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()
	rel, err := c.Apply(ctx, webApp("shop", "", 2))
	require.NoError(t, err)
	a, b := releasePod(t, env, ns, "shop-a"), releasePod(t, env, ns, "shop-b")
	setPodStatus(t, env, a, unschedulable)

	st, err := rel.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase)
	assert.Equal(t, []cube.PodProblem{{Pod: "shop-a", Reason: "Unschedulable", Message: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}}, st.Pods)

	// Wait reports pod problems as they come, and without FailOnStuckPods
	// it keeps waiting through a stuck pod until the timeout.
	var seen [][]cube.PodProblem
	firstSeen := make(chan struct{})
	updated := make(chan error, 1)
	go func() {
		// Once Wait has reported the unschedulable pod, the other one
		// cannot pull its image.
		select {
		case <-firstSeen:
		case <-ctx.Done():
			updated <- ctx.Err()
			return
		}
		b.Status = pullBackOff
		updated <- env.Client.Status().Update(ctx, b)
	}()
	_, err = rel.Wait(ctx, cube.Ready, cube.Timeout(5*time.Second), cube.OnProgress(func(s cube.Status) {
		if len(seen) == 0 {
			close(firstSeen)
		}
		seen = append(seen, s.Pods)
	}))
	require.NoError(t, <-updated)
	require.ErrorIs(t, err, cube.ErrTimeout)
	require.NotEmpty(t, seen)
	assert.Len(t, seen[0], 1, "the first report knows the unschedulable pod")
	last := seen[len(seen)-1]
	require.Len(t, last, 2, "the stuck pod is reported once its status changes")
	assert.Equal(t, cube.PodProblem{Pod: "shop-b", Container: "web", Reason: "ImagePullBackOff", Message: `Back-off pulling image "nginx:1.27"`, Stuck: true}, last[1])
	var we *cube.WaitError
	require.ErrorAs(t, err, &we)
	assert.Len(t, we.Last.Pods, 2, "the timeout carries the pod problems")
	assert.Contains(t, err.Error(), "pod shop-a: Unschedulable")

	// With FailOnStuckPods the same release fails at once.
	start := time.Now()
	st, err = rel.Wait(ctx, cube.Ready, cube.Timeout(time.Minute), cube.FailOnStuckPods)
	require.ErrorIs(t, err, cube.ErrFailed)
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.Equal(t, cube.Failed, st.Phase)
	assert.Equal(t, `pod shop-b container web: ImagePullBackOff: Back-off pulling image "nginx:1.27"`, st.Reason)

	// Deleting the stuck pod clears its problem.
	require.NoError(t, env.Client.Delete(ctx, b))
	st, err = rel.Status(ctx)
	require.NoError(t, err)
	assert.Len(t, st.Pods, 1)
}

// A caller who may read the release's objects but not its pods still gets
// their status and can wait on them: pods are diagnostics.
func TestPodProblemsNeedNoPodAccess(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()
	rel, err := c.Apply(ctx, webApp("shop", "", 1))
	require.NoError(t, err)
	setPodStatus(t, env, releasePod(t, env, ns, "shop-a"), unschedulable)

	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "release-reader", Namespace: ns},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"services", "configmaps"}, Verbs: []string{"get", "list", "watch"}},
		},
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "release-reader", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}},
	}
	require.NoError(t, env.Client.Create(ctx, role))
	require.NoError(t, env.Client.Create(ctx, binding))

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice"}
	alice, err := client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	// RBAC reads roles through an informer: wait until alice may read.
	require.Eventually(t, func() bool {
		_, err := cube.NewFromClient(alice, cube.Namespace(ns)).Release(ctx, ns, "shop")
		return err == nil
	}, 10*time.Second, 50*time.Millisecond)
	ac := cube.NewFromClient(alice, cube.Namespace(ns))
	arel, err := ac.Release(ctx, ns, rel.Name)
	require.NoError(t, err)

	st, err := arel.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase)
	assert.Empty(t, st.Pods, "alice may not list pods")

	_, err = arel.Wait(ctx, cube.Ready, cube.Timeout(time.Second))
	require.ErrorIs(t, err, cube.ErrTimeout, "the forbidden pod watch does not end the wait")
}
