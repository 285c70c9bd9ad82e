package argo_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/internal/testsupport/flows"
	"github.com/cubestudio/cube/internal/testsupport/snapshot"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/retry"
)

func TestObjectsLeavesBuilder(t *testing.T) {
	p := flows.LLMFlow().
		Workspace(pipeline.Workspace{Size: "1Gi"}).
		ServiceAccount(""). // with ExecutorRBAC the account defaults to llm-flow-executor
		OnExit(pipeline.Container("notify").Image("busybox").Command("echo", pipeline.PipelineStatus))
	p.Step(pipeline.Container("fan").Image("busybox").Command("echo", pipeline.ItemRef).
		ForEach("a", "b").Parallelism(1).Retry(retry.Policy{Limit: 1, Backoff: time.Second}).RetryOn(pipeline.OnError))
	wf := argo.Workflow(p).ExecutorRBAC()
	before := snapshot.Of(p)
	first, err := wf.Objects()
	require.NoError(t, err)
	_, err = wf.Build()
	require.NoError(t, err)
	_, err = argo.CronWorkflow(p, "0 * * * *").ExecutorRBAC().Objects()
	require.NoError(t, err)
	_ = p.DOT() + p.Mermaid()
	assert.Equal(t, before, snapshot.Of(p))
	again, err := wf.Objects()
	require.NoError(t, err)
	assert.Equal(t, first, again)

	// A change to what Objects returned reaches neither the builder nor the
	// next call.
	first[len(first)-1].SetName("changed")
	first[len(first)-1].GetLabels()["x"] = "y"
	assert.Equal(t, before, snapshot.Of(p))
	third, err := wf.Objects()
	require.NoError(t, err)
	assert.Equal(t, again, third)
}
