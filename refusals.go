package cube

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Refusal is a pod the cluster refused to create for an object of a
// release, as the object's controller reported it in a Warning event: the
// ReplicaSet, StatefulSet and Job controllers' FailedCreate
// (k8s.io/kubernetes pkg/controller/controller_utils.go,
// FailedCreatePodReason), training-operator's FailedCreatePod
// (pkg/controller.v1/control/pod_control.go, createPods) and, for an
// MPIJob, whose controller drops the API server's answer from its
// FailedCreatePod event, its MPIJobFailed "worker pod created failed: …"
// or "launcher pod created failed: …" (training-operator v1.8.1
// pkg/controller.v1/mpi/mpijob_controller.go), Volcano's FailedCreate on
// its Job, "Error creating pods: [failed to create pod <pod>, err:
// <the API server's error as %#v prints it>]" (volcano v1.14.0
// pkg/controllers/job/job_controller_actions.go, syncJob, and constant.go),
// and KubeRay's FailedToCreateHeadPod and FailedToCreateWorkerPod on the
// RayCluster, reported on the RayJob that made it (KubeRay v1.5.0
// ray-operator/controllers/ray/raycluster_controller.go, createHeadPod and
// createWorkerPod). Controllers retry such pods with backoff and set no
// condition, so without the events a job refused by its quota reads as
// merely not started.
type Refusal struct {
	// Object is the release's object whose pods were refused (for a
	// Deployment, the Deployment, although its ReplicaSet reported it).
	Object ObjectRef
	// Reason says what refused the pod: QuotaExceeded, QuotaNotCounted (a
	// new quota the quota controller has not counted yet), PodSecurity,
	// LimitRange, Webhook, ServiceAccount, or the controller's own reason
	// (FailedCreate, FailedCreatePod) for anything else.
	Reason string
	// Message is the API server's answer as the controller recorded it.
	Message string
	// Quota is what the quota that refused the pod said, for
	// QuotaExceeded (its Err is nil: the refusal came from an event).
	Quota *QuotaExceededError
	// Count is how many times the controller saw it, Last when it last did.
	Count int32
	Last  time.Time
}

func (r Refusal) String() string {
	out := r.Object.String() + ": pods refused: "
	if r.Quota != nil {
		return out + r.Quota.Error()
	}
	return out + r.Reason + ": " + r.Message
}

// The reasons controllers give for creating a pod and failing to; KubeRay
// v1.5.0's are its own (ray-operator/controllers/ray/utils/constant.go).
// Volcano v1.14.0 records no event for a pod it created.
var (
	failedCreate     = []string{"FailedCreate", "FailedCreatePod", "FailedToCreateHeadPod", "FailedToCreateWorkerPod"}
	successfulCreate = []string{"SuccessfulCreate", "SuccessfulCreatePod", "CreatedHeadPod", "CreatedWorkerPod"}
)

// createEvent is what a feed keeps of one event about creating pods.
type createEvent struct {
	group, kind, name string // the involved object
	failed            bool
	reason            string
	message           string
	count             int32
	last              time.Time
}

// refusedByAdmission reports whether a failed create's message is the API
// server refusing the pod (Forbidden: a quota, Pod Security, a
// LimitRange, a missing ServiceAccount; or a webhook's denial), not a
// passing failure the controller retries ("already exists" after a
// race, a timeout), which is no refusal.
func refusedByAdmission(msg string) bool {
	return strings.Contains(msg, " is forbidden") || strings.Contains(msg, "denied the request") ||
		strings.Contains(msg, "exceeded quota: ") || strings.Contains(msg, "status unknown for quota: ")
}

