package cube_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/tenant"
)

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
