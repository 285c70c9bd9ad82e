package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is Volcano's scheduling API group and version.
var GroupVersion = schema.GroupVersion{Group: "scheduling.volcano.sh", Version: "v1beta1"}

// PodGroup is a gang of pods Volcano schedules all together or not at all;
// the training operator, KubeRay and Volcano's own Job controller make one
// per job.
type PodGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              PodGroupSpec   `json:"spec,omitempty"`
	Status            PodGroupStatus `json:"status,omitempty"`
}

// PodGroupSpec is how many pods make the gang and the queue it waits in.
type PodGroupSpec struct {
	MinMember     int32            `json:"minMember,omitempty"`
	MinTaskMember map[string]int32 `json:"minTaskMember,omitempty"`
	Queue         string           `json:"queue,omitempty"`
}

// PodGroupPhase is where a PodGroup is in Volcano's scheduling.
type PodGroupPhase string

// The phases of a PodGroup.
const (
	// PodGroupPending: accepted, but the scheduler cannot allocate
	// enough resources to it (or its queue has not let it in).
	PodGroupPending PodGroupPhase = "Pending"
	// PodGroupRunning: minMember pods run.
	PodGroupRunning PodGroupPhase = "Running"
	// PodGroupUnknown: part of minMember pods run, the rest cannot be
	// scheduled.
	PodGroupUnknown PodGroupPhase = "Unknown"
	// PodGroupInqueue: its queue let it in; controllers create its pods.
	PodGroupInqueue PodGroupPhase = "Inqueue"
	// PodGroupCompleted: all its pods are done.
	PodGroupCompleted PodGroupPhase = "Completed"
)

// PodGroupConditionType is a condition of a PodGroup.
type PodGroupConditionType string

// The conditions of a PodGroup.
const (
	PodGroupUnschedulableType PodGroupConditionType = "Unschedulable"
	PodGroupScheduled         PodGroupConditionType = "Scheduled"
)

// The reasons of the Unschedulable condition.
const (
	NotEnoughResourcesReason  = "NotEnoughResources"
	NotEnoughPodsReason       = "NotEnoughTasks"
	NotEnoughPodsOfTaskReason = "NotEnoughPodsOfTask"
)

// PodGroupCondition is one condition of a PodGroup.
type PodGroupCondition struct {
	Type               PodGroupConditionType  `json:"type,omitempty"`
	Status             corev1.ConditionStatus `json:"status,omitempty"`
	TransitionID       string                 `json:"transitionID,omitempty"`
	LastTransitionTime metav1.Time            `json:"lastTransitionTime,omitempty"`
	Reason             string                 `json:"reason,omitempty"`
	Message            string                 `json:"message,omitempty"`
}

// PodGroupStatus is where the gang is and how many of its pods run.
type PodGroupStatus struct {
	Phase      PodGroupPhase       `json:"phase,omitempty"`
	Conditions []PodGroupCondition `json:"conditions,omitempty"`
	Running    int32               `json:"running,omitempty"`
	Succeeded  int32               `json:"succeeded,omitempty"`
	Failed     int32               `json:"failed,omitempty"`
}