// createEventOf reads ev; false when it is not about creating pods.
func createEventOf(ev *corev1.Event) (createEvent, bool) {
	failed := (slices.Contains(failedCreate, ev.Reason) ||
		ev.Reason == "MPIJobFailed" && strings.Contains(ev.Message, "pod created failed: ")) && refusedByAdmission(ev.Message)
	if !failed && !slices.Contains(successfulCreate, ev.Reason) {
		return createEvent{}, false
	}
	last := ev.LastTimestamp.Time
	if ev.Series != nil && ev.Series.LastObservedTime.After(last) {
		last = ev.Series.LastObservedTime.Time
	}
	if last.IsZero() {
		last = ev.EventTime.Time
	}
	if last.IsZero() {
		last = ev.CreationTimestamp.Time
	}
	count := max(ev.Count, 1)
	if ev.Series != nil && ev.Series.Count > count {
		count = ev.Series.Count
	}
	group, _, _ := strings.Cut(ev.InvolvedObject.APIVersion, "/")
	if !strings.Contains(ev.InvolvedObject.APIVersion, "/") {
		group = "" // "v1": the core group
	}
	return createEvent{
		group: group, kind: ev.InvolvedObject.Kind, name: ev.InvolvedObject.Name, failed: failed,
		reason: ev.Reason, message: ev.Message, count: count, last: last,
	}, true
}

// refusalsOf returns the current refusals of objs from events: for each
// object (and the ReplicaSets of each Deployment), the latest event about
// creating its pods, when that is a failure no later than the object's
// creation. A pod created after a refusal (the quota was raised, another
// job ended) clears it.
func refusalsOf(objs []ObjectRef, created map[ObjectRef]time.Time, events []createEvent) []Refusal {
	latest := map[ObjectRef]createEvent{}
	for _, ev := range events {
		ref, ok := ownerOfEvent(objs, ev)
		if !ok || ev.last.Before(created[ref]) {
			continue
		}
		if cur, seen := latest[ref]; !seen || ev.last.After(cur.last) || ev.last.Equal(cur.last) && telling(ev) > telling(cur) {
			latest[ref] = ev
		}
	}
	var out []Refusal
	for _, ref := range objs {
		ev, ok := latest[ref]
		if !ok || !ev.failed {
			continue
		}
		out = append(out, refusal(ref, ev))
	}
	return out
}

// refusedPodNames find the pods a refusal's message names: the API
// server's `pods "<name>" is forbidden`, and Volcano's "failed to create
// pod <name>, err: " (v1.14.0 pkg/controllers/job/job_controller_actions.go),
// whose answers are Go-quoted.
var refusedPodNames = []*regexp.Regexp{
	regexp.MustCompile(`pods "([^"]+)" is forbidden`),
	regexp.MustCompile(`failed to create pod ([^ ,]+), err: `),
}

// stillRefused drops the refusals whose pods have all been created since:
// each pod the message names exists now, created no earlier than the
// second the refusal was last seen. A controller that records no event
// for a pod it creates (Volcano) leaves its last refusal the latest word
// although the pods run; a pod that exists cannot be the one refused, as
// creating it again would find it there. A refusal that names no pod (a
// pod of a generated name) stands.
func stillRefused(refusals []Refusal, pods map[string]time.Time) []Refusal {
	var out []Refusal
	for _, r := range refusals {
		if !createdSince(r, pods) {
			out = append(out, r)
		}
	}
	return out
}

// createdSince reports whether r names pods and all of them exist in pods,
// created no earlier than the second r was last seen.
func createdSince(r Refusal, pods map[string]time.Time) bool {
	named := false
	for _, re := range refusedPodNames {
		for _, m := range re.FindAllStringSubmatch(r.Message, -1) {
			at, ok := pods[m[1]]
			if !ok || at.Before(r.Last.Truncate(time.Second)) {
				return false
			}
			named = true
		}
	}
	return named
}

// telling ranks events of the same second: a refusal over a creation (so
// that none is hidden), and one that says why over one that does not (an
// MPIJob's FailedCreatePod, "Created worker pod: ", beside its
// MPIJobFailed with the API server's answer).
func telling(ev createEvent) int {
	switch {
	case !ev.failed:
		return 0
	case refusal(ObjectRef{}, ev).Reason == ev.reason && !strings.Contains(ev.message, "forbidden"):
		return 1
	}
	return 2
}

