package tenant_test

// These tests apply tenants to a real kube-apiserver (internal/testsupport/testenv),
// whose ResourceQuota, LimitRanger and PodSecurity admission plugins run.
// No controller-manager runs: the test writes the quota's status as the
// quota controller would before relying on it.

import (
	"context"
	"fmt"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/internal/testsupport/testpod"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
)

func resourceMust(s string) resource.Quantity { return resource.MustParse(s) } // test constants only

func tenantResources(cpu, memory, gpus string) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resourceMust(cpu),
		corev1.ResourceMemory: resourceMust(memory),
		"nvidia.com/gpu":      resourceMust(gpus),
	}
}

// applyTenant applies the tenant named after a fresh test namespace and
// returns a client for that namespace.
func applyTenant(t *testing.T, env *testenv.Env, team *tenant.Spec) *cube.Client {
	objs, err := team.Objects()
	require.NoError(t, err)
	name := objs[0].GetName() // the Namespace
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		q := &vcscheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := env.Client.Delete(ctx, q); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete queue %s: %v", name, err)
		}
	})
	c := cube.NewFromClient(env.Client, cube.Namespace(name))
	rel, err := c.Apply(t.Context(), team)
	require.NoError(t, err)
	assert.Equal(t, name, rel.Namespace, "the release record lives in the tenant's namespace")
	return c
}

func TestTenantQuotaRefusesAPodOverIt(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	c := applyTenant(t, env, tenant.New(ns).
		CPU("8").Memory("16Gi").Pods(10).Accelerators(hardware.H100, 4).
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
		_, err = c.Apply(ctx, testpod.Pod("small", tenantResources("1", "1Gi", "2")))
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the quota's status reaches admission")
	_, err = c.Apply(ctx, testpod.Pod("defaults", nil))
	require.NoError(t, err)
	var defaulted corev1.Pod
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "defaults"}, &defaulted))
	res := defaulted.Spec.Containers[0].Resources
	assert.Equal(t, tenant.DefaultCPURequest, res.Requests.Cpu().String())
	assert.Equal(t, tenant.DefaultMemoryRequest, res.Requests.Memory().String())
	assert.Empty(t, res.Limits, "no default limit to OOM-kill an engine that states none")

	// One over it is refused by the API server, naming the quota.
	_, err = c.Apply(ctx, testpod.Pod("big", tenantResources("1", "1Gi", "4")))
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
	c := applyTenant(t, env, tenant.New(ns))

	// cube refuses the pod before the API server sees it...
	_, err := c.Apply(ctx, testpod.Pod("rdma", nil, "IPC_LOCK"))
	var ps *cube.PodSecurityError
	require.ErrorAs(t, err, &ps)
	assert.Equal(t, "baseline:latest", ps.Level)

	// ...and the API server would have refused it. PodSecurity reads the
	// namespace's labels through an informer.
	objs, err := testpod.Pod("rdma", nil, "IPC_LOCK").Objects()
	require.NoError(t, err)
	raw := objs[0].(*corev1.Pod)
	raw.Namespace = ns
	require.Eventually(t, func() bool {
		err = env.Client.Create(ctx, raw.DeepCopy(), client.DryRunAll)
		return err != nil
	}, 30*time.Second, 50*time.Millisecond)
	require.Error(t, err, "baseline refuses IPC_LOCK")
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), `violates PodSecurity "baseline:latest": `+ps.Violations[0].Reasons)
	_, quota := cube.AsQuotaExceeded(err)
	assert.False(t, quota)

	applyTenant(t, env, tenant.New(ns).AllowRDMA())
	require.Eventually(t, func() bool {
		_, err = c.Apply(ctx, testpod.Pod("rdma", nil, "IPC_LOCK"))
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the privileged level admits IPC_LOCK")
}

// allowed asks the real RBAC authorizer whether user (in groups) may verb
// the resource in namespace.
func allowed(ctx context.Context, t *testing.T, env *testenv.Env, user string, groups []string, verb, group, resource, namespace string) bool {
	t.Helper()
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user, Groups: groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Group: group, Resource: resource},
	}}
	require.NoError(t, env.Client.Create(ctx, sar))
	return sar.Status.Allowed
}

