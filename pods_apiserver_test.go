package cube_test

// Pod diagnostics against the real kube-apiserver (internal/testsupport/testenv). No
// kubelet or scheduler runs there: the test creates the pods a ReplicaSet
// would create, with the release's labels, and writes their status through
// the status subresource as the scheduler and the kubelet would.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

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
