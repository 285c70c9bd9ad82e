package training

import (
	"context"
	"testing"
	"time"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cubestudio/cube/internal/journeys"
	"github.com/cubestudio/cube/train"
)

// KubeRay v1.5.0 reconciles cube's RayJob into a RayCluster whose head and
// worker pods pass admission and are scheduled on the node. Ray itself is
// not installed in any image here (no Ray wheel can be fetched), so the
// job cannot run: the test follows the objects KubeRay makes, not Ray.
func TestRayJobBecomesARayCluster(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	job := train.Ray("ray").
		Image(c.Images.Python).
		Entrypoint("python3 -c 'print(1)'").
		WorkerGroup("cpu", 1).
		CPU("200m").Memory("256Mi").
		HeadResources("200m", "256Mi")
	rel := journeys.Apply(t, cl, job)
	require.NotEmpty(t, rel.Objects)

	var cluster rayv1.RayCluster
	err := wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		var list rayv1.RayClusterList
		if err := c.Client.List(ctx, &list); err != nil {
			return false, nil
		}
		for _, rc := range list.Items {
			if rc.Namespace == ns {
				cluster = rc
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "KubeRay made a RayCluster for the RayJob")
	assert.Equal(t, "ray", cluster.Labels["ray.io/originated-from-cr-name"])

	// Both pods are created: admission (Pod Security, the scheduler's
	// checks) accepted what cube put in the templates.
	var pods *corev1.PodList
	err = wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err = c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "ray.io/cluster=" + cluster.Name})
		if err != nil || len(pods.Items) < 2 {
			return false, nil
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				return false, nil
			}
		}
		return true, nil
	})
	require.NoError(t, err, "the head and the worker were created and scheduled: %v", pods)
	types := map[string]bool{}
	for _, p := range pods.Items {
		types[p.Labels["ray.io/node-type"]] = true
	}
	assert.True(t, types["head"] && types["worker"], "%v", types)
}
