package cubetest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/tenant"
)

// A user's test says what the controllers do, then applies and waits in
// one goroutine, with no naming convention: a fine-tune and a serve, in
// well under a second together.
func TestReactorsApplyWaitInOneGoroutine(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	began := time.Now()
	require.NoError(t, cluster.React(cubetest.Kind("PyTorchJob"), cubetest.After(2*time.Second, cubetest.Succeed())))
	require.NoError(t, cluster.React(cubetest.Kind("Deployment"), cubetest.Ready()))

	ft, err := cluster.Client.Apply(ctx, fineTune("ft", "team-a", 2))
	require.NoError(t, err)
	st, err := ft.Wait(ctx, cube.Succeeded, cube.Timeout(5*time.Second))
	require.NoError(t, err)
	assert.Equal(t, cube.Succeeded, st.Phase)

	chat, err := cluster.Client.Apply(ctx, serve.VLLM("chat", "Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1).Replicas(2))
	require.NoError(t, err)
	st, err = chat.Wait(ctx, cube.Ready, cube.Timeout(5*time.Second))
	require.NoError(t, err)
	assert.Equal(t, cube.Ready, st.Phase)
	require.NoError(t, cluster.Err())
	took := time.Since(began)
	t.Logf("fine-tune and serve applied, reacted and waited in %s", took)
	assert.Less(t, took, time.Second, "apply → wait → react well under a second")
}

// FailWith reaches Wait with its reason; reactions keep the order of
// their delays on the cluster's clock, which does not wait them out.
func TestReactorsFailInOrder(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	require.NoError(t, cluster.React(cubetest.Kind("Deployment"),
		cubetest.After(10*time.Minute, cubetest.FailWith("ProgressDeadlineExceeded", "pods crash")),
		cubetest.After(time.Second, cubetest.Ready())))
	// Every status written, in order.
	w, err := cluster.Fake.Watch(ctx, &appsv1.DeploymentList{}, client.InNamespace("team-a"))
	require.NoError(t, err)
	defer w.Stop()
	began := time.Now()
	rel, err := cluster.Client.Apply(ctx, webApp("shop", 2))
	require.NoError(t, err)
	_, err = rel.Wait(ctx, cube.Succeeded, cube.Timeout(5*time.Second))
	require.Error(t, err, "a Deployment never completes")

	var seen []string
	for len(seen) < 2 {
		select {
		case ev := <-w.ResultChan():
			d, ok := ev.Object.(*appsv1.Deployment)
			require.True(t, ok, "%T", ev.Object)
			for _, c := range d.Status.Conditions {
				seen = append(seen, string(c.Type)+"="+string(c.Status)+" "+c.Reason)
			}
		case <-time.After(time.Second):
			t.Fatalf("saw only %v", seen)
		}
	}
	assert.Equal(t, []string{"Available=True MinimumReplicasAvailable", "Progressing=False ProgressDeadlineExceeded"}, seen)
	st, err := rel.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, cube.Failed, st.Phase)
	assert.Contains(t, st.Reason, "ProgressDeadlineExceeded: pods crash")
	assert.Less(t, time.Since(began), time.Second, "ten minutes on the cluster's clock")
}

// Reactions play only the objects created after they were registered,
// and Release matches every object of a release by the name the test
// gave it.
func TestReactorsOnlyForLaterObjects(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	before, err := cluster.Client.Apply(ctx, webApp("before", 1))
	require.NoError(t, err)
	require.NoError(t, cluster.React(cubetest.Release("before"), cubetest.Ready()))
	require.NoError(t, cluster.React(cubetest.Release("after"), cubetest.Ready()))
	after, err := cluster.Client.Apply(ctx, webApp("after", 1))
	require.NoError(t, err)
	_, err = after.Wait(ctx, cube.Ready, cube.Timeout(5*time.Second))
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond) // ten times the clock's quiet period
	st, err := before.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase, "created before React: left alone")
	// Applying it again changes nothing: the Deployment is not created anew.
	_, err = cluster.Client.Apply(ctx, webApp("before", 1))
	require.NoError(t, err)
	time.Sleep(50 * time.Millisecond)
	st, err = before.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase)
}

