package vgpu_test

// Dynamic Resource Allocation on the one-node test cluster
// (internal/testsupport/testenv.GetCluster): the node's DRA driver
// (internal/testsupport/dradriver) publishes four Tesla T4s and an A100
// partitionable into MIG devices under NVIDIA's driver name, and the real
// scheduler allocates them to the claims cube renders.

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/journeys"
	"github.com/cubestudio/cube/internal/testsupport/dradriver"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/train"
	"github.com/cubestudio/cube/vgpu"
)

var t4DRA = hardware.T4.Plugin(hardware.NVIDIADRA)

// sleeper is a one-pod serving group that holds its devices.
func sleeper(c *testenv.Cluster, name string) *serve.Service {
	return serve.VLLM(name, "standin/echo-7b").Image(c.Images.Standin).CPU("50m").Memory("128Mi")
}

// allocated waits until n pods of the release are scheduled and returns,
// per pod, the devices the scheduler allocated to their claims.
func allocated(t *testing.T, c *testenv.Cluster, ns, release string, n int) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: cube.LabelRelease + "=" + release})
		if err != nil {
			return false, err
		}
		clear(out)
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
				continue
			}
			// A claim made from a template is named in the pod's status; a
			// shared one in its spec.
			var names []string
			for _, s := range p.Status.ResourceClaimStatuses {
				if s.ResourceClaimName != nil {
					names = append(names, *s.ResourceClaimName)
				}
			}
			for _, pc := range p.Spec.ResourceClaims {
				if pc.ResourceClaimName != nil {
					names = append(names, *pc.ResourceClaimName)
				}
			}
			for _, name := range names {
				claim, err := c.Clientset.ResourceV1().ResourceClaims(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil || claim.Status.Allocation == nil {
					return false, nil
				}
				for _, r := range claim.Status.Allocation.Devices.Results {
					out[p.Name] = append(out[p.Name], r.Device)
				}
			}
		}
		return len(out) == n, nil
	})
	require.NoError(t, err, "%d running pods of %s with allocated claims; have %v", n, release, out)
	return out
}

// A training job's pods (a RayJob's head and worker: KubeRay v1.5.0's CRDs
// know resource.k8s.io/v1 claims, the training-operator v1.8.1's do not)
// each get a T4 of their own by a claim made from the job's
// ResourceClaimTemplate. Ray is not installed in any image here, so the
// job does not run: the scheduler's allocation is what is checked.
func TestDRATrainingPodsEachGetADevice(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	job := train.Ray("each").Image(c.Images.Python).Entrypoint("python3 -c 'print(1)'").
		WorkerGroup("gpu", 1).CPU("100m").Memory("256Mi").HeadResources("100m", "256Mi").
		On(t4DRA).Accelerators(1).HeadAccelerators(1)
	journeys.Apply(t, cl, job)
	got := allocated(t, c, ns, "each", 2)
	var devices []string
	for pod, d := range got {
		require.Len(t, d, 1, "pod %s", pod)
		assert.Contains(t, []string{"gpu-0", "gpu-1", "gpu-2", "gpu-3"}, d[0], "pod %s got a T4", pod)
		devices = append(devices, d[0])
	}
	slices.Sort(devices)
	assert.Len(t, slices.Compact(devices), 2, "each pod has a T4 of its own: %v", got)
}

// A serving group of two replicas shares one claim, so one T4, on SharedClaim.
func TestDRAServingGroupSharesOneClaim(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	svc := serve.VLLM("shared", "standin/echo-7b").Image(c.Images.Standin).CPU("50m").Memory("128Mi").
		On(t4DRA).Accelerators(1).SharedClaim(true).Replicas(2)
	journeys.Apply(t, cl, svc)
	got := allocated(t, c, ns, "shared", 2)
	claim, err := c.Clientset.ResourceV1().ResourceClaims(ns).Get(t.Context(), "shared-accelerators", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, claim.Status.Allocation)
	require.Len(t, claim.Status.Allocation.Devices.Results, 1)
	dev := claim.Status.Allocation.Devices.Results[0].Device
	for pod, d := range got {
		assert.Equal(t, []string{dev}, d, "pod %s uses the group's device", pod)
	}
	assert.Len(t, claim.Status.ReservedFor, 2, "both replicas are the claim's consumers")
}

// A MIG claim takes one 1g.10gb device of the A100; the counters it
// consumed make the whole A100 unallocatable while the other 1g.10gb
// devices stay allocatable.
func TestDRAPartitionLeavesTheRestAllocatable(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	a100 := hardware.A100_80G.Plugin(hardware.NVIDIADRA)
	journeys.Apply(t, cl, sleeper(c, "mig-a").Slice(vgpu.MIG(a100, "1g.10gb")))
	first := allocated(t, c, ns, "mig-a", 1)
	journeys.Apply(t, cl, sleeper(c, "mig-b").Slice(vgpu.MIG(a100, "1g.10gb")))
	second := allocated(t, c, ns, "mig-b", 1)
	var a, b string
	for _, d := range first {
		a = d[0]
	}
	for _, d := range second {
		b = d[0]
	}
	assert.True(t, strings.HasPrefix(a, dradriver.A100Device+"-mig-1g10gb-"), "a 1g.10gb MIG device: %s", a)
	assert.True(t, strings.HasPrefix(b, dradriver.A100Device+"-mig-1g10gb-"), "a 1g.10gb MIG device: %s", b)
	assert.NotEqual(t, a, b, "the second claim gets another partition")

	journeys.Apply(t, cl, sleeper(c, "whole").On(a100).Accelerators(1))
	unschedulable(t, c, ns, "whole")
	assertUnallocated(t, c, ns, "whole")
}

// A claim no device satisfies leaves its pod pending, and cube's status says
// which claim and why.
func TestDRAUnsatisfiableClaimIsReported(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	rel := journeys.Apply(t, cl, sleeper(c, "h100").On(hardware.H100.Plugin(hardware.NVIDIADRA)).Accelerators(1))
	unschedulable(t, c, ns, "h100")
	assertUnallocated(t, c, ns, "h100")
	st, err := rel.Status(t.Context())
	require.NoError(t, err)
	msg := st.String()
	assert.Contains(t, msg, "no device satisfies claim", "status: %+v", st)
	assert.Contains(t, msg, "H100", "status names what the claim needs: %+v", st)
	assert.Contains(t, msg, dradriver.T4Product, "status names what the node has: %+v", st)
}

// unschedulable waits until the scheduler has found the release's pod
// unschedulable.
func unschedulable(t *testing.T, c *testenv.Cluster, ns, release string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: cube.LabelRelease + "=" + release})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodScheduled && cond.Reason == corev1.PodReasonUnschedulable {
					return true, nil
				}
			}
		}
		return false, nil
	})
	require.NoError(t, err, "the pod of %s is found unschedulable", release)
}

// assertUnallocated checks that the release's claims stay unallocated and
// its pod unscheduled.
func assertUnallocated(t *testing.T, c *testenv.Cluster, ns, release string) {
	t.Helper()
	claims, err := c.Clientset.ResourceV1().ResourceClaims(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	var mine []resourcev1.ResourceClaim
	for _, cl := range claims.Items {
		if strings.HasPrefix(cl.Name, release+"-") {
			mine = append(mine, cl)
		}
	}
	require.NotEmpty(t, mine, "the pod's claim exists")
	for _, cl := range mine {
		assert.Nil(t, cl.Status.Allocation, "claim %s stays unallocated", cl.Name)
	}
}
