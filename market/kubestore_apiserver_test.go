package market_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/market"
)

// TestKubernetesStoreConformance runs the store suite against ConfigMaps
// on a real kube-apiserver and etcd (internal/testsupport/testenv): the API server's
// resourceVersion is the compare-and-swap, AlreadyExists the number lock.
func TestKubernetesStoreConformance(t *testing.T) {
	env := testenv.Get(t)
	testStoreConformance(t, func(t *testing.T) market.Store {
		s, err := market.NewKubernetesStore(env.Client, env.Namespace(t))
		require.NoError(t, err)
		return s
	})
}

// TestKubernetesStoreObjects checks what the API server holds for a
// version: one labelled ConfigMap, tags and stage as labels, and a version
// too large for one object refused before it is sent.
func TestKubernetesStoreObjects(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	s, err := market.NewKubernetesStore(env.Client, ns)
	require.NoError(t, err)
	reg := market.NewRegistry(s)
	_, err = reg.Register(ctx, sampleVersion("support-bot"))
	require.NoError(t, err)
	_, err = reg.Tag(ctx, "support-bot@1", "lora")
	require.NoError(t, err)
	_, err = reg.Promote(ctx, "support-bot@1", market.StageStaging, market.Promotion{By: "ci"})
	require.NoError(t, err)

	cm := &corev1.ConfigMap{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "support-bot-v1"}, cm))
	assert.Equal(t, map[string]string{
		cube.LabelName: "support-bot", cube.LabelManagedBy: "cube", cube.LabelPartOf: "market",
		cube.LabelKind: "modelversion", cube.LabelRelease: "support-bot",
		market.LabelModel: "support-bot", market.LabelVersion: "1", market.LabelStage: "staging",
		market.LabelTagPrefix + "lora": "true",
	}, cm.Labels)
	assert.Contains(t, cm.Data["version.json"], `"uri":"pvc://models/support-bot"`)

	big := sampleVersion("support-bot")
	big.Description = strings.Repeat("x", market.MaxObjectBytes)
	_, err = reg.Register(ctx, big)
	assert.ErrorIs(t, err, market.ErrTooLarge)
}
