package serve_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/serve"
)

// TestVLLMOnTheOtherVendors serves one model on each of the other
// vendors' profiles (Hygon, Cambricon, Kunlunxin, MetaX, Moore Threads,
// Enflame, Iluvatar), on one node and on two, with the vendor's vLLM image
// where hardware knows one (a placeholder otherwise: without one serve
// refuses the devices, TestEnginesPickTheirImageForTheAccelerator), and
// applies each to the real API server with strict validation.
func TestVLLMOnTheOtherVendors(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cl := cube.NewFromClient(env.Client, cube.Namespace(ns))
	for _, p := range hardware.Catalogue() {
		if !p.Accelerated() || p.Vendor == hardware.NVIDIA || p.Vendor == hardware.Huawei {
			continue
		}
		img, err := p.Image(hardware.FrameworkVLLM)
		if err != nil {
			img = "registry.example/vllm-" + strings.ToLower(string(p.Vendor)) + ":1"
		}
		for _, nodes := range []int{1, 2} {
			name := "qwen-" + strings.ToLower(p.Name)
			if nodes > 1 {
				name += "-multi"
			}
			t.Run(name, func(t *testing.T) {
				s := serve.VLLM(name, "Qwen/Qwen2.5-7B-Instruct").Image(img).On(p).Accelerators(4)
				if nodes > 1 {
					s = s.Nodes(nodes).TensorParallel(4).PipelineParallel(nodes).
						Fabric(hardware.RoCE(hardware.SocketInterface("eth0")))
				}
				var buf bytes.Buffer
				require.NoError(t, cube.Render(&buf, s))
				out := buf.String()
				assert.Contains(t, out, string(p.ResourceName)+`: "4"`)
				assert.Contains(t, out, "accelerator: "+p.NodeLabels()[hardware.LabelAccelerator])
				assert.Contains(t, out, "image: "+img)
				assert.NotContains(t, out, "nvidia.com/gpu")
				if nodes > 1 {
					assert.Contains(t, out, p.Collective().SocketInterface)
				}
				_, err := cl.Apply(t.Context(), s)
				require.NoError(t, err)
			})
		}
	}
}

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
