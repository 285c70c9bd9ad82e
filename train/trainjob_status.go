package train

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/cubestudio/cube"
	trainer "github.com/cubestudio/cube/train/trainerv1alpha1"
)

// The kinds of Kubeflow Trainer v2 and of the JobSet it runs on.
var (
	TrainJobKind = schema.GroupKind{Group: trainer.GroupVersion.Group, Kind: trainer.TrainJobKind}
	JobSetKind   = schema.GroupKind{Group: jobsetv1alpha2.GroupVersion.Group, Kind: "JobSet"}
)

// jobSetCompletion waits on a JobSet's terminalState, which the JobSet
// controller v0.12.0 sets to Completed or Failed once, with the condition
// of the same name (api/jobset/v1alpha2/jobset_types.go). A TrainJob has no
// such single field and its conditions have no fixed order (Suspended,
// Complete and Failed, appended as they come), so a pipeline step does not
// wait on a TrainJob by a condition of Argo's grammar: its Completion stays
// zero.
var jobSetCompletion = cube.Completion{
	Success: "status.terminalState == " + string(jobsetv1alpha2.JobSetCompleted),
	Failure: "status.terminalState == " + string(jobsetv1alpha2.JobSetFailed),
}

// trainerKinds are the readers of Trainer v2's TrainJob and of JobSet.
func trainerKinds() []cube.Kind {
	return []cube.Kind{
		{GroupKind: TrainJobKind, Status: cube.TypedStatus(TrainJobStatus), Completes: true},
		{GroupKind: JobSetKind, Status: cube.TypedStatus(JobSetStatus), Completes: true, Completion: jobSetCompletion},
	}
}

// TrainJobStatus reads the phase of a TrainJob from the conditions the
// Trainer v2.3.0 sets: Complete (copied from its JobSet's Completed)
// succeeds, Failed (the JobSet's Failed, DeadlineExceeded or
// TrainingRuntimeNotSupported) fails, each with its reason and message;
// Suspended is in progress. Otherwise it is in progress, Running while the
// JobSet's jobs run (status.jobsStatus, copied from the JobSet's
// replicatedJobsStatus), Created once jobsStatus is reported and nothing
// runs, Pending before the Trainer has reported at all. A true condition
// of a type Trainer v2.3.0 does not set reads Unknown.
func TrainJobStatus(j *trainer.TrainJob) cube.ObjectStatus {
	var suspended *metav1.Condition
	for i := range j.Status.Conditions {
		c := &j.Status.Conditions[i]
		if c.Status != metav1.ConditionTrue {
			continue
		}
		switch c.Type {
		case trainer.TrainJobComplete:
			return cube.ObjectStatus{Phase: cube.Succeeded, Reason: nonEmpty(c.Reason, c.Type), Message: c.Message}
		case trainer.TrainJobFailed:
			return cube.ObjectStatus{Phase: cube.Failed, Reason: nonEmpty(c.Reason, c.Type), Message: c.Message}
		case trainer.TrainJobSuspended:
			suspended = c
		default:
			return cube.ObjectStatus{Phase: cube.Unknown, Reason: c.Type, Message: fmt.Sprintf("condition %s is not one Kubeflow Trainer v2.3.0 sets: %s", c.Type, c.Message)}
		}
	}
	if suspended != nil {
		return cube.ObjectStatus{Phase: cube.InProgress, Reason: trainer.TrainJobSuspended, Message: suspended.Message}
	}
	if len(j.Status.JobsStatus) == 0 {
		return cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: "the Trainer has not reported on the job's JobSet yet"}
	}
	active := int32(0)
	parts := make([]string, 0, len(j.Status.JobsStatus))
	for _, s := range j.Status.JobsStatus {
		active += ptrValue(s.Active)
		parts = append(parts, fmt.Sprintf("%s: %d active, %d ready, %d succeeded, %d failed", s.Name, ptrValue(s.Active), ptrValue(s.Ready), ptrValue(s.Succeeded), ptrValue(s.Failed)))
	}
	reason := "Created"
	if active > 0 {
		reason = "Running"
	}
	return cube.ObjectStatus{Phase: cube.InProgress, Reason: reason, Message: strings.Join(parts, "; ")}
}

// JobSetStatus reads the phase of a JobSet (sigs.k8s.io/jobset v0.12.0):
// Completed succeeds and Failed fails, as the condition or the
// terminalState says, with the condition's reason and message; Suspended
// and RestartingJobSet are in progress with that reason; otherwise it is
// in progress, Running while one of its jobs is active.
func JobSetStatus(js *jobsetv1alpha2.JobSet) cube.ObjectStatus {
	st := js.Status
	find := func(t jobsetv1alpha2.JobSetConditionType) *metav1.Condition {
		for i := range st.Conditions {
			if c := &st.Conditions[i]; c.Type == string(t) && c.Status == metav1.ConditionTrue {
				return c
			}
		}
		return nil
	}
	if c := find(jobsetv1alpha2.JobSetFailed); c != nil || st.TerminalState == string(jobsetv1alpha2.JobSetFailed) {
		if c == nil {
			return cube.ObjectStatus{Phase: cube.Failed, Reason: st.TerminalState}
		}
		return cube.ObjectStatus{Phase: cube.Failed, Reason: nonEmpty(c.Reason, c.Type), Message: c.Message}
	}
	if c := find(jobsetv1alpha2.JobSetCompleted); c != nil || st.TerminalState == string(jobsetv1alpha2.JobSetCompleted) {
		if c == nil {
			return cube.ObjectStatus{Phase: cube.Succeeded, Reason: st.TerminalState}
		}
		return cube.ObjectStatus{Phase: cube.Succeeded, Reason: nonEmpty(c.Reason, c.Type), Message: c.Message}
	}
	for _, t := range []jobsetv1alpha2.JobSetConditionType{jobsetv1alpha2.JobSetSuspended, jobsetv1alpha2.JobSetRestarting} {
		if c := find(t); c != nil {
			return cube.ObjectStatus{Phase: cube.InProgress, Reason: c.Type, Message: c.Message}
		}
	}
	if len(st.ReplicatedJobsStatus) == 0 {
		return cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: "the JobSet controller has not reported on the jobs yet"}
	}
	active := int32(0)
	parts := make([]string, 0, len(st.ReplicatedJobsStatus))
	for _, s := range st.ReplicatedJobsStatus {
		active += s.Active
		parts = append(parts, fmt.Sprintf("%s: %d active, %d ready, %d succeeded, %d failed", s.Name, s.Active, s.Ready, s.Succeeded, s.Failed))
	}
	reason := "Created"
	if active > 0 {
		reason = "Running"
	}
	msg := strings.Join(parts, "; ")
	if st.Restarts > 0 {
		msg += fmt.Sprintf(" (restarted %d times)", st.Restarts)
	}
	return cube.ObjectStatus{Phase: cube.InProgress, Reason: reason, Message: msg}
}
