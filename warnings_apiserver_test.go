package cube_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

// A namespace that warns on the restricted Pod Security level accepts a
// Deployment whose pods would violate it, with a warning: Release.Warnings
// carries the API server's words, once each, and a release in a namespace
// without the label has none. The handler the rest config had still sees
// every warning.
func TestApplyReportsTheAPIServersWarnings(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	warned, quiet := env.Namespace(t), env.Namespace(t)
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{
		"pod-security.kubernetes.io/warn":         "restricted",
		"pod-security.kubernetes.io/warn-version": "latest",
	}}})
	require.NoError(t, err)
	_, err = env.Clientset.CoreV1().Namespaces().Patch(ctx, warned, types.MergePatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err)

	cfg := rest.CopyConfig(env.Config)
	seen := &countingHandler{}
	cfg.WarningHandlerWithContext = seen
	c, err := cube.New(cfg)
	require.NoError(t, err)

	rel, err := c.Apply(ctx, webApp("shop", warned, 1))
	require.NoError(t, err)
	require.Len(t, rel.Warnings, 1, "%q", rel.Warnings)
	assert.Contains(t, rel.Warnings[0], `would violate PodSecurity "restricted:latest"`)
	assert.Contains(t, rel.Warnings[0], "allowPrivilegeEscalation != false")
	assert.Positive(t, seen.n.Load(), "the config's own handler still hears the warnings")

	again, err := c.Apply(ctx, webApp("shop", warned, 2))
	require.NoError(t, err)
	assert.Equal(t, rel.Warnings, again.Warnings, "every Apply reports what the server said to it")

	other, err := c.Apply(ctx, webApp("shop", quiet, 1))
	require.NoError(t, err)
	assert.Empty(t, other.Warnings)
}

type countingHandler struct{ n atomic.Int32 }

func (h *countingHandler) HandleWarningHeaderWithContext(_ context.Context, code int, _, _ string) {
	if code == 299 {
		h.n.Add(1)
	}
}