// A workload whose pods the quota refuses never becomes Ready or
// Succeeded, whatever the reactions say: its release fails on the
// refusal.
func TestReactorsRespectQuotaRefusals(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	_, err := cluster.Client.Apply(ctx, tenant.New("team-a").Accelerators(hardware.H100, 8))
	require.NoError(t, err)
	require.NoError(t, cluster.React(cubetest.Kind("PyTorchJob"), cubetest.Succeed()))
	rel, err := cluster.Client.Apply(ctx, fineTune("ft", "team-a", 2))
	require.NoError(t, err)
	st, err := rel.Wait(ctx, cube.Succeeded, cube.FailOnStuckPods, cube.Timeout(5*time.Second))
	require.ErrorIs(t, err, cube.ErrFailed)
	require.NotEmpty(t, st.Refusals)
	qe := st.Refusals[0].Quota
	require.NotNil(t, qe, "%s", st)
	assert.Equal(t, "requests.nvidia.com/gpu=8", qe.Limited)
	time.Sleep(50 * time.Millisecond)
	st, err = rel.Status(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, cube.Succeeded, st.Phase, "the reaction did not run the refused job")
	require.NoError(t, cluster.Err())
}

// React refuses what it cannot play, all at once.
func TestReactErrors(t *testing.T) {
	cluster := cubetest.NewCluster(nil)
	err := cluster.React(cubetest.Kind("Widget"), cubetest.After(-time.Second, cubetest.Ready()), cubetest.Reaction{})
	require.Error(t, err)
	assert.ErrorContains(t, err, `no controller writes a status to kind "Widget"`)
	assert.ErrorContains(t, err, "reaction 0: negative delay -1s")
	assert.ErrorContains(t, err, "reaction 1 is zero: use Ready, Succeed or FailWith")
	assert.ErrorContains(t, cluster.React(cubetest.Match{}, cubetest.Ready()), "the match is empty")
	assert.ErrorContains(t, cluster.React(cubetest.Kind("Job.batch")), "no reaction given")
	require.NoError(t, cluster.React(cubetest.Kind("Job.batch.volcano.sh"), cubetest.Ready()))
	var nilCluster *cubetest.Cluster
	assert.EqualError(t, nilCluster.React(cubetest.Kind("Job"), cubetest.Ready()), "cubetest: cluster is nil or zero: make it with cubetest.NewCluster")
	assert.NoError(t, nilCluster.Err())
	assert.False(t, errors.Is(cluster.Err(), cube.ErrFailed))
}

// claimAndApp is a release whose first object (a claim) fails before its
// Deployment does, as Label Studio's does: its data claim comes first.
func claimAndApp(name string) cube.Workload {
	id := cube.Identity{Kind: "web", Release: name}
	app := webApp(name, 1)
	return cube.WorkloadFunc(func() ([]client.Object, error) {
		objs, err := app.Objects()
		if err != nil {
			return nil, err
		}
		claim := &corev1.PersistentVolumeClaim{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: id.ObjectMeta(name+"-data", "", nil, nil),
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}
		svc := &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: id.ObjectMeta(name, "", nil, nil),
			Spec:       corev1.ServiceSpec{Selector: id.Selector(""), Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		}
		return append([]client.Object{claim, svc}, objs...), nil
	})
}

