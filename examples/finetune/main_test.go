package main

import (
	"bytes"
	"strings"
	"testing"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestFinetuneJourney renders the journey with no cluster and decodes
// every document: the SFT with evaluation, the DPO from its adapter, and
// the service with the adapter.
func TestFinetuneJourney(t *testing.T) {
	var out bytes.Buffer
	steps, err := journey(&out, "team-nlp")
	require.NoError(t, err)
	require.Len(t, steps, 3)
	text := out.String()
	assert.Contains(t, text, "# sft lora of Qwen2.5-7B-Instruct on 1 × H100-SXM-80GB")
	assert.Contains(t, text, "# dpo lora of Qwen2.5-7B-Instruct")

	kinds := map[string]int{}
	var trainYAML []string
	for _, doc := range strings.Split(text, "\n---\n") {
		var lines []string
		for _, l := range strings.Split(doc, "\n") {
			if !strings.HasPrefix(l, "#") {
				lines = append(lines, l)
			}
		}
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal([]byte(strings.Join(lines, "\n")), &u.Object))
		kinds[u.GetKind()]++
		assert.Equal(t, "team-nlp", u.GetNamespace(), u.GetName())
		switch u.GetKind() {
		case "PyTorchJob":
			var job kubeflowv1.PyTorchJob
			require.NoError(t, yaml.UnmarshalStrict([]byte(strings.Join(lines, "\n")), &job))
		case "Deployment":
			var d appsv1.Deployment
			require.NoError(t, yaml.UnmarshalStrict([]byte(strings.Join(lines, "\n")), &d))
			assert.Contains(t, strings.Join(d.Spec.Template.Spec.Containers[0].Args, " "), "support-dpo=")
		case "ConfigMap":
			var cm corev1.ConfigMap
			require.NoError(t, yaml.UnmarshalStrict([]byte(strings.Join(lines, "\n")), &cm))
			if y, ok := cm.Data["train.yaml"]; ok {
				trainYAML = append(trainYAML, y)
			}
		}
	}
	assert.Equal(t, 2, kinds["PyTorchJob"])
	assert.Equal(t, 1, kinds["Deployment"])
	require.Len(t, trainYAML, 2)
	assert.Contains(t, trainYAML[0], "val_size: 0.05")
	assert.Contains(t, trainYAML[0], "eval_strategy: steps")
	assert.Contains(t, trainYAML[1], "adapter_name_or_path: /adapters/models/support-sft")
	assert.Contains(t, trainYAML[1], "stage: dpo")
}
