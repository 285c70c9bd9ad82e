package argo_test

import (
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

// fuzzCorpus is the fuzz target's inputs for a normal test: the seeds, the
// inputs the fuzzer kept under testdata/fuzz/<target>, and inputs drawn
// from a fixed-seed generator (fuzzcorpus.Programs).
func fuzzCorpus(t *testing.T, target string, seeds [][]byte, generated int) [][]byte {
	t.Helper()
	corpus := append(append([][]byte{}, seeds...), fuzzcorpus.Bytes(t, target)...)
	return append(corpus, fuzzcorpus.Programs(10, generated, 8, 71)...)
}

// Whatever the builder fuzzer's inputs get accepted by Objects, the API
// server accepts too: every object through a strict server-side apply (dry
// run), and the job of every resource template through a strict create
// (dry run), as Argo's executor would create it.
func TestFuzzCorpusAcceptedByAPIServer(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	c := cube.NewFromClient(env.Client, cube.Namespace(ns))
	accepted := 0
	for i, data := range fuzzCorpus(t, "FuzzPipelineBuilder", fuzzSeeds, 1500) {
		p, builder := fuzzPipeline(data, ns)
		objs, err := builder.Objects()
		checkBuilt(t, p, builder, objs, err)
		if err != nil {
			continue
		}
		accepted++
		_, err = c.Apply(ctx, builder, cube.DryRun)
		require.NoError(t, err, "input %d %q", i, data)
		wf := objs[len(objs)-1].(*wfv1.Workflow)
		for _, tm := range wf.Spec.Templates {
			if tm.Resource == nil {
				continue
			}
			var content map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(tm.Resource.Manifest), &content))
			job := &unstructured.Unstructured{Object: content}
			job.SetNamespace(ns)
			require.NoError(t, env.Client.Create(ctx, job, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict)),
				"input %d %q: manifest of template %s", i, data, tm.Name)
		}
	}
	t.Logf("%d accepted inputs applied", accepted)
	require.Greater(t, accepted, 20, "the corpus exercises accepted pipelines, not only refusals")
}