// The code under test reacts to the first object Mark fails (its Wait
// returns, it deletes the release) before Mark reaches the next: Mark must
// not report the objects the reaction deleted (it did: "get Deployment
// team-a/labels: not found" from MarkFailed on Label Studio).
func TestMarkSkipsWhatTheReactionDeleted(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	rel, err := cluster.Client.Apply(ctx, claimAndApp("web"))
	require.NoError(t, err)
	require.Len(t, rel.Objects, 4)

	// Play the reaction deterministically: the first status write deletes
	// the whole release, as the automation does once its Wait fails.
	reacted := false
	cluster.Fake = interceptor.NewClient(cluster.Fake, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if err := c.SubResource(sub).Update(ctx, obj, opts...); err != nil {
				return err
			}
			if !reacted {
				reacted = true
				return rel.Delete(ctx)
			}
			return nil
		},
	})
	require.NoError(t, cluster.MarkFailed(ctx, rel, "Boom", "the controller gave up"))
	assert.True(t, reacted, "the first write reached the reaction")
	var deploys appsv1.DeploymentList
	require.NoError(t, cluster.Fake.List(ctx, &deploys))
	assert.Empty(t, deploys.Items, "the reaction deleted the Deployment before Mark reached it")
}

// Marking objects that were never created stays an error, naming them,
// and writes nothing.
func TestMarkRefusesAReleaseNotApplied(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	rel, err := cluster.Client.Apply(ctx, claimAndApp("web"))
	require.NoError(t, err)
	require.NoError(t, cluster.Fake.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}))

	err = cluster.MarkFailed(ctx, rel, "Boom", "")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mark release team-a/web Failed: get Deployment.apps team-a/web")
	assert.Contains(t, err.Error(), "not found")
	var claim corev1.PersistentVolumeClaim
	require.NoError(t, cluster.Fake.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "web-data"}, &claim))
	assert.Empty(t, claim.Status.Phase, "nothing was written: the claim is still as applied")
}

// The reaction may also land between Mark's read of an object and its
// write: the fake client answers a status update of a deleted Service
// with a failed create ("resourceVersion can not be set for Create
// requests"), not NotFound. Mark skips it too.
func TestMarkSkipsAnObjectDeletedBetweenReadAndWrite(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	rel, err := cluster.Client.Apply(ctx, claimAndApp("web"))
	require.NoError(t, err)
	deleted := 0
	cluster.Fake = interceptor.NewClient(cluster.Fake, interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if obj.GetObjectKind().GroupVersionKind().Kind == "Service" {
				require.NoError(t, c.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: obj.GetNamespace(), Name: obj.GetName()}}))
				deleted++
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		},
	})
	require.NoError(t, cluster.MarkReady(ctx, rel))
	assert.Equal(t, 1, deleted)
	// The objects not deleted were still written.
	var d appsv1.Deployment
	require.NoError(t, cluster.Fake.Get(ctx, client.ObjectKey{Namespace: "team-a", Name: "web"}, &d))
	assert.Equal(t, int32(1), d.Status.AvailableReplicas)
	// And any other failed write is still an error.
	cluster = cubetest.NewCluster(nil, cube.Namespace("team-a"))
	rel, err = cluster.Client.Apply(ctx, claimAndApp("web"))
	require.NoError(t, err)
	cluster.Fake = interceptor.NewClient(cluster.Fake, interceptor.Funcs{
		SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			return errors.New("etcd is down")
		},
	})
	err = cluster.MarkReady(ctx, rel)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "update status of Deployment.apps team-a/web: etcd is down")
}

// Argo's cron controller reports a failed submission as a SubmissionError
// condition; MarkFailed writes it, and the release reports it.
func TestCronWorkflowSubmissionError(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	prepare := pipeline.Container("prepare").Image("python:3.12").Command("python", "prepare.py")
	rel, err := cluster.Client.Apply(ctx, argo.CronWorkflow(pipeline.New("nightly").Namespace("team-a").Step(prepare), "0 2 * * *"))
	require.NoError(t, err)
	require.NoError(t, cluster.MarkFailed(ctx, rel, "", "run policy error: forbidden"))
	st, err := rel.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, cube.Failed, st.Phase)
	assert.Contains(t, st.Reason, "SubmissionError: run policy error: forbidden")
	require.NoError(t, cluster.MarkReady(ctx, rel))
	st, err = rel.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, cube.Ready, st.Phase, st.Reason)
}
