package train_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/train"
)

// jsonPath resolves Argo's keys against an object the way gjson does for
// the paths train uses: dot-separated fields, numeric parts index lists;
// values read as strings (numbers in decimal, objects as JSON).
type jsonPath struct{ obj map[string]any }

func (j jsonPath) lookup(path string) (any, bool) {
	var cur any = j.obj
	for _, part := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[part]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

func (j jsonPath) Has(path string) bool { _, ok := j.lookup(path); return ok }

func (j jsonPath) Get(path string) string {
	v, _ := j.Lookup(path)
	return v
}

func (j jsonPath) Lookup(path string) (string, bool) {
	v, ok := j.lookup(path)
	if !ok {
		return "", false
	}
	if s, ok := v.(string); ok {
		return s, true
	}
	b, _ := json.Marshal(v)
	return string(b), true
}

// argo evaluates a completion as Argo's executor does
// (workflow/executor/resource.go matchConditions): the conditions parse as
// label selectors; any failure requirement fails, all success
// requirements succeed.
func argo(t *testing.T, c cube.Completion, u *unstructured.Unstructured) (succeeded, failed bool) {
	t.Helper()
	success, err := labels.Parse(c.Success)
	require.NoError(t, err, "success condition %q must parse as Argo parses it", c.Success)
	failure, err := labels.Parse(c.Failure)
	require.NoError(t, err, "failure condition %q must parse as Argo parses it", c.Failure)
	ls := jsonPath{u.Object}
	failReqs, _ := failure.Requirements()
	for _, r := range failReqs {
		if r.Matches(ls) {
			return false, true
		}
	}
	successReqs, _ := success.Requirements()
	matched := 0
	for _, r := range successReqs {
		if r.Matches(ls) {
			matched++
		}
	}
	return matched == len(successReqs), false
}

func toUnstructured(t *testing.T, obj runtime.Object, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(gvk)
	return u
}

// TestCompletionsFollowTheStatusWriters checks, for every kind, that the
// reader and the Argo conditions of train.Kinds agree with the status each
// operator writes (cubetest.SetStatus).
func TestCompletionsFollowTheStatusWriters(t *testing.T) {
	cpu := setups[2]
	for _, bc := range builderCases {
		t.Run(bc.name, func(t *testing.T) {
			objs, err := bc.build(bc.name, cpu).Objects()
			require.NoError(t, err)
			job := objs[len(objs)-1]
			gvk := job.GetObjectKind().GroupVersionKind()
			completion, ok := cube.CompletionOf(gvk.GroupKind(), train.Kinds()...)
			require.True(t, ok, "train.Kinds has a completion for %s", gvk.GroupKind())
			i := slices.IndexFunc(train.Kinds(), func(k cube.Kind) bool { return k.GroupKind == gvk.GroupKind() })
			require.GreaterOrEqual(t, i, 0)
			assert.True(t, train.Kinds()[i].Completes, "%s runs to completion", gvk.GroupKind())
			unread := cube.ReadStatus(toUnstructured(t, job, gvk))
			assert.Equal(t, cube.Unknown, unread.Phase, "a reader without train.Kinds cannot tell")
			assert.Equal(t, "NoReader", unread.Reason)
			for _, tc := range []struct {
				phase             cube.Phase
				succeeded, failed bool
			}{
				{cube.InProgress, false, false},
				{cube.Succeeded, true, false},
				{cube.Failed, false, true},
			} {
				u := toUnstructured(t, job, gvk)
				require.NoError(t, cubetest.SetStatus(u, tc.phase, "Reason", "message"))
				st := cube.ReadStatus(u, train.Kinds()...)
				assert.Equal(t, tc.phase, st.Phase, "reader after %s", tc.phase)
				succeeded, failed := argo(t, completion, u)
				assert.Equal(t, tc.succeeded, succeeded, "argo success after %s", tc.phase)
				assert.Equal(t, tc.failed, failed, "argo failure after %s", tc.phase)
			}
		})
	}
}

// TestTrainingJobCompletionFindsTheConditionAnywhere uses the condition
// lists the operator writes in longer histories (restarts, suspension).
func TestTrainingJobCompletionFindsTheConditionAnywhere(t *testing.T) {
	completion, ok := cube.CompletionOf(train.PyTorchJobKind, train.Kinds()...)
	require.True(t, ok)
	now := metav1.Now()
	cond := func(typ kubeflowv1.JobConditionType, s corev1.ConditionStatus) kubeflowv1.JobCondition {
		return kubeflowv1.JobCondition{Type: typ, Status: s, Reason: "PyTorchJob" + string(typ), LastUpdateTime: now, LastTransitionTime: now}
	}
	gvk := kubeflowv1.SchemeGroupVersion.WithKind(kubeflowv1.PyTorchJobKind)
	for _, tc := range []struct {
		name              string
		status            kubeflowv1.JobStatus
		phase             cube.Phase
		reason            string
		succeeded, failed bool
	}{
		{"new", kubeflowv1.JobStatus{}, cube.InProgress, "Pending", false, false},
		{"created", kubeflowv1.JobStatus{Conditions: []kubeflowv1.JobCondition{cond(kubeflowv1.JobCreated, corev1.ConditionTrue)}}, cube.InProgress, "Created", false, false},
		{"restarting", kubeflowv1.JobStatus{Conditions: []kubeflowv1.JobCondition{
			cond(kubeflowv1.JobCreated, corev1.ConditionTrue), cond(kubeflowv1.JobRestarting, corev1.ConditionTrue),
		}}, cube.InProgress, "Restarting", false, false},
		{"suspended", kubeflowv1.JobStatus{Conditions: []kubeflowv1.JobCondition{
			cond(kubeflowv1.JobCreated, corev1.ConditionTrue), cond(kubeflowv1.JobRunning, corev1.ConditionFalse), cond(kubeflowv1.JobSuspended, corev1.ConditionTrue),
		}}, cube.InProgress, "Suspended", false, false},
		{"failed after suspension", kubeflowv1.JobStatus{CompletionTime: &now, Conditions: []kubeflowv1.JobCondition{
			cond(kubeflowv1.JobCreated, corev1.ConditionTrue), cond(kubeflowv1.JobSuspended, corev1.ConditionFalse),
			cond(kubeflowv1.JobRunning, corev1.ConditionFalse), cond(kubeflowv1.JobFailed, corev1.ConditionTrue),
		}}, cube.Failed, "PyTorchJobFailed", false, true},
		{"failed at the deadline before running", kubeflowv1.JobStatus{CompletionTime: &now, Conditions: []kubeflowv1.JobCondition{
			cond(kubeflowv1.JobCreated, corev1.ConditionTrue), cond(kubeflowv1.JobFailed, corev1.ConditionTrue),
		}}, cube.Failed, "PyTorchJobFailed", false, true},
		{"succeeded after a restart", kubeflowv1.JobStatus{CompletionTime: &now, Conditions: []kubeflowv1.JobCondition{
			cond(kubeflowv1.JobCreated, corev1.ConditionTrue), cond(kubeflowv1.JobSuspended, corev1.ConditionFalse),
			cond(kubeflowv1.JobRunning, corev1.ConditionFalse), cond(kubeflowv1.JobSucceeded, corev1.ConditionTrue),
		}}, cube.Succeeded, "PyTorchJobSucceeded", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := &kubeflowv1.PyTorchJob{Status: tc.status}
			u := toUnstructured(t, job, gvk)
			st := cube.ReadStatus(u, train.Kinds()...)
			assert.Equal(t, tc.phase, st.Phase)
			assert.Equal(t, tc.reason, st.Reason)
			succeeded, failed := argo(t, completion, u)
			assert.Equal(t, tc.succeeded, succeeded)
			assert.Equal(t, tc.failed, failed)
		})
	}
}