// TestTenantMembersMayUseEveryKindCubeCreates asks the API server's RBAC
// authorizer what the tenant's editors, viewers and pipeline account may
// do. The ClusterRole edit alone gave editors no training-operator job,
// LeaderWorkerSet, RayJob or Volcano job, and pipelines no account.
func TestTenantMembersMayUseEveryKindCubeCreates(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	applyTenant(t, env, tenant.New(ns).Editors("alice").ViewerGroups("auditors"))

	type access struct{ verb, group, resource string }
	editorMay := []access{
		{"create", "kubeflow.org", "pytorchjobs"}, {"delete", "kubeflow.org", "mpijobs"}, {"patch", "kubeflow.org", "experiments"},
		{"create", "argoproj.io", "workflows"}, {"create", "argoproj.io", "cronworkflows"},
		{"create", "ray.io", "rayjobs"}, {"create", "leaderworkerset.x-k8s.io", "leaderworkersets"},
		{"create", "batch.volcano.sh", "jobs"}, {"get", "kubeflow.org", "pytorchjobs/status"},
		// Built-in kinds come from the tenant's Role too: the ClusterRole
		// edit has no rules until kube-controller-manager aggregates them,
		// and here, as in a cluster whose aggregation lags, none runs.
		{"create", "apps", "deployments"}, {"create", "", "services"}, {"create", "", "secrets"}, {"get", "", "pods/log"},
	}
	// RBAC reads roles and bindings through informers: the first answers
	// may predate them.
	require.Eventually(t, func() bool {
		return allowed(ctx, t, env, "alice", nil, "create", "kubeflow.org", "pytorchjobs", ns)
	}, 30*time.Second, 50*time.Millisecond, "editors may create PyTorchJobs")
	for _, a := range editorMay {
		assert.True(t, allowed(ctx, t, env, "alice", nil, a.verb, a.group, a.resource, ns), "editor %s %s.%s", a.verb, a.resource, a.group)
	}
	assert.False(t, allowed(ctx, t, env, "alice", nil, "create", "kubeflow.org", "pytorchjobs", "default"), "only in the tenant's namespace")

	viewer := []string{"auditors"}
	for _, a := range []access{{"get", "kubeflow.org", "pytorchjobs"}, {"list", "ray.io", "rayjobs"}, {"watch", "leaderworkerset.x-k8s.io", "leaderworkersets"}, {"get", "", "pods"}, {"get", "", "pods/log"}} {
		assert.True(t, allowed(ctx, t, env, "bob", viewer, a.verb, a.group, a.resource, ns), "viewer %s %s.%s", a.verb, a.resource, a.group)
	}
	assert.False(t, allowed(ctx, t, env, "bob", viewer, "create", "kubeflow.org", "pytorchjobs", ns), "viewers only read")
	assert.False(t, allowed(ctx, t, env, "bob", viewer, "get", "", "secrets", ns), "viewers read no Secrets")

	sa := "system:serviceaccount:" + ns + ":" + tenant.PipelineServiceAccount
	saGroups := []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}
	for _, a := range []access{
		{"create", "argoproj.io", "workflowtaskresults"}, {"patch", "argoproj.io", "workflowtaskresults"}, // Argo's executor
		{"create", "kubeflow.org", "pytorchjobs"}, {"get", "kubeflow.org", "pytorchjobs"},
		{"create", "ray.io", "rayjobs"}, {"get", "batch.volcano.sh", "jobs"}, {"create", "batch", "jobs"},
	} {
		assert.True(t, allowed(ctx, t, env, sa, saGroups, a.verb, a.group, a.resource, ns), "pipeline %s %s.%s", a.verb, a.resource, a.group)
	}
	// Argo v3.7.6's executor creates the job and GETs it
	// (workflow/executor/resource.go), nothing else.
	for _, verb := range []string{"watch", "list", "patch", "delete"} {
		assert.False(t, allowed(ctx, t, env, sa, saGroups, verb, "kubeflow.org", "pytorchjobs", ns), "pipeline %s pytorchjobs", verb)
	}
	assert.False(t, allowed(ctx, t, env, sa, saGroups, "create", "apps", "deployments", ns), "pipelines get what they need, no more")
	assert.False(t, allowed(ctx, t, env, sa, saGroups, "get", "", "secrets", ns))

	var account corev1.ServiceAccount
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: tenant.PipelineServiceAccount}, &account))
}

