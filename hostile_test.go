package cube_test

// Hostile input: nil and zero receivers, typed nils, bad options. Each
// case panicked or was accepted silently before; each is now an error
// that says what is wrong.

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/quantity"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/train"
)

// nilWorkload is a typed nil: a *T in a Workload whose Objects would
// dereference it.
type nilWorkload struct{ objs []client.Object }

func (w *nilWorkload) Objects() ([]client.Object, error) { return w.objs, nil }

func TestNilAndZeroTenantBuilder(t *testing.T) {
	var nilTenant *cube.TenantSpec
	chained := nilTenant.Label("a", "b").Editors("x").EditorGroups("g").Viewers("y").ViewerGroups("h").
		CPU("1").Memory("1Gi").Pods(1).Storage("1Gi").GPUs("nvidia.com/gpu", 1).Quota("pods", "1").
		DefaultCPU("1", "1").DefaultMemory("1Gi", "1Gi").QueueWeight(1).QueueReclaimable(true).
		PodSecurity(cube.PodSecurityBaseline).AllowRDMA().AllowIngressFromNamespace("ns").
		AllowIngress(cube.PrometheusIngress()).IngressExceptions()
	assert.Nil(t, chained)
	assert.Empty(t, nilTenant.Name())
	assert.Equal(t, cube.Identity{Kind: "tenant"}, nilTenant.Identity())
	_, err := nilTenant.Objects()
	assert.EqualError(t, err, "cube: TenantSpec is nil or zero: start it with cube.Tenant(name)")
	assert.EqualError(t, nilTenant.Admits(), "cube: TenantSpec is nil or zero: start it with cube.Tenant(name)")

	zero := (&cube.TenantSpec{}).CPU("1").DefaultMemory("1Gi", "").GPUs("nvidia.com/gpu", 2).Label("k", "v")
	_, err = zero.Objects()
	assert.EqualError(t, err, "cube: TenantSpec is nil or zero: start it with cube.Tenant(name)")
}

func TestRenderRefusesNilsAndWhatApplyRefuses(t *testing.T) {
	var buf bytes.Buffer
	good := tenantPod("ok", nil)
	assert.EqualError(t, cube.Render(nil, good), "render: writer is nil")
	var typedNil *nilWorkload
	for name, tc := range map[string]struct {
		w    cube.Workload
		want string
	}{
		"nil":                {nil, "render workload 0: workload is nil"},
		"typed nil":          {typedNil, "render workload 0: workload *cube_test.nilWorkload is nil"},
		"nil WorkloadFunc":   {cube.WorkloadFunc(nil), "render workload 0: workload cube.WorkloadFunc is nil"},
		"nil PyTorchJob":     {(*train.PyTorchJob)(nil), "render workload 0: workload *train.PyTorchJob is nil"},
		"Objects(nil)":       {cube.Objects(nil), "render workload 0: cube.Objects: object 0 is nil"},
		"Objects(typed nil)": {cube.Objects((*corev1.Pod)(nil)), "render workload 0: cube.Objects: object 0 is nil"},
		"nil object":         {&nilWorkload{objs: []client.Object{(*corev1.ConfigMap)(nil)}}, "render workload 0: workload *cube_test.nilWorkload: object 0 is nil"},
		"no objects":         {cube.Objects(), "render workload 0: workload cube.WorkloadFunc has no objects"},
		"no release label": {cube.Objects(&corev1.ConfigMap{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "loose"},
		}), `render workload 0: ConfigMap "loose" has no cube.dev/release label: build it with cube.Identity`},
		"two releases": {cube.Objects(
			&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: cube.Identity{Kind: "x", Release: "a"}.ObjectMeta("a", "", nil, nil)},
			&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: cube.Identity{Kind: "x", Release: "b"}.ObjectMeta("b", "", nil, nil)},
		), `render workload 0: ConfigMap "b" belongs to release "b", not "a": a workload is one release`},
	} {
		t.Run(name, func(t *testing.T) {
			buf.Reset()
			assert.EqualError(t, cube.Render(&buf, tc.w), tc.want)
			assert.Empty(t, buf.String(), "nothing is written when a workload is refused")
			// Apply refuses the same, with the same words, before it talks
			// to the cluster.
			cluster := cubetest.NewCluster(nil)
			_, err := cluster.Client.Apply(t.Context(), tc.w)
			require.Error(t, err)
			assert.Equal(t, "apply: "+tc.want[len("render workload 0: "):], err.Error())
		})
	}
	require.NoError(t, cube.Render(&buf, good))
	_, err := cube.WorkloadFunc(nil).Objects()
	assert.EqualError(t, err, "cube: WorkloadFunc is nil")
}

