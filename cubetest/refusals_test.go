package cubetest_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/train"
)

// gpuOverQuota is what cube reads of a pod asking two GPUs of a tenant
// team-a whose quota allows one and uses none.
var gpuOverQuota = &cube.QuotaExceededError{
	Quota: "team-a", Requested: "requests.nvidia.com/gpu=2", Used: "requests.nvidia.com/gpu=0", Limited: "requests.nvidia.com/gpu=1",
}

// overQuota is the API server's answer to creating that pod.
func overQuota(pod string) string {
	return cubetest.QuotaExceededMessage(pod, "team-a", "requests.nvidia.com/gpu", "2", "0", "1")
}

// eventsOf returns the events stored in namespace.
func eventsOf(t *testing.T, cluster *cubetest.Cluster, namespace string) []corev1.Event {
	t.Helper()
	var events corev1.EventList
	require.NoError(t, cluster.Fake.List(t.Context(), &events, client.InNamespace(namespace)))
	return events.Items
}

// A Deployment's pods refused by the tenant's quota: the ReplicaSet
// controller's event reaches Status and fails a Wait with FailOnStuckPods
// at once; a Wait without it keeps waiting and shows the refusal in its
// last status. Refusing again counts the same event again.
func TestRefusePodsOfADeployment(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	rel, err := cluster.Client.Apply(ctx, webApp("shop", 2))
	require.NoError(t, err)
	message := overQuota("shop-6f7b9c4d8-x2x9z")
	require.NoError(t, cluster.RefusePods(ctx, rel, message))

	events := eventsOf(t, cluster, "team-a")
	require.Len(t, events, 1)
	ev := events[0]
	assert.Equal(t, "ReplicaSet", ev.InvolvedObject.Kind)
	assert.Equal(t, "apps/v1", ev.InvolvedObject.APIVersion)
	assert.Equal(t, "team-a", ev.InvolvedObject.Namespace)
	hash, ok := strings.CutPrefix(ev.InvolvedObject.Name, "shop-")
	require.True(t, ok, "named after its Deployment: %s", ev.InvolvedObject.Name)
	assert.NotEmpty(t, hash)
	assert.NotContains(t, hash, "-")
	assert.Equal(t, corev1.EventTypeWarning, ev.Type)
	assert.Equal(t, "FailedCreate", ev.Reason)
	assert.Equal(t, `Error creating: pods "shop-6f7b9c4d8-x2x9z" is forbidden: exceeded quota: team-a, requested: requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=1`, ev.Message)
	assert.Equal(t, int32(1), ev.Count)
	assert.Equal(t, corev1.EventSource{Component: "replicaset-controller"}, ev.Source)
	assert.Equal(t, ev.FirstTimestamp, ev.LastTimestamp)

	deployment := rel.Objects[1]
	require.Equal(t, "Deployment", deployment.Kind)
	st, err := rel.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st.Refusals, 1)
	refusal := st.Refusals[0]
	assert.Equal(t, deployment, refusal.Object)
	assert.Equal(t, "QuotaExceeded", refusal.Reason)
	assert.Equal(t, ev.Message, refusal.Message)
	assert.Equal(t, gpuOverQuota, refusal.Quota)
	assert.Equal(t, int32(1), refusal.Count)
	assert.WithinDuration(t, time.Now(), refusal.Last, 2*time.Second)

	began := time.Now()
	st, err = rel.Wait(ctx, cube.Ready, cube.FailOnStuckPods, cube.Timeout(time.Minute))
	require.ErrorIs(t, err, cube.ErrFailed)
	assert.Less(t, time.Since(began), time.Second, "no waiting for the timeout")
	assert.Equal(t, cube.Failed, st.Phase)
	assert.Equal(t, "Deployment.apps team-a/shop: pods refused: exceeded quota team-a: requested requests.nvidia.com/gpu=2, used requests.nvidia.com/gpu=0, limited to requests.nvidia.com/gpu=1", st.Reason)

	_, err = rel.Wait(ctx, cube.Ready, cube.Timeout(50*time.Millisecond))
	require.ErrorIs(t, err, cube.ErrTimeout, "without FailOnStuckPods a refusal only shows")
	var we *cube.WaitError
	require.ErrorAs(t, err, &we)
	assert.Equal(t, []cube.Refusal{refusal}, we.Last.Refusals)

	require.NoError(t, cluster.RefusePods(ctx, rel, message))
	events = eventsOf(t, cluster, "team-a")
	require.Len(t, events, 1, "the same refusal is counted, not recorded twice")
	assert.Equal(t, int32(2), events[0].Count)
	assert.Equal(t, ev.Name, events[0].Name)
	st, err = rel.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st.Refusals, 1)
	assert.Equal(t, int32(2), st.Refusals[0].Count)
}

