package cubetest

import (
	"errors"
	"fmt"
	"slices"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/cubestudio/cube"
)

// statusWriter writes, into a stored object, the status its controller would
// write when the object reaches phase.
type statusWriter func(u *unstructured.Unstructured, phase cube.Phase, reason, message string) error

// typedWriter adapts a writer of a typed object.
func typedWriter[T any, PT interface {
	*T
	runtime.Object
}](write func(obj PT, phase cube.Phase, reason, message string)) statusWriter {
	return func(u *unstructured.Unstructured, phase cube.Phase, reason, message string) error {
		obj := PT(new(T))
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
			return fmt.Errorf("read %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		write(obj, phase, reason, message)
		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return fmt.Errorf("write %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		u.Object["status"] = content["status"]
		return nil
	}
}

var writers = map[schema.GroupKind]statusWriter{
	{Group: "apps", Kind: "Deployment"}:                          typedWriter(deployment),
	{Group: "apps", Kind: "StatefulSet"}:                         typedWriter(statefulSet),
	{Group: "batch", Kind: "Job"}:                                typedWriter(job),
	{Kind: "Pod"}:                                                typedWriter(pod),
	{Kind: "PersistentVolumeClaim"}:                              typedWriter(pvc),
	{Kind: "Service"}:                                            typedWriter(service),
	{Kind: "ResourceQuota"}:                                      typedWriter(resourceQuota),
	{Group: "scheduling.volcano.sh", Kind: "Queue"}:              typedWriter(volcanoQueue),
	{Group: "kubeflow.org", Kind: "PyTorchJob"}:                  trainingWriter(func(j *kubeflowv1.PyTorchJob) *kubeflowv1.JobStatus { return &j.Status }),
	{Group: "kubeflow.org", Kind: "TFJob"}:                       trainingWriter(func(j *kubeflowv1.TFJob) *kubeflowv1.JobStatus { return &j.Status }),
	{Group: "kubeflow.org", Kind: "MPIJob"}:                      trainingWriter(func(j *kubeflowv1.MPIJob) *kubeflowv1.JobStatus { return &j.Status }),
	{Group: "kubeflow.org", Kind: "PaddleJob"}:                   trainingWriter(func(j *kubeflowv1.PaddleJob) *kubeflowv1.JobStatus { return &j.Status }),
	{Group: "kubeflow.org", Kind: "XGBoostJob"}:                  trainingWriter(func(j *kubeflowv1.XGBoostJob) *kubeflowv1.JobStatus { return &j.Status }),
	{Group: "kubeflow.org", Kind: "MXJob"}:                       trainingWriter(func(j *kubeflowv1.MXJob) *kubeflowv1.JobStatus { return &j.Status }),
	{Group: "kubeflow.org", Kind: "Experiment"}:                  experiment,
	{Group: "batch.volcano.sh", Kind: "Job"}:                     typedWriter(volcanoJob),
	{Group: "ray.io", Kind: "RayJob"}:                            typedWriter(rayJob),
	{Group: "argoproj.io", Kind: "Workflow"}:                     typedWriter(workflow),
	{Group: "argoproj.io", Kind: "CronWorkflow"}:                 typedWriter(cronWorkflow),
	{Group: "leaderworkerset.x-k8s.io", Kind: "LeaderWorkerSet"}: typedWriter(leaderWorkerSet),
	{Group: gatewayv1.GroupName, Kind: "HTTPRoute"}:              typedWriter(httpRoute),
}

// SetStatus writes into u the status that u's controller would write when
// the object reaches phase (Ready, Succeeded, Failed or InProgress), with
// reason and message where the kind has them. It knows the kinds cube builds:
// Deployment, StatefulSet, Job, Pod, PersistentVolumeClaim, Service,
// ResourceQuota, Volcano Queue, the training-operator jobs, Katib Experiment, Volcano Job, RayJob, Argo
// Workflow and CronWorkflow, LeaderWorkerSet and HTTPRoute. Long-running kinds asked
// to Succeed become Ready. The caller stores the result with a status
// update.
func SetStatus(u *unstructured.Unstructured, phase cube.Phase, reason, message string) error {
	if u == nil {
		return errors.New("cubetest: object is nil")
	}
	if err := checkPhase(phase); err != nil {
		return err
	}
	w, ok := writers[u.GroupVersionKind().GroupKind()]
	if !ok {
		return fmt.Errorf("cubetest: no status writer for %s", u.GroupVersionKind().GroupKind())
	}
	return w(u, phase, reason, message)
}

var phases = []cube.Phase{cube.InProgress, cube.Ready, cube.Succeeded, cube.Failed}

// checkPhase refuses a phase no controller writes.
func checkPhase(phase cube.Phase) error {
	if !slices.Contains(phases, phase) {
		return fmt.Errorf("cubetest: phase %q is not one of %v", phase, phases)
	}
	return nil
}

// HasStatus reports whether SetStatus knows the kind of u.
func HasStatus(gk schema.GroupKind) bool {
	_, ok := writers[gk]
	return ok
}

func replicasOf(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

func deployment(d *appsv1.Deployment, phase cube.Phase, reason, message string) {
	n := replicasOf(d.Spec.Replicas)
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n}
	switch phase {
	case cube.Ready, cube.Succeeded:
		d.Status.ReadyReplicas, d.Status.AvailableReplicas = n, n
		d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable", LastUpdateTime: now(), LastTransitionTime: now()}}
	case cube.Failed:
		d.Status.UnavailableReplicas = n
		d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded", Message: message, LastUpdateTime: now(), LastTransitionTime: now()}}
	default:
		d.Status.UnavailableReplicas = n
	}
}

func statefulSet(s *appsv1.StatefulSet, phase cube.Phase, _, _ string) {
	n := replicasOf(s.Spec.Replicas)
	s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: n, UpdatedReplicas: n, CurrentReplicas: n}
	if phase == cube.Ready || phase == cube.Succeeded {
		s.Status.ReadyReplicas, s.Status.AvailableReplicas = n, n
	}
}

func job(j *batchv1.Job, phase cube.Phase, reason, message string) {
	start := now()
	j.Status = batchv1.JobStatus{StartTime: &start}
	switch phase {
	case cube.Succeeded, cube.Ready:
		done := now()
		j.Status.CompletionTime = &done
		j.Status.Succeeded = replicasOf(j.Spec.Completions)
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now(), LastProbeTime: now()},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now(), LastProbeTime: now()},
		}
	case cube.Failed:
		if reason == "" {
			reason = "BackoffLimitExceeded"
		}
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastTransitionTime: now(), LastProbeTime: now()},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastTransitionTime: now(), LastProbeTime: now()},
		}
	default:
		active := int32(1)
		j.Status.Active = active
		ready := int32(0)
		j.Status.Ready = &ready
	}
}

