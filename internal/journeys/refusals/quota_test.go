package refusals

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/journeys"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/kinds"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
)

// overQuota is what the quota admission plugin says of a pod asking two
// GPUs in a tenant that allows one and uses none.
func overQuota(pod, namespace string) string {
	return cubetest.QuotaExceededMessage(pod, namespace, "requests.nvidia.com/gpu", "2", "0", "1")
}

// refusedWithin bounds how long a refusal may take to fail a wait: the
// controllers try to create the pods within seconds of Apply and record
// the refusal at once. The waits' own timeout is far longer.
const refusedWithin = 60 * time.Second

// quotaTenant makes a fresh namespace a tenant whose quota allows one
// nvidia.com/gpu, waits until the quota controller has counted the quota
// (before that, quota admission refuses every pod with "status unknown
// for quota"), and returns a client for it that reads every kind cube
// builds.
func quotaTenant(t *testing.T) (*testenv.Cluster, *cube.Client, string) {
	t.Helper()
	c := testenv.GetCluster(t)
	ns := c.Namespace(t)
	cl, err := cube.New(c.Config, cube.Namespace(ns), cube.Kinds(kinds.All()...), cube.Kinds(queueExists))
	require.NoError(t, err)
	// The tenant's Volcano Queue is cluster-scoped: deleting the
	// namespace leaves it.
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		q := &vcscheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if err := c.Client.Delete(ctx, q); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete queue %s: %v", ns, err)
		}
	})
	began := time.Now()
	rel := journeys.Apply(t, cl, tenant.New(ns).Accelerators(hardware.H100, 1))
	_, err = rel.Wait(t.Context(), cube.Ready, cube.Timeout(2*time.Minute), journeys.Progress(t))
	require.NoError(t, err, "the tenant's quota becomes enforceable")
	t.Logf("tenant %s Ready in %s", ns, time.Since(began).Round(time.Millisecond))
	return c, cl, ns
}

// queueExists reads the tenant's Volcano Queue as Ready once it exists.
// cube reads a Queue Ready once Volcano's controller has opened it
// (status.state Open), and no Volcano controller runs here (only its
// CRDs are installed), so a tenant's release would never be Ready. The
// quota, which these tests need enforceable, is read as cube reads it.
var queueExists = cube.ExistsKind(vcscheduling.SchemeGroupVersion.WithKind("Queue").GroupKind())

// refOf returns the object of rel of kind.
func refOf(t *testing.T, rel *cube.Release, kind string) cube.ObjectRef {
	t.Helper()
	i := slices.IndexFunc(rel.Objects, func(r cube.ObjectRef) bool { return r.Kind == kind })
	require.GreaterOrEqual(t, i, 0, "a %s in %v", kind, rel.Objects)
	return rel.Objects[i]
}

var refusedPod = regexp.MustCompile(`pods "([^"]+)" is forbidden`)

// applyRefused applies w and waits for until with FailOnStuckPods, which
// must fail on a refusal of the pods of w's object of kind within
// refusedWithin of Apply; it returns the release and the status the wait
// failed with.
func applyRefused(t *testing.T, cl *cube.Client, w cube.Workload, until cube.Phase, kind string) (*cube.Release, cube.Status) {
	t.Helper()
	began := time.Now()
	rel := journeys.Apply(t, cl, w)
	st, err := rel.Wait(t.Context(), until, cube.FailOnStuckPods, cube.Timeout(journeys.WaitFor), journeys.Progress(t))
	took := time.Since(began)
	logCreateEvents(t, rel.Namespace)
	require.ErrorIs(t, err, cube.ErrFailed)
	t.Logf("refusal reported %s after Apply: %v", took.Round(time.Millisecond), err)
	assert.Less(t, took, refusedWithin)
	assert.Equal(t, cube.Failed, st.Phase)
	require.NotEmpty(t, st.Refusals, "%s", st)
	assert.Equal(t, refOf(t, rel, kind), st.Refusals[0].Object)
	assert.Equal(t, st.Refusals[0].String(), st.Reason)
	assert.GreaterOrEqual(t, st.Refusals[0].Count, int32(1))
	return rel, st
}

