package ops_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/vgpuspec"
	"github.com/cubestudio/cube/vgpu"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// renderedPod is a pod whose container resources, node selectors and
// annotations come from the appliers the builders use: hardware.Apply for
// whole devices, the vgpu.Spec reads (internal/vgpuspec) for shares.
func renderedPod(t testing.TB, ns, release, kind string, p hardware.Profile, whole int, spec *vgpu.Spec, start time.Time, run time.Duration) corev1.Pod {
	t.Helper()
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}}}
	require.Empty(t, hardware.Apply(&tmpl, "main", hardware.Placement{Profile: p, Accelerators: whole}, nil))
	if spec != nil {
		require.Empty(t, vgpuspec.Of(spec).Apply(&tmpl, "main", nil))
	}
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: release + "-" + start.Format("150405"), Namespace: ns,
			Labels:      cube.Identity{Kind: kind, Release: release}.Labels(),
			Annotations: tmpl.Annotations,
		},
		Spec: tmpl.Spec,
	}
	pod.Status.StartTime = &metav1.Time{Time: start}
	pod.Status.Phase = corev1.PodRunning
	if run > 0 {
		pod.Status.Phase = corev1.PodSucceeded
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.Time{Time: start.Add(run)}}}}}
	}
	return pod
}

func resourceQty(s string) resource.Quantity { return resource.MustParse(s) }
