package argo

import (
	"fmt"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/pipeline/internal/graph"
)

// The kinds this package builds.
var (
	WorkflowKind     = schema.GroupKind{Group: "argoproj.io", Kind: "Workflow"}
	CronWorkflowKind = schema.GroupKind{Group: "argoproj.io", Kind: "CronWorkflow"}
)

// Kinds returns how a cube.Client reads the kinds this package builds
// (cube.Kinds): a Workflow runs to completion (and can itself be the
// job of a workload step), a CronWorkflow is Ready while it schedules.
func Kinds() []cube.Kind {
	return []cube.Kind{
		{GroupKind: WorkflowKind, Status: cube.TypedStatus(workflowStatus), Completes: true, Completion: graph.WorkflowCompletion},
		{GroupKind: CronWorkflowKind, Status: cube.TypedStatus(cronWorkflowStatus)},
	}
}

// workflowStatus reads the phase Argo's controller writes.
func workflowStatus(w *wfv1.Workflow) cube.ObjectStatus {
	st := w.Status
	switch st.Phase {
	case wfv1.WorkflowSucceeded:
		return cube.ObjectStatus{Phase: cube.Succeeded, Reason: string(st.Phase), Message: st.Message}
	case wfv1.WorkflowFailed, wfv1.WorkflowError:
		return cube.ObjectStatus{Phase: cube.Failed, Reason: string(st.Phase), Message: st.Message}
	case wfv1.WorkflowRunning:
		msg := st.Message
		if st.Progress != "" {
			msg = fmt.Sprintf("%s steps done", st.Progress)
			if st.Message != "" {
				msg += ": " + st.Message
			}
		}
		return cube.ObjectStatus{Phase: cube.InProgress, Reason: string(st.Phase), Message: msg}
	}
	return cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: st.Message}
}

// cronWorkflowStatus: a CronWorkflow is ready once it exists, unless Argo
// reports its spec or a submission as broken.
func cronWorkflowStatus(cw *wfv1.CronWorkflow) cube.ObjectStatus {
	for _, c := range cw.Status.Conditions {
		if c.Status == metav1.ConditionTrue && (c.Type == wfv1.ConditionTypeSpecError || c.Type == wfv1.ConditionTypeSubmissionError) {
			return cube.ObjectStatus{Phase: cube.Failed, Reason: string(c.Type), Message: c.Message}
		}
	}
	if cw.Spec.Suspend {
		return cube.ObjectStatus{Phase: cube.Ready, Reason: "Suspended"}
	}
	return cube.ObjectStatus{Phase: cube.Ready, Reason: "Scheduled", Message: fmt.Sprintf("%d active", len(cw.Status.Active))}
}
