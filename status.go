package cube

import (
	"fmt"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Phase is where an object, or a whole release, stands.
type Phase string

// Phases, from least to most settled. Ready is the goal of long-running
// objects (a Deployment serving); Succeeded and Failed end run-to-completion
// objects (a training job).
const (
	InProgress Phase = "InProgress"
	Ready      Phase = "Ready"
	Succeeded  Phase = "Succeeded"
	Failed     Phase = "Failed"
)

// ObjectStatus is the state of one object of a release, with the reason and
// message its controller gave (a condition, a phase, a replica count).
type ObjectStatus struct {
	Ref     ObjectRef
	Phase   Phase
	Reason  string
	Message string
}

func (s ObjectStatus) String() string {
	out := fmt.Sprintf("%s %s", s.Ref, s.Phase)
	if s.Reason != "" {
		out += " (" + s.Reason
		if s.Message != "" {
			out += ": " + s.Message
		}
		out += ")"
	}
	return out
}

// Status is the state of a release: one entry per object and the overall
// phase, which is Failed if any object failed, InProgress if any is in
// progress, Succeeded if any run-to-completion object succeeded and the rest
// are ready, and Ready otherwise.
type Status struct {
	Phase   Phase
	Reason  string
	Objects []ObjectStatus
	// Pods are the problems of the release's pods (found by the release
	// label) while the release is neither Ready nor Succeeded: why a
	// rollout or a job is not moving. Release.Status and Wait fill it.
	Pods []PodProblem
}

func (s Status) String() string {
	var b strings.Builder
	b.WriteString(string(s.Phase))
	if s.Reason != "" {
		b.WriteString(": " + s.Reason)
	}
	if len(s.Pods) > 0 {
		b.WriteString("; " + s.Pods[0].String())
		if len(s.Pods) > 1 {
			fmt.Fprintf(&b, " and %d more pod problems", len(s.Pods)-1)
		}
	}
	return b.String()
}

// settled reports whether the release reached a phase pod problems no
// longer matter for.
func (s Status) settled() bool { return s.Phase == Ready || s.Phase == Succeeded }

// Summarize computes the overall phase of a release from its objects.
func Summarize(objects []ObjectStatus) Status {
	st := Status{Phase: Ready, Objects: objects}
	var progress, succeeded []ObjectStatus
	for _, o := range objects {
		switch o.Phase {
		case Failed:
			if st.Phase != Failed {
				st.Phase = Failed
				st.Reason = o.String()
			}
		case InProgress:
			progress = append(progress, o)
		case Succeeded:
			succeeded = append(succeeded, o)
		}
	}
	switch {
	case st.Phase == Failed:
	case len(progress) > 0:
		st.Phase = InProgress
		st.Reason = progress[0].String()
		if len(progress) > 1 {
			st.Reason += fmt.Sprintf(" and %d more", len(progress)-1)
		}
	case len(succeeded) > 0:
		st.Phase = Succeeded
	}
	return st
}

// StatusFunc reads the phase of one object from its stored form.
type StatusFunc func(obj *unstructured.Unstructured) ObjectStatus

// TypedStatus adapts a reader of a typed object T to a StatusFunc: the stored
// object is converted to T first, so readers work on the upstream Go types.
func TypedStatus[T any, PT interface {
	*T
	runtime.Object
}](read func(PT) ObjectStatus) StatusFunc {
	return func(u *unstructured.Unstructured) ObjectStatus {
		obj := PT(new(T))
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, obj); err != nil {
			return ObjectStatus{Phase: Failed, Reason: "Unreadable", Message: err.Error()}
		}
		return read(obj)
	}
}

// registry is a per-kind table that packages fill from init and clients
// read concurrently.
type registry[V any] struct {
	mu sync.RWMutex
	m  map[schema.GroupKind]V
}

func (r *registry[V]) set(gk schema.GroupKind, v V) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[schema.GroupKind]V{}
	}
	r.m[gk] = v
}

func (r *registry[V]) get(gk schema.GroupKind) (V, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	v, ok := r.m[gk]
	return v, ok
}

var statusRegistry registry[StatusFunc]

// RegisterStatus registers how to read the phase of a kind. Packages that
// build a kind register its reader from init (train for PyTorchJob, pipeline
// for Workflow…), the way client-go registers types into a scheme. A later
// registration replaces an earlier one; Client options can override per client.
func RegisterStatus(gk schema.GroupKind, read StatusFunc) {
	statusRegistry.set(gk, read)
}