func TestNilClientsAndReleases(t *testing.T) {
	ctx := t.Context()
	var typedNil *nilWorkload
	cluster := cubetest.NewCluster(nil)
	_, err := cluster.Client.Apply(ctx, typedNil)
	assert.EqualError(t, err, "apply: workload *cube_test.nilWorkload is nil")
	_, err = cluster.Client.Apply(ctx, (*train.PyTorchJob)(nil))
	assert.EqualError(t, err, "apply: workload *train.PyTorchJob is nil")
	_, err = cluster.Client.Apply(ctx, tenantPod("p", nil), nil)
	assert.NoError(t, err, "a nil ApplyOption is no option")

	var nilClient *cube.Client
	_, err = nilClient.Apply(ctx, tenantPod("p", nil))
	assert.EqualError(t, err, "apply: cube: client is nil: make one with cube.New or cube.NewFromClient")
	_, err = nilClient.Release(ctx, "ns", "r")
	assert.EqualError(t, err, "get release ns/r: cube: client is nil: make one with cube.New or cube.NewFromClient")
	_, err = nilClient.Releases(ctx, "")
	assert.EqualError(t, err, "list releases: cube: client is nil: make one with cube.New or cube.NewFromClient")
	_, err = (&cube.Client{}).Apply(ctx, tenantPod("p", nil))
	assert.EqualError(t, err, "apply: cube: client has no controller-runtime client: make one with cube.New or cube.NewFromClient")

	_, err = cube.NewFromClient(nil).Apply(ctx, tenantPod("p", nil))
	assert.EqualError(t, err, "apply: cube: controller-runtime client is nil")
	_, err = cube.NewFromClient(cluster.Fake, cube.WithNamespace("Bad_NS")).Apply(ctx, tenantPod("p", nil))
	assert.ErrorContains(t, err, `apply: cube: namespace "Bad_NS": a lowercase RFC 1123 label must consist of`)
	_, err = cube.New(&rest.Config{Host: "https://127.0.0.1:1"}, cube.WithNamespace("Bad_NS"))
	assert.ErrorContains(t, err, `cube: namespace "Bad_NS"`)
	_, err = cube.New(nil)
	assert.EqualError(t, err, "cube: rest config is nil")
	queue := schema.GroupKind{Group: "scheduling.volcano.sh", Kind: "Queue"}
	_, err = cube.NewFromClient(cluster.Fake, cube.WithKinds(cube.Kind{GroupKind: queue}, cube.Kind{Status: cube.ExistsKind(queue).Status})).Apply(ctx, tenantPod("p", nil))
	assert.EqualError(t, err, "apply: cube: WithKinds: Queue.scheduling.volcano.sh has no Status reader (cube.ExistsKind reads a kind Ready once it exists); cube: WithKinds: entry 1 has no GroupKind.Kind")

	var nilRelease *cube.Release
	_, err = nilRelease.Wait(ctx, cube.Ready)
	assert.EqualError(t, err, "wait: cube: release is nil")
	_, err = nilRelease.Status(ctx)
	assert.EqualError(t, err, "status: cube: release is nil")
	assert.EqualError(t, nilRelease.Delete(ctx), "delete: cube: release is nil")
	_, err = nilRelease.Logs(ctx, cube.LogOptions{})
	assert.EqualError(t, err, "logs: cube: release is nil")
	zero := &cube.Release{Name: "made-up"}
	_, err = zero.Wait(ctx, cube.Ready)
	assert.EqualError(t, err, `wait: cube: release "made-up" was not made by a cube.Client: get it from Apply, Client.Release or Client.Releases`)
	_, err = zero.Status(ctx)
	assert.ErrorContains(t, err, "was not made by a cube.Client")

	// The error types of the package print on nil receivers too.
	assert.Equal(t, "<nil WaitError>", (*cube.WaitError)(nil).Error())
	assert.Equal(t, "<nil ConflictError>", (*cube.ConflictError)(nil).Error())
	assert.Equal(t, "<nil QuotaExceededError>", (*cube.QuotaExceededError)(nil).Error())
	assert.Equal(t, "<nil PodSecurityError>", (*cube.PodSecurityError)(nil).Error())
	assert.NoError(t, (*cube.ConflictError)(nil).Unwrap())
}