// checkQuotaRefused checks that the refusal a wait failed on in st is the
// tenant's quota, with the message cubetest.RefusePods records for the
// kind (prefix(pod) + overQuota), and that Status, without
// FailOnStuckPods, lists the same refusal on a release still in progress.
func checkQuotaRefused(t *testing.T, rel *cube.Release, st cube.Status, prefix func(pod string) string) {
	t.Helper()
	r := st.Refusals[0]
	assert.Equal(t, "QuotaExceeded", r.Reason, r.Message)
	assert.Equal(t, &cube.QuotaExceededError{Quota: rel.Namespace, Requested: "requests.nvidia.com/gpu=2",
		Used: "requests.nvidia.com/gpu=0", Limited: "requests.nvidia.com/gpu=1"}, r.Quota, r.Message)
	if m := refusedPod.FindStringSubmatch(r.Message); assert.NotNil(t, m, r.Message) {
		assert.Equal(t, prefix(m[1])+overQuota(m[1], rel.Namespace), r.Message, "cubetest records what the cluster recorded")
	}

	now, err := rel.Status(t.Context())
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, now.Phase, "without FailOnStuckPods a refusal does not fail the release")
	if assert.NotEmpty(t, now.Refusals, "%s", now) {
		assert.Equal(t, r.Object, now.Refusals[0].Object)
		assert.Equal(t, r.Reason, now.Refusals[0].Reason)
		assert.Equal(t, r.Quota, now.Refusals[0].Quota)
	}
}

// logCreateEvents logs the Warning events of namespace and those about
// creating pods, as the cluster stored them: the record of what the
// controllers write.
func logCreateEvents(t *testing.T, namespace string) {
	t.Helper()
	c := testenv.GetCluster(t)
	var events corev1.EventList
	require.NoError(t, c.Client.List(t.Context(), &events, client.InNamespace(namespace)))
	for _, ev := range events.Items {
		if ev.Type != corev1.EventTypeWarning && !slices.Contains([]string{"SuccessfulCreate", "SuccessfulCreatePod"}, ev.Reason) {
			continue
		}
		series := ""
		if ev.Series != nil {
			series = fmt.Sprintf(", series count %d", ev.Series.Count)
		}
		t.Logf("event %s on %s %s/%s: %s (source %q, reporting controller %q, count %d%s, last %s, event time %s): %q",
			ev.Type, ev.InvolvedObject.Kind, ev.InvolvedObject.Namespace, ev.InvolvedObject.Name, ev.Reason, ev.Source.Component, ev.ReportingController,
			ev.Count, series, ev.LastTimestamp.UTC().Format(time.RFC3339), ev.EventTime.UTC().Format(time.RFC3339Nano), ev.Message)
	}
}

func errorCreating(string) string { return "Error creating: " }

// The training-operator's PyTorchJob controller creates the master's and
// the worker's pods itself and records FailedCreatePod on the job.
func TestQuotaRefusesPyTorchJobPods(t *testing.T) {
	c, cl, _ := quotaTenant(t)
	job := train.PyTorch("over").Image(c.Images.Python).Command("true").Workers(1).On(hardware.H100).Accelerators(2)
	rel, st := applyRefused(t, cl, job, cube.Succeeded, "PyTorchJob")
	checkQuotaRefused(t, rel, st, errorCreating)
}

// A served model's Deployment: its ReplicaSet's controller records
// FailedCreate on the ReplicaSet, which cube reports on the Deployment.
func TestQuotaRefusesDeploymentPods(t *testing.T) {
	c, cl, _ := quotaTenant(t)
	svc := serve.VLLM("over", "standin/none").Image(c.Images.Busybox).Command("sleep", "3600").On(hardware.H100).Accelerators(2)
	rel, st := applyRefused(t, cl, svc, cube.Ready, "Deployment")
	checkQuotaRefused(t, rel, st, errorCreating)
}