// Each kind's refusal is recorded as its controller records it: on the
// object itself, with the controller's reason and message.
func TestRefusePodsAsEachControllerRecordsIt(t *testing.T) {
	const ns = "team-a"
	quota := overQuota("p-0")
	cases := []struct {
		name      string
		workload  cube.Workload
		kind      string
		reason    string // the event's
		message   string // the event's
		component string
		refusal   string // the Refusal's reason
	}{
		{"notebook", notebook.Jupyter("lab", "alice").Namespace(ns).Credential(pod.SecretKeyRef{Name: "lab-token", Key: "token"}).
			AllowNamespace(map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"}).On(hardware.H100).Accelerators(2),
			"StatefulSet", "FailedCreate", "Create Pod lab-0 in StatefulSet lab failed error: " + quota, "statefulset-controller", "QuotaExceeded"},
		{"job", batchJob("export"), "Job", "FailedCreate", "Error creating: " + quota, "job-controller", "QuotaExceeded"},
		{"pytorchjob", train.PyTorch("ddp").Namespace(ns).Image("pytorch/pytorch:2.4.0").Command("python", "train.py").Workers(1).On(hardware.H100).Accelerators(2),
			"PyTorchJob", "FailedCreatePod", "Error creating: " + quota, "pytorchjob-controller", "QuotaExceeded"},
		{"tfjob", train.TensorFlow("tf").Namespace(ns).Image("tensorflow/tensorflow:2.17.0").Command("python", "train.py").Workers(1).On(hardware.H100).Accelerators(2),
			"TFJob", "FailedCreatePod", "Error creating: " + quota, "tfjob-controller", "QuotaExceeded"},
		// The MPIJob controller drops the API server's answer.
		{"mpijob", train.MPI("mpi").Namespace(ns).Image("mpioperator/mpi-pi:openmpi").Command("/home/mpiuser/pi").Workers(2).On(hardware.H100).Accelerators(2),
			"MPIJob", "FailedCreatePod", "Created worker pod: ", "mpijob-controller", "QuotaExceeded"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			cluster := cubetest.NewCluster(nil, cube.Namespace(ns))
			rel, err := cluster.Client.Apply(ctx, tc.workload)
			require.NoError(t, err)
			require.NoError(t, cluster.RefusePods(ctx, rel, quota))

			events := eventsOf(t, cluster, ns)
			e := slices.IndexFunc(events, func(ev corev1.Event) bool { return ev.Reason == tc.reason })
			require.GreaterOrEqual(t, e, 0, "%v", events)
			ev := events[e]
			i := slices.IndexFunc(rel.Objects, func(r cube.ObjectRef) bool { return r.Kind == tc.kind })
			require.GreaterOrEqual(t, i, 0, "%v", rel.Objects)
			object := rel.Objects[i]
			assert.Equal(t, tc.kind, ev.InvolvedObject.Kind)
			assert.Equal(t, object.Name, ev.InvolvedObject.Name)
			assert.Equal(t, object.GroupVersion().String(), ev.InvolvedObject.APIVersion)
			assert.NotEmpty(t, ev.InvolvedObject.ResourceVersion, "the reference of the stored object")
			assert.Equal(t, tc.reason, ev.Reason)
			assert.Equal(t, tc.message, ev.Message)
			assert.Equal(t, tc.component, ev.Source.Component)
			if tc.kind == "MPIJob" {
				// The controller's second event says why, and cube reports it.
				require.Len(t, events, 2)
				assert.Equal(t, "MPIJobFailed", events[1-e].Reason)
				assert.Equal(t, "worker pod created failed: "+quota, events[1-e].Message)
			} else {
				assert.Len(t, events, 1)
			}

			st, err := rel.Status(ctx)
			require.NoError(t, err)
			require.Len(t, st.Refusals, 1)
			assert.Equal(t, object, st.Refusals[0].Object)
			assert.Equal(t, tc.refusal, st.Refusals[0].Reason)
			st, err = rel.Wait(ctx, cube.Ready, cube.FailOnStuckPods, cube.Timeout(time.Minute))
			require.ErrorIs(t, err, cube.ErrFailed)
			assert.True(t, strings.HasPrefix(st.Reason, object.String()+": pods refused: "), st.Reason)
		})
	}
}