// TestTenantPodSecurityCheckAgreesWithTheAPIServer applies the
// quickstart's InfiniBand job to a baseline tenant: cube refuses it before
// storing anything, and the API server's PodSecurity admission refuses a
// pod made from the job's template for the same reason.
func TestTenantPodSecurityCheckAgreesWithTheAPIServer(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	c := applyTenant(t, env, tenant.New(ns))

	job := rdmaJob(ns)
	_, err := c.Apply(ctx, job)
	var ps *cube.PodSecurityError
	require.ErrorAs(t, err, &ps)
	require.NotEmpty(t, ps.Violations)
	var stored kubeflowv1.PyTorchJob
	assert.True(t, apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "llama-sft"}, &stored)), "nothing was applied")

	built, err := job.Build()
	require.NoError(t, err)
	tmpl := built.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeWorker].Template
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "from-template", Namespace: ns}, Spec: tmpl.Spec}
	require.Eventually(t, func() bool {
		err = env.Client.Create(ctx, pod.DeepCopy(), client.DryRunAll)
		return err != nil
	}, 30*time.Second, 50*time.Millisecond, "the namespace's labels reach admission")
	assert.True(t, apierrors.IsForbidden(err), "%v", err)
	assert.Contains(t, err.Error(), `violates PodSecurity "`+ps.Level+`": `+ps.Violations[len(ps.Violations)-1].Reasons)

	// With the opt-in the job is applied.
	applyTenant(t, env, tenant.New(ns).AllowRDMA())
	_, err = c.Apply(ctx, job)
	require.NoError(t, err)
}

// TestTenantNetworkExceptionsAreStored applies a tenant with every kind of
// ingress exception: the server's schema takes them as cube renders them.
func TestTenantNetworkExceptionsAreStored(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	applyTenant(t, env, tenant.New(ns).AllowIngress(tenant.IngressControllerIngress("ingress-nginx")).AllowIngressFromNamespace("monitoring"))

	var ray networkingv1.NetworkPolicy
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ns + "-allow-kuberay"}, &ray))
	assert.Equal(t, map[string]string{"ray.io/node-type": "head"}, ray.Spec.PodSelector.MatchLabels)
	require.Len(t, ray.Spec.Ingress, 1)
	assert.Equal(t, int32(tenant.RayDashboardPort), ray.Spec.Ingress[0].Ports[0].Port.IntVal)
	assert.Equal(t, map[string]string{tenant.LabelKubeRayOperator: tenant.KubeRayOperatorComponent}, ray.Spec.Ingress[0].From[0].PodSelector.MatchLabels)
	assert.Empty(t, ray.Spec.Ingress[0].From[0].NamespaceSelector.MatchLabels, "the operator's namespace is any")

	var ingress networkingv1.NetworkPolicy
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ns + "-allow-ingress-ingress-nginx"}, &ingress))
	assert.Equal(t, map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"}, ingress.Spec.Ingress[0].From[0].NamespaceSelector.MatchLabels)
	assert.Nil(t, ingress.Spec.Ingress[0].From[0].PodSelector)
	assert.Empty(t, ingress.Spec.Ingress[0].Ports)

	var prom networkingv1.NetworkPolicy
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ns + "-allow-prometheus"}, &prom))
	assert.Equal(t, map[string]string{"app.kubernetes.io/name": "prometheus"}, prom.Spec.Ingress[0].From[0].PodSelector.MatchLabels)
}

