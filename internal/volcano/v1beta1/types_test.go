package v1beta1

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
)

// A PodGroup of Volcano's own types reads the same through these: every
// field cube reads keeps its value, so every tag is Volcano's.
func TestPodGroupMirrorsVolcano(t *testing.T) {
	real := vcscheduling.PodGroup{
		TypeMeta:   metav1.TypeMeta{APIVersion: "scheduling.volcano.sh/v1beta1", Kind: "PodGroup"},
		ObjectMeta: metav1.ObjectMeta{Name: "sft", Namespace: "team-a"},
		Spec:       vcscheduling.PodGroupSpec{MinMember: 4, MinTaskMember: map[string]int32{"worker": 3}, Queue: "team-a"},
		Status: vcscheduling.PodGroupStatus{
			Phase: vcscheduling.PodGroupPending, Running: 1, Succeeded: 2, Failed: 3,
			Conditions: []vcscheduling.PodGroupCondition{{
				Type: vcscheduling.PodGroupUnschedulableType, Status: corev1.ConditionTrue, TransitionID: "t1",
				LastTransitionTime: metav1.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
				Reason:             vcscheduling.NotEnoughResourcesReason, Message: "4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable",
			}},
		},
	}
	data, err := json.Marshal(real)
	require.NoError(t, err)
	// Times read back in the local zone: compare with the real type read
	// back the same way.
	real = vcscheduling.PodGroup{}
	require.NoError(t, json.Unmarshal(data, &real))
	var mirror PodGroup
	require.NoError(t, json.Unmarshal(data, &mirror))
	again, err := json.Marshal(mirror)
	require.NoError(t, err)
	var back vcscheduling.PodGroup
	require.NoError(t, json.Unmarshal(again, &back))
	assert.Equal(t, real.Spec.MinMember, back.Spec.MinMember)
	assert.Equal(t, real.Spec.MinTaskMember, back.Spec.MinTaskMember)
	assert.Equal(t, real.Spec.Queue, back.Spec.Queue)
	assert.Equal(t, real.Status, back.Status)
	assert.Equal(t, string(vcscheduling.PodGroupInqueue), string(PodGroupInqueue))
	assert.Equal(t, string(vcscheduling.PodGroupUnknown), string(PodGroupUnknown))
	assert.Equal(t, string(vcscheduling.PodGroupRunning), string(PodGroupRunning))
	assert.Equal(t, string(vcscheduling.PodGroupCompleted), string(PodGroupCompleted))
	assert.Equal(t, string(vcscheduling.PodGroupScheduled), string(PodGroupScheduled))
	assert.Equal(t, vcscheduling.NotEnoughPodsReason, NotEnoughPodsReason)
	assert.Equal(t, vcscheduling.NotEnoughPodsOfTaskReason, NotEnoughPodsOfTaskReason)
	assert.Equal(t, vcscheduling.SchemeGroupVersion.String(), GroupVersion.String())
}