// statusReader returns the registered reader of a kind, or nil.
func statusReader(gk schema.GroupKind) StatusFunc {
	read, _ := statusRegistry.get(gk)
	return read
}

// ReadStatus returns the phase of one stored object with the registered
// reader of its kind. Kinds without a reader (ConfigMaps, Secrets, RBAC…) are
// Ready once they exist. A nil object is InProgress with reason NotFound,
// as a missing one is.
func ReadStatus(obj *unstructured.Unstructured) ObjectStatus {
	if obj == nil {
		return ObjectStatus{Phase: InProgress, Reason: "NotFound"}
	}
	return readStatusWith(nil, obj)
}

func readStatusWith(overrides map[schema.GroupKind]StatusFunc, obj *unstructured.Unstructured) ObjectStatus {
	gk := obj.GroupVersionKind().GroupKind()
	read := overrides[gk]
	if read == nil {
		read = statusReader(gk)
	}
	var st ObjectStatus
	if read == nil {
		st = ObjectStatus{Phase: Ready}
	} else {
		st = read(obj)
	}
	st.Ref = RefOf(obj)
	if obj.GetDeletionTimestamp() != nil && st.Phase != Failed {
		st.Phase, st.Reason = InProgress, "Terminating"
	}
	return st
}

func init() {
	RegisterStatus(schema.GroupKind{Group: "apps", Kind: "Deployment"}, TypedStatus(deploymentStatus))
	RegisterStatus(schema.GroupKind{Group: "apps", Kind: "StatefulSet"}, TypedStatus(statefulSetStatus))
	RegisterStatus(schema.GroupKind{Group: "batch", Kind: "Job"}, TypedStatus(jobStatus))
	RegisterStatus(schema.GroupKind{Kind: "Pod"}, TypedStatus(podStatus))
	RegisterStatus(schema.GroupKind{Kind: "PersistentVolumeClaim"}, TypedStatus(pvcStatus))
	RegisterStatus(schema.GroupKind{Kind: "Service"}, TypedStatus(serviceStatus))
}

// observed reports whether a controller has seen the latest spec.
func observed(generation, observedGeneration int64) bool {
	return observedGeneration >= generation
}

func deploymentStatus(d *appsv1.Deployment) ObjectStatus {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return ObjectStatus{Phase: Failed, Reason: c.Reason, Message: c.Message}
		}
	}
	s := d.Status
	switch {
	case !observed(d.Generation, s.ObservedGeneration):
		return ObjectStatus{Phase: InProgress, Reason: "NotObserved", Message: "controller has not seen the latest spec"}
	case s.UpdatedReplicas < want || s.AvailableReplicas < want || s.Replicas > s.UpdatedReplicas:
		return ObjectStatus{Phase: InProgress, Reason: "Rollout",
			Message: fmt.Sprintf("%d/%d updated, %d/%d available", s.UpdatedReplicas, want, s.AvailableReplicas, want)}
	}
	return ObjectStatus{Phase: Ready, Reason: "Available", Message: fmt.Sprintf("%d/%d available", s.AvailableReplicas, want)}
}

func statefulSetStatus(ss *appsv1.StatefulSet) ObjectStatus {
	want := int32(1)
	if ss.Spec.Replicas != nil {
		want = *ss.Spec.Replicas
	}
	s := ss.Status
	switch {
	case !observed(ss.Generation, s.ObservedGeneration):
		return ObjectStatus{Phase: InProgress, Reason: "NotObserved", Message: "controller has not seen the latest spec"}
	case s.ReadyReplicas < want || s.UpdatedReplicas < want || s.AvailableReplicas < want:
		return ObjectStatus{Phase: InProgress, Reason: "Rollout",
			Message: fmt.Sprintf("%d/%d ready, %d/%d updated", s.ReadyReplicas, want, s.UpdatedReplicas, want)}
	}
	return ObjectStatus{Phase: Ready, Reason: "Available", Message: fmt.Sprintf("%d/%d ready", s.ReadyReplicas, want)}
}