// Plan reads Kueue's objects as the real CRDs of v0.17.0 store them, with
// the status Kueue would write (no Kueue runs on the test API server).

// kueueTenant applies a Kueue tenant of gpus T4s in cohort on the test API
// server and writes its ClusterQueue's status as Kueue would: Active, with
// gpusUsed T4s reserved.
func kueueTenant(t *testing.T, env *testenv.Env, cohort string, gpus, gpusUsed int) string {
	t.Helper()
	ns := env.Namespace(t)
	// The platform's flavors: one release every test applies alike.
	platform := cube.NewFromClient(env.Client, cube.Namespace("default"))
	_, err := platform.Apply(t.Context(), tenant.Flavors("kueue-flavors", hardware.T4))
	require.NoError(t, err)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := env.Client.Delete(ctx, kueueObject("ClusterQueue", ns)); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete clusterqueue %s: %v", ns, err)
		}
	})
	_, err = c.Apply(t.Context(), tenant.New(ns).CPU("8").Memory("8Gi").Accelerators(hardware.T4, gpus).Queueing(tenant.Kueue).Cohort(cohort))
	require.NoError(t, err)
	cq := kueueObject("ClusterQueue", ns)
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKeyFromObject(cq), cq))
	require.NoError(t, unstructured.SetNestedSlice(cq.Object, []any{map[string]any{
		"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit new workloads", "lastTransitionTime": "2026-01-01T00:00:00Z",
	}}, "status", "conditions"))
	require.NoError(t, unstructured.SetNestedSlice(cq.Object, []any{
		map[string]any{"name": "cube-t4", "resources": []any{map[string]any{"name": "nvidia.com/gpu", "total": int64(gpusUsed)}}},
	}, "status", "flavorsReservation"))
	require.NoError(t, env.Client.Status().Update(t.Context(), cq))
	return ns
}

func kueueObject(kind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("kueue.x-k8s.io/v1beta2")
	u.SetKind(kind)
	u.SetName(name)
	return u
}

func gpuJob(name, ns string, workers, gpus int) *train.PyTorchJob {
	return train.PyTorch(name).LocalQueue(ns).Image("busybox:1.36").Command("sleep", "1").
		Workers(workers).On(hardware.T4).Accelerators(gpus).CPU("500m").Memory("256Mi")
}

// Two tenants of two T4s in one cohort, the second using none: a job of
// four T4s in the first borrows the second's two (a fifth T4 then waits);
// a job of two in the second then waits for them, and Kueue would reclaim them by preemption.
func TestPlanReadsTheCohort(t *testing.T) {
	env := testenv.Get(t)
	cohort := "plan-" + env.Namespace(t)
	borrower := kueueTenant(t, env, cohort, 2, 0)
	owner := kueueTenant(t, env, cohort, 2, 0)

	got, err := tenant.Plan(t.Context(), env.Client, borrower, gpuJob("big", borrower, 1, 2), gpuJob("more", borrower, 0, 1))
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, tenant.Admissible, got[0].Verdict, "%s", got[0])
	assert.Equal(t, borrower, got[0].ClusterQueue)
	assert.Equal(t, cohort, got[0].Cohort)
	assert.Equal(t, "[nvidia.com/gpu 2 on cube-t4]", fmtAmounts(got[0].Borrowed))
	assert.Equal(t, "cube-t4", got[0].PodSets[1].Flavors["nvidia.com/gpu"])
	assert.Equal(t, tenant.Waits, got[1].Verdict, "the cohort has no fifth T4 now: %s", got[1])
	assert.Equal(t, "4", got[1].Short[0].Most.String(), "the borrower can have at most its two and the owner's two")

	// Kueue admitted the big job: the borrower's ClusterQueue reserves 4.
	cq := kueueObject("ClusterQueue", borrower)
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKeyFromObject(cq), cq))
	require.NoError(t, unstructured.SetNestedSlice(cq.Object, []any{
		map[string]any{"name": "cube-t4", "resources": []any{map[string]any{"name": "nvidia.com/gpu", "total": "4", "borrowed": "2"}}},
	}, "status", "flavorsReservation"))
	require.NoError(t, env.Client.Status().Update(t.Context(), cq))

	got, err = tenant.Plan(t.Context(), env.Client, owner, gpuJob("mine", owner, 0, 2))
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, tenant.Waits, got[0].Verdict)
	assert.True(t, got[0].MayPreempt)
	assert.Equal(t, "PyTorchJob.kubeflow.org "+owner+"/mine: Waits: waits in ClusterQueue "+owner+
		" for nvidia.com/gpu on flavor cube-t4 (needs 2, 0 free now, at most 4); Kueue looks for workloads to preempt for it", got[0].String())
}

