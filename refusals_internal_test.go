package cube

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The messages are the API server's, as controllers quote them after
// "Error creating: " (k8s.io/kubernetes pkg/controller/controller_utils.go).
func TestRefusalReasons(t *testing.T) {
	job := ObjectRef{GroupVersionKind: metav1.SchemeGroupVersion.WithKind("PyTorchJob"), Namespace: "t", Name: "sft"}
	job.Group = "kubeflow.org"
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct{ message, reason string }{
		{`Error creating: pods "sft-worker-0" is forbidden: exceeded quota: team-a, requested: requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=1`, "QuotaExceeded"},
		{`Error creating: pods "sft-worker-0" is forbidden: status unknown for quota: team-a, resource: requests.nvidia.com/gpu`, "QuotaNotCounted"},
		{`Error creating: pods "sft-worker-0" is forbidden: violates PodSecurity "baseline:latest": non-default capabilities (container "pytorch" must not include "IPC_LOCK" in securityContext.capabilities.add)`, "PodSecurity"},
		{`Error creating: admission webhook "validate.kyverno.svc" denied the request: images must come from the registry`, "Webhook"},
		{`Error creating: pods "sft-worker-0" is forbidden: error looking up service account t/trainer: serviceaccount "trainer" not found`, "ServiceAccount"},
		{`Error creating: pods "sft-worker-0" is forbidden: maximum cpu usage per Container is 2, but limit is 4`, "LimitRange"},
		{`Error creating: pods "sft-worker-0" is forbidden: some admission plugin of the cluster's own`, "FailedCreatePod"},
	} {
		ev := createEvent{group: "kubeflow.org", kind: "PyTorchJob", name: "sft", failed: true, reason: "FailedCreatePod", message: c.message, count: 1, last: at}
		got := refusalsOf([]ObjectRef{job}, nil, []createEvent{ev})
		require.Len(t, got, 1, c.message)
		assert.Equal(t, c.reason, got[0].Reason, c.message)
		assert.Equal(t, c.message, got[0].Message)
		if c.reason == "QuotaExceeded" {
			require.NotNil(t, got[0].Quota)
			assert.Equal(t, QuotaExceededError{Quota: "team-a", Requested: "requests.nvidia.com/gpu=2", Used: "requests.nvidia.com/gpu=0", Limited: "requests.nvidia.com/gpu=1"}, *got[0].Quota)
			assert.Equal(t, "PyTorchJob.kubeflow.org t/sft: pods refused: exceeded quota team-a: requested requests.nvidia.com/gpu=2, used requests.nvidia.com/gpu=0, limited to requests.nvidia.com/gpu=1", got[0].String())
		} else {
			assert.Nil(t, got[0].Quota)
		}
	}
}

// A refusal counts while it is the latest word on creating the object's
// pods, and only for the object as it is now.
func TestRefusalsFollowTheLatestEvent(t *testing.T) {
	deploy := ObjectRef{GroupVersionKind: appsv1.SchemeGroupVersion.WithKind("Deployment"), Namespace: "t", Name: "web"}
	created := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	refused := func(name string, at time.Time) createEvent {
		return createEvent{group: "apps", kind: "ReplicaSet", name: name, failed: true, reason: "FailedCreate", message: "exceeded quota: q, requested: cpu=2, used: cpu=0, limited: cpu=1", last: at}
	}
	made := func(name string, at time.Time) createEvent {
		return createEvent{group: "apps", kind: "ReplicaSet", name: name, reason: "SuccessfulCreate", message: "Created pod", last: at}
	}
	since := map[ObjectRef]time.Time{deploy: created}
	objs := []ObjectRef{deploy}

	assert.Len(t, refusalsOf(objs, since, []createEvent{refused("web-5d9c7b8f4", created.Add(time.Second))}), 1, "the Deployment's ReplicaSet")
	assert.Empty(t, refusalsOf(objs, since, []createEvent{refused("web-canary-5d9c7b8f4", created.Add(time.Second))}), "another Deployment's ReplicaSet")
	assert.Empty(t, refusalsOf(objs, since, []createEvent{refused("web-5d9c7b8f4", created.Add(-time.Minute))}), "an event of an earlier object of that name")
	assert.Empty(t, refusalsOf(objs, since, []createEvent{
		refused("web-5d9c7b8f4", created.Add(time.Second)), made("web-5d9c7b8f4", created.Add(2*time.Second)),
	}), "a pod created after the refusal")
	assert.Len(t, refusalsOf(objs, since, []createEvent{
		made("web-5d9c7b8f4", created.Add(time.Second)), refused("web-5d9c7b8f4", created.Add(2*time.Second)),
	}), 1, "a refusal after a pod was created")
	assert.Len(t, refusalsOf(objs, since, []createEvent{
		made("web-5d9c7b8f4", created.Add(time.Second)), refused("web-5d9c7b8f4", created.Add(time.Second)),
	}), 1, "in the same second, the refusal is not hidden")
}

