package v1beta2

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ResourceFlavorReference names a ResourceFlavor.
type ResourceFlavorReference string

// ClusterQueueReference names a ClusterQueue.
type ClusterQueueReference string

// CohortReference names a cohort.
type CohortReference string

// ResourceFlavor is a kind of node (resourceflavor_types.go).
//
// +kubebuilder:object:root=true
type ResourceFlavor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ResourceFlavorSpec `json:"spec,omitempty"`
}

// ResourceFlavorSpec is what a ResourceFlavor's nodes have: Kueue adds
// NodeLabels to the node selector of the pods it admits on the flavor.
type ResourceFlavorSpec struct {
	NodeLabels  map[string]string   `json:"nodeLabels,omitempty"`
	NodeTaints  []corev1.Taint      `json:"nodeTaints,omitempty"`
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// ResourceFlavorList is a list of ResourceFlavors.
//
// +kubebuilder:object:root=true
type ResourceFlavorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceFlavor `json:"items"`
}

// ClusterQueue holds quota and admits workloads (clusterqueue_types.go).
//
// +kubebuilder:object:root=true
type ClusterQueue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              ClusterQueueSpec   `json:"spec,omitempty"`
	Status            ClusterQueueStatus `json:"status,omitempty"`
}

// ClusterQueueSpec is a ClusterQueue's quota, cohort and policies.
type ClusterQueueSpec struct {
	ResourceGroups    []ResourceGroup         `json:"resourceGroups,omitempty"`
	CohortName        CohortReference         `json:"cohortName,omitempty"`
	QueueingStrategy  QueueingStrategy        `json:"queueingStrategy,omitempty"`
	NamespaceSelector *metav1.LabelSelector   `json:"namespaceSelector,omitempty"`
	Preemption        *ClusterQueuePreemption `json:"preemption,omitempty"`
	FairSharing       *FairSharing            `json:"fairSharing,omitempty"`
}

// QueueingStrategy orders a ClusterQueue's pending workloads.
type QueueingStrategy string

// The queueing strategies.
const (
	StrictFIFO     QueueingStrategy = "StrictFIFO"
	BestEffortFIFO QueueingStrategy = "BestEffortFIFO"
)

// ResourceGroup is a set of resources quota'd together over flavors.
type ResourceGroup struct {
	CoveredResources []corev1.ResourceName `json:"coveredResources,omitempty"`
	Flavors          []FlavorQuotas        `json:"flavors,omitempty"`
}

// FlavorQuotas is the quota of one flavor.
type FlavorQuotas struct {
	Name      ResourceFlavorReference `json:"name"`
	Resources []ResourceQuota         `json:"resources,omitempty"`
}

// ResourceQuota is the quota of one resource of a flavor: nominal, how
// much more it may borrow from its cohort, how much of the nominal it
// lends.
type ResourceQuota struct {
	Name           corev1.ResourceName `json:"name,omitempty"`
	NominalQuota   resource.Quantity   `json:"nominalQuota,omitempty"`
	BorrowingLimit *resource.Quantity  `json:"borrowingLimit,omitempty"`
	LendingLimit   *resource.Quantity  `json:"lendingLimit,omitempty"`
}

// PreemptionPolicy says which workloads may be preempted.
type PreemptionPolicy string

// The preemption policies.
const (
	PreemptionPolicyNever                     PreemptionPolicy = "Never"
	PreemptionPolicyAny                       PreemptionPolicy = "Any"
	PreemptionPolicyLowerPriority             PreemptionPolicy = "LowerPriority"
	PreemptionPolicyLowerOrNewerEqualPriority PreemptionPolicy = "LowerOrNewerEqualPriority"
)

// ClusterQueuePreemption is when a ClusterQueue's pending workload may
// preempt admitted ones.
type ClusterQueuePreemption struct {
	ReclaimWithinCohort PreemptionPolicy    `json:"reclaimWithinCohort,omitempty"`
	BorrowWithinCohort  *BorrowWithinCohort `json:"borrowWithinCohort,omitempty"`
	WithinClusterQueue  PreemptionPolicy    `json:"withinClusterQueue,omitempty"`
}

