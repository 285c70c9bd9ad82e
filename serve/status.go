package serve

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/cubestudio/cube"
)

func init() {
	cube.RegisterStatus(schema.GroupKind{Group: lwsv1.GroupVersion.Group, Kind: "LeaderWorkerSet"},
		cube.TypedStatus(leaderWorkerSetStatus))
}

// leaderWorkerSetStatus reads a LeaderWorkerSet the way its controller
// (pkg/controllers/leaderworkerset_controller.go, v0.8.0) writes it: it
// keeps exactly one of Available, Progressing and UpdateInProgress true,
// flipping the others to false. Available true with every group ready is
// Ready. The controller has no failure condition; Available false while
// nothing progresses, which it never writes itself, is read as Failed (what
// cubetest writes for a failed set).
func leaderWorkerSetStatus(l *lwsv1.LeaderWorkerSet) cube.ObjectStatus {
	want := int32(1)
	if l.Spec.Replicas != nil {
		want = *l.Spec.Replicas
	}
	st := l.Status
	progress := fmt.Sprintf("%d/%d groups ready, %d/%d updated", st.ReadyReplicas, want, st.UpdatedReplicas, want)
	var available, moving *metav1.Condition
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.ObservedGeneration != 0 && c.ObservedGeneration < l.Generation {
			return cube.ObjectStatus{Phase: cube.InProgress, Reason: "NotObserved", Message: "controller has not seen the latest spec"}
		}
		switch lwsv1.LeaderWorkerSetConditionType(c.Type) {
		case lwsv1.LeaderWorkerSetAvailable:
			available = c
		case lwsv1.LeaderWorkerSetProgressing, lwsv1.LeaderWorkerSetUpdateInProgress:
			if c.Status == metav1.ConditionTrue {
				moving = c
			}
		}
	}
	switch {
	case moving != nil:
		return cube.ObjectStatus{Phase: cube.InProgress, Reason: moving.Reason, Message: joinMessage(moving.Message, progress)}
	case available != nil && available.Status == metav1.ConditionTrue && st.ReadyReplicas >= want:
		return cube.ObjectStatus{Phase: cube.Ready, Reason: available.Reason, Message: progress}
	case available != nil && available.Status == metav1.ConditionFalse:
		return cube.ObjectStatus{Phase: cube.Failed, Reason: available.Reason, Message: joinMessage(available.Message, progress)}
	}
	return cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: progress}
}

func joinMessage(msg, detail string) string {
	if msg == "" {
		return detail
	}
	return msg + ": " + detail
}
