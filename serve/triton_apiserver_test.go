package serve_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

// TestTritonGeneratedRepositoryApplyStrict applies the generated-repository
// services to the real API server with strict field validation and reads
// back the ConfigMap and the volume items that lay the repository out.
func TestTritonGeneratedRepositoryApplyStrict(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	cl := cube.NewFromClient(env.Client, cube.Namespace(ns))

	for _, w := range []cube.Workload{tritonVLLMService(), tritonPythonService()} {
		rel, err := cl.Apply(ctx, w)
		require.NoError(t, err)
		want, err := w.Objects()
		require.NoError(t, err)
		require.Len(t, rel.Objects, len(want))
	}

	cm := &corev1.ConfigMap{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "qwen-triton-config"}, cm))
	assert.Contains(t, cm.Data["qwen.config.pbtxt"], "kind: KIND_MODEL")
	assert.Contains(t, cm.Data["qwen.1.model.json"], `"model": "Qwen/Qwen2.5-7B-Instruct"`)

	dep := &appsv1.Deployment{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "qwen-triton"}, dep))
	var items []corev1.KeyToPath
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == "qwen-triton-config" {
			items = v.ConfigMap.Items
		}
	}
	assert.Equal(t, []corev1.KeyToPath{
		{Key: "qwen.config.pbtxt", Path: "qwen/config.pbtxt"},
		{Key: "qwen.1.model.json", Path: "qwen/1/model.json"},
	}, items)
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "HF_TOKEN" {
			assert.Empty(t, e.Value, "the token is never a literal")
			require.NotNil(t, e.ValueFrom)
			assert.Equal(t, "hf-token", e.ValueFrom.SecretKeyRef.Name)
		}
	}

	// A second apply of the same objects changes nothing.
	before := cm.ResourceVersion
	_, err := cl.Apply(ctx, tritonVLLMService())
	require.NoError(t, err)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "qwen-triton-config"}, cm))
	assert.Equal(t, before, cm.ResourceVersion)
}
