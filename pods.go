package cube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PodProblem is why a pod of a release is not running as it should: what
// `kubectl describe pod` would make you look for while a rollout or a job
// hangs. Release.Status and Wait report them while the release is not yet
// Ready or Succeeded.
type PodProblem struct {
	Pod string
	// Container is empty for problems of the whole pod (scheduling,
	// eviction).
	Container string
	// Reason is the kubelet's or the scheduler's: Unschedulable,
	// ImagePullBackOff, ErrImagePull, InvalidImageName,
	// CreateContainerConfigError, CrashLoopBackOff, Restarted, Evicted…
	Reason  string
	Message string
	// Restarts of the container so far.
	Restarts int32
	// Stuck problems do not go away without a change to the release or the
	// cluster: an image the kubelet has retried and still cannot pull
	// (ImagePullBackOff, not a first ErrImagePull), a missing Secret or
	// ConfigMap key, a container that keeps crashing. Unschedulable is not
	// stuck: a cluster autoscaler or a finishing job may free room.
	Stuck bool
}

func (p PodProblem) String() string {
	where := "pod " + p.Pod
	if p.Container != "" {
		where += " container " + p.Container
	}
	out := where + ": " + p.Reason
	if p.Message != "" {
		out += ": " + p.Message
	}
	return out
}

// The kubelet's waiting reasons worth reporting (kubelet/images and
// kuberuntime). The stuck ones last until something changes; the others
// are first failures the kubelet retries (a failed pull becomes
// ImagePullBackOff once it has been retried).
var (
	stuckWaiting = []string{
		"ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
		"CreateContainerConfigError", "CrashLoopBackOff",
	}
	retriedWaiting = []string{"ErrImagePull", "CreateContainerError", "RunContainerError"}
)

// PodProblems returns what keeps one pod from running as it should, in a
// fixed order: the pod first, then its init containers, then its
// containers. A healthy pod, or a nil one, has none.
func PodProblems(p *corev1.Pod) []PodProblem {
	if p == nil {
		return nil
	}
	var out []PodProblem
	switch {
	case p.Status.Phase == corev1.PodFailed && p.Status.Reason == "Evicted":
		out = append(out, PodProblem{Pod: p.Name, Reason: "Evicted", Message: p.Status.Message})
	case p.Status.Phase == corev1.PodPending:
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				out = append(out, PodProblem{Pod: p.Name, Reason: c.Reason, Message: c.Message})
			}
		}
	}
	for _, statuses := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range statuses {
			if prob, ok := containerProblem(p.Name, cs); ok {
				out = append(out, prob)
			}
		}
	}
	return out
}

func containerProblem(pod string, cs corev1.ContainerStatus) (PodProblem, bool) {
	prob := PodProblem{Pod: pod, Container: cs.Name, Restarts: cs.RestartCount}
	last := ""
	if t := cs.LastTerminationState.Terminated; t != nil {
		last = fmt.Sprintf("last exit code %d", t.ExitCode)
		if t.Reason != "" {
			last += " (" + t.Reason + ")"
		}
	}
	switch w := cs.State.Waiting; {
	case w != nil && (slices.Contains(stuckWaiting, w.Reason) || slices.Contains(retriedWaiting, w.Reason)):
		prob.Reason, prob.Stuck = w.Reason, slices.Contains(stuckWaiting, w.Reason)
		prob.Message = joinNonEmpty("; ", w.Message, restarts(cs.RestartCount), last)
		return prob, true
	case cs.RestartCount > 0 && last != "":
		// Running again (or about to) after crashing: worth knowing while
		// the release has not come up, not stuck by itself.
		prob.Reason = "Restarted"
		prob.Message = joinNonEmpty("; ", restarts(cs.RestartCount), last)
		return prob, true
	}
	return prob, false
}

func restarts(n int32) string {
	switch n {
	case 0:
		return ""
	case 1:
		return "1 restart"
	}
	return fmt.Sprintf("%d restarts", n)
}

func joinNonEmpty(sep string, parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, sep)
}

// podProblems lists the release's pods (by the release label) and returns
// their problems, pods in name order, and when each pod was created; none
// when listing pods is forbidden.
func (r *Release) podProblems(ctx context.Context) ([]PodProblem, map[string]time.Time, error) {
	pods := &corev1.PodList{}
	err := r.client.c.List(ctx, pods, client.InNamespace(r.Namespace), client.MatchingLabels{LabelRelease: r.Name})
	switch {
	case apierrors.IsForbidden(err):
		return nil, nil, nil // pods are diagnostics; a caller who may not read them still gets the objects' status
	case err != nil:
		return nil, nil, fmt.Errorf("list pods of release %s: %w", r.Name, err)
	}
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	var out []PodProblem
	created := make(map[string]time.Time, len(pods.Items))
	for i := range pods.Items {
		created[pods.Items[i].Name] = pods.Items[i].CreationTimestamp.Time
		probs := PodProblems(&pods.Items[i])
		for j := range probs {
			if probs[j].Reason != corev1.PodReasonUnschedulable || probs[j].Container != "" {
				continue
			}
			// A pod waiting for devices: say which claim and why, before
			// the scheduler's count of nodes.
			why, err := r.claimProblems(ctx, &pods.Items[i])
			if err != nil {
				return nil, nil, err
			}
			if len(why) > 0 {
				probs[j].Message = joinNonEmpty("; ", strings.Join(why, "; "), probs[j].Message)
			}
		}
		out = append(out, probs...)
	}
	return out, created, nil
}
