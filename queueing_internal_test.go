package cube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kueue "github.com/cubestudio/cube/internal/kueue/v1beta2"
	volcano "github.com/cubestudio/cube/internal/volcano/v1beta1"
)

// gpuWorkload is a Workload of one pod set asking for GPUs, CPU and
// memory, with the given conditions.
func gpuWorkload(conds ...metav1.Condition) *kueue.Workload {
	return &kueue.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "pytorchjob-sft-1a2b3", Namespace: "team-a"},
		Spec: kueue.WorkloadSpec{QueueName: "team-a", PodSets: []kueue.PodSet{{Name: "worker", Count: 2, Template: corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				"nvidia.com/gpu": resource.MustParse("4"), corev1.ResourceCPU: resource.MustParse("1"),
			}}}}},
		}}}},
		Status: kueue.WorkloadStatus{Conditions: conds},
	}
}

// teamQueue is a ClusterQueue with 4 GPUs on one flavor, borrowing up to
// 2, and 8 CPUs, all 4 GPUs and 3 CPUs reserved.
func teamQueue(cohort string) *kueue.ClusterQueue {
	two := resource.MustParse("2")
	return &kueue.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec: kueue.ClusterQueueSpec{CohortName: kueue.CohortReference(cohort), ResourceGroups: []kueue.ResourceGroup{
			{CoveredResources: []corev1.ResourceName{"cpu", "memory"}, Flavors: []kueue.FlavorQuotas{{Name: "cube-default", Resources: []kueue.ResourceQuota{
				{Name: "cpu", NominalQuota: resource.MustParse("8")}, {Name: "memory", NominalQuota: resource.MustParse("16Gi")},
			}}}},
			{CoveredResources: []corev1.ResourceName{"nvidia.com/gpu"}, Flavors: []kueue.FlavorQuotas{{Name: "cube-t4", Resources: []kueue.ResourceQuota{
				{Name: "nvidia.com/gpu", NominalQuota: resource.MustParse("4"), BorrowingLimit: &two},
			}}}},
		}},
		Status: kueue.ClusterQueueStatus{FlavorsReservation: []kueue.FlavorUsage{
			{Name: "cube-default", Resources: []kueue.ResourceUsage{{Name: "cpu", Total: resource.MustParse("3")}, {Name: "memory", Total: resource.MustParse("1Gi")}}},
			{Name: "cube-t4", Resources: []kueue.ResourceUsage{{Name: "nvidia.com/gpu", Total: resource.MustParse("4")}}},
		}},
	}
}

func cond(typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message}
}

func TestExplainWorkload(t *testing.T) {
	pending := cond(kueue.WorkloadQuotaReserved, metav1.ConditionFalse, "Pending",
		"couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor cube-t4, 4 more needed")
	for _, c := range []struct {
		name     string
		w        *kueue.Workload
		cqName   string
		cq       *kueue.ClusterQueue
		waits    bool
		reason   string
		sentence string
	}{
		{"queued in a cohort", gpuWorkload(pending), "team-a", teamQueue("research"), true, QueueQueued,
			"Queued: waiting for quota in ClusterQueue team-a (nvidia.com/gpu: 4 of 4 in use, borrowing 0 of 2): couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor cube-t4, 4 more needed"},
		{"queued before Kueue says what is short", gpuWorkload(), "team-a", teamQueue("research"), true, QueueQueued,
			"Queued: waiting for quota in ClusterQueue team-a (cpu: 3 of 8 in use, borrowing 0 of what cohort research lends; nvidia.com/gpu: 4 of 4 in use, borrowing 0 of 2)"},
		{"queued alone", gpuWorkload(pending), "team-a", teamQueue(""), true, QueueQueued,
			"Queued: waiting for quota in ClusterQueue team-a (nvidia.com/gpu: 4 of 4 in use): couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor cube-t4, 4 more needed"},
		{"queue not readable", gpuWorkload(pending), "team-a", nil, true, QueueQueued,
			"Queued: waiting for quota in ClusterQueue team-a: couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor cube-t4, 4 more needed"},
		{"no condition yet", gpuWorkload(), "", nil, true, QueueQueued, "Queued: waiting for quota"},
		{"inadmissible", gpuWorkload(cond(kueue.WorkloadQuotaReserved, metav1.ConditionFalse, kueue.WorkloadInadmissible, "LocalQueue team-b doesn't exist")), "", nil, true, QueueInadmissible,
			"Inadmissible: LocalQueue team-b doesn't exist"},
		{"preempted", gpuWorkload(
			cond(kueue.WorkloadEvicted, metav1.ConditionTrue, kueue.WorkloadEvictedByPreemption, "Preempted to accommodate a workload (UID: u1, JobUID: j1) due to reclamation within the cohort; preemptor path: /research/team-b; preemptee path: /research/team-a"),
			cond(kueue.WorkloadPreempted, metav1.ConditionTrue, kueue.InCohortReclamationReason, "Preempted to accommodate a workload (UID: u1, JobUID: j1) due to reclamation within the cohort; preemptor path: /research/team-b; preemptee path: /research/team-a"),
		), "team-a", teamQueue("research"), true, QueuePreempted, "Preempted by a workload of ClusterQueue team-b (reclamation within the cohort)"},
		{"preempted, message of another shape", gpuWorkload(cond(kueue.WorkloadPreempted, metav1.ConditionTrue, kueue.InClusterQueueReason, "")), "", nil, true, QueuePreempted,
			"Preempted by Kueue (InClusterQueue)"},
		{"evicted for pods not ready", gpuWorkload(cond(kueue.WorkloadEvicted, metav1.ConditionTrue, kueue.WorkloadEvictedByPodsReadyTimeout, "Exceeded the PodsReady timeout team-a/sft")), "team-a", nil, true, QueueEvicted,
			"Evicted: PodsReadyTimeout: Exceeded the PodsReady timeout team-a/sft"},
		{"admitted", gpuWorkload(cond(kueue.WorkloadQuotaReserved, metav1.ConditionTrue, "QuotaReserved", ""), cond(kueue.WorkloadAdmitted, metav1.ConditionTrue, "Admitted", "")), "team-a", nil, false, "", ""},
		{"finished", gpuWorkload(cond(kueue.WorkloadFinished, metav1.ConditionTrue, kueue.WorkloadFinishedReasonSucceeded, "")), "team-a", nil, false, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, waits := explainWorkload(c.w, c.cqName, c.cq)
			assert.Equal(t, c.waits, waits)
			if !c.waits {
				return
			}
			assert.Equal(t, c.reason, q.Reason)
			assert.Equal(t, c.sentence, q.String())
			assert.Equal(t, "pytorchjob-sft-1a2b3", q.Workload)
		})
	}
}

