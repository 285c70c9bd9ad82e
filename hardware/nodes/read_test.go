package nodes_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/cubestudio/cube/hardware/nodes"
)

// TestReadListError wraps the client's error so callers can still test it.
func TestReadListError(t *testing.T) {
	boom := errors.New("boom")
	c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error { return boom },
	}).Build()
	_, err := nodes.Read(t.Context(), c)
	require.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "list nodes: ")
}
