package serve_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/serve"
)

func leaderWorkerSet(replicas int32, ready int32, conds ...metav1.Condition) *unstructured.Unstructured {
	l := &lwsv1.LeaderWorkerSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: "ns", Generation: 2},
		Spec:       lwsv1.LeaderWorkerSetSpec{Replicas: ptr.To(replicas)},
		Status:     lwsv1.LeaderWorkerSetStatus{ReadyReplicas: ready, UpdatedReplicas: ready, Conditions: conds},
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(l)
	if err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: content}
}

func cond(typ lwsv1.LeaderWorkerSetConditionType, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: string(typ), Status: status, Reason: reason, Message: msg}
}

// TestLeaderWorkerSetStatus reads the statuses the LWS controller (v0.8.0)
// writes: it sets one of Available, Progressing and UpdateInProgress true
// and flips the others false, without observedGeneration.
func TestLeaderWorkerSetStatus(t *testing.T) {
	cases := map[string]struct {
		obj  *unstructured.Unstructured
		want cube.ObjectStatus
	}{
		"new": {leaderWorkerSet(2, 0),
			cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: "0/2 groups ready, 0/2 updated"}},
		"progressing": {leaderWorkerSet(2, 1,
			cond(lwsv1.LeaderWorkerSetProgressing, metav1.ConditionTrue, "GroupsProgressing", "Replicas are progressing")),
			cube.ObjectStatus{Phase: cube.InProgress, Reason: "GroupsProgressing", Message: "Replicas are progressing: 1/2 groups ready, 1/2 updated"}},
		"available": {leaderWorkerSet(2, 2,
			cond(lwsv1.LeaderWorkerSetProgressing, metav1.ConditionFalse, "GroupsProgressing", "Replicas are progressing"),
			cond(lwsv1.LeaderWorkerSetAvailable, metav1.ConditionTrue, "AllGroupsReady", "All replicas are ready")),
			cube.ObjectStatus{Phase: cube.Ready, Reason: "AllGroupsReady", Message: "2/2 groups ready, 2/2 updated"}},
		"rolling update after available": {leaderWorkerSet(2, 2,
			cond(lwsv1.LeaderWorkerSetAvailable, metav1.ConditionFalse, "AllGroupsReady", "All replicas are ready"),
			cond(lwsv1.LeaderWorkerSetUpdateInProgress, metav1.ConditionTrue, "GroupsUpdating", "Rolling Upgrade is in progress"),
			cond(lwsv1.LeaderWorkerSetProgressing, metav1.ConditionTrue, "GroupsProgressing", "Replicas are progressing")),
			cube.ObjectStatus{Phase: cube.InProgress, Reason: "GroupsProgressing", Message: "Replicas are progressing: 2/2 groups ready, 2/2 updated"}},
		"scaled up while available": {leaderWorkerSet(3, 2,
			cond(lwsv1.LeaderWorkerSetAvailable, metav1.ConditionTrue, "AllGroupsReady", "All replicas are ready")),
			cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: "2/3 groups ready, 2/3 updated"}},
		"failed (cubetest)": {leaderWorkerSet(1, 0,
			cond(lwsv1.LeaderWorkerSetAvailable, metav1.ConditionFalse, "GroupCrashed", "leader exited")),
			cube.ObjectStatus{Phase: cube.Failed, Reason: "GroupCrashed", Message: "leader exited: 0/1 groups ready, 0/1 updated"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := cube.ReadStatus(c.obj, serve.Kinds()...)
			got.Ref = cube.ObjectRef{}
			assert.Equal(t, c.want, got)
		})
	}

	stale := leaderWorkerSet(1, 1, metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "AllGroupsReady", ObservedGeneration: 1})
	assert.Equal(t, cube.InProgress, cube.ReadStatus(stale, serve.Kinds()...).Phase, "a condition of an older generation")
}

// TestReaderReadsWhatCubetestWrites checks the reader against cubetest's
// writer for every phase.
func TestReaderReadsWhatCubetestWrites(t *testing.T) {
	for _, phase := range []cube.Phase{cube.InProgress, cube.Ready, cube.Failed} {
		u := leaderWorkerSet(2, 0)
		require.NoError(t, cubetest.SetStatus(u, phase, "", ""))
		assert.Equal(t, phase, cube.ReadStatus(u, serve.Kinds()...).Phase, "phase %s", phase)
		assert.Equal(t, cube.Unknown, cube.ReadStatus(u).Phase, "without serve.Kinds, phase %s", phase)
	}
}