// ownerOfEvent finds the object of objs an event is about: the object
// itself or, when none of objs is, the object that made the one it is
// about:
//
//   - a Deployment's ReplicaSet: the Deployment controller names it
//     "<deployment>-<pod-template-hash>" (k8s.io/kubernetes
//     pkg/controller/deployment/sync.go, getNewReplicaSet), and the hash
//     has no '-';
//   - a RayJob's RayCluster, "<rayjob>-<5 random characters>" (KubeRay
//     v1.5.0 ray-operator/controllers/ray/utils/util.go,
//     GenerateRayClusterName, called by rayjob_controller.go), and its
//     submitter Job, named as the RayJob (rayjob_controller.go,
//     createNewK8sJob).
func ownerOfEvent(objs []ObjectRef, ev createEvent) (ObjectRef, bool) {
	for _, ref := range objs {
		if ref.Group == ev.group && ref.Kind == ev.kind && ref.Name == ev.name {
			return ref, true
		}
	}
	for _, ref := range objs {
		switch {
		case ref.Kind == "Deployment" && ref.Group == "apps" && ev.group == "apps" && ev.kind == "ReplicaSet":
			hash, ok := strings.CutPrefix(ev.name, ref.Name+"-")
			if ok && hash != "" && !strings.Contains(hash, "-") {
				return ref, true
			}
		case ref.Kind == "RayJob" && ref.Group == "ray.io" && ev.group == "ray.io" && ev.kind == "RayCluster":
			suffix, ok := strings.CutPrefix(ev.name, ref.Name+"-")
			if ok && len(suffix) == 5 && !strings.Contains(suffix, "-") {
				return ref, true
			}
		case ref.Kind == "RayJob" && ref.Group == "ray.io" && ev.group == "batch" && ev.kind == "Job" && ev.name == ref.Name:
			return ref, true
		}
	}
	return ObjectRef{}, false
}

// refusal classifies what refused a pod from the API server's message.
func refusal(ref ObjectRef, ev createEvent) Refusal {
	r := Refusal{Object: ref, Reason: ev.reason, Message: ev.message, Count: ev.count, Last: ev.last}
	msg := ev.message
	switch {
	case strings.Contains(msg, "exceeded quota: "):
		r.Reason = "QuotaExceeded"
		r.Quota, _ = parseQuotaExceeded(quotedAnswer(msg))
	case strings.Contains(msg, "status unknown for quota: "):
		r.Reason = "QuotaNotCounted"
	case strings.Contains(msg, "violates PodSecurity"):
		r.Reason = "PodSecurity"
	case strings.Contains(msg, "admission webhook") && strings.Contains(msg, "denied the request"):
		r.Reason = "Webhook"
	case strings.Contains(msg, "error looking up service account"):
		r.Reason = "ServiceAccount"
	case strings.Contains(msg, " per Container is ") || strings.Contains(msg, " per Pod is ") || strings.Contains(msg, " per PersistentVolumeClaim is "):
		// k8s.io/kubernetes plugin/pkg/admission/limitranger/admission.go
		r.Reason = "LimitRange"
	}
	return r
}

// quotedAnswer reads the API server's answer about a quota out of a
// message that quotes the error as %#v prints it, as Volcano's does
// (v1.14.0 pkg/controllers/job/job_controller_actions.go: "failed to
// create pod %s, err: %#v"): &errors.StatusError{ErrStatus:v1.Status{…,
// Message:"pods \"p\" is forbidden: exceeded quota: …", Reason:…}}. Any
// other message comes back as it is.
func quotedAnswer(msg string) string {
	at := strings.Index(msg, "exceeded quota: ")
	if at < 0 {
		return msg
	}
	open := strings.LastIndex(msg[:at], `Message:"`)
	if open < 0 {
		return msg
	}
	quoted, err := strconv.QuotedPrefix(msg[open+len("Message:"):])
	if err != nil {
		return msg
	}
	answer, err := strconv.Unquote(quoted)
	if err != nil || !strings.Contains(answer, "exceeded quota: ") {
		return msg
	}
	return answer
}

// refusals lists the events of the release's namespace once and returns
// the current refusals of its objects; none when reading events is
// forbidden (refusals are diagnostics, like pod problems).
func (r *Release) refusals(ctx context.Context, created map[ObjectRef]time.Time) ([]Refusal, error) {
	list := &corev1.EventList{}
	err := r.client.retrying(ctx, func(ctx context.Context) error {
		return r.client.c.List(ctx, list, client.InNamespace(r.Namespace))
	})
	switch {
	case apierrors.IsForbidden(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("list events of release %s: %w", r.Name, err)
	}
	var events []createEvent
	for i := range list.Items {
		if ev, ok := createEventOf(&list.Items[i]); ok {
			events = append(events, ev)
		}
	}
	return refusalsOf(r.Objects, created, events), nil
}