// BorrowWithinCohortPolicy says whether a borrowing workload may preempt.
type BorrowWithinCohortPolicy string

// The policies of BorrowWithinCohort.
const (
	BorrowWithinCohortPolicyNever         BorrowWithinCohortPolicy = "Never"
	BorrowWithinCohortPolicyLowerPriority BorrowWithinCohortPolicy = "LowerPriority"
)

// BorrowWithinCohort is whether a workload that borrows may preempt
// workloads of other ClusterQueues of the cohort.
type BorrowWithinCohort struct {
	Policy               BorrowWithinCohortPolicy `json:"policy,omitempty"`
	MaxPriorityThreshold *int32                   `json:"maxPriorityThreshold,omitempty"`
}

// FairSharing is a ClusterQueue's weight in its cohort's fair sharing
// (fairsharing_types.go).
type FairSharing struct {
	Weight *resource.Quantity `json:"weight,omitempty"`
}

// FairSharingStatus is a ClusterQueue's share of its cohort.
type FairSharingStatus struct {
	WeightedShare int64 `json:"weightedShare"`
}

// ClusterQueueActive is the condition of a ClusterQueue that can admit.
const ClusterQueueActive = "Active"

// ClusterQueueStatus is what a ClusterQueue holds and admits now.
type ClusterQueueStatus struct {
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	FlavorsReservation []FlavorUsage      `json:"flavorsReservation,omitempty"`
	FlavorsUsage       []FlavorUsage      `json:"flavorsUsage,omitempty"`
	PendingWorkloads   int32              `json:"pendingWorkloads"`
	ReservingWorkloads int32              `json:"reservingWorkloads"`
	AdmittedWorkloads  int32              `json:"admittedWorkloads"`
	FairSharing        *FairSharingStatus `json:"fairSharing,omitempty"`
}

// FlavorUsage is the use of one flavor's resources.
type FlavorUsage struct {
	Name      ResourceFlavorReference `json:"name,omitempty"`
	Resources []ResourceUsage         `json:"resources,omitempty"`
}

// ResourceUsage is how much of a resource is in use (Total) and how much
// of that is borrowed from the cohort.
type ResourceUsage struct {
	Name     corev1.ResourceName `json:"name,omitempty"`
	Total    resource.Quantity   `json:"total,omitempty"`
	Borrowed resource.Quantity   `json:"borrowed,omitempty"`
}

// ClusterQueueList is a list of ClusterQueues.
//
// +kubebuilder:object:root=true
type ClusterQueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterQueue `json:"items"`
}

// LocalQueue is a namespace's entry to a ClusterQueue (localqueue_types.go).
//
// +kubebuilder:object:root=true
type LocalQueue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              LocalQueueSpec   `json:"spec"`
	Status            LocalQueueStatus `json:"status,omitempty"`
}

// LocalQueueSpec names the LocalQueue's ClusterQueue.
type LocalQueueSpec struct {
	ClusterQueue ClusterQueueReference `json:"clusterQueue,omitempty"`
}

// LocalQueueStatus counts a LocalQueue's workloads.
type LocalQueueStatus struct {
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
	PendingWorkloads   int32              `json:"pendingWorkloads"`
	ReservingWorkloads int32              `json:"reservingWorkloads"`
	AdmittedWorkloads  int32              `json:"admittedWorkloads"`
}

// LocalQueueList is a list of LocalQueues.
//
// +kubebuilder:object:root=true
type LocalQueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []LocalQueue `json:"items"`
}

// WorkloadPriorityClass is a priority for Kueue's queueing and preemption
// only, given to a job by WorkloadPriorityClassLabel
// (workloadpriorityclass_types.go).
//
// +kubebuilder:object:root=true
type WorkloadPriorityClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Value             int32  `json:"value"`
	Description       string `json:"description,omitempty"`
}

