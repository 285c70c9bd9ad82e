package serve

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/cubestudio/cube"
)

// Kinds returns how a cube.Client reads the kinds this package builds
// besides the Kubernetes API's own (cube.Kinds): LeaderWorkerSet and
// HTTPRoute.
func Kinds() []cube.Kind {
	return []cube.Kind{
		{GroupKind: schema.GroupKind{Group: lwsv1.GroupVersion.Group, Kind: "LeaderWorkerSet"}, Status: cube.TypedStatus(leaderWorkerSetStatus)},
		{GroupKind: schema.GroupKind{Group: gatewayv1.GroupName, Kind: "HTTPRoute"}, Status: cube.TypedStatus(HTTPRouteStatus)},
	}
}

// HTTPRouteStatus reads an HTTPRoute (a Split) as Gateway API v1.6.3
// defines its status (apis/v1/shared_types.go, RouteParentStatus): the
// controller of each parent Gateway adds a parent entry with the
// conditions Accepted and ResolvedRefs. The route serves once every parent
// named in spec.parentRefs has accepted it with its references resolved:
// Ready. Accepted false (NotAllowedByListeners, NoMatchingParent,
// UnsupportedValue…) and ResolvedRefs false other than BackendNotFound
// (RefNotPermitted, InvalidKind, UnsupportedProtocol) do not mend
// themselves: Failed. A backend not found yet, a parent that has not
// answered (no Gateway controller answers at all on a cluster without
// one) and a condition older than the route's generation are InProgress.
func HTTPRouteStatus(r *gatewayv1.HTTPRoute) cube.ObjectStatus {
	parents := r.Status.Parents
	answered := fmt.Sprintf("%d/%d parent gateways answered", min(len(parents), len(r.Spec.ParentRefs)), len(r.Spec.ParentRefs))
	for _, p := range parents {
		for _, c := range p.Conditions {
			if c.ObservedGeneration != 0 && c.ObservedGeneration < r.Generation {
				return cube.ObjectStatus{Phase: cube.InProgress, Reason: "NotObserved", Message: "gateway controller has not seen the latest spec"}
			}
			switch gatewayv1.RouteConditionType(c.Type) {
			case gatewayv1.RouteConditionAccepted:
				if c.Status == metav1.ConditionFalse {
					return cube.ObjectStatus{Phase: cube.Failed, Reason: c.Reason, Message: joinMessage(c.Message, "not accepted by gateway "+string(p.ParentRef.Name))}
				}
			case gatewayv1.RouteConditionResolvedRefs:
				if c.Status == metav1.ConditionFalse {
					phase := cube.Failed
					if gatewayv1.RouteConditionReason(c.Reason) == gatewayv1.RouteReasonBackendNotFound {
						phase = cube.InProgress
					}
					return cube.ObjectStatus{Phase: phase, Reason: c.Reason, Message: joinMessage(c.Message, "references of gateway "+string(p.ParentRef.Name))}
				}
			}
		}
	}
	if len(parents) < len(r.Spec.ParentRefs) {
		return cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: answered}
	}
	for _, p := range parents {
		if !conditionTrue(p.Conditions, string(gatewayv1.RouteConditionAccepted)) || !conditionTrue(p.Conditions, string(gatewayv1.RouteConditionResolvedRefs)) {
			return cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: "gateway " + string(p.ParentRef.Name) + " has not accepted the route yet"}
		}
	}
	return cube.ObjectStatus{Phase: cube.Ready, Reason: string(gatewayv1.RouteReasonAccepted), Message: answered}
}

func conditionTrue(conds []metav1.Condition, typ string) bool {
	for _, c := range conds {
		if c.Type == typ {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
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
