package cube_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
)

// Release.Created is when the release's record was created: the same on
// the Release Apply returns, on a later Apply, and on Release and Releases;
// zero for a dry run of a release never applied.
func TestReleaseCreatedIsTheRecordsCreation(t *testing.T) {
	c, env, ns := newClient(t)
	ctx := t.Context()

	dry, err := c.Apply(ctx, webApp("shop", "", 1), cube.DryRun)
	require.NoError(t, err)
	assert.True(t, dry.Created.IsZero(), "a dry run writes no record")

	rel, err := c.Apply(ctx, webApp("shop", "", 1))
	require.NoError(t, err)
	var record corev1.ConfigMap
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cube-release-shop"}, &record))
	created := record.CreationTimestamp.Time
	require.False(t, created.IsZero())
	assert.True(t, created.Equal(rel.Created), "%s != %s", created, rel.Created)

	again, err := c.Apply(ctx, webApp("shop", "", 2))
	require.NoError(t, err)
	assert.True(t, created.Equal(again.Created), "a later Apply keeps the first one's time")
	dry, err = c.Apply(ctx, webApp("shop", "", 3), cube.DryRun)
	require.NoError(t, err)
	assert.True(t, created.Equal(dry.Created), "a dry run of an applied release reads it")

	back, err := c.Release(ctx, ns, "shop")
	require.NoError(t, err)
	assert.True(t, created.Equal(back.Created))
	all, err := c.Releases(ctx, ns)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.True(t, created.Equal(all[0].Created))
}
