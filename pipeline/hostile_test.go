package pipeline_test

import (
	"io"
	"testing"
	"time"

	"github.com/cubestudio/cube/retry"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/pipeline"
)

const nilPipeline = "pipeline: the *Pipeline is nil: make one with pipeline.New"

// A nil *Pipeline records nothing and every method that validates says so.
func TestNilPipeline(t *testing.T) {
	var p *pipeline.Pipeline
	require.NotPanics(t, func() {
		p = p.Step(ctr("a")).Param("x", "1").Workspace(pipeline.Workspace{Size: "1Gi"}).Parallelism(2).
			TTLAfterFinished(time.Hour).PodGC(pipeline.PodGCOnPodSuccess).
			ServiceAccount("sa").ExecutorRBAC().OnExit(ctr("e"))
	})
	assert.Nil(t, p)
	assert.Nil(t, pipeline.ExecutorRules(p))
	_, err := p.Build()
	assert.EqualError(t, err, nilPipeline)
	_, err = p.Objects()
	assert.EqualError(t, err, nilPipeline)
	_, err = p.Run(t.Context())
	assert.EqualError(t, err, nilPipeline)
	_, err = p.Schedule("@daily").Timezone("UTC").ConcurrencyPolicy(pipeline.ForbidConcurrent).StartingDeadline(time.Minute).
		KeepHistory(1, 1).Suspend(true).Objects()
	assert.EqualError(t, err, nilPipeline)
	var s *pipeline.Schedule
	_, err = s.Timezone("UTC").Build()
	assert.EqualError(t, err, nilPipeline)
	assert.Contains(t, p.DOT(), "digraph")
	assert.Contains(t, p.Mermaid(), "flowchart")
	// Render finds the typed nil before asking the pipeline.
	err = cube.Render(io.Discard, p)
	assert.EqualError(t, err, "render workload 0: workload *pipeline.Pipeline is nil")
}

// A zero Pipeline is an unnamed, empty one: its errors say so.
func TestZeroPipeline(t *testing.T) {
	_, err := (&pipeline.Pipeline{}).Step(ctr("a")).Build()
	requireErrors(t, err, wantErr{field.ErrorTypeRequired, "metadata.name", "a name is required"})
}

// foreignStep satisfies Step by embedding StepOptions, outside the
// package's constructors.
type foreignStep struct {
	pipeline.StepOptions[foreignStep]
}

func TestNilAndForeignSteps(t *testing.T) {
	_, err := pipeline.New("p").Step(
		(*pipeline.ContainerStep)(nil),
		(*pipeline.WorkloadStep)(nil),
		(*pipeline.FuncStep)(nil),
		nil,
		&pipeline.ContainerStep{},
		&foreignStep{},
		ctr("ok").After((*pipeline.ContainerStep)(nil), nil),
	).OnExit((*pipeline.FuncStep)(nil)).Build()
	requireErrors(t, err,
		wantErr{field.ErrorTypeRequired, "steps[0]", "step is nil"},
		wantErr{field.ErrorTypeRequired, "steps[1]", "step is nil"},
		wantErr{field.ErrorTypeRequired, "steps[2]", "step is nil"},
		wantErr{field.ErrorTypeRequired, "steps[3]", "step is nil"},
		wantErr{field.ErrorTypeInvalid, "steps[4]", "a step made without its constructor"},
		wantErr{field.ErrorTypeInvalid, "steps[5]", "a step made without its constructor"},
		wantErr{field.ErrorTypeRequired, "steps[6].after[0]", "dependency is nil"},
		wantErr{field.ErrorTypeRequired, "steps[6].after[1]", "dependency is nil"},
		wantErr{field.ErrorTypeRequired, "onExit", "step is nil"},
	)
	_, err = pipeline.New("p").Step((*pipeline.FuncStep)(nil)).Run(t.Context(), pipeline.Progress(nil))
	requireErrors(t, err, wantErr{field.ErrorTypeRequired, "steps[0]", "step is nil"})
	assert.NotPanics(t, func() { _ = pipeline.New("p").Step((*pipeline.ContainerStep)(nil)).DOT() })
}

// Durations and counts that cannot mean anything are refused, each at its
// path.
func TestSilentAcceptancesRefused(t *testing.T) {
	_, err := pipeline.New("p").Step(
		ctr("a").ActiveDeadline(-time.Second),
		ctr("b").ActiveDeadline(0),
		ctr("c").Retry(retry.Policy{Limit: -1, Backoff: -time.Second}),
		// Found by FuzzPipelineBuilder: these overflowed Argo's int32
		// fields (intstr.FromInt truncates, activeDeadlineSeconds wrapped).
		ctr("d").Retry(retry.Policy{Limit: 1 << 31, Factor: 1 << 31}),
		ctr("e").ActiveDeadline(1<<62),
	).TTLAfterFinished(-time.Second).Parallelism(0).Build()
	requireErrors(t, err,
		wantErr{field.ErrorTypeInvalid, "steps[0].activeDeadline", "must be positive"},
		wantErr{field.ErrorTypeInvalid, "steps[1].activeDeadline", "must be positive"},
		wantErr{field.ErrorTypeInvalid, "steps[2].retry.limit", "must not be negative"},
		wantErr{field.ErrorTypeInvalid, "steps[3].retry.limit", "must be at most 2^31-1"},
		wantErr{field.ErrorTypeInvalid, "steps[3].retry.factor", "must be at most 2^31-1"},
		wantErr{field.ErrorTypeInvalid, "steps[4].activeDeadline", "must be at most 2^31-1 seconds"},
		wantErr{field.ErrorTypeInvalid, "steps[2].retry.backoff", "must not be negative"},
		wantErr{field.ErrorTypeInvalid, "ttlAfterFinished", "must be between 0 and 2^31-1 seconds"},
		wantErr{field.ErrorTypeInvalid, "parallelism", "must be at least 1"},
	)
}