// A workload in a LocalQueue that does not exist, one without a queue, and
// a reader that may not read ClusterQueues.
func TestPlanRefusals(t *testing.T) {
	env := testenv.Get(t)
	ns := kueueTenant(t, env, "", 4, 0)
	got, err := tenant.Plan(t.Context(), env.Client, ns,
		train.PyTorch("lost").LocalQueue("nope").Image("busybox:1.36"),
		train.PyTorch("free").Image("busybox:1.36"))
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, tenant.Inadmissible, got[0].Verdict)
	assert.Equal(t, "LocalQueue nope does not exist in namespace "+ns, got[0].Message)
	assert.Equal(t, tenant.NotQueued, got[1].Verdict)

	_, err = tenant.Plan(t.Context(), nil, ns, gpuJob("x", ns, 0, 1))
	require.EqualError(t, err, "plan: no reader")
	_, err = tenant.Plan(t.Context(), env.Client, ns, nil)
	require.EqualError(t, err, "plan: workload 0 is nil")
	_, err = tenant.Plan(t.Context(), env.Client, ns, train.PyTorch("").LocalQueue(ns))
	require.Error(t, err, "the builder's own errors")
}

func fmtAmounts(as []tenant.Amount) string {
	out := "["
	for i, a := range as {
		if i > 0 {
			out += " "
		}
		out += a.String()
	}
	return out + "]"
}

// The platform's priorities are stored by Kueue v0.17.0's CRD as built,
// the release reads Ready (they have no status), and a job carrying one
// is stored with its label.
func TestPrioritiesAreStored(t *testing.T) {
	env := testenv.Get(t)
	platform := cube.NewFromClient(env.Client, cube.Namespace("default"), cube.Kinds(tenant.Kinds()...))
	names := []string{"batch-stored", "urgent-stored"}
	rel, err := platform.Apply(t.Context(), tenant.Priorities("priorities-stored",
		tenant.Priority{Name: names[0], Value: -5, Description: "preemptible"}, tenant.Priority{Name: names[1], Value: 1000}))
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, n := range names {
			if err := env.Client.Delete(ctx, kueueObject("WorkloadPriorityClass", n)); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s: %v", n, err)
			}
		}
	})
	st, err := rel.Status(t.Context())
	require.NoError(t, err)
	assert.Equal(t, cube.Ready, st.Phase, "%s", st)
	for i, want := range []int64{-5, 1000} {
		got := kueueObject("WorkloadPriorityClass", names[i])
		require.NoError(t, env.Client.Get(t.Context(), client.ObjectKeyFromObject(got), got))
		value, _, _ := unstructured.NestedInt64(got.Object, "value")
		assert.Equal(t, want, value, names[i])
	}

	ns := env.Namespace(t)
	job, err := cube.NewFromClient(env.Client, cube.Namespace(ns)).Apply(t.Context(),
		train.PyTorch("urgent").WorkloadPriority(names[1]).Image("busybox:1.36").Command("sleep", "1"))
	require.NoError(t, err)
	stored := &unstructured.Unstructured{}
	stored.SetAPIVersion("kubeflow.org/v1")
	stored.SetKind("PyTorchJob")
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: job.Name}, stored))
	assert.Equal(t, names[1], stored.GetLabels()["kueue.x-k8s.io/priority-class"])
}

