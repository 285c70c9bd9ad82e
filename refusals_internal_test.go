package cube

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