func TestWaitRefusesANegativeTimeout(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil)
	rel, err := cluster.Client.Apply(ctx, tenantPod("p", nil))
	require.NoError(t, err)
	start := time.Now()
	_, err = rel.Wait(ctx, cube.Ready, cube.Timeout(-time.Second), nil)
	assert.EqualError(t, err, "wait: timeout -1s is negative")
	assert.False(t, errors.Is(err, cube.ErrTimeout), "not a timeout: a bad option")
	assert.Less(t, time.Since(start), time.Second)
}

func TestTenantDefaultsMustFitTheQuota(t *testing.T) {
	_, err := cube.Tenant("team-a").CPU("8").Memory("32Gi").
		DefaultCPU("16", "").DefaultMemory("1Gi", "64Gi").Objects()
	assert.EqualError(t, err, `[spec.limits[0].defaultRequest[cpu]: Invalid value: "16": exceeds the quota requests.cpu=8: no container without its own request would fit, `+
		`spec.limits[0].default[memory]: Invalid value: "64Gi": exceeds the quota requests.memory=32Gi: no container without its own limit would fit]`)

	_, err = cube.Tenant("team-a").Quota("limits.memory", "32Gi").Quota("limits.cpu", "8").Objects()
	assert.EqualError(t, err, `[spec.limits[0].default[cpu]: Required value: the quota bounds limits.cpu, so containers need a default limit (DefaultCPU/DefaultMemory) or the API server refuses those without one, `+
		`spec.limits[0].default[memory]: Required value: the quota bounds limits.memory, so containers need a default limit (DefaultCPU/DefaultMemory) or the API server refuses those without one]`)

	_, err = cube.Tenant("team-a").Quota("limits.memory", "32Gi").DefaultMemory("1Gi", "48Gi").Objects()
	assert.EqualError(t, err, `spec.limits[0].default[memory]: Invalid value: "48Gi": exceeds the quota limits.memory=32Gi: no container without its own limit would fit`)

	objs, err := cube.Tenant("team-a").Quota("limits.memory", "32Gi").DefaultMemory("1Gi", "8Gi").Objects()
	require.NoError(t, err)
	lr := objs[2].(*corev1.LimitRange).Spec.Limits[0]
	assert.Equal(t, "8Gi", lr.Default.Memory().String())
	assert.Equal(t, "1Gi", lr.DefaultRequest.Memory().String())
}

// rdmaJob is the quickstart's training job: InfiniBand adds IPC_LOCK.
func rdmaJob(ns string) *train.PyTorchJob {
	return train.PyTorch("llama-sft").Namespace(ns).
		Image("nvcr.io/nvidia/pytorch:24.05-py3").Torchrun("/workspace/sft.py").
		Workers(1).On(hardware.H100).Accelerators(8).Fabric(hardware.InfiniBand()).
		CPU("16").Memory("64Gi")
}

