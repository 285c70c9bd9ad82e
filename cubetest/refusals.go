package cubetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
)

// RefusePods plays the API server refusing the pods of rel's workloads:
// for each object of rel whose controller creates pods, it records the
// Warning event that controller records when a pod create fails, with
// apiError, the API server's answer to the create (QuotaExceededMessage
// builds a quota's), in the message. Release.Status then lists the
// refusals (cube.Refusal), and Wait with cube.FailOnStuckPods fails on
// them. Calling it again for the same refusal counts it again, as the
// controllers' event recorder does.
//
// Each kind's event is the one its controller writes:
//
//   - Deployment: FailedCreate on its ReplicaSet, "<deployment>-<hash>",
//     "Error creating: <apiError>" (the ReplicaSet controller creates the
//     pods; k8s.io/kubernetes pkg/controller/controller_utils.go,
//     RealPodControl.createPods). The name has the form the Deployment
//     controller gives (pkg/controller/deployment/sync.go); no ReplicaSet
//     object is created;
//   - Job: FailedCreate on the Job, "Error creating: <apiError>" (the same
//     createPods);
//   - StatefulSet: FailedCreate on it, "Create Pod <name>-0 in StatefulSet
//     <name> failed error: <apiError>"
//     (pkg/controller/statefulset/stateful_pod_control.go, recordPodEvent,
//     which title-cases the verb);
//   - LeaderWorkerSet: the same, on the StatefulSet of the pod the answer
//     names (a leader's, "<name>", or a group's workers', "<name>-<group>"),
//     else on the leaders' for "<name>-0";
//   - the training-operator's PyTorchJob, TFJob, PaddleJob, XGBoostJob and
//     MXJob: FailedCreatePod on the job, "Error creating: <apiError>"
//     (training-operator v1.8.1 pkg/controller.v1/control/pod_control.go,
//     RealPodControl.createPods);
//   - MPIJob: two events on the job, as v1.8.1's MPIJob controller, which
//     creates its workers itself, records a refused worker
//     (pkg/controller.v1/mpi/mpijob_controller.go, getOrCreateWorker):
//     FailedCreatePod "Created worker pod: ", without the API server's
//     answer, and MPIJobFailed "worker pod created failed: <apiError>".
//     cube reads the second, which says why;
//   - Volcano's Job: FailedCreate on the job, "Error creating pods:
//     [failed to create pod <job>-<task>-0, err: <the error as %#v prints
//     it>]" (volcano v1.14.0 pkg/controllers/job/job_controller_actions.go,
//     syncJob; the pod the answer names, else the first task's first);
//   - RayJob: on the RayCluster KubeRay makes for it, "<rayjob>-<5
//     random>", FailedToCreateHeadPod "Failed to create head Pod
//     <namespace>/, <apiError>", or FailedToCreateWorkerPod "Failed to
//     create worker Pod for the cluster <namespace>/<cluster>, <apiError>"
//     when the answer names a worker of the cluster (KubeRay v1.5.0
//     ray-operator/controllers/ray/raycluster_controller.go, createHeadPod
//     and createWorkerPod). The cluster is not created.
//
// Other objects are left alone; a release with none of those kinds is an
// error, as is an empty apiError (a refused create always has one).
func (c *Cluster) RefusePods(ctx context.Context, rel *cube.Release, apiError string) error {
	if err := c.usable(); err != nil {
		return err
	}
	if rel == nil {
		return errors.New("cubetest: release is nil")
	}
	if apiError == "" {
		return fmt.Errorf("cubetest: refuse pods of release %s/%s: the API server's answer is empty", rel.Namespace, rel.Name)
	}
	refused := 0
	for _, ref := range rel.Objects {
		if !createsPods(ref.GroupKind()) {
			continue
		}
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(ref.GroupVersionKind)
		if err := c.Fake.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
			return fmt.Errorf("cubetest: refuse pods of %s: %w", ref, err)
		}
		events, err := refusalEvents(u, apiError)
		if err != nil {
			return fmt.Errorf("cubetest: refuse pods of %s: %w", ref, err)
		}
		for _, ev := range events {
			if err := record(ctx, c.Fake, ev); err != nil {
				return fmt.Errorf("cubetest: refuse pods of %s: %w", ref, err)
			}
		}
		refused++
	}
	if refused == 0 {
		return fmt.Errorf("cubetest: refuse pods of release %s/%s: it has no Deployment, StatefulSet, Job, training-operator job, LeaderWorkerSet, Volcano Job or RayJob", rel.Namespace, rel.Name)
	}
	return nil
}

