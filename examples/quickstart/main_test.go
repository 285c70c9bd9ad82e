package main

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// TestQuickstartPrintsValidYAML runs the quickstart's main job and decodes
// every document it prints.
func TestQuickstartPrintsValidYAML(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out, "team-nlp", false, time.Minute, gpuCluster()))
	assert.Contains(t, out.String(), "# pipeline ran locally")
	assert.Contains(t, out.String(), "Succeeded")

	dec := utilyaml.NewYAMLOrJSONDecoder(&out, 4096)
	kinds := map[string]int{}
	for {
		var u unstructured.Unstructured
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if u.Object == nil {
			continue
		}
		require.NotEmpty(t, u.GetAPIVersion())
		kinds[u.GetKind()]++
		if u.GetKind() != "Namespace" && u.GetKind() != "Queue" { // cluster-scoped
			assert.Equal(t, "team-nlp", u.GetNamespace(), "%s %s", u.GetKind(), u.GetName())
		}
	}
	for _, k := range []string{"Namespace", "ResourceQuota", "Queue", "PyTorchJob", "Workflow", "Deployment", "Service", "HorizontalPodAutoscaler"} {
		assert.Positive(t, kinds[k], "a %s is printed: %v", k, kinds)
	}
}