func TestTenantAdmitsSaysWhyBeforeApplying(t *testing.T) {
	tenant := cube.Tenant("team-nlp")
	err := tenant.Admits(rdmaJob("team-nlp"), tenantPod("plain", nil))
	var ps *cube.PodSecurityError
	require.ErrorAs(t, err, &ps)
	assert.Equal(t, "team-nlp", ps.Namespace)
	assert.Equal(t, "baseline:latest", ps.Level)
	require.Len(t, ps.Violations, 2, "the master and the worker template")
	assert.Equal(t, "spec.pytorchReplicaSpecs.Master.template", ps.Violations[0].Template)
	assert.Equal(t, "spec.pytorchReplicaSpecs.Worker.template", ps.Violations[1].Template)
	assert.Equal(t, "PyTorchJob.kubeflow.org team-nlp/llama-sft", ps.Violations[1].Object.String())
	assert.Equal(t, `non-default capabilities (container "pytorch" must not include "IPC_LOCK" in securityContext.capabilities.add)`, ps.Violations[1].Reasons)
	assert.Contains(t, err.Error(), `namespace team-nlp enforces PodSecurity "baseline:latest", which would refuse the pods of PyTorchJob.kubeflow.org team-nlp/llama-sft (spec.pytorchReplicaSpecs.Master.template)`)
	assert.Contains(t, err.Error(), "AllowRDMA()")

	assert.NoError(t, tenant.AllowRDMA().Admits(rdmaJob("team-nlp")))
	assert.NoError(t, cube.Tenant("team-nlp").Admits(tenantPod("plain", nil)))

	// Restricted refuses what baseline admits, with PodSecurity's reasons.
	err = cube.Tenant("team-nlp").PodSecurity(cube.PodSecurityRestricted).Admits(tenantPod("plain", nil))
	require.ErrorAs(t, err, &ps)
	assert.Equal(t, "spec", ps.Violations[0].Template)
	assert.Contains(t, ps.Violations[0].Reasons, "allowPrivilegeEscalation != false")
	assert.Contains(t, ps.Violations[0].Reasons, "runAsNonRoot != true")
}

func TestApplyChecksPodSecurityBeforeApplying(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.WithNamespace("team-nlp"))
	_, err := cluster.Client.Apply(ctx, cube.Tenant("team-nlp"))
	require.NoError(t, err)

	_, err = cluster.Client.Apply(ctx, rdmaJob("team-nlp"))
	var ps *cube.PodSecurityError
	require.ErrorAs(t, err, &ps)
	assert.Equal(t, "baseline:latest", ps.Level)
	rels, err := cluster.Client.Releases(ctx, "team-nlp")
	require.NoError(t, err)
	require.Len(t, rels, 1, "nothing of the job was recorded or applied")
	assert.Equal(t, "team-nlp", rels[0].Name)

	// A Deployment's template is a pod template too, and a tenant applied
	// with its workload is judged by the labels it applies.
	dep := cube.Objects(&appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: cube.Identity{Kind: "web", Release: "web"}.ObjectMeta("web", "", nil, nil),
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			HostNetwork: true, Containers: []corev1.Container{{Name: "web", Image: "nginx"}},
		}}},
	})
	_, err = cluster.Client.Apply(ctx, dep)
	require.ErrorAs(t, err, &ps)
	assert.Equal(t, "spec.template", ps.Violations[0].Template)
	assert.Equal(t, "host namespaces (hostNetwork=true)", ps.Violations[0].Reasons)

	// The privileged level admits it.
	_, err = cluster.Client.Apply(ctx, cube.Tenant("team-nlp").AllowRDMA())
	require.NoError(t, err)
	_, err = cluster.Client.Apply(ctx, rdmaJob("team-nlp"))
	require.NoError(t, err)

	// A namespace the client cannot find is left to the API server.
	other := cubetest.NewCluster(nil, cube.WithNamespace("elsewhere"))
	_, err = other.Client.Apply(context.WithoutCancel(ctx), rdmaJob(""))
	require.NoError(t, err)
}

