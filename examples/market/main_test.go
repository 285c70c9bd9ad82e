package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/market"
)

// TestMarketJourney runs the journey and checks the registry it leaves and
// the workloads it prints.
func TestMarketJourney(t *testing.T) {
	path := filepath.Join(t.TempDir(), "registry.db")
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out, path))
	text := out.String()
	assert.Contains(t, text, "# registered support-bot@1 from Qwen/Qwen2.5-7B-Instruct (release sft-support-bot, lr 2e-5)")
	assert.Contains(t, text, "# evaluated support-bot@1: mmlu/acc 0.7231")
	assert.Contains(t, text, "# support-bot@1 is in production (by alice: beats the base on mmlu)")

	store, err := market.OpenFileStore(path)
	require.NoError(t, err)
	v, err := market.NewRegistry(store).Get(t.Context(), "support-bot@production")
	require.NoError(t, err)
	assert.Equal(t, []string{"pvc://data/tickets.jsonl"}, v.Lineage.Datasets)
	assert.Equal(t, 0.8342, v.Metrics["gsm8k/exact_match/strict-match"])

	kinds := map[string]int{}
	for _, doc := range strings.Split(text, "\n---\n") {
		doc = strings.TrimSpace(doc)
		var meta struct{ Kind string }
		require.NoError(t, yaml.Unmarshal([]byte(doc), &meta))
		kinds[meta.Kind]++
		switch meta.Kind {
		case "PyTorchJob":
			var job kubeflowv1.PyTorchJob
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &job))
			assert.Equal(t, "sft-support-bot", job.Name)
		case "Job":
			var job batchv1.Job
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &job))
			assert.Equal(t, "support-bot@1", job.Annotations[market.AnnotationVersion])
		case "Deployment":
			var dep appsv1.Deployment
			require.NoError(t, yaml.UnmarshalStrict([]byte(doc), &dep))
			assert.Equal(t, "1", dep.Labels[market.LabelVersion])
			assert.Equal(t, "/mnt/models/support-bot/v1", dep.Spec.Template.Spec.Containers[0].Args[0])
		}
	}
	assert.Equal(t, 1, kinds["PyTorchJob"])
	assert.Equal(t, 1, kinds["Job"])
	assert.Equal(t, 1, kinds["Deployment"])
	assert.Equal(t, 1, kinds["Service"])
}