func jobStatus(j *batchv1.Job) ObjectStatus {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return ObjectStatus{Phase: Succeeded, Reason: nonEmpty(c.Reason, "Complete"), Message: c.Message}
		case batchv1.JobFailed:
			return ObjectStatus{Phase: Failed, Reason: nonEmpty(c.Reason, "Failed"), Message: c.Message}
		}
	}
	return ObjectStatus{Phase: InProgress, Reason: "Running",
		Message: fmt.Sprintf("%d active, %d succeeded, %d failed", j.Status.Active, j.Status.Succeeded, j.Status.Failed)}
}

func podStatus(p *corev1.Pod) ObjectStatus {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return ObjectStatus{Phase: Succeeded, Reason: "Succeeded"}
	case corev1.PodFailed:
		return ObjectStatus{Phase: Failed, Reason: nonEmpty(p.Status.Reason, "Failed"), Message: p.Status.Message}
	case corev1.PodRunning:
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return ObjectStatus{Phase: Ready, Reason: "Ready"}
			}
		}
		return ObjectStatus{Phase: InProgress, Reason: "Running", Message: "not ready"}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && (w.Reason == "ImagePullBackOff" || w.Reason == "ErrImagePull" || w.Reason == "CrashLoopBackOff" || w.Reason == "CreateContainerConfigError") {
			return ObjectStatus{Phase: InProgress, Reason: w.Reason, Message: cs.Name + ": " + w.Message}
		}
	}
	return ObjectStatus{Phase: InProgress, Reason: nonEmpty(string(p.Status.Phase), "Pending")}
}

func pvcStatus(c *corev1.PersistentVolumeClaim) ObjectStatus {
	switch c.Status.Phase {
	case corev1.ClaimBound:
		return ObjectStatus{Phase: Ready, Reason: "Bound"}
	case corev1.ClaimLost:
		return ObjectStatus{Phase: Failed, Reason: "Lost"}
	}
	// A claim of a WaitForFirstConsumer class stays Pending until a pod uses
	// it; that is its resting state, so Pending counts as ready.
	return ObjectStatus{Phase: Ready, Reason: nonEmpty(string(c.Status.Phase), "Pending"), Message: "bound when first used"}
}

func serviceStatus(s *corev1.Service) ObjectStatus {
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer && len(s.Status.LoadBalancer.Ingress) == 0 {
		return ObjectStatus{Phase: InProgress, Reason: "LoadBalancerPending", Message: "no ingress address yet"}
	}
	return ObjectStatus{Phase: Ready, Reason: "Ready"}
}

func nonEmpty(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// Completion states when a run-to-completion kind has succeeded or failed,
// in the JSON-path selector syntax of Argo Workflows' resource templates
// (successCondition/failureCondition): comma-separated requirements on
// JSON paths parsed as label selectors, e.g. Success "status.succeeded > 0"
// and Failure "status.failed > 3". A package that
// registers a reader for such a kind registers its Completion too, so that a
// pipeline step can create the object and wait for it exactly as Release.Wait
// would.
type Completion struct {
	Success string
	Failure string
}

var completionRegistry registry[Completion]

// RegisterCompletion registers the completion conditions of a kind.
func RegisterCompletion(gk schema.GroupKind, c Completion) {
	completionRegistry.set(gk, c)
}

// CompletionOf returns the completion conditions registered for a kind.
func CompletionOf(gk schema.GroupKind) (Completion, bool) {
	return completionRegistry.get(gk)
}

// AnyConditionOfType returns the requirements that match a condition of
// type condType at any of the first positions places of status.conditions,
// for the Failure of a Completion. Argo's selector grammar cannot search a
// list by field, but it fails a step when any one failure requirement
// matches, so listing each position finds the condition wherever the
// controller appended it.
func AnyConditionOfType(condType string, positions int) string {
	reqs := make([]string, positions)
	for i := range reqs {
		reqs[i] = fmt.Sprintf("status.conditions.%d.type == %s", i, condType)
	}
	return strings.Join(reqs, ", ")
}

func init() {
	// The Job controller sets completionTime only when a Job succeeds, and
	// a Job carries at most five conditions (Suspended, FailureTarget,
	// SuccessCriteriaMet, Complete, Failed).
	RegisterCompletion(schema.GroupKind{Group: "batch", Kind: "Job"}, Completion{
		Success: "status.completionTime",
		Failure: AnyConditionOfType(string(batchv1.JobFailed), 5),
	})
}