func TestExplainPodGroup(t *testing.T) {
	unschedulable := volcano.PodGroupCondition{Type: volcano.PodGroupUnschedulableType, Status: corev1.ConditionTrue, Reason: volcano.NotEnoughResourcesReason,
		Message: "4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; Pending: 4 Unschedulable"}
	gang := func(phase volcano.PodGroupPhase, queue string, running int32, conds ...volcano.PodGroupCondition) *volcano.PodGroup {
		return &volcano.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: "sft"},
			Spec:       volcano.PodGroupSpec{MinMember: 4, Queue: queue},
			Status:     volcano.PodGroupStatus{Phase: phase, Running: running, Conditions: conds},
		}
	}
	for _, c := range []struct {
		name  string
		pg    *volcano.PodGroup
		waits bool
		want  string
	}{
		{"pending in its queue", gang(volcano.PodGroupPending, "team-a", 0, unschedulable), true,
			"Queued: waiting in Volcano queue team-a (gang of 4): 4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; Pending: 4 Unschedulable"},
		{"pending without a condition, in the default queue", gang(volcano.PodGroupPending, "", 0), true,
			"Queued: waiting in Volcano queue default (gang of 4)"},
		{"let in, not placed", gang(volcano.PodGroupInqueue, "team-a", 0, unschedulable), true,
			"Unschedulable: Volcano queue team-a let the gang of 4 in, but its pods cannot all be placed: 4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; Pending: 4 Unschedulable"},
		{"let in, pods being made", gang(volcano.PodGroupInqueue, "team-a", 0), false, ""},
		{"part of it runs", gang(volcano.PodGroupUnknown, "team-a", 2, volcano.PodGroupCondition{Type: volcano.PodGroupUnschedulableType, Status: corev1.ConditionTrue, Reason: volcano.NotEnoughPodsReason}), true,
			"Unschedulable: 2 of the gang of 4 run, the rest cannot be placed: NotEnoughTasks"},
		{"an old condition that no longer holds", gang(volcano.PodGroupInqueue, "team-a", 0, volcano.PodGroupCondition{Type: volcano.PodGroupUnschedulableType, Status: corev1.ConditionFalse, Message: "old"}), false, ""},
		{"not taken up yet", gang("", "team-a", 0), true, "Queued: Volcano's scheduler has not taken up the gang of 4 in queue team-a yet"},
		{"running", gang(volcano.PodGroupRunning, "team-a", 4, unschedulable), false, ""},
		{"completed", gang(volcano.PodGroupCompleted, "team-a", 0), false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, waits := explainPodGroup(c.pg)
			assert.Equal(t, c.waits, waits)
			if c.waits {
				assert.Equal(t, c.want, q.String())
				assert.Equal(t, "sft", q.Workload)
			}
		})
	}
}
