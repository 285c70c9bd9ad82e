package argo_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/kinds"
	"github.com/cubestudio/cube/pipeline/argo"
)

// On the one-node test cluster (real Argo, kubelet and the stand-in
// engine in place of vLLM) a pipeline runs a step, then serves a model:
// the Workflow succeeds once the Deployment is available, and the
// Deployment keeps serving, owned by no Workflow.
func TestServeStepOnACluster(t *testing.T) {
	c := testenv.GetCluster(t)
	ns := c.Namespace(t)
	ctx := t.Context()
	cl, err := cube.New(c.Config, cube.Namespace(ns), cube.Kinds(kinds.All()...))
	require.NoError(t, err)

	// The stand-in image has busybox's sh for the first step.
	p := servePipeline(ns, c.Images.Standin)
	rel, err := cl.Apply(ctx, argo.Workflow(p).ExecutorRBAC())
	require.NoError(t, err)
	st, err := rel.Wait(ctx, cube.Succeeded, cube.Timeout(8*time.Minute), cube.FailOnStuckPods)
	require.NoError(t, err, "%+v", st)
	assert.Equal(t, cube.Succeeded, st.Phase)

	var dep appsv1.Deployment
	require.NoError(t, c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "chat"}, &dep))
	assert.GreaterOrEqual(t, dep.Status.AvailableReplicas, int32(2), "the step completed when both replicas were available")
	assert.Empty(t, dep.OwnerReferences, "the Workflow does not own the service")
	assert.Equal(t, rel.Name, dep.Labels[cube.LabelRelease], "the service is in the pipeline's release")
}