// pod writes what the kubelet writes: the phase, the Ready condition and a
// status for every container (running since now, terminated with exit
// code 0 or 1, or waiting in ContainerCreating).
func pod(p *corev1.Pod, phase cube.Phase, reason, message string) {
	var state corev1.ContainerState
	ready := false
	switch phase {
	case cube.Ready:
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now()}}}
		state.Running = &corev1.ContainerStateRunning{StartedAt: now()}
		ready = true
	case cube.Succeeded:
		p.Status = corev1.PodStatus{Phase: corev1.PodSucceeded}
		state.Terminated = &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: now()}
	case cube.Failed:
		p.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: reason, Message: message}
		state.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: message, FinishedAt: now()}
	default:
		p.Status = corev1.PodStatus{Phase: corev1.PodPending}
		state.Waiting = &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}
	}
	for _, c := range p.Spec.Containers {
		started := ready
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: ready, Started: &started, State: *state.DeepCopy(),
		})
	}
}

func pvc(c *corev1.PersistentVolumeClaim, phase cube.Phase, _, _ string) {
	switch phase {
	case cube.Failed:
		c.Status.Phase = corev1.ClaimLost
	case cube.InProgress:
		c.Status.Phase = corev1.ClaimPending
	default:
		c.Status.Phase = corev1.ClaimBound
		c.Status.Capacity = c.Spec.Resources.Requests.DeepCopy()
		c.Status.AccessModes = append([]corev1.PersistentVolumeAccessMode(nil), c.Spec.AccessModes...)
	}
}

// resourceQuota writes what the quota controller writes once it has
// counted a quota (k8s.io/kubernetes pkg/controller/resourcequota,
// syncResourceQuota): status.hard as spec.hard and what the namespace
// uses, nothing here. Counting is all it does, so only InProgress leaves
// the quota uncounted (cube reads it InProgress, NotCounted); Failed
// counts it like Ready.
func resourceQuota(q *corev1.ResourceQuota, phase cube.Phase, _, _ string) {
	q.Status = corev1.ResourceQuotaStatus{}
	if phase == cube.InProgress {
		return
	}
	q.Status.Hard = q.Spec.Hard.DeepCopy()
	q.Status.Used = corev1.ResourceList{}
	for name := range q.Spec.Hard {
		q.Status.Used[name] = *resource.NewQuantity(0, resource.DecimalSI)
	}
}