func TestCreateEventOf(t *testing.T) {
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	_, ok := createEventOf(&corev1.Event{Reason: "Scheduled"})
	assert.False(t, ok, "not about creating pods")
	ev, ok := createEventOf(&corev1.Event{
		Reason: "FailedCreate", Message: "m is forbidden", Count: 4, LastTimestamp: metav1.NewTime(at),
		InvolvedObject: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "nb"},
		Series:         &corev1.EventSeries{Count: 9, LastObservedTime: metav1.NewMicroTime(at.Add(time.Minute))},
	})
	require.True(t, ok)
	assert.Equal(t, createEvent{group: "apps", kind: "StatefulSet", name: "nb", failed: true, reason: "FailedCreate", message: "m is forbidden", count: 9, last: at.Add(time.Minute)}, ev)
	ev, ok = createEventOf(&corev1.Event{Reason: "SuccessfulCreatePod", EventTime: metav1.NewMicroTime(at)})
	require.True(t, ok)
	assert.False(t, ev.failed)
	assert.Equal(t, at, ev.last, "events.k8s.io events carry eventTime only")
}

// An MPIJob's controller records its refused worker twice in one second:
// FailedCreatePod without the API server's answer, and MPIJobFailed with
// it (training-operator v1.8.1 pkg/controller.v1/mpi/mpijob_controller.go,
// getOrCreateWorker); the one that says why is reported, and an object of
// another group with the same kind and name is not the release's.
func TestMPIJobRefusalSaysWhy(t *testing.T) {
	mpi := ObjectRef{GroupVersionKind: metav1.SchemeGroupVersion.WithKind("MPIJob"), Namespace: "t", Name: "hvd"}
	mpi.Group = "kubeflow.org"
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	quota := `worker pod created failed: pods "hvd-worker-0" is forbidden: exceeded quota: q, requested: requests.cpu=8, used: requests.cpu=0, limited: requests.cpu=4`
	for _, order := range [][]*corev1.Event{
		{{Reason: "FailedCreatePod", Message: "Created worker pod: "}, {Reason: "MPIJobFailed", Message: quota}},
		{{Reason: "MPIJobFailed", Message: quota}, {Reason: "FailedCreatePod", Message: "Created worker pod: "}},
	} {
		var events []createEvent
		for _, ev := range order {
			ev.InvolvedObject = corev1.ObjectReference{APIVersion: "kubeflow.org/v1", Kind: "MPIJob", Name: "hvd"}
			ev.LastTimestamp = metav1.NewTime(at)
			if ce, ok := createEventOf(ev); ok {
				events = append(events, ce)
			}
		}
		got := refusalsOf([]ObjectRef{mpi}, nil, events)
		require.Len(t, got, 1)
		assert.Equal(t, "QuotaExceeded", got[0].Reason)
		require.NotNil(t, got[0].Quota)
		assert.Equal(t, "requests.cpu=8", got[0].Quota.Requested)
	}
	_, ok := createEventOf(&corev1.Event{Reason: "MPIJobFailed", Message: "launcher failed"})
	assert.False(t, ok, "an MPIJob that failed for another reason is not a refused pod")
	other := createEvent{group: "batch.volcano.sh", kind: "MPIJob", name: "hvd", failed: true, reason: "FailedCreate", message: "m", last: at}
	assert.Empty(t, refusalsOf([]ObjectRef{mpi}, nil, []createEvent{other}))
}