// A notebook's StatefulSet: its controller creates the home claim, then
// the pod, and records FailedCreate on the StatefulSet in its own words.
func TestQuotaRefusesNotebookPod(t *testing.T) {
	c, cl, ns := quotaTenant(t)
	nb := notebook.Jupyter("lab", "alice").Namespace(ns).Image(c.Images.Python).
		Launch(notebook.LaunchJupyterServer).Credential(pod.SecretKeyRef{Name: "lab-token", Key: "token"}).Storage("1Gi", "").
		AllowNamespace(map[string]string{"kubernetes.io/metadata.name": ns}).
		On(hardware.H100).Accelerators(2)
	rel, st := applyRefused(t, cl, nb, cube.Ready, "StatefulSet")
	checkQuotaRefused(t, rel, st, func(pod string) string {
		return "Create Pod " + pod + " in StatefulSet lab failed error: "
	})
}

// The training-operator's MPIJob controller creates its workers itself
// and records a refused worker twice (v1.8.1
// pkg/controller.v1/mpi/mpijob_controller.go, getOrCreateWorker):
// FailedCreatePod "Created worker pod: ", without the API server's
// answer, and MPIJobFailed "worker pod created failed: <answer>": cube
// reports the one that says why.
func TestQuotaRefusesMPIJobWorkers(t *testing.T) {
	c, cl, ns := quotaTenant(t)
	job := train.MPI("over").Image(c.Images.Python).Command("true").Workers(1).On(hardware.H100).Accelerators(2)
	rel, st := applyRefused(t, cl, job, cube.Succeeded, "MPIJob")
	r := st.Refusals[0]
	assert.Equal(t, "QuotaExceeded", r.Reason)
	require.NotNil(t, r.Quota)
	assert.Equal(t, ns, r.Quota.Quota)
	assert.Equal(t, "requests.nvidia.com/gpu=2", r.Quota.Requested)
	assert.Equal(t, "worker pod created failed: "+overQuota("over-worker-0", ns), r.Message)

	var events corev1.EventList
	require.NoError(t, c.Client.List(t.Context(), &events, client.InNamespace(ns)))
	i := slices.IndexFunc(events.Items, func(ev corev1.Event) bool { return ev.Reason == "MPIJobFailed" })
	require.GreaterOrEqual(t, i, 0, "the controller says why in another event")
	assert.Equal(t, refOf(t, rel, "MPIJob").Name, events.Items[i].InvolvedObject.Name)
	assert.Equal(t, "worker pod created failed: "+overQuota("over-worker-0", ns), events.Items[i].Message, "cubetest records what the cluster recorded")
}

// KubeRay v1.5.0 creates the head pod of a RayJob's RayCluster itself and
// records a refusal on the RayCluster, FailedToCreateHeadPod "Failed to
// create head Pod <namespace>/<name>, <answer>", the name still empty
// because the pod's is generated (ray-operator/controllers/ray/
// raycluster_controller.go, createHeadPod): cube reports it on the
// RayJob that made the cluster.
func TestQuotaRefusesRayJobHead(t *testing.T) {
	c, cl, ns := quotaTenant(t)
	job := train.Ray("over").Image(c.Images.Python).Entrypoint("python3 -c 'print(1)'").
		WorkerGroup("gpu", 1).On(hardware.H100).Accelerators(2).HeadAccelerators(2).
		CPU("100m").Memory("128Mi").HeadResources("100m", "128Mi")
	rel, st := applyRefused(t, cl, job, cube.Succeeded, "RayJob")
	checkQuotaRefused(t, rel, st, func(string) string { return "Failed to create head Pod " + ns + "/, " })

	var events corev1.EventList
	require.NoError(t, c.Client.List(t.Context(), &events, client.InNamespace(ns)))
	i := slices.IndexFunc(events.Items, func(ev corev1.Event) bool { return ev.Reason == "FailedToCreateHeadPod" })
	require.GreaterOrEqual(t, i, 0, "KubeRay records the refusal on the RayCluster")
	assert.Equal(t, "RayCluster", events.Items[i].InvolvedObject.Kind)
	assert.Regexp(t, `^over-[a-z0-9]{5}$`, events.Items[i].InvolvedObject.Name, "the cluster KubeRay named after the RayJob")
}