func TestVolcanoAndRayPhases(t *testing.T) {
	for _, tc := range []struct {
		phase  vcbatch.JobPhase
		want   cube.Phase
		reason string
	}{
		{"", cube.InProgress, "Pending"},
		{vcbatch.Pending, cube.InProgress, "Pending"},
		{vcbatch.Restarting, cube.InProgress, "Restarting"},
		{vcbatch.Completing, cube.InProgress, "Completing"},
		{vcbatch.Completed, cube.Succeeded, "Completed"},
		{vcbatch.Aborted, cube.Failed, "Aborted"},
		{vcbatch.Terminated, cube.Failed, "Terminated"},
		{vcbatch.Failed, cube.Failed, "Failed"},
	} {
		st := train.VolcanoJobStatus(&vcbatch.Job{Status: vcbatch.JobStatus{State: vcbatch.JobState{Phase: tc.phase}, Running: 2}})
		assert.Equal(t, tc.want, st.Phase, tc.phase)
		assert.Equal(t, tc.reason, st.Reason, tc.phase)
		assert.Equal(t, "2 running, 0 succeeded, 0 failed", st.Message)
	}
	for _, tc := range []struct {
		deploy rayv1.JobDeploymentStatus
		job    rayv1.JobStatus
		reason rayv1.JobFailedReason
		want   cube.Phase
		why    string
	}{
		{"", "", "", cube.InProgress, "New"},
		{rayv1.JobDeploymentStatusInitializing, "", "", cube.InProgress, "Initializing"},
		{rayv1.JobDeploymentStatusRunning, rayv1.JobStatusRunning, "", cube.InProgress, "Running"},
		{rayv1.JobDeploymentStatusComplete, rayv1.JobStatusSucceeded, "", cube.Succeeded, "SUCCEEDED"},
		{rayv1.JobDeploymentStatusComplete, rayv1.JobStatusStopped, "", cube.Failed, "STOPPED"},
		{rayv1.JobDeploymentStatusFailed, rayv1.JobStatusFailed, rayv1.DeadlineExceeded, cube.Failed, "DeadlineExceeded"},
		{rayv1.JobDeploymentStatusValidationFailed, "", "", cube.Failed, "ValidationFailed"},
		// KubeRay keeps a failed attempt's FAILED beside Retrying while the
		// backoffLimit allows another, and beside Running until the
		// submitter ends: neither is final.
		{rayv1.JobDeploymentStatusRetrying, rayv1.JobStatusFailed, rayv1.AppFailed, cube.InProgress, "Retrying"},
		{rayv1.JobDeploymentStatusRunning, rayv1.JobStatusFailed, "", cube.InProgress, "Running"},
		{rayv1.JobDeploymentStatusFailed, rayv1.JobStatusFailed, rayv1.AppFailed, cube.Failed, "AppFailed"},
	} {
		job := &rayv1.RayJob{Status: rayv1.RayJobStatus{JobDeploymentStatus: tc.deploy, JobStatus: tc.job, Reason: tc.reason}}
		st := train.RayJobStatus(job)
		assert.Equal(t, tc.want, st.Phase, "%s/%s", tc.deploy, tc.job)
		assert.Equal(t, tc.why, st.Reason, "%s/%s", tc.deploy, tc.job)
		u := toUnstructured(t, job, rayv1.GroupVersion.WithKind("RayJob"))
		completion, ok := cube.CompletionOf(train.RayJobKind, train.Kinds()...)
		require.True(t, ok)
		succeeded, failed := argo(t, completion, u)
		assert.Equal(t, tc.want == cube.Succeeded, succeeded, "%s/%s", tc.deploy, tc.job)
		assert.Equal(t, tc.want == cube.Failed, failed, "%s/%s", tc.deploy, tc.job)
	}
}

func TestUnreadableStatus(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": "not a list"}}}
	u.SetGroupVersionKind(kubeflowv1.SchemeGroupVersion.WithKind(kubeflowv1.TFJobKind))
	st := cube.ReadStatus(u, train.Kinds()...)
	assert.Equal(t, cube.Failed, st.Phase)
	assert.Equal(t, "Unreadable", st.Reason)
}