// batchJob is a Job of its own release.
func batchJob(name string) cube.Workload {
	id := cube.Identity{Kind: "export", Release: name}
	return cube.Objects(&batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: id.ObjectMeta(name, "", nil, nil),
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: id.Labels()},
			Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}},
		}},
	})
}

// RefusePods refuses what no controller would record: an empty answer, a
// release with nothing that creates pods, a nil release or cluster.
func TestRefusePodsErrors(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	rel, err := cluster.Client.Apply(ctx, webApp("shop", 1))
	require.NoError(t, err)
	assert.EqualError(t, cluster.RefusePods(ctx, rel, ""), "cubetest: refuse pods of release team-a/shop: the API server's answer is empty")
	assert.EqualError(t, cluster.RefusePods(ctx, nil, "x"), "cubetest: release is nil")
	var nilCluster *cubetest.Cluster
	assert.EqualError(t, nilCluster.RefusePods(ctx, rel, "x"), "cubetest: cluster is nil or zero: make it with cubetest.NewCluster")

	config := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: cube.Identity{Kind: "config", Release: "settings"}.ObjectMeta("settings", "", nil, nil),
	}
	only, err := cluster.Client.Apply(ctx, cube.Objects(config))
	require.NoError(t, err)
	assert.EqualError(t, cluster.RefusePods(ctx, only, "x"), "cubetest: refuse pods of release team-a/settings: it has no Deployment, StatefulSet, Job, training-operator job, LeaderWorkerSet, Volcano Job or RayJob")

	require.NoError(t, rel.Delete(ctx))
	assert.ErrorContains(t, cluster.RefusePods(ctx, rel, "x"), "cubetest: refuse pods of Deployment.apps team-a/shop: ")
	assert.Empty(t, eventsOf(t, cluster, "team-a"), "nothing recorded for what failed")
}

// QuotaExceededMessage writes what the API server answered in
// TestTenantQuotaRefusesAPodOverIt (tenant_apiserver_test.go), where the
// real quota admission plugin refused a pod, and cube reads back what it
// was given.
func TestQuotaExceededMessage(t *testing.T) {
	assert.Equal(t, `pods "big" is forbidden: exceeded quota: team-a, requested: requests.nvidia.com/gpu=4, used: requests.nvidia.com/gpu=2, limited: requests.nvidia.com/gpu=4`,
		cubetest.QuotaExceededMessage("big", "team-a", "requests.nvidia.com/gpu", "4", "2", "4"))

	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	rel, err := cluster.Client.Apply(ctx, webApp("web", 1))
	require.NoError(t, err)
	require.NoError(t, cluster.RefusePods(ctx, rel, cubetest.QuotaExceededMessage("web-0", "team-a", "requests.memory", "1Gi", "15Gi", "16Gi")))
	st, err := rel.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st.Refusals, 1)
	assert.Equal(t, &cube.QuotaExceededError{Quota: "team-a", Requested: "requests.memory=1Gi", Used: "requests.memory=15Gi", Limited: "requests.memory=16Gi"}, st.Refusals[0].Quota)
}

