package tenant_test

// Hostile input to the tenant builder: nil and zero receivers, limits
// that contradict each other, levels that refuse what the tenant runs.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testpod"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
)

// rdmaJob is the quickstart's training job: InfiniBand adds IPC_LOCK.
func rdmaJob(ns string) *train.PyTorchJob {
	return train.PyTorch("llama-sft").Namespace(ns).
		Image("nvcr.io/nvidia/pytorch:24.05-py3").Torchrun("/workspace/sft.py").
		Workers(1).On(hardware.H100).Accelerators(8).Fabric(hardware.InfiniBand()).
		CPU("16").Memory("64Gi")
}

func TestNilAndZeroTenantBuilder(t *testing.T) {
	var nilTenant *tenant.Spec
	chained := nilTenant.Label("a", "b").Editors("x").EditorGroups("g").Viewers("y").ViewerGroups("h").
		CPU("1").Memory("1Gi").Pods(1).Storage("1Gi").Accelerators(hardware.H100, 1).Quota("pods", "1").
		DefaultCPU("1", "1").DefaultMemory("1Gi", "1Gi").QueueWeight(1).QueueReclaimable(true).
		PodSecurity(tenant.PodSecurityBaseline).AllowRDMA().AllowIngressFromNamespace("ns").
		AllowIngress(tenant.PrometheusIngress()).IngressExceptions()
	assert.Nil(t, chained)
	_, err := nilTenant.Objects()
	assert.EqualError(t, err, "tenant: Spec is nil or zero: start it with tenant.New(name)")
	assert.EqualError(t, tenant.Admits(nilTenant), "tenant: Spec is nil or zero: start it with tenant.New(name)")

	zero := (&tenant.Spec{}).CPU("1").DefaultMemory("1Gi", "").Accelerators(hardware.H100, 2).Label("k", "v")
	_, err = zero.Objects()
	assert.EqualError(t, err, "tenant: Spec is nil or zero: start it with tenant.New(name)")
	_, err = tenant.LevelFor(zero)
	assert.EqualError(t, err, "tenant: Spec is nil or zero: start it with tenant.New(name)")
}

func TestTenantDefaultsMustFitTheQuota(t *testing.T) {
	_, err := tenant.New("team-a").CPU("8").Memory("32Gi").
		DefaultCPU("16", "").DefaultMemory("1Gi", "64Gi").Objects()
	assert.EqualError(t, err, `[spec.limits[0].defaultRequest[cpu]: Invalid value: "16": exceeds the quota requests.cpu=8: no container without its own request would fit, `+
		`spec.limits[0].default[memory]: Invalid value: "64Gi": exceeds the quota requests.memory=32Gi: no container without its own limit would fit]`)

	_, err = tenant.New("team-a").Quota("limits.memory", "32Gi").Quota("limits.cpu", "8").Objects()
	assert.EqualError(t, err, `[spec.limits[0].default[cpu]: Required value: the quota bounds limits.cpu, so containers need a default limit (DefaultCPU/DefaultMemory) or the API server refuses those without one, `+
		`spec.limits[0].default[memory]: Required value: the quota bounds limits.memory, so containers need a default limit (DefaultCPU/DefaultMemory) or the API server refuses those without one]`)

	_, err = tenant.New("team-a").Quota("limits.memory", "32Gi").DefaultMemory("1Gi", "48Gi").Objects()
	assert.EqualError(t, err, `spec.limits[0].default[memory]: Invalid value: "48Gi": exceeds the quota limits.memory=32Gi: no container without its own limit would fit`)

	objs, err := tenant.New("team-a").Quota("limits.memory", "32Gi").DefaultMemory("1Gi", "8Gi").Objects()
	require.NoError(t, err)
	lr := objs[2].(*corev1.LimitRange).Spec.Limits[0]
	assert.Equal(t, "8Gi", lr.Default.Memory().String())
	assert.Equal(t, "1Gi", lr.DefaultRequest.Memory().String())
}

func TestTenantAdmitsSaysWhyBeforeApplying(t *testing.T) {
	team := tenant.New("team-nlp")
	err := tenant.Admits(team, rdmaJob("team-nlp"), testpod.Pod("plain", nil))
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

	assert.NoError(t, tenant.Admits(team.AllowRDMA(), rdmaJob("team-nlp")))
	assert.NoError(t, tenant.Admits(tenant.New("team-nlp"), testpod.Pod("plain", nil)))

	// Restricted refuses what baseline admits, with PodSecurity's reasons.
	err = tenant.Admits(tenant.New("team-nlp").PodSecurity(tenant.PodSecurityRestricted), testpod.Pod("plain", nil))
	require.ErrorAs(t, err, &ps)
	assert.Equal(t, "spec", ps.Violations[0].Template)
	assert.Contains(t, ps.Violations[0].Reasons, "allowPrivilegeEscalation != false")
	assert.Contains(t, ps.Violations[0].Reasons, "runAsNonRoot != true")
}

// TestAdmitsLooksIntoPipelineSteps: a pipeline's workload step carries its
// job as a manifest string inside the Workflow; Argo creates the job, whose
// pods the namespace's level then refuses.
func TestAdmitsLooksIntoPipelineSteps(t *testing.T) {
	flow := argo.Workflow(pipeline.New("sft-flow").Namespace("team-nlp").ServiceAccount(tenant.PipelineServiceAccount).Kinds(train.Kinds()...).
		Step(pipeline.Workload("train", rdmaJob("team-nlp"))))
	err := tenant.Admits(tenant.New("team-nlp"), flow)
	var ps *cube.PodSecurityError
	require.ErrorAs(t, err, &ps)
	require.NotEmpty(t, ps.Violations)
	v := ps.Violations[len(ps.Violations)-1]
	assert.Equal(t, "Workflow.argoproj.io team-nlp/sft-flow", v.Object.String())
	assert.Regexp(t, `^spec\.templates\[\d+\]\.resource\.manifest\.spec\.pytorchReplicaSpecs\.Worker\.template$`, v.Template)
	assert.Contains(t, v.Reasons, `"IPC_LOCK"`)
	assert.NoError(t, tenant.Admits(tenant.New("team-nlp").AllowRDMA(), flow))
}

// TestAllowRDMAAndAnotherLevelConflict: AllowRDMA on a restricted tenant
// silently made it privileged (or, the other way round, left RDMA pods
// refused).
func TestAllowRDMAAndAnotherLevelConflict(t *testing.T) {
	want := `metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "restricted": AllowRDMA needs the privileged level: the restricted level refuses the IPC_LOCK capability RDMA pods add`
	_, err := tenant.New("team-a").PodSecurity(tenant.PodSecurityRestricted).AllowRDMA().Objects()
	assert.EqualError(t, err, want)
	_, err = tenant.New("team-a").AllowRDMA().PodSecurity(tenant.PodSecurityRestricted).Objects()
	assert.EqualError(t, err, want)
	objs, err := tenant.New("team-a").PodSecurity(tenant.PodSecurityPrivileged).AllowRDMA().Objects()
	require.NoError(t, err)
	assert.Equal(t, "privileged", objs[0].GetLabels()[tenant.LabelPodSecurityEnforce])
	objs, err = tenant.New("team-a").AllowRDMA().Objects()
	require.NoError(t, err)
	assert.Equal(t, "privileged", objs[0].GetLabels()[tenant.LabelPodSecurityWarn])
}