// A create that failed for a passing reason (a race that found the pod
// already there, a timeout) is not a refusal, and neither is an MPIJob's
// FailedCreatePod, which carries no answer at all.
func TestPassingFailuresAreNoRefusals(t *testing.T) {
	for _, ev := range []*corev1.Event{
		{Reason: "MPIJobFailed", Message: `launcher pod created failed: pods "mpi-launcher" already exists`},
		{Reason: "FailedCreate", Message: `Error creating: Timeout: request did not complete within requested timeout`},
		{Reason: "FailedCreatePod", Message: "Created worker pod: "},
	} {
		_, ok := createEventOf(ev)
		assert.False(t, ok, ev.Message)
	}
}

// Volcano v1.14.0 quotes the API server's error as %#v prints it
// (pkg/controllers/job/job_controller_actions.go, syncJob: "failed to
// create pod %s, err: %#v", joined into "Error creating pods: %+v"): the
// message is built here the same way from the error client-go returns,
// and the quota is read out of its Go quotes.
func TestVolcanoRefusalQuotesTheAnswer(t *testing.T) {
	vc := ObjectRef{GroupVersionKind: metav1.SchemeGroupVersion.WithKind("Job"), Namespace: "t", Name: "vc"}
	vc.Group, vc.Version = "batch.volcano.sh", "v1alpha1"
	at := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	quota := "exceeded quota: q, requested: requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=1"
	var creationErrs []error
	for _, pod := range []string{"vc-worker-0", "vc-worker-1"} {
		err := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, pod, errors.New(quota))
		creationErrs = append(creationErrs, fmt.Errorf("failed to create pod %s, err: %#v", pod, err))
	}
	msg := fmt.Sprintf("Error creating pods: %+v", creationErrs)
	require.Contains(t, msg, `Message:"pods \"vc-worker-0\" is forbidden: exceeded quota: q,`, "the answer is Go-quoted")

	ev, ok := createEventOf(&corev1.Event{Reason: "FailedCreate", Message: msg, LastTimestamp: metav1.NewTime(at),
		InvolvedObject: corev1.ObjectReference{APIVersion: "batch.volcano.sh/v1alpha1", Kind: "Job", Name: "vc"}})
	require.True(t, ok)
	got := refusalsOf([]ObjectRef{vc}, nil, []createEvent{ev})
	require.Len(t, got, 1)
	assert.Equal(t, "QuotaExceeded", got[0].Reason)
	assert.Equal(t, msg, got[0].Message, "the message as Volcano recorded it")
	assert.Equal(t, &QuotaExceededError{Quota: "q", Requested: "requests.nvidia.com/gpu=2", Used: "requests.nvidia.com/gpu=0", Limited: "requests.nvidia.com/gpu=1"}, got[0].Quota)

	// A quoted Message that is not the quota's, or quotes cut short, leave
	// the message as it is.
	for _, m := range []string{
		`Message:"something else", then exceeded quota: q, requested: cpu=2, used: cpu=0, limited: cpu=1`,
		`Message:"pods \"p\" is forbidden: exceeded quota: q, requested: cpu=2, used: cpu=0, limited: cpu=1`,
	} {
		assert.Equal(t, m, quotedAnswer(m))
	}
}

