package hardware_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/hardware/nodes"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestApplyGoldenOnAPIServer creates a Pod from every valid golden template
// with strict field validation: what Apply writes is what the real schema
// accepts.
func TestApplyGoldenOnAPIServer(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	created := 0
	for i, c := range applyCases() {
		tmpl, errs := render(c)
		if len(errs) > 0 {
			continue
		}
		pod := &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("case-%02d", i), Labels: tmpl.Labels, Annotations: tmpl.Annotations},
			Spec:       tmpl.Spec,
		}
		require.NoError(t, env.CreateStrict(t.Context(), pod), c.name)
		created++
		// What the server stored keeps the devices, selectors and mounts.
		want := tmpl.Spec.Containers[0].Resources.Limits
		for name, q := range want {
			got := pod.Spec.Containers[0].Resources.Limits[name]
			assert.True(t, q.Equal(got), "%s %s", c.name, name)
		}
		assert.Equal(t, tmpl.Spec.NodeSelector, pod.Spec.NodeSelector, c.name)
		assert.Equal(t, len(tmpl.Spec.Volumes), len(pod.Spec.Volumes), c.name)
	}
	assert.Equal(t, 122, created)
}

// TestReadInventoryFromAPIServer reads, through nodes.Read, Node objects the test creates.
func TestReadInventoryFromAPIServer(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	suffix := "-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	marker := map[string]string{"cube.dev/test": "inventory"}
	for _, n := range inventoryNodes(suffix, marker) {
		n := n
		status := n.Status
		// t.Context is already cancelled when cleanups run.
		t.Cleanup(func() {
			if err := env.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name}}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete node %s: %v", n.Name, err)
			}
		})
		n.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
		require.NoError(t, env.CreateStrict(ctx, &n))
		n.Status = status
		require.NoError(t, env.Client.Status().Update(ctx, &n), n.Name)
	}
	inv, err := nodes.Read(ctx, env.Client, client.MatchingLabels(marker))
	require.NoError(t, err)
	checkInventory(t, inv, suffix)
}

func TestReadInventoryError(t *testing.T) {
	env := testenv.Get(t)
	_, err := nodes.Read(t.Context(), env.Client, client.MatchingFields{"no.such.field": "x"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "list nodes: ")
}