// volcanoQueue writes the state Volcano's queue controller writes
// (volcano-sh/volcano pkg/controllers/queue/state, open.go and
// closed.go): Open once it has synced the queue, Closed for a queue that
// takes no more jobs; nothing before it has.
func volcanoQueue(q *vcscheduling.Queue, phase cube.Phase, _, _ string) {
	switch phase {
	case cube.InProgress:
		q.Status.State = ""
	case cube.Failed:
		q.Status.State = vcscheduling.QueueStateClosed
	default:
		q.Status.State = vcscheduling.QueueStateOpen
	}
}

func service(s *corev1.Service, phase cube.Phase, _, _ string) {
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer && (phase == cube.Ready || phase == cube.Succeeded) {
		s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.10"}}
	}
}

// trainingJob writes the conditions the training-operator writes: Created,
// Running, then Succeeded or Failed (the Running condition turns false).
// trainingWriter writes a training-operator job's status, which every
// kind of job keeps in the same JobStatus.
func trainingWriter[T any, PT interface {
	*T
	runtime.Object
}](status func(PT) *kubeflowv1.JobStatus) statusWriter {
	return typedWriter(func(j PT, phase cube.Phase, reason, message string) {
		trainingJob(status(j), phase, reason, message)
	})
}

func trainingJob(st *kubeflowv1.JobStatus, phase cube.Phase, reason, message string) {
	cond := func(t kubeflowv1.JobConditionType, s corev1.ConditionStatus, r, m string) kubeflowv1.JobCondition {
		return kubeflowv1.JobCondition{Type: t, Status: s, Reason: r, Message: m, LastUpdateTime: now(), LastTransitionTime: now()}
	}
	start := now()
	st.StartTime = &start
	st.Conditions = []kubeflowv1.JobCondition{cond(kubeflowv1.JobCreated, corev1.ConditionTrue, "JobCreated", "job created")}
	switch phase {
	case cube.Succeeded, cube.Ready:
		done := now()
		st.CompletionTime = &done
		st.Conditions = append(st.Conditions,
			cond(kubeflowv1.JobRunning, corev1.ConditionFalse, "JobRunning", "job running"),
			cond(kubeflowv1.JobSucceeded, corev1.ConditionTrue, nonEmpty(reason, "JobSucceeded"), nonEmpty(message, "job succeeded")))
	case cube.Failed:
		done := now()
		st.CompletionTime = &done
		st.Conditions = append(st.Conditions,
			cond(kubeflowv1.JobRunning, corev1.ConditionFalse, "JobRunning", "job running"),
			cond(kubeflowv1.JobFailed, corev1.ConditionTrue, nonEmpty(reason, "JobFailed"), nonEmpty(message, "job failed")))
	default:
		st.Conditions = append(st.Conditions, cond(kubeflowv1.JobRunning, corev1.ConditionTrue, "JobRunning", "job running"))
	}
}

// experiment writes Katib's Experiment conditions (Created, Running,
// Succeeded/Failed) without importing Katib's Go module.
func experiment(u *unstructured.Unstructured, phase cube.Phase, reason, message string) error {
	ts := now().UTC().Format("2006-01-02T15:04:05Z")
	cond := func(t, s, r, m string) any {
		return map[string]any{"type": t, "status": s, "reason": r, "message": m, "lastUpdateTime": ts, "lastTransitionTime": ts}
	}
	conds := []any{cond("Created", "True", "ExperimentCreated", "experiment created")}
	status := map[string]any{"startTime": ts}
	switch phase {
	case cube.Succeeded, cube.Ready:
		conds = append(conds, cond("Running", "False", "ExperimentRunning", "experiment running"),
			cond("Succeeded", "True", nonEmpty(reason, "ExperimentGoalReached"), nonEmpty(message, "experiment has succeeded")))
		status["completionTime"] = ts
	case cube.Failed:
		conds = append(conds, cond("Running", "False", "ExperimentRunning", "experiment running"),
			cond("Failed", "True", nonEmpty(reason, "ExperimentFailed"), nonEmpty(message, "experiment has failed")))
		status["completionTime"] = ts
	default:
		conds = append(conds, cond("Running", "True", "ExperimentRunning", "experiment running"))
	}
	status["conditions"] = conds
	u.Object["status"] = status
	return nil
}

func volcanoJob(j *vcbatch.Job, phase cube.Phase, reason, message string) {
	state := vcbatch.Running
	switch phase {
	case cube.Succeeded, cube.Ready:
		state = vcbatch.Completed
	case cube.Failed:
		state = vcbatch.Failed
	}
	j.Status.State = vcbatch.JobState{Phase: state, Reason: reason, Message: message, LastTransitionTime: now()}
	j.Status.MinAvailable = j.Spec.MinAvailable
}

