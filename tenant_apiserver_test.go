package cube_test

// These tests apply tenants to a real kube-apiserver (internal/testenv),
// whose ResourceQuota, LimitRanger and PodSecurity admission plugins run.
// No controller-manager runs: the test writes the quota's status as the
// quota controller would before relying on it.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testenv"
)

// tenantPod is a one-container pod of its own release, requesting
// resources (nil: none) and adding capabilities.
func tenantPod(name string, resources corev1.ResourceList, capabilities ...corev1.Capability) cube.Workload {
	id := cube.Identity{Kind: "pod", Release: name}
	c := corev1.Container{Name: "main", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}
	if resources != nil {
		c.Resources = corev1.ResourceRequirements{Requests: resources, Limits: resources}
	}
	if len(capabilities) > 0 {
		c.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: capabilities}}
	}
	return cube.Objects(&corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: id.ObjectMeta(name, "", nil, nil),
		Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
	})
}

func tenantResources(cpu, memory, gpus string) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resourceMust(cpu),
		corev1.ResourceMemory: resourceMust(memory),
		"nvidia.com/gpu":      resourceMust(gpus),
	}
}

// applyTenant applies the tenant named after a fresh test namespace and
// returns a client for that namespace.
func applyTenant(t *testing.T, env *testenv.Env, tenant *cube.TenantBuilder) *cube.Client {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		q := &vcscheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: tenant.Name()}}
		if err := env.Client.Delete(ctx, q); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete queue %s: %v", tenant.Name(), err)
		}
	})
	c := cube.NewFromClient(env.Client, cube.WithNamespace(tenant.Name()))
	rel, err := c.Apply(t.Context(), tenant)
	require.NoError(t, err)
	assert.Equal(t, tenant.Name(), rel.Namespace, "the release record lives in the tenant's namespace")
	return c
}

func TestTenantQuotaRefusesAPodOverIt(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	c := applyTenant(t, env, cube.Tenant(ns).
		CPU("8").Memory("16Gi").Pods(10).Accelerators("nvidia.com/gpu", 4).
		Editors("alice").ViewerGroups("auditors"))

	var stored corev1.Namespace
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: ns}, &stored))
	assert.Equal(t, "baseline", stored.Labels["pod-security.kubernetes.io/enforce"])
	var queue vcscheduling.Queue
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: ns}, &queue))
	assert.Equal(t, "4", queue.Spec.Capability.Name("nvidia.com/gpu", "").String())
	var edit rbacv1.RoleBinding
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ns + "-edit"}, &edit))
	assert.Equal(t, "edit", edit.RoleRef.Name)
	var np networkingv1.NetworkPolicy
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ns + "-isolation"}, &np))

	// Write the quota's status as the quota controller would: nothing used.
	var quota corev1.ResourceQuota
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ns}, &quota))
	quota.Status.Hard = quota.Spec.Hard.DeepCopy()
	quota.Status.Used = corev1.ResourceList{}
	for name := range quota.Spec.Hard {
		quota.Status.Used[name] = resourceMust("0")
	}
	require.NoError(t, env.Client.Status().Update(ctx, &quota))

	// A pod within the quota is admitted, and its defaults come from the
	// LimitRange.
	// Admission plugins read quotas and namespaces through informers: what
	// the test just wrote reaches them shortly after, so the first requests
	// are retried until the server answers from the new state.
	var err error
	require.Eventually(t, func() bool {
		_, err = c.Apply(ctx, tenantPod("small", tenantResources("1", "1Gi", "2")))
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the quota's status reaches admission")
	_, err = c.Apply(ctx, tenantPod("defaults", nil))
	require.NoError(t, err)
	var defaulted corev1.Pod
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "defaults"}, &defaulted))
	res := defaulted.Spec.Containers[0].Resources
	assert.Equal(t, cube.DefaultCPURequest, res.Requests.Cpu().String())
	assert.Equal(t, cube.DefaultMemoryRequest, res.Requests.Memory().String())
	assert.Empty(t, res.Limits, "no default limit to OOM-kill an engine that states none")

	// One over it is refused by the API server, naming the quota.
	_, err = c.Apply(ctx, tenantPod("big", tenantResources("1", "1Gi", "4")))
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), "exceeded quota: "+ns)
	assert.Contains(t, err.Error(), "requested: requests.nvidia.com/gpu=4")
	assert.Contains(t, err.Error(), "limited: ")
	qe, ok := cube.AsQuotaExceeded(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, ns, qe.Quota)
	assert.Equal(t, "requests.nvidia.com/gpu=4", qe.Requested)
	assert.Equal(t, "requests.nvidia.com/gpu=2", qe.Used)
	assert.Equal(t, "requests.nvidia.com/gpu=4", qe.Limited)
	t.Logf("the API server said: %v", err)

	var big corev1.Pod
	assert.True(t, apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "big"}, &big)))
}

func TestTenantRDMANeedsTheOptIn(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	c := applyTenant(t, env, cube.Tenant(ns))

	// PodSecurity reads the namespace's labels through an informer.
	var err error
	attempt := 0
	require.Eventually(t, func() bool {
		attempt++
		_, err = c.Apply(ctx, tenantPod(fmt.Sprintf("rdma-%d", attempt), nil, "IPC_LOCK"))
		return err != nil
	}, 30*time.Second, 50*time.Millisecond)
	require.Error(t, err, "baseline refuses IPC_LOCK")
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), `violates PodSecurity "baseline:latest"`)
	_, quota := cube.AsQuotaExceeded(err)
	assert.False(t, quota)

	applyTenant(t, env, cube.Tenant(ns).AllowRDMA())
	require.Eventually(t, func() bool {
		_, err = c.Apply(ctx, tenantPod("rdma", nil, "IPC_LOCK"))
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the privileged level admits IPC_LOCK")
}