// TestAdmitsLooksIntoPipelineSteps: a pipeline's workload step carries its
// job as a manifest string inside the Workflow; Argo creates the job, whose
// pods the namespace's level then refuses.
func TestAdmitsLooksIntoPipelineSteps(t *testing.T) {
	flow := pipeline.New("sft-flow").Namespace("team-nlp").ServiceAccount(cube.PipelineServiceAccount).Kinds(train.Kinds()...).
		Step(pipeline.Workload("train", rdmaJob("team-nlp")))
	err := cube.Tenant("team-nlp").Admits(flow)
	var ps *cube.PodSecurityError
	require.ErrorAs(t, err, &ps)
	require.NotEmpty(t, ps.Violations)
	v := ps.Violations[len(ps.Violations)-1]
	assert.Equal(t, "Workflow.argoproj.io team-nlp/sft-flow", v.Object.String())
	assert.Regexp(t, `^spec\.templates\[\d+\]\.resource\.manifest\.spec\.pytorchReplicaSpecs\.Worker\.template$`, v.Template)
	assert.Contains(t, v.Reasons, `"IPC_LOCK"`)
	assert.NoError(t, cube.Tenant("team-nlp").AllowRDMA().Admits(flow))
}

func TestExportedFunctionsTakeNil(t *testing.T) {
	assert.Equal(t, cube.ObjectRef{}, cube.RefOf(nil))
	assert.Equal(t, cube.ObjectRef{}, cube.RefOf((*corev1.Pod)(nil)))
	assert.Equal(t, cube.ObjectStatus{Phase: cube.Missing, Reason: "NotFound"}, cube.ReadStatus(nil))
	assert.Nil(t, cube.PodProblems(nil))
	_, err := cube.ToUnstructured((*corev1.Pod)(nil))
	assert.EqualError(t, err, "object is nil")
}

// TestAllowRDMAAndAnotherLevelConflict: AllowRDMA on a restricted tenant
// silently made it privileged (or, the other way round, left RDMA pods
// refused).
func TestAllowRDMAAndAnotherLevelConflict(t *testing.T) {
	want := `metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "restricted": AllowRDMA needs the privileged level: the restricted level refuses the IPC_LOCK capability RDMA pods add`
	_, err := cube.Tenant("team-a").PodSecurity(cube.PodSecurityRestricted).AllowRDMA().Objects()
	assert.EqualError(t, err, want)
	_, err = cube.Tenant("team-a").AllowRDMA().PodSecurity(cube.PodSecurityRestricted).Objects()
	assert.EqualError(t, err, want)
	objs, err := cube.Tenant("team-a").PodSecurity(cube.PodSecurityPrivileged).AllowRDMA().Objects()
	require.NoError(t, err)
	assert.Equal(t, "privileged", objs[0].GetLabels()[cube.LabelPodSecurityEnforce])
	objs, err = cube.Tenant("team-a").AllowRDMA().Objects()
	require.NoError(t, err)
	assert.Equal(t, "privileged", objs[0].GetLabels()[cube.LabelPodSecurityWarn])
}

// TestQuantitiesApimachineryCannotRoundAreRefused: resource.ParseQuantity
// (apimachinery v0.37.2) runs for hours on a decimal exponent beyond int32
// ("E6854775807" wraps to -1735158785, see internal/quantity); every
// quantity a user gives cube is refused at once instead.
func TestQuantitiesApimachineryCannotRoundAreRefused(t *testing.T) {
	const hostile = "92233720E6854775807"
	start := time.Now()
	_, ferr := quantity.ParseField(nil, hostile, quantity.NonNegative)
	require.NotNil(t, ferr)
	assert.Contains(t, ferr.Error(), "beyond ±1000")
	_, err := train.PyTorch("pt").Image("img").CPU(hostile).Memory("1e-5000").Objects()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `resources.requests[cpu]: Invalid value: "92233720E6854775807"`)
	assert.Contains(t, err.Error(), `resources.requests[memory]: Invalid value: "1e-5000"`)
	_, err = cube.Tenant("team").CPU(hostile).Objects()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "beyond ±1000")
	assert.Less(t, time.Since(start), 5*time.Second)
}