// KubeRay v1.5.0 records a refused head or worker pod on the RayCluster a
// RayJob made, "<rayjob>-<5 random characters>"
// (ray-operator/controllers/ray/raycluster_controller.go, createHeadPod,
// createWorkerPod; utils/util.go, GenerateRayClusterName), and the Job
// controller a refused submitter pod on the Job named as the RayJob: both
// are the RayJob's refusals, and a pod created after clears them.
func TestRayJobRefusalsAreItsClusters(t *testing.T) {
	ray := ObjectRef{GroupVersionKind: metav1.SchemeGroupVersion.WithKind("RayJob"), Namespace: "t", Name: "over"}
	ray.Group = "ray.io"
	created := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	answer := `pods "over-x2v4z-head-7bqhm" is forbidden: exceeded quota: q, requested: requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=0, limited: requests.nvidia.com/gpu=1`
	event := func(kind, apiVersion, name, reason, message string, at time.Time) createEvent {
		ev, ok := createEventOf(&corev1.Event{Reason: reason, Message: message, LastTimestamp: metav1.NewTime(at),
			InvolvedObject: corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Name: name}})
		require.True(t, ok, reason)
		return ev
	}
	head := func(cluster string, at time.Time) createEvent {
		return event("RayCluster", "ray.io/v1", cluster, "FailedToCreateHeadPod", "Failed to create head Pod t/, "+answer, at)
	}
	since := map[ObjectRef]time.Time{ray: created}
	objs := []ObjectRef{ray}

	got := refusalsOf(objs, since, []createEvent{head("over-x2v4z", created.Add(time.Second))})
	require.Len(t, got, 1, "the RayJob's cluster")
	assert.Equal(t, ray, got[0].Object)
	assert.Equal(t, "QuotaExceeded", got[0].Reason)
	assert.Equal(t, "requests.nvidia.com/gpu=2", got[0].Quota.Requested)
	worker := event("RayCluster", "ray.io/v1", "over-x2v4z", "FailedToCreateWorkerPod", "Failed to create worker Pod for the cluster t/over-x2v4z, "+answer, created.Add(time.Second))
	assert.Len(t, refusalsOf(objs, since, []createEvent{worker}), 1, "a refused worker")
	submitter := event("Job", "batch/v1", "over", "FailedCreate", "Error creating: "+answer, created.Add(time.Second))
	assert.Len(t, refusalsOf(objs, since, []createEvent{submitter}), 1, "a refused submitter")

	for _, other := range []string{"over-canary-x2v4z", "over-x2v4", "over-x2v4z9", "overx-x2v4z"} {
		assert.Empty(t, refusalsOf(objs, since, []createEvent{head(other, created.Add(time.Second))}), "another RayJob's cluster %s", other)
	}
	made := event("RayCluster", "ray.io/v1", "over-x2v4z", "CreatedHeadPod", "Created head Pod t/over-x2v4z-head-7bqhm", created.Add(2*time.Second))
	assert.Empty(t, refusalsOf(objs, since, []createEvent{head("over-x2v4z", created.Add(time.Second)), made}), "a head created after the refusal")

	// A Job of the release named as the RayJob is its own.
	job := ObjectRef{GroupVersionKind: metav1.SchemeGroupVersion.WithKind("Job"), Namespace: "t", Name: "over"}
	job.Group = "batch"
	got = refusalsOf([]ObjectRef{ray, job}, nil, []createEvent{submitter})
	require.Len(t, got, 1)
	assert.Equal(t, job, got[0].Object)
}

// A refusal whose pods all exist now, created since it was last seen, is
// over, whether or not the controller recorded their creation (Volcano
// does not); one that names a pod still missing, an older pod, or no pod
// at all stands.
func TestStillRefusedDropsRefusalsWhosePodsExist(t *testing.T) {
	at := time.Date(2026, 12, 4, 12, 0, 0, 500_000_000, time.UTC)
	quoted := func(pods ...string) string {
		var errs []error
		for _, p := range pods {
			err := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, p, errors.New("exceeded quota: q, requested: cpu=2, used: cpu=0, limited: cpu=1"))
			errs = append(errs, fmt.Errorf("failed to create pod %s, err: %#v", p, err))
		}
		return fmt.Sprintf("Error creating pods: %+v", errs)
	}
	plain := `Error creating: pods "sft-worker-0" is forbidden: exceeded quota: q, requested: cpu=2, used: cpu=0, limited: cpu=1`
	for _, c := range []struct {
		name    string
		message string
		pods    map[string]time.Time
		stands  bool
	}{
		{"created in the refusal's second", plain, map[string]time.Time{"sft-worker-0": at.Truncate(time.Second)}, false},
		{"created after", plain, map[string]time.Time{"sft-worker-0": at.Add(time.Minute)}, false},
		{"missing", plain, map[string]time.Time{"sft-worker-1": at.Add(time.Minute)}, true},
		{"older than the refusal", plain, map[string]time.Time{"sft-worker-0": at.Add(-time.Minute)}, true},
		{"no pods listed", plain, nil, true},
		{"Volcano's, all created", quoted("vc-worker-0", "vc-worker-1"), map[string]time.Time{"vc-worker-0": at, "vc-worker-1": at}, false},
		{"Volcano's, one missing", quoted("vc-worker-0", "vc-worker-1"), map[string]time.Time{"vc-worker-0": at}, true},
		{"no pod named", "Created worker pod: ", map[string]time.Time{"hvd-worker-0": at}, true},
	} {
		got := stillRefused([]Refusal{{Message: c.message, Last: at}}, c.pods)
		assert.Equal(t, c.stands, len(got) == 1, c.name)
	}
}
