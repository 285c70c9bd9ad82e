package argo_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/internal/testsupport/flows"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
)

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	return &unstructured.Unstructured{Object: content}
}

func TestWorkflowStatus(t *testing.T) {
	for _, tc := range []struct {
		status wfv1.WorkflowStatus
		want   cube.ObjectStatus
	}{
		{wfv1.WorkflowStatus{}, cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending"}},
		{wfv1.WorkflowStatus{Phase: wfv1.WorkflowPending, Message: "waiting for quota"}, cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: "waiting for quota"}},
		{wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning}, cube.ObjectStatus{Phase: cube.InProgress, Reason: "Running"}},
		{wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, Progress: "2/5"}, cube.ObjectStatus{Phase: cube.InProgress, Reason: "Running", Message: "2/5 steps done"}},
		{wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, Progress: "2/5", Message: "retrying"}, cube.ObjectStatus{Phase: cube.InProgress, Reason: "Running", Message: "2/5 steps done: retrying"}},
		{wfv1.WorkflowStatus{Phase: wfv1.WorkflowSucceeded}, cube.ObjectStatus{Phase: cube.Succeeded, Reason: "Succeeded"}},
		{wfv1.WorkflowStatus{Phase: wfv1.WorkflowFailed, Message: "child 'train' failed"}, cube.ObjectStatus{Phase: cube.Failed, Reason: "Failed", Message: "child 'train' failed"}},
		{wfv1.WorkflowStatus{Phase: wfv1.WorkflowError, Message: "invalid spec"}, cube.ObjectStatus{Phase: cube.Failed, Reason: "Error", Message: "invalid spec"}},
	} {
		wf := &wfv1.Workflow{
			TypeMeta:   metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow"},
			ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ml"},
			Status:     tc.status,
		}
		got := cube.ReadStatus(toUnstructured(t, wf), argo.Kinds()...)
		tc.want.Ref = cube.RefOf(wf)
		assert.Equal(t, tc.want, got, "phase %q", tc.status.Phase)
	}
}

func TestCronWorkflowStatus(t *testing.T) {
	cw := &wfv1.CronWorkflow{
		TypeMeta:   metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "CronWorkflow"},
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ml"},
	}
	ref := cube.RefOf(cw)
	assert.Equal(t, cube.ObjectStatus{Ref: ref, Phase: cube.Ready, Reason: "Scheduled", Message: "0 active"}, cube.ReadStatus(toUnstructured(t, cw), argo.Kinds()...))
	cw.Spec.Suspend = true
	assert.Equal(t, cube.ObjectStatus{Ref: ref, Phase: cube.Ready, Reason: "Suspended"}, cube.ReadStatus(toUnstructured(t, cw), argo.Kinds()...))
	cw.Status.Conditions = wfv1.Conditions{{Type: wfv1.ConditionTypeSpecError, Status: metav1.ConditionTrue, Message: "bad schedule"}}
	assert.Equal(t, cube.ObjectStatus{Ref: ref, Phase: cube.Failed, Reason: "SpecError", Message: "bad schedule"}, cube.ReadStatus(toUnstructured(t, cw), argo.Kinds()...))
}

func TestWorkflowCompletion(t *testing.T) {
	c, ok := cube.CompletionOf(argo.WorkflowKind, argo.Kinds()...)
	require.True(t, ok)
	assert.Equal(t, cube.Completion{Success: "status.phase == Succeeded", Failure: "status.phase in (Failed, Error)"}, c)
	_, ok = cube.CompletionOf(argo.WorkflowKind)
	assert.False(t, ok, "a Workflow is not a kind of the Kubernetes API: its completion comes with argo.Kinds")
	// So a pipeline runs another pipeline as a workload step, with no
	// Kinds of its own: a pipeline knows its package's.
	inner := pipeline.New("inner").Step(flows.Ctr("s"))
	wf, err := argo.Workflow(pipeline.New("outer").Step(pipeline.Workload("inner", argo.Workflow(inner)))).Build()
	require.NoError(t, err)
	tm := template(t, wf, "inner")
	assert.Equal(t, "status.phase == Succeeded", tm.Resource.SuccessCondition)
	assert.Contains(t, tm.Resource.Manifest, "generateName: inner-\n")
}

// waitThrough applies p to an in-memory cluster, moves its Workflow through
// Running to final, and returns what Wait saw.
func waitThrough(t *testing.T, p *pipeline.Pipeline, final cube.Phase, message string) (cube.Status, []cube.Phase, error) {
	t.Helper()
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("ml"))
	rel, err := cluster.Client.Apply(ctx, argo.Workflow(p))
	require.NoError(t, err)
	var ref cube.ObjectRef
	for _, r := range rel.Objects {
		if r.Kind == "Workflow" {
			ref = r
		}
	}
	require.Equal(t, "Workflow", ref.Kind)

	var mu sync.Mutex
	var seen []cube.Phase
	progressed := make(chan struct{}, 16)
	type result struct {
		st  cube.Status
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := rel.Wait(ctx, cube.Succeeded, cube.Timeout(20*time.Second), cube.OnProgress(func(s cube.Status) {
			mu.Lock()
			seen = append(seen, s.Phase)
			mu.Unlock()
			progressed <- struct{}{}
		}))
		done <- result{st, err}
	}()
	<-progressed // the first status: created, no phase yet
	require.NoError(t, cubetest.MarkObject(ctx, cluster.Fake, ref, cube.InProgress, "", ""))
	<-progressed
	require.NoError(t, cubetest.MarkObject(ctx, cluster.Fake, ref, final, "", message))
	r := <-done
	mu.Lock()
	defer mu.Unlock()
	return r.st, seen, r.err
}

func TestWaitWorkflowSucceeds(t *testing.T) {
	st, seen, err := waitThrough(t, flows.LLMFlow(), cube.Succeeded, "")
	require.NoError(t, err)
	assert.Equal(t, cube.Succeeded, st.Phase)
	assert.Equal(t, []cube.Phase{cube.InProgress, cube.InProgress, cube.Succeeded}, seen)
	for _, o := range st.Objects {
		if o.Ref.Kind == "Workflow" {
			assert.Equal(t, "Succeeded", o.Reason)
		}
	}
}

func TestWaitWorkflowFails(t *testing.T) {
	st, seen, err := waitThrough(t, flows.LLMFlow(), cube.Failed, "child 'train' failed")
	require.Error(t, err)
	assert.True(t, errors.Is(err, cube.ErrFailed))
	assert.Equal(t, cube.Failed, st.Phase)
	assert.Equal(t, []cube.Phase{cube.InProgress, cube.InProgress, cube.Failed}, seen)
	assert.Contains(t, st.Reason, "child 'train' failed")
}

func TestWaitHonoursContext(t *testing.T) {
	cluster := cubetest.NewCluster(nil, cube.Namespace("ml"))
	rel, err := cluster.Client.Apply(t.Context(), argo.Workflow(pipeline.New("idle").Step(flows.Ctr("s"))))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	st, err := rel.Wait(ctx, cube.Succeeded)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, cube.InProgress, st.Phase)
}
