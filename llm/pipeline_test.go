package llm_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/train"
)

// A fine-tune, its merge and a GRPO run are pipeline steps: each has one
// job whose completion (from train.Kinds) the step waits on, its
// ConfigMaps applied beside.
func TestFineTuneIsAPipelineStep(t *testing.T) {
	sft := builders[0].build("sft")
	tune := pipeline.Workload("sft", sft)
	merge := pipeline.Workload("merge", sft.Merge("merge", "pvc://models/merged")).After(tune)
	rl := pipeline.Workload("grpo", grpo("grpo")).After(merge)
	wf, err := argo.Workflow(pipeline.New("tune-and-merge").Kinds(train.Kinds()...).Step(tune, merge, rl)).Build()
	require.NoError(t, err)
	created := map[string]bool{}
	for _, tmpl := range wf.Spec.Templates {
		if tmpl.Resource != nil && tmpl.Resource.Action == "create" {
			for _, kind := range []string{"kind: PyTorchJob", "kind: RayJob"} {
				if strings.Contains(tmpl.Resource.Manifest, kind) {
					created[tmpl.Name+" "+kind] = true
				}
			}
		}
	}
	assert.Len(t, created, 3, "%v", created)
}