// RefusePods records a Volcano job's refusal on the job as Volcano does,
// the answer inside the %#v of client-go's error, and a RayJob's on the
// RayCluster KubeRay makes for it, for the head unless the answer names a
// worker; cube reads both as the quota's refusal of the release's job.
func TestRefusePodsOfVolcanoAndRayJobs(t *testing.T) {
	const ns = "team-a"
	for _, tc := range []struct {
		name     string
		workload cube.Workload
		kind     string
		answer   string
		reason   string
		message  string // a pattern
		on       string // a pattern: the involved object
	}{
		{"volcano", train.Volcano("vc").Image("pytorch/pytorch:2.4.0").Command("python", "w.py").Task("worker", 2).On(hardware.H100).Accelerators(2),
			"Job", overQuota("vc-worker-1"), "FailedCreate",
			`^Error creating pods: \[failed to create pod vc-worker-1, err: &errors.StatusError\{ErrStatus:v1.Status\{.*Status:"Failure", Message:"pods \\"vc-worker-1\\" is forbidden: exceeded quota: `,
			`^Job/vc$`},
		{"volcano, an answer that names no pod", train.Volcano("vc").Image("pytorch/pytorch:2.4.0").Command("python", "w.py").Task("worker", 2).On(hardware.H100).Accelerators(2),
			"Job", "exceeded quota: q, requested: requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=1", "FailedCreate",
			`^Error creating pods: \[failed to create pod vc-worker-0, err: `, `^Job/vc$`},
		{"ray head", train.Ray("rl").Image("rayproject/ray:2.41.0").Entrypoint("python rl.py").WorkerGroup("gpu", 1).On(hardware.H100).Accelerators(2),
			"RayJob", overQuota("p-0"), "FailedToCreateHeadPod",
			`^Failed to create head Pod team-a/, pods "p-0" is forbidden: exceeded quota: `, `^RayCluster/rl-[a-z0-9]{5}$`},
		{"ray worker", train.Ray("rl").Image("rayproject/ray:2.41.0").Entrypoint("python rl.py").WorkerGroup("gpu", 1).On(hardware.H100).Accelerators(2),
			"RayJob", "", "FailedToCreateWorkerPod",
			`^Failed to create worker Pod for the cluster team-a/rl-[a-z0-9]{5}, pods "rl-[a-z0-9]{5}-gpu-worker-x2v4z" is forbidden: exceeded quota: `, `^RayCluster/rl-[a-z0-9]{5}$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			cluster := cubetest.NewCluster(nil, cube.Namespace(ns))
			rel, err := cluster.Client.Apply(ctx, tc.workload)
			require.NoError(t, err)
			answer := tc.answer
			if answer == "" {
				// A worker of the cluster RefusePods names for a head.
				require.NoError(t, cluster.RefusePods(ctx, rel, overQuota("p-0")))
				events := eventsOf(t, cluster, ns)
				require.Len(t, events, 1)
				answer = overQuota(events[0].InvolvedObject.Name + "-gpu-worker-x2v4z")
				require.NoError(t, cluster.Fake.Delete(ctx, &events[0]))
			}
			require.NoError(t, cluster.RefusePods(ctx, rel, answer))

			events := eventsOf(t, cluster, ns)
			require.Len(t, events, 1, "%v", events)
			ev := events[0]
			assert.Equal(t, tc.reason, ev.Reason)
			assert.Regexp(t, tc.message, ev.Message)
			assert.Regexp(t, tc.on, ev.InvolvedObject.Kind+"/"+ev.InvolvedObject.Name)

			st, err := rel.Status(ctx)
			require.NoError(t, err)
			require.Len(t, st.Refusals, 1, "%s", st)
			assert.Equal(t, tc.kind, st.Refusals[0].Object.Kind)
			assert.Equal(t, "QuotaExceeded", st.Refusals[0].Reason)
			assert.Equal(t, "requests.nvidia.com/gpu=2", st.Refusals[0].Quota.Requested)
			assert.Equal(t, "requests.nvidia.com/gpu=1", st.Refusals[0].Quota.Limited, "read out of Volcano's quotes too")
		})
	}
}