// WorkloadPriorityClassList is a list of WorkloadPriorityClasses.
//
// +kubebuilder:object:root=true
type WorkloadPriorityClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkloadPriorityClass `json:"items"`
}

// Workload is Kueue's record of one job's admission (workload_types.go).
// Kueue makes one per job, owned by it (a controller reference).
//
// +kubebuilder:object:root=true
type Workload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WorkloadSpec   `json:"spec,omitempty"`
	Status            WorkloadStatus `json:"status,omitempty"`
}

// WorkloadSpec is the pods a workload needs and where it queues.
type WorkloadSpec struct {
	PodSets   []PodSet `json:"podSets"`
	QueueName string   `json:"queueName,omitempty"`
	Priority  *int32   `json:"priority,omitempty"`
	Active    *bool    `json:"active,omitempty"`
}

// PodSet is a group of identical pods of a workload.
type PodSet struct {
	Name     string                 `json:"name,omitempty"`
	Template corev1.PodTemplateSpec `json:"template,omitempty"`
	Count    int32                  `json:"count"`
	MinCount *int32                 `json:"minCount,omitempty"`
}

// The conditions of a Workload.
const (
	WorkloadQuotaReserved = "QuotaReserved"
	WorkloadAdmitted      = "Admitted"
	WorkloadFinished      = "Finished"
	WorkloadPodsReady     = "PodsReady"
	WorkloadEvicted       = "Evicted"
	WorkloadPreempted     = "Preempted"
	WorkloadRequeued      = "Requeued"
)

// The reasons of a Workload's conditions cube explains.
const (
	// WorkloadInadmissible: QuotaReserved false, the workload cannot be
	// admitted as it is (no such LocalQueue, a stopped ClusterQueue, a
	// request no flavor covers).
	WorkloadInadmissible = "Inadmissible"
	// WorkloadEvictedByPreemption: Evicted true because another workload
	// preempted it.
	WorkloadEvictedByPreemption = "Preempted"
	// WorkloadEvictedByPodsReadyTimeout: Evicted true because its pods
	// were not all ready in time (waitForPodsReady).
	WorkloadEvictedByPodsReadyTimeout = "PodsReadyTimeout"
	// WorkloadFinishedReasonSucceeded and WorkloadFinishedReasonFailed:
	// the reason of Finished true.
	WorkloadFinishedReasonSucceeded = "Succeeded"
	WorkloadFinishedReasonFailed    = "Failed"
)

// The reasons of Preempted true: where the preemptor came from.
const (
	InClusterQueueReason                = "InClusterQueue"
	InCohortReclamationReason           = "InCohortReclamation"
	InCohortFairSharingReason           = "InCohortFairSharing"
	InCohortReclaimWhileBorrowingReason = "InCohortReclaimWhileBorrowing"
)

// WorkloadStatus is a workload's admission and conditions.
type WorkloadStatus struct {
	Conditions   []metav1.Condition `json:"conditions,omitempty"`
	Admission    *Admission         `json:"admission,omitempty"`
	RequeueState *RequeueState      `json:"requeueState,omitempty"`
}

// Admission is where a workload was admitted.
type Admission struct {
	ClusterQueue      ClusterQueueReference `json:"clusterQueue"`
	PodSetAssignments []PodSetAssignment    `json:"podSetAssignments"`
}

// PodSetAssignment is the flavor of each resource of a pod set and what
// it uses.
type PodSetAssignment struct {
	Name          string                                          `json:"name"`
	Flavors       map[corev1.ResourceName]ResourceFlavorReference `json:"flavors,omitempty"`
	ResourceUsage corev1.ResourceList                             `json:"resourceUsage,omitempty"`
	Count         *int32                                          `json:"count,omitempty"`
}

// RequeueState is when an evicted workload queues again.
type RequeueState struct {
	Count     *int32       `json:"count,omitempty"`
	RequeueAt *metav1.Time `json:"requeueAt,omitempty"`
}

// WorkloadList is a list of Workloads.
//
// +kubebuilder:object:root=true
type WorkloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Workload `json:"items"`
}
