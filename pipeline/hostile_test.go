package pipeline_test

import (
	"io"
	"testing"
	"time"

	"github.com/cubestudio/cube/internal/testsupport/flows"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/pipeline/local"
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
		p = p.Step(flows.Ctr("a")).Param("x", "1").Workspace(pipeline.Workspace{Size: "1Gi"}).Parallelism(2).
			TTLAfterFinished(time.Hour).PodGC(pipeline.PodGCOnPodSuccess).
			ServiceAccount("sa").OnExit(flows.Ctr("e"))
	})
	assert.Nil(t, p)
	_, err := argo.Workflow(p).Build()
	assert.EqualError(t, err, nilPipeline)
	_, err = argo.Workflow(p).Objects()
	assert.EqualError(t, err, nilPipeline)
	_, err = local.Run(t.Context(), p)
	assert.EqualError(t, err, nilPipeline)
	_, err = argo.CronWorkflow(p, "@daily").Timezone("UTC").ConcurrencyPolicy(argo.ForbidConcurrent).StartingDeadline(time.Minute).
		KeepHistory(1, 1).Suspend(true).Objects()
	assert.EqualError(t, err, nilPipeline)
	var s *argo.CronWorkflowBuilder
	_, err = s.Timezone("UTC").ExecutorRBAC().Build()
	assert.EqualError(t, err, nilPipeline)
	var w *argo.WorkflowBuilder
	_, err = w.ExecutorRBAC().Objects()
	assert.EqualError(t, err, nilPipeline)
	assert.Contains(t, p.DOT(), "digraph")
	assert.Contains(t, p.Mermaid(), "flowchart")
	// Render reports the builder's refusal.
	err = cube.Render(io.Discard, argo.Workflow(p))
	assert.ErrorContains(t, err, nilPipeline)
}

// A zero Pipeline is an unnamed, empty one: its errors say so.
func TestZeroPipeline(t *testing.T) {
	_, err := argo.Workflow((&pipeline.Pipeline{}).Step(flows.Ctr("a"))).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeRequired, "metadata.name", "a name is required"))
}

// foreignStep satisfies Step by embedding StepOptions, outside the
// package's constructors.
type foreignStep struct {
	pipeline.StepOptions[foreignStep]
}

func TestNilAndForeignSteps(t *testing.T) {
	_, err := argo.Workflow(pipeline.New("p").Step(
		(*pipeline.ContainerStep)(nil),
		(*pipeline.WorkloadStep)(nil),
		(*pipeline.FuncStep)(nil),
		nil,
		&pipeline.ContainerStep{},
		&foreignStep{},
		flows.Ctr("ok").After((*pipeline.ContainerStep)(nil), nil),
	).OnExit((*pipeline.FuncStep)(nil))).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeRequired, "steps[0]", "step is nil"),
		flows.Want(field.ErrorTypeRequired, "steps[1]", "step is nil"),
		flows.Want(field.ErrorTypeRequired, "steps[2]", "step is nil"),
		flows.Want(field.ErrorTypeRequired, "steps[3]", "step is nil"),
		flows.Want(field.ErrorTypeInvalid, "steps[4]", "a step made without its constructor"),
		flows.Want(field.ErrorTypeInvalid, "steps[5]", "a step made without its constructor"),
		flows.Want(field.ErrorTypeRequired, "steps[6].after[0]", "dependency is nil"),
		flows.Want(field.ErrorTypeRequired, "steps[6].after[1]", "dependency is nil"),
		flows.Want(field.ErrorTypeRequired, "onExit", "step is nil"),
	)
	_, err = local.Run(t.Context(), pipeline.New("p").Step((*pipeline.FuncStep)(nil)), local.Progress(nil))
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeRequired, "steps[0]", "step is nil"))
	assert.NotPanics(t, func() { _ = pipeline.New("p").Step((*pipeline.ContainerStep)(nil)).DOT() })
}

// Durations and counts that cannot mean anything are refused, each at its
// path.
func TestSilentAcceptancesRefused(t *testing.T) {
	_, err := argo.Workflow(pipeline.New("p").Step(
		flows.Ctr("a").ActiveDeadline(-time.Second),
		flows.Ctr("b").ActiveDeadline(0),
		flows.Ctr("c").Retry(retry.Policy{Limit: -1, Backoff: -time.Second}),
		// Found by FuzzPipelineBuilder: these overflowed Argo's int32
		// fields (intstr.FromInt truncates, activeDeadlineSeconds wrapped).
		flows.Ctr("d").Retry(retry.Policy{Limit: 1 << 31, Factor: 1 << 31}),
		flows.Ctr("e").ActiveDeadline(1<<62),
	).TTLAfterFinished(-time.Second).Parallelism(0)).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeInvalid, "steps[0].activeDeadline", "must be positive"),
		flows.Want(field.ErrorTypeInvalid, "steps[1].activeDeadline", "must be positive"),
		flows.Want(field.ErrorTypeInvalid, "steps[2].retry.limit", "must not be negative"),
		flows.Want(field.ErrorTypeInvalid, "steps[3].retry.limit", "must be at most 2^31-1"),
		flows.Want(field.ErrorTypeInvalid, "steps[3].retry.factor", "must be at most 2^31-1"),
		flows.Want(field.ErrorTypeInvalid, "steps[4].activeDeadline", "must be at most 2^31-1 seconds"),
		flows.Want(field.ErrorTypeInvalid, "steps[2].retry.backoff", "must not be negative"),
		flows.Want(field.ErrorTypeInvalid, "ttlAfterFinished", "must be between 0 and 2^31-1 seconds"),
		flows.Want(field.ErrorTypeInvalid, "parallelism", "must be at least 1"),
	)
}
