package main

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// TestQuickstartPrintsValidYAML runs the quickstart's main job and decodes
// every document it prints.
func TestQuickstartPrintsValidYAML(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), &out, "team-nlp", false, time.Minute, gpuCluster()))
	assert.Contains(t, out.String(), "# pipeline ran locally")
	assert.Contains(t, out.String(), "Succeeded")

	for _, u := range printed(t, &out) {
		require.NotEmpty(t, u.GetAPIVersion())
		if u.GetKind() != "Namespace" && u.GetKind() != "Queue" { // cluster-scoped
			assert.Equal(t, "team-nlp", u.GetNamespace(), "%s %s", u.GetKind(), u.GetName())
		}
	}
}

// TestQuickstartPrintsEachWorkloadOnce: the training job is printed once,
// as the pipeline's training step, and never beside it; so is every other
// workload. With -apply, the same workloads are applied, so it trains once.
func TestQuickstartPrintsEachWorkloadOnce(t *testing.T) {
	var out bytes.Buffer
	workloads, err := journey(t.Context(), &out, "team-nlp", gpuCluster())
	require.NoError(t, err)
	require.Len(t, workloads, 3, "the tenant, the pipeline and the served model")

	objects := printed(t, &out)
	top := map[string][]string{}
	var inside []*unstructured.Unstructured
	for _, u := range objects {
		top[u.GetKind()] = append(top[u.GetKind()], u.GetName())
		if u.GetKind() != "Workflow" {
			continue
		}
		var wf wfv1.Workflow
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &wf))
		for _, tmpl := range wf.Spec.Templates {
			if tmpl.Resource == nil {
				continue
			}
			m := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal([]byte(tmpl.Resource.Manifest), &m.Object))
			inside = append(inside, m)
		}
	}
	assert.Equal(t, []string{"team-nlp"}, top["Namespace"])
	assert.Equal(t, []string{"sft-flow"}, top["Workflow"])
	assert.Equal(t, []string{"qwen-chat"}, top["Deployment"])
	assert.Empty(t, top["PyTorchJob"], "the PyTorchJob is not printed beside the pipeline that runs it")
	require.Len(t, inside, 1, "the pipeline creates one resource: the training job")
	assert.Equal(t, "PyTorchJob", inside[0].GetKind())
	// Argo creates it under a generated name, one per run.
	assert.Equal(t, "llama-sft-", inside[0].GetGenerateName())

	// 4 nodes, as the comments and the README say: a Master and 3 Workers,
	// each with 8 H100.
	var job kubeflowv1.PyTorchJob
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(inside[0].Object, &job))
	replicas := map[kubeflowv1.ReplicaType]int32{}
	for role, spec := range job.Spec.PyTorchReplicaSpecs {
		replicas[role] = *spec.Replicas
		gpus := spec.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
		assert.Equal(t, int64(8), gpus.Value(), role)
	}
	assert.Equal(t, map[kubeflowv1.ReplicaType]int32{"Master": 1, "Worker": 3}, replicas)
}

// printed decodes every YAML document of out.
func printed(t *testing.T, out io.Reader) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(out, 4096)
	var objs []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if u.Object != nil {
			objs = append(objs, u)
		}
	}
	kinds := map[string]bool{}
	for _, u := range objs {
		kinds[u.GetKind()] = true
	}
	for _, k := range []string{"Namespace", "ResourceQuota", "Queue", "Workflow", "Deployment", "Service", "HorizontalPodAutoscaler"} {
		assert.True(t, kinds[k], "a %s is printed: %v", k, kinds)
	}
	return objs
}
