package serve_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/serve"
)

// TestHTTPRouteStatus reads the parent statuses a Gateway controller writes
// (Gateway API v1.6.3, apis/v1/shared_types.go RouteParentStatus).
func TestHTTPRouteStatus(t *testing.T) {
	route := func(gen int64, parents ...gatewayv1.RouteParentStatus) *gatewayv1.HTTPRoute {
		r := &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "chat", Generation: 2}}
		r.Generation = gen
		r.Spec.ParentRefs = []gatewayv1.ParentReference{{Name: "inference"}, {Name: "internal"}}
		r.Status.Parents = parents
		return r
	}
	cond := func(typ gatewayv1.RouteConditionType, st metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
		return metav1.Condition{Type: string(typ), Status: st, Reason: reason, ObservedGeneration: gen}
	}
	parent := func(name string, conds ...metav1.Condition) gatewayv1.RouteParentStatus {
		return gatewayv1.RouteParentStatus{ParentRef: gatewayv1.ParentReference{Name: gatewayv1.ObjectName(name)}, ControllerName: "example.net/gateway", Conditions: conds}
	}
	ok := func(name string) gatewayv1.RouteParentStatus {
		return parent(name, cond(gatewayv1.RouteConditionAccepted, metav1.ConditionTrue, "Accepted", 2), cond(gatewayv1.RouteConditionResolvedRefs, metav1.ConditionTrue, "ResolvedRefs", 2))
	}
	for _, tc := range []struct {
		name   string
		r      *gatewayv1.HTTPRoute
		phase  cube.Phase
		reason string
	}{
		{"no gateway answered", route(2), cube.InProgress, "Pending"},
		{"one of two answered", route(2, ok("inference")), cube.InProgress, "Pending"},
		{"both accepted", route(2, ok("inference"), ok("internal")), cube.Ready, "Accepted"},
		{"accepted for an older spec", route(3, ok("inference"), ok("internal")), cube.InProgress, "NotObserved"},
		{"not allowed by a listener", route(2, ok("inference"), parent("internal", cond(gatewayv1.RouteConditionAccepted, metav1.ConditionFalse, "NotAllowedByListeners", 2))), cube.Failed, "NotAllowedByListeners"},
		{"a backend not found yet", route(2, ok("inference"), parent("internal", cond(gatewayv1.RouteConditionAccepted, metav1.ConditionTrue, "Accepted", 2), cond(gatewayv1.RouteConditionResolvedRefs, metav1.ConditionFalse, "BackendNotFound", 2))), cube.InProgress, "BackendNotFound"},
		{"a reference not permitted", route(2, ok("inference"), parent("internal", cond(gatewayv1.RouteConditionAccepted, metav1.ConditionTrue, "Accepted", 2), cond(gatewayv1.RouteConditionResolvedRefs, metav1.ConditionFalse, "RefNotPermitted", 2))), cube.Failed, "RefNotPermitted"},
		{"accepted, references unknown", route(2, ok("inference"), parent("internal", cond(gatewayv1.RouteConditionAccepted, metav1.ConditionTrue, "Accepted", 2))), cube.InProgress, "Pending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := serve.HTTPRouteStatus(tc.r)
			assert.Equal(t, tc.phase, st.Phase)
			assert.Equal(t, tc.reason, st.Reason)
		})
	}
}
