package serve_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/serve"
)

// Counts are ints in the public API, as everywhere in cube; a count that
// does not fit the int32 field it renders to is an error, never a wrapped
// number.
func TestCountsAreIntsCheckedAgainstInt32(t *testing.T) {
	replicas := 3 // an int, not an int32
	objs, err := serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).Replicas(replicas).DisruptionBudget(replicas - 1).Objects()
	require.NoError(t, err)
	var dep *appsv1.Deployment
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			dep = d
		}
	}
	require.NotNil(t, dep)
	assert.Equal(t, int32(3), *dep.Spec.Replicas)

	huge := math.MaxInt32 + 1
	assertErrors(t, serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).Replicas(huge).DisruptionBudget(huge),
		wantErr{field.ErrorTypeInvalid, "spec.replicas", "must fit in 32 bits"},
		wantErr{field.ErrorTypeInvalid, "spec.disruptionBudget", "must fit in 32 bits"})
	assertErrors(t, serve.VLLM("q", qwen).On(hardware.H100).Accelerators(1).CPU("4").
		Autoscale(1, huge, serve.ScaleOnCPU(huge)),
		wantErr{field.ErrorTypeInvalid, "spec.autoscale.maxReplicas", "must fit in 32 bits"},
		wantErr{field.ErrorTypeInvalid, "spec.autoscale.metrics[0].percent", "must fit in 32 bits"})
	assertErrors(t, serve.Canary("c", serve.VLLM("a", qwen), serve.VLLM("b", qwen)).Gateway("gw", "infra").Weights(huge, 100-huge),
		wantErr{field.ErrorTypeInvalid, "spec.weights", "must not be negative"})
}