func rayJob(j *rayv1.RayJob, phase cube.Phase, reason, message string) {
	switch phase {
	case cube.Succeeded, cube.Ready:
		j.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusComplete
		j.Status.JobStatus = rayv1.JobStatusSucceeded
	case cube.Failed:
		j.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusFailed
		j.Status.JobStatus = rayv1.JobStatusFailed
		j.Status.Reason = rayv1.JobFailedReason(nonEmpty(reason, string(rayv1.AppFailed)))
	default:
		j.Status.JobDeploymentStatus = rayv1.JobDeploymentStatusRunning
		j.Status.JobStatus = rayv1.JobStatusRunning
	}
	j.Status.Message = message
}

func workflow(w *wfv1.Workflow, phase cube.Phase, _, message string) {
	switch phase {
	case cube.Succeeded, cube.Ready:
		w.Status.Phase = wfv1.WorkflowSucceeded
	case cube.Failed:
		w.Status.Phase = wfv1.WorkflowFailed
	default:
		w.Status.Phase = wfv1.WorkflowRunning
	}
	w.Status.Message = message
	w.Status.StartedAt = now()
	if phase != cube.InProgress {
		w.Status.FinishedAt = now()
	}
}

// cronWorkflow writes what Argo's cron controller writes: it schedules
// (lastScheduledTime, phase Active) or reports a condition of type
// SubmissionError, status True, with the message
// (reportCronWorkflowError in workflow/cron/operator.go, v3.7). A cron
// workflow never completes: Succeeded is Ready.
func cronWorkflow(w *wfv1.CronWorkflow, phase cube.Phase, _, message string) {
	w.Status.Phase = wfv1.ActivePhase
	w.Status.Conditions = nil
	switch phase {
	case cube.Failed:
		w.Status.Conditions = wfv1.Conditions{{Type: wfv1.ConditionTypeSubmissionError, Status: metav1.ConditionTrue, Message: nonEmpty(message, "submission failed")}}
	case cube.Ready, cube.Succeeded:
		t := now()
		w.Status.LastScheduledTime = &t
	}
}

func leaderWorkerSet(l *lwsv1.LeaderWorkerSet, phase cube.Phase, reason, message string) {
	n := replicasOf(l.Spec.Replicas)
	l.Status.Replicas = n
	l.Status.UpdatedReplicas = n
	status := metav1.ConditionFalse
	typ := string(lwsv1.LeaderWorkerSetProgressing)
	switch phase {
	case cube.Ready, cube.Succeeded:
		l.Status.ReadyReplicas = n
		status, typ = metav1.ConditionTrue, string(lwsv1.LeaderWorkerSetAvailable)
	case cube.Failed:
		typ = string(lwsv1.LeaderWorkerSetAvailable)
	default:
		status = metav1.ConditionTrue
	}
	l.Status.Conditions = []metav1.Condition{{Type: typ, Status: status, Reason: nonEmpty(reason, typ), Message: message, LastTransitionTime: now(), ObservedGeneration: l.Generation}}
}

func now() metav1.Time { return metav1.Now().Rfc3339Copy() }

func nonEmpty(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// GatewayController is the controller name cubetest writes into the
// parent statuses of an HTTPRoute, as a Gateway implementation would.
const GatewayController = "cubetest.cube.dev/gateway"

// httpRoute writes what the controller of each parent Gateway writes
// (Gateway API v1.6.3, RouteParentStatus): Accepted and ResolvedRefs true
// when Ready, Accepted false (reason NotAllowedByListeners unless given)
// when Failed, no parent entries yet when InProgress.
func httpRoute(r *gatewayv1.HTTPRoute, phase cube.Phase, reason, message string) {
	r.Status.Parents = nil
	if phase == cube.InProgress {
		return
	}
	for _, ref := range r.Spec.ParentRefs {
		ps := gatewayv1.RouteParentStatus{ParentRef: ref, ControllerName: GatewayController}
		cond := func(typ gatewayv1.RouteConditionType, status metav1.ConditionStatus, why, msg string) metav1.Condition {
			return metav1.Condition{Type: string(typ), Status: status, Reason: why, Message: msg, ObservedGeneration: r.Generation, LastTransitionTime: metav1.Now()}
		}
		if phase == cube.Failed {
			why := reason
			if why == "" {
				why = string(gatewayv1.RouteReasonNotAllowedByListeners)
			}
			ps.Conditions = []metav1.Condition{cond(gatewayv1.RouteConditionAccepted, metav1.ConditionFalse, why, message)}
		} else {
			ps.Conditions = []metav1.Condition{
				cond(gatewayv1.RouteConditionAccepted, metav1.ConditionTrue, string(gatewayv1.RouteReasonAccepted), message),
				cond(gatewayv1.RouteConditionResolvedRefs, metav1.ConditionTrue, string(gatewayv1.RouteReasonResolvedRefs), ""),
			}
		}
		r.Status.Parents = append(r.Status.Parents, ps)
	}
}
