package pipeline_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/internal/testsupport/snapshot"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/retry"
)

func TestObjectsLeavesBuilder(t *testing.T) {
	p := llmFlow().
		Workspace(pipeline.Workspace{Size: "1Gi"}).
		ServiceAccount("").ExecutorRBAC(). // the account defaults to llm-flow-executor
		OnExit(pipeline.Container("notify").Image("busybox").Command("echo", pipeline.PipelineStatus))
	p.Step(pipeline.Container("fan").Image("busybox").Command("echo", pipeline.ItemRef).
		ForEach("a", "b").Parallelism(1).Retry(retry.Policy{Limit: 1, Backoff: time.Second}).RetryOn(pipeline.OnError))
	before := snapshot.Of(p)
	first, err := p.Objects()
	require.NoError(t, err)
	_, err = p.Build()
	require.NoError(t, err)
	_, err = p.Schedule("0 * * * *").Objects()
	require.NoError(t, err)
	_ = p.DOT() + p.Mermaid()
	assert.Equal(t, before, snapshot.Of(p))
	again, err := p.Objects()
	require.NoError(t, err)
	assert.Equal(t, first, again)

	// A change to what Objects returned reaches neither the builder nor the
	// next call.
	first[len(first)-1].SetName("changed")
	first[len(first)-1].GetLabels()["x"] = "y"
	assert.Equal(t, before, snapshot.Of(p))
	third, err := p.Objects()
	require.NoError(t, err)
	assert.Equal(t, again, third)
}
