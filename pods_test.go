package cube_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cubestudio/cube"
)

func TestPodProblems(t *testing.T) {
	waiting := func(name, reason, msg string, restarts int32, last *corev1.ContainerStateTerminated) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, RestartCount: restarts,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}},
			LastTerminationState: corev1.ContainerState{Terminated: last}}
	}
	running := func(name string, restarts int32, last *corev1.ContainerStateTerminated) corev1.ContainerStatus {
		return corev1.ContainerStatus{Name: name, RestartCount: restarts, Ready: true,
			State:                corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			LastTerminationState: corev1.ContainerState{Terminated: last}}
	}
	oom := &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}
	for _, tc := range []struct {
		name   string
		status corev1.PodStatus
		want   []cube.PodProblem
	}{
		{"healthy", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{running("main", 0, nil)}}, nil},
		{"creating", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{waiting("main", "ContainerCreating", "", 0, nil)}}, nil},
		{"unschedulable", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
			Message: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
		}}}, []cube.PodProblem{{Pod: "p", Reason: "Unschedulable", Message: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}}},
		{"bad image", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
			waiting("main", "ImagePullBackOff", `Back-off pulling image "vllm/vllm-openai:v9"`, 0, nil),
		}}, []cube.PodProblem{{Pod: "p", Container: "main", Reason: "ImagePullBackOff", Message: `Back-off pulling image "vllm/vllm-openai:v9"`, Stuck: true}}},
		{"first failed pull", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{
			waiting("main", "ErrImagePull", "failed to pull: i/o timeout", 0, nil),
		}}, []cube.PodProblem{{Pod: "p", Container: "main", Reason: "ErrImagePull", Message: "failed to pull: i/o timeout"}}},
		{"missing secret key in an init container", corev1.PodStatus{Phase: corev1.PodPending, InitContainerStatuses: []corev1.ContainerStatus{
			waiting("fetch", "CreateContainerConfigError", `couldn't find key token in Secret ns/hf`, 0, nil),
		}, ContainerStatuses: []corev1.ContainerStatus{waiting("main", "PodInitializing", "", 0, nil)}},
			[]cube.PodProblem{{Pod: "p", Container: "fetch", Reason: "CreateContainerConfigError", Message: `couldn't find key token in Secret ns/hf`, Stuck: true}}},
		{"crash loop after OOM", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			running("sidecar", 0, nil),
			waiting("main", "CrashLoopBackOff", "back-off 5m0s restarting failed container", 6, oom),
		}}, []cube.PodProblem{{Pod: "p", Container: "main", Reason: "CrashLoopBackOff", Restarts: 6, Stuck: true,
			Message: "back-off 5m0s restarting failed container; 6 restarts; last exit code 137 (OOMKilled)"}}},
		{"restarted once, running again", corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{
			running("main", 1, &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}),
		}}, []cube.PodProblem{{Pod: "p", Container: "main", Reason: "Restarted", Restarts: 1, Message: "1 restart; last exit code 1 (Error)"}}},
		{"evicted", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: ephemeral-storage."},
			[]cube.PodProblem{{Pod: "p", Reason: "Evicted", Message: "The node was low on resource: ephemeral-storage."}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: tc.status}
			assert.Equal(t, tc.want, cube.PodProblems(p))
		})
	}
}

func TestStatusStringShowsPodProblems(t *testing.T) {
	st := cube.Status{Phase: cube.InProgress, Reason: "Deployment ns/web InProgress (Rollout: 0/2 updated, 0/2 available)", Pods: []cube.PodProblem{
		{Pod: "web-1", Container: "main", Reason: "ImagePullBackOff", Message: "Back-off pulling image", Stuck: true},
		{Pod: "web-2", Reason: "Unschedulable", Message: "0/3 nodes are available"},
	}}
	assert.Equal(t, "InProgress: Deployment ns/web InProgress (Rollout: 0/2 updated, 0/2 available); pod web-1 container main: ImagePullBackOff: Back-off pulling image; and 1 more pod problems", st.String())
}