// QuotaExceededMessage returns the API server's answer to creating the
// pod named pod when it would take resource over the ResourceQuota named
// quota, for RefusePods: the quota admission plugin's "exceeded quota:
// <quota>, requested: <resource>=<requested>, used: <resource>=<used>,
// limited: <resource>=<limited>" (k8s.io/apiserver v0.37.2
// pkg/admission/plugin/resourcequota/controller.go) inside the Forbidden
// error of k8s.io/apimachinery's NewForbidden, `pods "<pod>" is
// forbidden: ...`. Give the quantities as resource.Quantity prints them
// ("2", "500m", "1Gi") and resource as the quota names it
// ("requests.nvidia.com/gpu", "requests.cpu").
func QuotaExceededMessage(pod, quota, resource, requested, used, limited string) string {
	return fmt.Sprintf("pods %q is forbidden: exceeded quota: %s, requested: %s=%s, used: %s=%s, limited: %s=%s",
		pod, quota, resource, requested, resource, used, resource, limited)
}

// trainingOperatorJobs are the training-operator v1.8.1 kinds whose pods
// its common pod control creates.
var trainingOperatorJobs = []string{"PyTorchJob", "TFJob", "PaddleJob", "XGBoostJob", "MXJob"}

func createsPods(gk schema.GroupKind) bool {
	switch gk {
	case schema.GroupKind{Group: "apps", Kind: "Deployment"}, schema.GroupKind{Group: "apps", Kind: "StatefulSet"},
		schema.GroupKind{Group: "batch", Kind: "Job"}, schema.GroupKind{Group: "kubeflow.org", Kind: "MPIJob"}, lwsKind,
		volcanoJobKind, rayJobKind:
		return true
	}
	return gk.Group == "kubeflow.org" && slices.Contains(trainingOperatorJobs, gk.Kind)
}

// refusedPodName finds the pod in the API server's refusal of it.
var refusedPodName = regexp.MustCompile(`pods "([^"]+)" is forbidden`)

// refusalEvents are the events u's controller records when the API
// server refuses a pod of u with apiError.
func refusalEvents(u *unstructured.Unstructured, apiError string) ([]*corev1.Event, error) {
	involved := corev1.ObjectReference{
		Kind: u.GetKind(), APIVersion: u.GetAPIVersion(), Namespace: u.GetNamespace(), Name: u.GetName(),
		UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
	}
	switch gk := u.GroupVersionKind().GroupKind(); {
	case gk.Kind == "Deployment":
		hash, err := templateHash(u)
		if err != nil {
			return nil, err
		}
		rs := corev1.ObjectReference{Kind: "ReplicaSet", APIVersion: "apps/v1", Namespace: u.GetNamespace(), Name: u.GetName() + "-" + hash}
		return []*corev1.Event{warning(rs, "replicaset-controller", "FailedCreate", "Error creating: "+apiError)}, nil
	case gk == lwsKind:
		// A group's leader is a pod of the leader StatefulSet "<name>",
		// its workers pods of the group's StatefulSet "<name>-<group>";
		// the StatefulSet controller records the failure on the set
		// (k8s.io/kubernetes v1.37.2 pkg/controller/statefulset/stateful_pod_control.go,
		// recordPodEvent).
		pod, set := u.GetName()+"-0", u.GetName()
		if m := refusedPodName.FindStringSubmatch(apiError); m != nil {
			pod = m[1]
			if group, _, worker := strings.Cut(strings.TrimPrefix(pod, u.GetName()+"-"), "-"); worker {
				set = u.GetName() + "-" + group
			}
		}
		sts := corev1.ObjectReference{Kind: "StatefulSet", APIVersion: "apps/v1", Namespace: u.GetNamespace(), Name: set}
		return []*corev1.Event{warning(sts, "statefulset-controller", "FailedCreate",
			fmt.Sprintf("Create Pod %s in StatefulSet %s failed error: %s", pod, set, apiError))}, nil
	case gk == volcanoJobKind:
		// Volcano joins the errors of the pods it failed to create, each
		// the API server's error as %#v prints client-go's StatusError.
		pod := ""
		if m := refusedPodName.FindStringSubmatch(apiError); m != nil {
			pod = m[1]
		} else if tasks, _, _ := unstructured.NestedSlice(u.Object, "spec", "tasks"); len(tasks) > 0 {
			task, _ := tasks[0].(map[string]any)
			pod = fmt.Sprintf("%s-%v-0", u.GetName(), task["name"])
		}
		status := &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Message: apiError, Reason: metav1.StatusReasonForbidden,
			Details: &metav1.StatusDetails{Name: pod, Kind: "pods"}, Code: http.StatusForbidden,
		}}
		errs := []error{fmt.Errorf("failed to create pod %s, err: %#v", pod, status)}
		return []*corev1.Event{warning(involved, "vc-controller-manager", "FailedCreate", fmt.Sprintf("Error creating pods: %+v", errs))}, nil
	case gk == rayJobKind:
		// KubeRay records on the RayCluster; a head pod's name is still
		// empty in its message, as the pod's name is generated.
		cluster := rayCluster(u)
		rc := corev1.ObjectReference{Kind: "RayCluster", APIVersion: rayv1.GroupVersion.String(), Namespace: u.GetNamespace(), Name: cluster}
		if m := refusedPodName.FindStringSubmatch(apiError); m != nil && strings.HasPrefix(m[1], cluster+"-") && strings.Contains(m[1], "-worker-") {
			return []*corev1.Event{warning(rc, "raycluster-controller", "FailedToCreateWorkerPod",
				fmt.Sprintf("Failed to create worker Pod for the cluster %s/%s, %s", u.GetNamespace(), cluster, apiError))}, nil
		}
		return []*corev1.Event{warning(rc, "raycluster-controller", "FailedToCreateHeadPod",
			fmt.Sprintf("Failed to create head Pod %s/, %s", u.GetNamespace(), apiError))}, nil
	case gk.Kind == "StatefulSet":
		return []*corev1.Event{warning(involved, "statefulset-controller", "FailedCreate",
			fmt.Sprintf("Create Pod %s-0 in StatefulSet %s failed error: %s", u.GetName(), u.GetName(), apiError))}, nil
	case gk.Group == "batch":
		return []*corev1.Event{warning(involved, "job-controller", "FailedCreate", "Error creating: "+apiError)}, nil
	case gk.Kind == "MPIJob":
		return []*corev1.Event{
			warning(involved, "mpijob-controller", "FailedCreatePod", "Created worker pod: "),
			warning(involved, "mpijob-controller", "MPIJobFailed", "worker pod created failed: "+apiError),
		}, nil
	default:
		return []*corev1.Event{warning(involved, strings.ToLower(gk.Kind)+"-controller", "FailedCreatePod", "Error creating: "+apiError)}, nil
	}
}

