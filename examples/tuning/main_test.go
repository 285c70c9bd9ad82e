package main

import (
	"bytes"
	"strings"
	"testing"

	katibv1beta1 "github.com/kubeflow/katib/pkg/apis/controller/experiments/v1beta1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestTuningJourney runs the journey: the local study finds the optimum
// region and median stopping cuts trials short, and the printed Experiment
// decodes into Katib's type.
func TestTuningJourney(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out))
	text := out.String()
	assert.Contains(t, text, "# local study: 40 trials,")
	assert.Contains(t, text, "optimizer=adam")
	assert.NotContains(t, text, ", 0 stopped early")

	var yamlPart []string
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "#") {
			yamlPart = append(yamlPart, line)
		}
	}
	var exp katibv1beta1.Experiment
	require.NoError(t, yaml.UnmarshalStrict([]byte(strings.Join(yamlPart, "\n")), &exp))
	assert.Equal(t, "mnist-search", exp.Name)
	assert.Equal(t, "tpe", exp.Spec.Algorithm.AlgorithmName)
	assert.Equal(t, "PyTorchJob", exp.Spec.TrialTemplate.TrialSpec.GetKind())
	assert.Len(t, exp.Spec.TrialTemplate.TrialParameters, 3)
}