// The platform's PriorityClasses are stored as built and read Ready; the
// API server's Priority admission plugin gives a pod that names one its
// value and preemption policy, and a pod that names none the default
// class's; it refuses a second default, from another release, and the
// API server refuses the release applied again with a changed value,
// each with its reason; deleting the release deletes its classes only.
func TestPodPrioritiesAreStoredAndAdmitted(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	platform := cube.NewFromClient(env.Client, cube.Namespace("default"))
	names := []string{"batch-pods-stored", "urgent-pods-stored", "other-default-stored", "kept-pods-stored"}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// This API server runs no garbage collector to finish a
		// foreground deletion: the finalizer goes by hand.
		for _, n := range names {
			var pc schedulingv1.PriorityClass
			if err := env.Client.Get(ctx, client.ObjectKey{Name: n}, &pc); apierrors.IsNotFound(err) {
				continue
			}
			pc.Finalizers = nil
			if err := env.Client.Update(ctx, &pc); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("drop the finalizers of %s: %v", n, err)
			}
			if err := env.Client.Delete(ctx, &pc); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %s: %v", n, err)
			}
		}
	})
	// A class the release did not create: deleting the release keeps it.
	require.NoError(t, env.Client.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: names[3]}, Value: 7}))

	classes := []tenant.PodPriority{
		{Name: names[0], Value: 100, NoPreemption: true, Default: true, Description: "waits for room"},
		{Name: names[1], Value: 100000},
	}
	rel, err := platform.Apply(ctx, tenant.PodPriorities("pod-priorities-stored", classes...))
	require.NoError(t, err)
	st, err := rel.Status(ctx)
	require.NoError(t, err)
	assert.Equal(t, cube.Ready, st.Phase, "%s", st)
	var got schedulingv1.PriorityClass
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: names[0]}, &got))
	assert.Equal(t, int32(100), got.Value)
	assert.True(t, got.GlobalDefault)
	assert.Equal(t, "waits for room", got.Description)
	require.NotNil(t, got.PreemptionPolicy)
	assert.Equal(t, corev1.PreemptNever, *got.PreemptionPolicy)

	ns := env.Namespace(t)
	for _, c := range []struct {
		class  string
		value  int32
		policy corev1.PreemptionPolicy
	}{{names[1], 100000, corev1.PreemptLowerPriority}, {"", 100, corev1.PreemptNever}} {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("prio-%d", c.value)},
			Spec:       corev1.PodSpec{PriorityClassName: c.class, Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}},
		}
		require.NoError(t, env.Client.Create(ctx, p))
		assert.Equal(t, c.value, ptr.Deref(p.Spec.Priority, -1), "priority of a pod naming %q", c.class)
		assert.Equal(t, c.policy, ptr.Deref(p.Spec.PreemptionPolicy, ""), "preemption policy of a pod naming %q", c.class)
	}

	_, err = platform.Apply(ctx, tenant.PodPriorities("pod-priorities-other", tenant.PodPriority{Name: names[2], Value: 1, Default: true}))
	assert.ErrorContains(t, err, "is already marked as default")

	classes[1].Value = 200000
	_, err = platform.Apply(ctx, tenant.PodPriorities("pod-priorities-stored", classes...))
	assert.ErrorContains(t, err, "may not be changed in an update")

	require.NoError(t, rel.Delete(ctx))
	for i, n := range names {
		var pc schedulingv1.PriorityClass
		err := env.Client.Get(ctx, client.ObjectKey{Name: n}, &pc)
		switch {
		case i == len(names)-1:
			require.NoError(t, err, "a class the release did not create stays")
			assert.Nil(t, pc.DeletionTimestamp, "a class the release did not create stays")
		case !apierrors.IsNotFound(err):
			require.NoError(t, err)
			assert.NotNil(t, pc.DeletionTimestamp, "%s is deleted with its release", n)
		}
	}
}
