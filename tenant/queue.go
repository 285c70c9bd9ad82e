package tenant

import (
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/cubestudio/cube"
)

// queue is the tenant's Volcano queue; its capability mirrors the quota's
// CPU, memory and accelerator requests, so that Volcano does not admit a
// job the quota would refuse pod by pod.
func (t *Spec) queue(id cube.Identity, hard corev1.ResourceList) (*vcscheduling.Queue, field.ErrorList) {
	var errs field.ErrorList
	if t.weight < 1 || t.weight > math.MaxInt32 {
		errs = append(errs, field.Invalid(field.NewPath("queue", "spec", "weight"), t.weight, fmt.Sprintf("must be from 1 to %d", math.MaxInt32)))
	}
	capability := corev1.ResourceList{}
	if q, ok := hard[corev1.ResourceRequestsCPU]; ok {
		capability[corev1.ResourceCPU] = q.DeepCopy()
	}
	if q, ok := hard[corev1.ResourceRequestsMemory]; ok {
		capability[corev1.ResourceMemory] = q.DeepCopy()
	}
	for _, r := range t.accels {
		if q, ok := hard[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(r))]; ok {
			capability[r] = q.DeepCopy()
		}
	}
	if len(capability) == 0 {
		capability = nil
	}
	var reclaimable *bool
	if t.reclaimable != nil {
		v := *t.reclaimable
		reclaimable = &v
	}
	return &vcscheduling.Queue{
		TypeMeta:   metav1.TypeMeta{APIVersion: vcscheduling.SchemeGroupVersion.String(), Kind: "Queue"},
		ObjectMeta: id.ObjectMeta(t.name, "", nil, nil),
		Spec:       vcscheduling.QueueSpec{Weight: int32(min(max(t.weight, 0), math.MaxInt32)), Capability: capability, Reclaimable: reclaimable},
	}, errs
}

// Kinds returns how a cube.Client reads the kinds a tenant makes beyond
// the Kubernetes API's own: its Volcano Queue, or Kueue's ResourceFlavors,
// WorkloadPriorityClasses, ClusterQueue and LocalQueue. Give them to the client
// (cube.Kinds(tenant.Kinds()...), or kinds.All()): without them the queue
// reads Unknown and the tenant's release never Ready.
func Kinds() []cube.Kind {
	return []cube.Kind{queueKind, kueueActive("ClusterQueue"), kueueActive("LocalQueue"), kueueFlavorKind, kueuePriorityKind}
}

// queueKind is how a Client reads the Volcano Queue of a Tenant: Volcano's
// queue controller opens a new queue (status.state Open) and jobs are
// scheduled from it only then; Closed or Closing refuses new jobs
// (volcano.sh/apis v1.14.0 pkg/apis/scheduling/v1beta1/types.go,
// QueueState). A queue no controller has opened yet is in progress.
var queueKind = cube.Kind{
	GroupKind: vcscheduling.SchemeGroupVersion.WithKind("Queue").GroupKind(),
	Status: cube.TypedStatus(func(q *vcscheduling.Queue) cube.ObjectStatus {
		switch q.Status.State {
		case vcscheduling.QueueStateOpen:
			return cube.ObjectStatus{Phase: cube.Ready, Reason: string(q.Status.State)}
		case vcscheduling.QueueStateClosed, vcscheduling.QueueStateClosing:
			return cube.ObjectStatus{Phase: cube.Failed, Reason: string(q.Status.State), Message: "the queue takes no new jobs"}
		case vcscheduling.QueueStateUnknown:
			return cube.ObjectStatus{Phase: cube.Unknown, Reason: string(q.Status.State), Message: "Volcano reports the queue's state as Unknown"}
		}
		return cube.ObjectStatus{Phase: cube.InProgress, Reason: "NotOpened", Message: "Volcano's controller has not opened the queue yet"}
	}),
}
