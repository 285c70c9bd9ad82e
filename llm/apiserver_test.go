package llm_test

// These tests run against a real kube-apiserver with the training-operator
// CRDs installed (internal/testsupport/testenv); no operator runs.

import (
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

// TestAppliedStrictly applies every builder on H100 with InfiniBand,
// Ascend 910B3 and CPU with server-side apply and strict field
// validation, and checks the server stored what was rendered.
func TestAppliedStrictly(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Clientset(env.Clientset))
	for _, b := range builders {
		for _, s := range setups {
			name := b.name + "-" + s.name
			t.Run(name, func(t *testing.T) {
				f := b.build(name)
				s.on(f)
				applyAndCompare(t, c, env, ns, f)
			})
		}
	}
}

// applyAndCompare applies w with strict field validation and checks that
// the server stored every rendered field of every object as rendered (it
// may add defaults).
func applyAndCompare(t *testing.T, c *cube.Client, env *testenv.Env, ns string, w cube.Workload) {
	t.Helper()
	rel, err := c.Apply(t.Context(), w)
	require.NoError(t, err)
	want, err := w.Objects()
	require.NoError(t, err)
	require.Len(t, rel.Objects, len(want))
	for _, obj := range want {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
		require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: obj.GetName()}, u))
		rendered, err := cube.ToUnstructured(obj)
		require.NoError(t, err)
		fuzzcorpus.AssertContains(t, "", rendered.Object["spec"], u.Object["spec"])
		fuzzcorpus.AssertContains(t, "", rendered.Object["data"], u.Object["data"])
	}
}
