package ops_test

// ReadUsage against the real kube-apiserver of internal/testsupport/testenv: pods are
// created with the resources the appliers render and their status written
// as the kubelet would (no kubelet runs on the test API server).

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/ops"
	"github.com/cubestudio/cube/vgpu"
)

func TestReadUsageFromTestAPIServer(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	start := time.Now().Add(-3 * time.Hour).Truncate(time.Second)
	a100 := hardware.A100_80G
	pods := []corev1.Pod{
		renderedPod(t, ns, "qwen", "vllm", hardware.H100, 2, nil, start, 0),
		renderedPod(t, ns, "lab", "notebook", a100, 0, vgpu.Slice(a100).Memory("40Gi").Cores(20), start.Add(time.Hour), 0),
	}
	for i := range pods {
		p := pods[i].DeepCopy()
		status := p.Status
		p.Status = corev1.PodStatus{}
		require.NoError(t, env.Client.Create(ctx, p))
		p.Status = status
		require.NoError(t, env.Client.Status().Update(ctx, p))
	}
	// A pod cube did not make is not counted.
	stray := renderedPod(t, ns, "x", "job", hardware.H100, 1, nil, start, 0)
	stray.Labels = nil
	stray.Status = corev1.PodStatus{}
	require.NoError(t, env.Client.Create(ctx, &stray))

	to := start.Add(3 * time.Hour)
	u, err := ops.ReadUsage(ctx, env.Client, start, to, []client.ListOption{client.InNamespace(ns)})
	require.NoError(t, err)
	require.Len(t, u.Records, 2, "%+v", u.Records)
	assert.Equal(t, ops.Key{Tenant: ns, Release: "lab", Kind: "notebook", Accelerator: "A100-SXM-80GB", Share: vgpu.KindSlice}, u.Records[0].Key)
	assert.InDelta(t, 0.5*2, u.Records[0].DeviceHours, 1e-9, "40 GiB of 80 for 2 h")
	assert.Equal(t, ops.Key{Tenant: ns, Release: "qwen", Kind: "vllm", Accelerator: "H100-SXM-80GB", Share: vgpu.KindWhole}, u.Records[1].Key)
	assert.InDelta(t, 6, u.Records[1].DeviceHours, 1e-9)
}