// warning is a Warning event about involved as client-go's event recorder
// makes it for a controller named component (tools/record/event.go,
// makeEvent and generateEvent).
func warning(involved corev1.ObjectReference, component, reason, message string) *corev1.Event {
	at := now()
	return &corev1.Event{
		// The recorder names an event after its object and the nanosecond
		// it made it; the timestamps keep seconds, as stored events do.
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", involved.Name, time.Now().UnixNano()), Namespace: involved.Namespace},
		InvolvedObject:      involved,
		Reason:              reason,
		Message:             message,
		FirstTimestamp:      at,
		LastTimestamp:       at,
		Count:               1,
		Type:                corev1.EventTypeWarning,
		Source:              corev1.EventSource{Component: component},
		ReportingController: component,
	}
}

// templateHash stands in for the Deployment controller's pod-template-hash
// (controller.ComputeHash: FNV-32a of the template, encoded with
// rand.SafeEncodeString): the same alphabet and form, not the same value.
func templateHash(u *unstructured.Unstructured) (string, error) {
	template, _, err := unstructured.NestedFieldNoCopy(u.Object, "spec", "template")
	if err != nil {
		return "", err
	}
	h := fnv.New32a()
	if err := json.NewEncoder(h).Encode(template); err != nil {
		return "", fmt.Errorf("hash the pod template: %w", err)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32())), nil
}

// record stores ev, or counts it again on the event already recorded for
// the same object, reason and message, as the recorder's correlator does.
func record(ctx context.Context, c client.Client, ev *corev1.Event) error {
	var events corev1.EventList
	if err := c.List(ctx, &events, client.InNamespace(ev.Namespace)); err != nil {
		return fmt.Errorf("list events: %w", err)
	}
	for i := range events.Items {
		old := &events.Items[i]
		if old.InvolvedObject.Kind == ev.InvolvedObject.Kind && old.InvolvedObject.Name == ev.InvolvedObject.Name &&
			old.Reason == ev.Reason && old.Message == ev.Message {
			old.Count++
			old.LastTimestamp = ev.LastTimestamp
			if err := c.Update(ctx, old); err != nil {
				return fmt.Errorf("count event %s again: %w", old.Name, err)
			}
			return nil
		}
	}
	if err := c.Create(ctx, ev); err != nil {
		return fmt.Errorf("record event: %w", err)
	}
	return nil
}
