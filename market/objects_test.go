package market_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/market"
)

// objects renders w, failing the test on an error.
func objects(t *testing.T, w interface {
	Objects() ([]client.Object, error)
}) []client.Object {
	t.Helper()
	objs, err := w.Objects()
	require.NoError(t, err)
	return objs
}

// Objects never changes the builder: a builder rendered once, then given
// more settings, renders what a fresh builder given all the settings
// renders. A default stored by the first render (the image, the tool, the
// source's environment) would show in the second.
func TestObjectsLeavesTheBuilderUnchanged(t *testing.T) {
	t.Run("download", func(t *testing.T) {
		rendered := market.Download("fetch", "s3://team-models/qwen", "models")
		first := objects(t, rendered)
		rendered.Image("registry.local/aws-cli:2").S3Endpoint("http://minio.storage:9000").S3Region("eu-west-1")
		fresh := market.Download("fetch", "s3://team-models/qwen", "models").
			Image("registry.local/aws-cli:2").S3Endpoint("http://minio.storage:9000").S3Region("eu-west-1")
		assert.Equal(t, objects(t, fresh), objects(t, rendered))
		assert.NotEqual(t, first, objects(t, rendered), "the later settings took effect")
	})
	t.Run("evaluation", func(t *testing.T) {
		v := market.Version{Model: "bot", Number: 2, Artifact: market.Artifact{URI: "pvc://models/bot/v2"}}
		rendered := market.Evaluate("eval", v, "mmlu").On(hardware.H100).Accelerators(1)
		first := objects(t, rendered)
		// The default image follows the profile: an NVIDIA render must not
		// pin the CUDA image for the Ascend one.
		rendered.On(hardware.Ascend910B3).SampleLimit(10)
		fresh := market.Evaluate("eval", v, "mmlu").On(hardware.Ascend910B3).Accelerators(1).SampleLimit(10)
		assert.Equal(t, objects(t, fresh), objects(t, rendered))
		assert.NotEqual(t, first, objects(t, rendered))
	})
}
