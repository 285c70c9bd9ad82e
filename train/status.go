package train

import (
	"fmt"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"

	"github.com/cubestudio/cube"
)

// The kinds train builds, for status readers and completion conditions.
var (
	PyTorchJobKind = kubeflowv1.SchemeGroupVersion.WithKind(kubeflowv1.PyTorchJobKind).GroupKind()
	TFJobKind      = kubeflowv1.SchemeGroupVersion.WithKind(kubeflowv1.TFJobKind).GroupKind()
	MPIJobKind     = kubeflowv1.SchemeGroupVersion.WithKind(kubeflowv1.MPIJobKind).GroupKind()
	PaddleJobKind  = kubeflowv1.SchemeGroupVersion.WithKind(kubeflowv1.PaddleJobKind).GroupKind()
	XGBoostJobKind = kubeflowv1.SchemeGroupVersion.WithKind(kubeflowv1.XGBoostJobKind).GroupKind()
	MXJobKind      = kubeflowv1.SchemeGroupVersion.WithKind(kubeflowv1.MXJobKind).GroupKind()
	RayJobKind     = schema.GroupKind{Group: rayv1.GroupVersion.Group, Kind: "RayJob"}
	VolcanoJobKind = schema.GroupKind{Group: vcbatch.SchemeGroupVersion.Group, Kind: "Job"}
)

// trainingJobCompletion is the completion of every training-operator job,
// in the grammar of Argo's resource templates: a Kubernetes label selector
// whose keys are gjson paths into the object. That grammar cannot search a
// list by a field (a key such as status.conditions.#(type=="Failed") does
// not parse), so it leans on two facts of the operator:
//
//   - it appends each new condition at the end and keeps at most one of
//     each type, and its jobs carry at most five (Created, Running or
//     Restarting, Suspended, Succeeded, Failed). Argo fails a step when
//     any one requirement of the failure condition matches, so checking
//     the type at each of the five positions finds a Failed condition
//     wherever it is;
//   - it sets status.completionTime in the same update that adds
//     Succeeded or Failed. Argo checks the failure condition first, so a
//     completion time without a Failed condition means success.
var trainingJobCompletion = cube.Completion{
	Success: "status.completionTime",
	Failure: cube.AnyConditionOfType(string(kubeflowv1.JobFailed), 5),
}

// Volcano and KubeRay keep their state in single fields.
var (
	volcanoCompletion = cube.Completion{
		Success: "status.state.phase == Completed",
		Failure: "status.state.phase in (Failed, Aborted, Terminated)",
	}
	// Argo's success condition needs all its requirements, its failure
	// condition any one of them, so the failure condition cannot say
	// "Complete and not SUCCEEDED". jobStatus FAILED is left out: KubeRay
	// keeps it beside Running and Retrying while it may still retry (see
	// RayJobStatus). STOPPED stays in: KubeRay retries only a Failed
	// deployment, and a stopped Ray job ends Complete, which the success
	// condition (SUCCEEDED) would never match.
	rayCompletion = cube.Completion{
		Success: "status.jobDeploymentStatus == Complete, status.jobStatus == SUCCEEDED",
		Failure: "status.jobDeploymentStatus in (Failed, ValidationFailed), status.jobStatus == STOPPED",
	}
)

// Kinds returns how a cube.Client reads the kinds this package builds
// (cube.Kinds): the training-operator jobs, RayJob, Volcano's Job,
// Kubeflow Trainer v2's TrainJob and the JobSet it runs on, all of them run
// to completion, with the conditions a pipeline step waits on.
func Kinds() []cube.Kind {
	job := func(gk schema.GroupKind, read cube.StatusFunc) cube.Kind {
		return cube.Kind{GroupKind: gk, Status: read, Completes: true, Completion: trainingJobCompletion}
	}
	return append([]cube.Kind{
		job(PyTorchJobKind, cube.TypedStatus(func(j *kubeflowv1.PyTorchJob) cube.ObjectStatus { return TrainingJobStatus(j.Status) })),
		job(TFJobKind, cube.TypedStatus(func(j *kubeflowv1.TFJob) cube.ObjectStatus { return TrainingJobStatus(j.Status) })),
		job(MPIJobKind, cube.TypedStatus(func(j *kubeflowv1.MPIJob) cube.ObjectStatus { return TrainingJobStatus(j.Status) })),
		job(PaddleJobKind, cube.TypedStatus(func(j *kubeflowv1.PaddleJob) cube.ObjectStatus { return TrainingJobStatus(j.Status) })),
		job(XGBoostJobKind, cube.TypedStatus(func(j *kubeflowv1.XGBoostJob) cube.ObjectStatus { return TrainingJobStatus(j.Status) })),
		job(MXJobKind, cube.TypedStatus(func(j *kubeflowv1.MXJob) cube.ObjectStatus { return TrainingJobStatus(j.Status) })),
		{GroupKind: RayJobKind, Status: cube.TypedStatus(RayJobStatus), Completes: true, Completion: rayCompletion},
		{GroupKind: VolcanoJobKind, Status: cube.TypedStatus(VolcanoJobStatus), Completes: true, Completion: volcanoCompletion},
	}, trainerKinds()...)
}

