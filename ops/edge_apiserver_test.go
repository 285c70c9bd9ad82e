package ops_test

// Edge placement applied strictly to the real kube-apiserver of
// internal/testsupport/testenv. No KubeEdge runs here (no cloudcore, no edgecore, no
// edge nodes): the test proves the objects are valid and carry the edge
// placement; it cannot prove a pod lands on an edge device.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/serve"
)

func TestEdgePlacementAppliedStrictly(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cc := cube.NewFromClient(env.Client, cube.Namespace(ns))
	edge := hardware.Edge{NodeLabels: map[string]string{"site": "factory-2"}, Arch: hardware.ARM64, HostNetwork: true,
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi")}}

	svc := serve.Ollama("edge-chat", "qwen2.5:0.5b").CPU("2").Memory("4Gi").Edge(edge)
	_, err := cc.Apply(t.Context(), svc)
	require.NoError(t, err)
	dep := &appsv1.Deployment{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "edge-chat"}, dep))
	spec := dep.Spec.Template.Spec
	assert.Equal(t, "", spec.NodeSelector[hardware.LabelEdgeRole])
	assert.Equal(t, "factory-2", spec.NodeSelector["site"])
	assert.Equal(t, "arm64", spec.NodeSelector[hardware.LabelArch])
	assert.True(t, spec.HostNetwork)
	assert.Equal(t, corev1.DNSClusterFirstWithHostNet, spec.DNSPolicy)
	assert.Contains(t, spec.Tolerations, corev1.Toleration{Key: hardware.LabelEdgeRole, Operator: corev1.TolerationOpExists})

	nb := notebook.Jupyter("edge-lab", "carol").Namespace(ns).Credential(pod.SecretKeyRef{Name: "edge-lab-token", Key: "token"}).
		AllowNamespace(map[string]string{"kubernetes.io/metadata.name": "ingress"}).Edge(hardware.Edge{})
	_, err = cc.Apply(t.Context(), nb)
	require.NoError(t, err)
	sts := &appsv1.StatefulSet{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "edge-lab"}, sts))
	assert.Equal(t, "", sts.Spec.Template.Spec.NodeSelector[hardware.LabelEdgeRole])
	assert.Len(t, sts.Spec.Template.Spec.Tolerations, 3)
	assert.False(t, sts.Spec.Template.Spec.HostNetwork)

	// Too big for the edge device: refused before anything is sent.
	_, err = cc.Apply(t.Context(), serve.Ollama("too-big", "qwen2.5:7b").CPU("16").Edge(edge))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exceeds the edge device's 8")
}