// TrainingJobStatus reads the phase of a training-operator job from its
// conditions: Succeeded or Failed when that condition is true, otherwise
// in progress with the latest true condition as the reason (Created,
// Running, Restarting, Suspended).
func TrainingJobStatus(st kubeflowv1.JobStatus) cube.ObjectStatus {
	var latest *kubeflowv1.JobCondition
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case kubeflowv1.JobSucceeded:
			return cube.ObjectStatus{Phase: cube.Succeeded, Reason: nonEmpty(c.Reason, string(c.Type)), Message: c.Message}
		case kubeflowv1.JobFailed:
			return cube.ObjectStatus{Phase: cube.Failed, Reason: nonEmpty(c.Reason, string(c.Type)), Message: c.Message}
		}
		latest = c
	}
	if latest == nil {
		return cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: "the operator has not reported on the job yet"}
	}
	return cube.ObjectStatus{Phase: cube.InProgress, Reason: string(latest.Type), Message: latest.Message}
}

// VolcanoJobStatus reads the phase of a Volcano Job from status.state:
// Completed succeeds; Failed, Aborted and Terminated fail; the rest
// (Pending, Running, Restarting, Completing…) are in progress.
func VolcanoJobStatus(j *vcbatch.Job) cube.ObjectStatus {
	s := j.Status.State
	msg := s.Message
	if msg == "" {
		msg = fmt.Sprintf("%d running, %d succeeded, %d failed", j.Status.Running, j.Status.Succeeded, j.Status.Failed)
	}
	switch s.Phase {
	case vcbatch.Completed:
		return cube.ObjectStatus{Phase: cube.Succeeded, Reason: nonEmpty(s.Reason, string(s.Phase)), Message: msg}
	case vcbatch.Failed, vcbatch.Aborted, vcbatch.Terminated:
		return cube.ObjectStatus{Phase: cube.Failed, Reason: nonEmpty(s.Reason, string(s.Phase)), Message: msg}
	}
	return cube.ObjectStatus{Phase: cube.InProgress, Reason: nonEmpty(string(s.Phase), string(vcbatch.Pending)), Message: msg}
}

// RayJobStatus reads the phase of a RayJob from its jobDeploymentStatus,
// which KubeRay v1.5.0 (controllers/ray/rayjob_controller.go) makes final
// only as Complete, Failed or ValidationFailed: Complete with the Ray job
// SUCCEEDED succeeds, Complete otherwise (a STOPPED Ray job) and Failed and
// ValidationFailed fail. A Ray job that FAILED is not final by itself:
// KubeRay stores jobStatus FAILED beside jobDeploymentStatus Running until
// the submitter ends, and beside Retrying while the backoffLimit allows
// another attempt (checkBackoffLimitAndUpdateStatusIfNeeded). The rest is
// in progress with the deployment status as the reason.
func RayJobStatus(j *rayv1.RayJob) cube.ObjectStatus {
	s := j.Status
	switch s.JobDeploymentStatus {
	case rayv1.JobDeploymentStatusFailed, rayv1.JobDeploymentStatusValidationFailed:
		return cube.ObjectStatus{Phase: cube.Failed, Reason: nonEmpty(string(s.Reason), string(s.JobDeploymentStatus)), Message: s.Message}
	case rayv1.JobDeploymentStatusComplete:
		if s.JobStatus == rayv1.JobStatusSucceeded {
			return cube.ObjectStatus{Phase: cube.Succeeded, Reason: string(s.JobStatus), Message: s.Message}
		}
		return cube.ObjectStatus{Phase: cube.Failed, Reason: nonEmpty(string(s.JobStatus), string(s.JobDeploymentStatus)), Message: s.Message}
	case rayv1.JobDeploymentStatusRetrying:
		msg := fmt.Sprintf("retrying after failed attempt %d", ptrValue(s.Failed))
		if s.Message != "" {
			msg += ": " + s.Message
		}
		return cube.ObjectStatus{Phase: cube.InProgress, Reason: string(s.JobDeploymentStatus), Message: msg}
	}
	return cube.ObjectStatus{Phase: cube.InProgress, Reason: nonEmpty(string(s.JobDeploymentStatus), "New"), Message: s.Message}
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func nonEmpty(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}
