package argo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/flows"
	"github.com/cubestudio/cube/internal/testsupport/golden"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/retry"
)

func TestGoldenLLMFlow(t *testing.T) {
	golden.AssertRender(t, "llm-flow.golden", argo.Workflow(flows.LLMFlow()))
}

func TestGoldenSchedule(t *testing.T) {
	s := argo.CronWorkflow(flows.LLMFlow(), "0 2 * * *", "30 14 * * MON-FRI").
		Timezone("Asia/Shanghai").
		ConcurrencyPolicy(argo.ForbidConcurrent).
		StartingDeadline(10*time.Minute).
		KeepHistory(3, 5)
	golden.AssertRender(t, "llm-flow-schedule.golden", s)
}

func TestGoldenHardware(t *testing.T) {
	sft := pipeline.Container("sft").Image("nvcr.io/nvidia/pytorch:24.08-py3").
		Command("torchrun", "--nproc-per-node=8", "sft.py").
		On(hardware.H100).Accelerators(8).Fabric(hardware.InfiniBand()).SharedMemory("64Gi").
		ImagePullSecret("registry").HostNetwork(true).
		PVC("models", "/models").
		PodLabel("tier", "gpu").Annotation("owner", "nlp")
	golden.AssertRender(t, "hardware.golden", argo.Workflow(pipeline.New("sft-h100").Step(sft)))
}

func buildFlow(t *testing.T) *wfv1.Workflow {
	t.Helper()
	wf, err := argo.Workflow(flows.LLMFlow()).Build()
	require.NoError(t, err)
	return wf
}

func template(t *testing.T, wf *wfv1.Workflow, name string) wfv1.Template {
	t.Helper()
	for _, tm := range wf.Spec.Templates {
		if tm.Name == name {
			return tm
		}
	}
	t.Fatalf("no template %q", name)
	return wfv1.Template{}
}

func task(t *testing.T, tm wfv1.Template, name string) wfv1.DAGTask {
	t.Helper()
	require.NotNil(t, tm.DAG, "template %s is not a DAG", tm.Name)
	for _, tk := range tm.DAG.Tasks {
		if tk.Name == name {
			return tk
		}
	}
	t.Fatalf("no task %q in %s", name, tm.Name)
	return wfv1.DAGTask{}
}

func TestBuildWorkflowSpec(t *testing.T) {
	wf := buildFlow(t)
	assert.Equal(t, "argoproj.io/v1alpha1", wf.APIVersion)
	assert.Equal(t, "Workflow", wf.Kind)
	assert.Equal(t, "llm-flow", wf.Name)
	assert.Equal(t, "ml", wf.Namespace)
	assert.Equal(t, map[string]string{
		"app.kubernetes.io/name": "llm-flow", "app.kubernetes.io/managed-by": "cube", "app.kubernetes.io/part-of": "llm-flow",
		"cube.dev/kind": "pipeline", "cube.dev/release": "llm-flow", "team": "nlp",
	}, wf.Labels)
	s := wf.Spec
	assert.Equal(t, "llm-flow", s.Entrypoint)
	assert.Equal(t, "pipeline-runner", s.ServiceAccountName)
	assert.Equal(t, ptr.To[int64](8), s.Parallelism)
	assert.Equal(t, &wfv1.TTLStrategy{SecondsAfterCompletion: ptr.To[int32](86400)}, s.TTLStrategy)
	assert.Equal(t, &wfv1.PodGC{Strategy: wfv1.PodGCOnPodSuccess}, s.PodGC)
	assert.Equal(t, "notify", s.OnExit)
	assert.Equal(t, []wfv1.Parameter{
		{Name: "lr", Value: wfv1.AnyStringPtr("3e-4")},
		{Name: "publish", Value: wfv1.AnyStringPtr("no")},
	}, s.Arguments.Parameters)
	assert.Equal(t, wf.Labels, s.PodMetadata.Labels)
	require.Len(t, s.VolumeClaimTemplates, 1)
	claim := s.VolumeClaimTemplates[0]
	assert.Equal(t, "workspace", claim.Name)
	assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}, claim.Spec.AccessModes)
	assert.Equal(t, ptr.To("standard"), claim.Spec.StorageClassName)
	assert.True(t, resource.MustParse("50Gi").Equal(claim.Spec.Resources.Requests[corev1.ResourceStorage]))

	names := make([]string, len(s.Templates))
	for i, tm := range s.Templates {
		names[i] = tm.Name
	}
	assert.Equal(t, []string{"llm-flow", "prepare", "tokenize-fanout", "tokenize", "train", "evaluate", "benchmark", "publish", "notify"}, names)
}

func TestBuildDAGTasks(t *testing.T) {
	wf := buildFlow(t)
	dag := template(t, wf, "llm-flow")
	var names []string
	for _, tk := range dag.DAG.Tasks {
		names = append(names, tk.Name)
	}
	assert.Equal(t, []string{"prepare", "tokenize", "train", "evaluate", "benchmark", "publish"}, names)

	assert.Empty(t, task(t, dag, "prepare").Dependencies)
	// tokenize depends on prepare only through ForEachIn(prepare.Output("shards")).
	tok := task(t, dag, "tokenize")
	assert.Equal(t, []string{"prepare"}, tok.Dependencies)
	assert.Equal(t, "tokenize-fanout", tok.Template)
	assert.Equal(t, []wfv1.Parameter{{Name: "items", Value: wfv1.AnyStringPtr("{{tasks.prepare.outputs.parameters.shards}}")}}, tok.Arguments.Parameters)
	assert.Empty(t, tok.WithParam, "a bounded fan-out expands inside its own DAG")

	assert.Equal(t, []string{"tokenize"}, task(t, dag, "train").Dependencies)
	// evaluate: After(train) plus prepare's output.
	ev := task(t, dag, "evaluate")
	assert.Equal(t, []string{"prepare", "train"}, ev.Dependencies)
	assert.Equal(t, []wfv1.Parameter{{Name: "prepare_rows", Value: wfv1.AnyStringPtr("{{tasks.prepare.outputs.parameters.rows}}")}}, ev.Arguments.Parameters)

	bench := task(t, dag, "benchmark")
	assert.Equal(t, []wfv1.Item{{Value: json.RawMessage(`"en"`)}, {Value: json.RawMessage(`"zh"`)}, {Value: json.RawMessage(`"ja"`)}}, bench.WithItems)
	assert.Equal(t, []wfv1.Parameter{{Name: "item", Value: wfv1.AnyStringPtr("{{item}}")}}, bench.Arguments.Parameters)

	pub := task(t, dag, "publish")
	assert.Equal(t, []string{"evaluate"}, pub.Dependencies)
	assert.Equal(t, "{{workflow.parameters.publish}} == yes", pub.When)
}

func TestBuildFanOutWrapper(t *testing.T) {
	wf := buildFlow(t)
	wrapper := template(t, wf, "tokenize-fanout")
	assert.Equal(t, ptr.To[int64](4), wrapper.Parallelism)
	assert.Equal(t, []wfv1.Parameter{{Name: "items"}}, wrapper.Inputs.Parameters)
	inner := task(t, wrapper, "tokenize")
	assert.Equal(t, "tokenize", inner.Template)
	assert.Equal(t, "{{inputs.parameters.items}}", inner.WithParam)
	assert.Equal(t, []wfv1.Parameter{{Name: "item", Value: wfv1.AnyStringPtr("{{item}}")}}, inner.Arguments.Parameters)

	leaf := template(t, wf, "tokenize")
	assert.Equal(t, []wfv1.Parameter{{Name: "item"}}, leaf.Inputs.Parameters)
	assert.Equal(t, []string{"python", "tokenize.py", "--shard", "{{inputs.parameters.item}}", "--out", "/workspace/tokens"}, leaf.Container.Command)
	assert.Equal(t, &wfv1.RetryStrategy{Limit: ptr.To(intstr.FromInt(3))}, leaf.RetryStrategy)
}

func TestBuildFanOutWrapperOutputs(t *testing.T) {
	shard := pipeline.Container("shard").Image("busybox").
		Command("sh", "-c", "echo "+pipeline.ItemRef+" "+pipeline.ParamRef("n")+" > "+pipeline.OutputFile("part")).
		ForEach("a", "b").Parallelism(1).Outputs("part")
	merge := pipeline.Container("merge").Image("busybox").Command("echo", shard.Output("part"))
	wf, err := argo.Workflow(pipeline.New("fan").Param("n", "1").Step(shard, merge)).Build()
	require.NoError(t, err)
	wrapper := template(t, wf, "shard-fanout")
	assert.Equal(t, []wfv1.Parameter{{Name: "part", ValueFrom: &wfv1.ValueFrom{Parameter: "{{tasks.shard.outputs.parameters.part}}"}}}, wrapper.Outputs.Parameters)
	inner := task(t, wrapper, "shard")
	assert.Equal(t, []wfv1.Item{{Value: json.RawMessage(`"a"`)}, {Value: json.RawMessage(`"b"`)}}, inner.WithItems)
	leaf := template(t, wf, "shard")
	assert.Equal(t, []string{"sh", "-c", "echo {{inputs.parameters.item}} {{workflow.parameters.n}} > /tmp/cube/outputs/part"}, leaf.Container.Command)
	m := task(t, template(t, wf, "fan"), "merge")
	assert.Equal(t, "shard-fanout", task(t, template(t, wf, "fan"), "shard").Template)
	assert.Equal(t, []wfv1.Parameter{{Name: "shard_part", Value: wfv1.AnyStringPtr("{{tasks.shard.outputs.parameters.part}}")}}, m.Arguments.Parameters)
}

func TestBuildContainerTemplate(t *testing.T) {
	wf := buildFlow(t)
	prep := template(t, wf, "prepare")
	c := prep.Container
	require.NotNil(t, c)
	assert.Equal(t, "main", c.Name)
	assert.Equal(t, "python:3.12", c.Image)
	assert.Equal(t, []string{"python", "prepare.py", "--out", "/workspace/data"}, c.Command)
	assert.Equal(t, []string{"--shards-file", "/tmp/cube/outputs/shards", "--rows-file", "/tmp/cube/outputs/rows"}, c.Args)
	assert.Equal(t, []corev1.EnvVar{
		{Name: "HF_HOME", Value: "/workspace/hf"},
		{Name: "HF_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hf"}, Key: "token"}}},
		{Name: "CUBE_OUTPUTS", Value: "/tmp/cube/outputs"},
		{Name: "CUBE_WORKSPACE", Value: "/workspace"},
	}, c.Env)
	assert.Equal(t, []corev1.VolumeMount{
		{Name: "cube-outputs", MountPath: "/tmp/cube/outputs"},
		{Name: "workspace", MountPath: "/workspace"},
	}, c.VolumeMounts)
	assert.Equal(t, []corev1.Volume{{Name: "cube-outputs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}, prep.Volumes)
	assert.True(t, resource.MustParse("2").Equal(c.Resources.Requests[corev1.ResourceCPU]))
	assert.True(t, resource.MustParse("8Gi").Equal(c.Resources.Limits[corev1.ResourceMemory]))
	assert.Equal(t, []wfv1.Parameter{
		{Name: "shards", ValueFrom: &wfv1.ValueFrom{Path: "/tmp/cube/outputs/shards"}},
		{Name: "rows", ValueFrom: &wfv1.ValueFrom{Path: "/tmp/cube/outputs/rows"}},
	}, prep.Outputs.Parameters)
	assert.Equal(t, map[string]string{"cube.dev/step": "prepare"}, prep.Metadata.Labels,
		"the release labels come from podMetadata, not the step")
	assert.Empty(t, prep.PodSpecPatch)

	ev := template(t, wf, "evaluate")
	assert.Equal(t, []string{"--rows", "{{inputs.parameters.prepare_rows}}", "--lr", "{{workflow.parameters.lr}}", "--score-file", "/tmp/cube/outputs/score"}, ev.Container.Args)
	assert.Equal(t, []wfv1.Parameter{{Name: "prepare_rows"}}, ev.Inputs.Parameters)
	assert.Equal(t, ptr.To(intstr.FromInt32(90)), ev.ActiveDeadlineSeconds)
	// The L4 profile decides the device resource and node placement.
	assert.True(t, resource.MustParse("1").Equal(ev.Container.Resources.Limits["nvidia.com/gpu"]))
	assert.NotEmpty(t, ev.NodeSelector)

	notify := template(t, wf, "notify")
	assert.Equal(t, []string{"sh", "-c", "echo run {{workflow.name}} ended: {{workflow.status}}"}, notify.Container.Command)
}

func TestBuildWorkloadTemplate(t *testing.T) {
	objs, err := argo.Workflow(flows.LLMFlow()).Objects()
	require.NoError(t, err)
	require.Len(t, objs, 2)
	cm, ok := objs[0].(*unstructured.Unstructured)
	require.True(t, ok)
	assert.Equal(t, "ConfigMap", cm.GetKind())
	assert.Equal(t, "llama-sft-config", cm.GetName())
	assert.Equal(t, "ml", cm.GetNamespace(), "auxiliary objects follow the pipeline's namespace")
	assert.Equal(t, "llm-flow", cm.GetLabels()[cube.LabelRelease], "auxiliary objects join the pipeline's release")
	assert.Equal(t, "pytorchjob", cm.GetLabels()[cube.LabelKind])

	wf := objs[1].(*wfv1.Workflow)
	train := template(t, wf, "train")
	require.NotNil(t, train.Resource)
	r := train.Resource
	assert.Equal(t, "create", r.Action)
	assert.True(t, r.SetOwnerReference)
	assert.Equal(t, "status.completionTime", r.SuccessCondition, "train.Kinds' completion of a PyTorchJob")
	assert.Equal(t, "status.conditions.0.type == Failed, status.conditions.1.type == Failed, status.conditions.2.type == Failed, "+
		"status.conditions.3.type == Failed, status.conditions.4.type == Failed", r.FailureCondition)
	assert.Equal(t, &wfv1.RetryStrategy{
		Limit: ptr.To(intstr.FromInt(2)), RetryPolicy: wfv1.RetryPolicyOnError,
		Backoff: &wfv1.Backoff{Duration: "30s", Factor: ptr.To(intstr.FromInt(2)), Cap: "5m0s"},
	}, train.RetryStrategy)
	assert.Equal(t, ptr.To(intstr.FromInt32(21600)), train.ActiveDeadlineSeconds)
	assert.Equal(t, map[string]string{"cube.dev/step": "train"}, train.Metadata.Labels)

	var manifest map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(r.Manifest), &manifest))
	u := &unstructured.Unstructured{Object: manifest}
	assert.Equal(t, "PyTorchJob", u.GetKind())
	assert.Equal(t, "kubeflow.org/v1", u.GetAPIVersion())
	assert.Empty(t, u.GetName())
	assert.Equal(t, "llama-sft-", u.GetGenerateName(), "each run and retry creates its own job")
	args, _, err := unstructured.NestedStringSlice(manifest, "spec", "pytorchReplicaSpecs", "Master", "template", "spec", "containers")
	require.Error(t, err, "containers is a list of objects") // sanity: path shape
	_ = args
	master, _, _ := unstructured.NestedSlice(manifest, "spec", "pytorchReplicaSpecs", "Master", "template", "spec", "containers")
	require.Len(t, master, 1)
	assert.Equal(t, []any{"--data", "/workspace/tokens", "--lr", "{{workflow.parameters.lr}}"}, master[0].(map[string]any)["args"])
	assert.NotContains(t, r.Manifest, "status")
	// The job mentions the workspace, so each of its pods mounts the run's
	// claim, which Argo names WORKFLOW-workspace.
	for _, role := range []string{"Master", "Worker"} {
		spec, _, _ := unstructured.NestedMap(manifest, "spec", "pytorchReplicaSpecs", role, "template", "spec")
		assert.Equal(t, []any{map[string]any{"name": "workspace", "persistentVolumeClaim": map[string]any{"claimName": "{{workflow.name}}-workspace"}}}, spec["volumes"], role)
		c := spec["containers"].([]any)[0].(map[string]any)
		assert.Equal(t, []any{map[string]any{"name": "workspace", "mountPath": "/workspace"}}, c["volumeMounts"], role)
		assert.Equal(t, []any{map[string]any{"name": "CUBE_WORKSPACE", "value": "/workspace"}}, c["env"], role)
	}

	// A job that does not mention the workspace is left alone.
	wf2, err := argo.Workflow(pipeline.New("plain").Workspace(pipeline.Workspace{Size: "1Gi"}).Step(pipeline.Workload("job", flows.BatchJob("j", "true")))).Build()
	require.NoError(t, err)
	assert.NotContains(t, template(t, wf2, "job").Resource.Manifest, "workspace")
}

func TestBuildHardwareTemplate(t *testing.T) {
	sft := pipeline.Container("sft").Image("img").Command("run").
		On(hardware.H100).Accelerators(8).ImagePullSecret("registry").ImagePullSecret("mirror").HostNetwork(true)
	other := pipeline.Container("other").Image("img").Command("run").ImagePullSecret("registry").After(sft)
	wf, err := argo.Workflow(pipeline.New("hw").Step(sft, other)).Build()
	require.NoError(t, err)
	assert.Equal(t, []corev1.LocalObjectReference{{Name: "registry"}, {Name: "mirror"}}, wf.Spec.ImagePullSecrets,
		"Argo has pull secrets only on the Workflow: the union of the steps'")
	tm := template(t, wf, "sft")
	assert.Equal(t, `{"hostNetwork":true}`, tm.PodSpecPatch, "fields an Argo template lacks go through podSpecPatch")
	assert.True(t, resource.MustParse("8").Equal(tm.Container.Resources.Limits["nvidia.com/gpu"]))
	assert.NotEmpty(t, tm.Tolerations)
}

func TestBuildIsFresh(t *testing.T) {
	p := flows.LLMFlow()
	a, err := argo.Workflow(p).Build()
	require.NoError(t, err)
	a.Spec.Templates[1].Container.Command[0] = "mutated"
	a.Labels["team"] = "mutated"
	b, err := argo.Workflow(p).Build()
	require.NoError(t, err)
	assert.Equal(t, "python", b.Spec.Templates[1].Container.Command[0])
	assert.Equal(t, "nlp", b.Labels["team"])
}

func TestBuildRetryAndTTLVariants(t *testing.T) {
	s := pipeline.Container("s").Image("i").Command("c").
		Retry(retry.Policy{Limit: 1, MaxDuration: time.Minute}).RetryOn(pipeline.Always)
	wf, err := argo.Workflow(pipeline.New("v").Step(s).TTLAfterFinished(90*time.Second + time.Millisecond)).Build()
	require.NoError(t, err)
	assert.Equal(t, &wfv1.TTLStrategy{SecondsAfterCompletion: ptr.To[int32](91)}, wf.Spec.TTLStrategy, "whole seconds, rounded up")
	assert.Equal(t, &wfv1.RetryStrategy{Limit: ptr.To(intstr.FromInt(1)), RetryPolicy: wfv1.RetryPolicyAlways,
		Backoff: &wfv1.Backoff{MaxDuration: "1m0s"}}, template(t, wf, "s").RetryStrategy)
	// Sub-second timeouts round up: Argo counts whole seconds.
	wf, err = argo.Workflow(pipeline.New("v").Step(pipeline.Container("s").Image("i").Command("c").ActiveDeadline(1500 * time.Millisecond))).Build()
	require.NoError(t, err)
	assert.Equal(t, ptr.To(intstr.FromInt32(2)), template(t, wf, "s").ActiveDeadlineSeconds)
}

func TestBuildForeignPlaceholdersPassThrough(t *testing.T) {
	s := pipeline.Container("s").Image("i").Command("echo", "{{workflow.uid}}", "{{=sprig.upper('x')}}")
	wf, err := argo.Workflow(pipeline.New("v").Step(s)).Build()
	require.NoError(t, err)
	assert.Equal(t, []string{"echo", "{{workflow.uid}}", "{{=sprig.upper('x')}}"}, template(t, wf, "s").Container.Command)
}

func TestScheduleBuild(t *testing.T) {
	cw, err := argo.CronWorkflow(flows.LLMFlow(), "@daily").Suspend(true).Build()
	require.NoError(t, err)
	assert.Equal(t, "CronWorkflow", cw.Kind)
	assert.Equal(t, "argoproj.io/v1alpha1", cw.APIVersion)
	assert.Equal(t, "llm-flow", cw.Name)
	assert.Equal(t, "ml", cw.Namespace)
	assert.Equal(t, "pipeline-schedule", cw.Labels[cube.LabelKind])
	assert.Equal(t, "llm-flow", cw.Labels[cube.LabelRelease])
	assert.Equal(t, []string{"@daily"}, cw.Spec.Schedules)
	assert.Empty(t, cw.Spec.Schedule, "the deprecated single schedule stays empty")
	assert.True(t, cw.Spec.Suspend)
	assert.Equal(t, "pipeline", cw.Spec.WorkflowMetadata.Labels[cube.LabelKind], "the runs are pipelines of the same release")
	wf := buildFlow(t)
	assert.Equal(t, wf.Spec, cw.Spec.WorkflowSpec)

	objs, err := argo.CronWorkflow(flows.LLMFlow(), "@hourly").Objects()
	require.NoError(t, err)
	require.Len(t, objs, 2)
	assert.Equal(t, "ConfigMap", objs[0].GetObjectKind().GroupVersionKind().Kind)
	assert.Equal(t, "CronWorkflow", objs[1].GetObjectKind().GroupVersionKind().Kind)
}

func TestRenderYAMLRoundTrips(t *testing.T) {
	var sb strings.Builder
	require.NoError(t, cube.Render(&sb, argo.Workflow(flows.LLMFlow())))
	docs := strings.Split(sb.String(), "---\n")
	require.Len(t, docs, 2)
	var wf wfv1.Workflow
	require.NoError(t, yaml.UnmarshalStrict([]byte(docs[1]), &wf))
	got, err := json.Marshal(wf.Spec)
	require.NoError(t, err)
	want, err := json.Marshal(buildFlow(t).Spec)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))
}

// A pipeline large enough to compile its container steps on every core
// compiles to the same Workflow, and reports the same errors in the same
// order, as on one core; go test -race checks the steps share nothing.
func TestCompileOnEveryCoreIsCompileOnOne(t *testing.T) {
	build := func(procs int, p *pipeline.Pipeline) (string, error) {
		defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(procs))
		wf, err := argo.Workflow(p).Build()
		if err != nil {
			return "", err
		}
		out, merr := yaml.Marshal(wf)
		require.NoError(t, merr)
		return string(out), nil
	}
	good := wideDAG(1000)
	for i := range 1000 {
		// Pull secrets gathered from many steps: the Workflow lists each once.
		good.Step(pipeline.Container(fmt.Sprintf("pull-%d", i)).Image("registry.example.com/x").ImagePullSecret(fmt.Sprintf("reg-%d", i%3)))
	}
	one, err := build(1, good)
	require.NoError(t, err)
	many, err := build(4, good)
	require.NoError(t, err)
	assert.Equal(t, one, many)
	assert.Equal(t, 3, strings.Count(one, "- name: reg-"), "each pull secret once")

	bad := wideDAG(600)
	for i := range 300 {
		bad.Step(pipeline.Container(fmt.Sprintf("bad-%d", i)).Image("with space").CPU("lots"))
	}
	_, errOne := build(1, bad)
	_, errMany := build(4, bad)
	require.Error(t, errOne)
	require.Error(t, errMany)
	assert.Equal(t, errOne.Error(), errMany.Error())
	assert.Equal(t, 300, strings.Count(errOne.Error(), "must not contain whitespace"))
}

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	require.NoError(t, err)
	return &unstructured.Unstructured{Object: content}
}

func TestWorkflowStatus(t *testing.T) {
	for _, tc := range []struct {
		status wfv1.WorkflowStatus
		want   cube.ObjectStatus
	}{
		{wfv1.WorkflowStatus{}, cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending"}},
		{wfv1.WorkflowStatus{Phase: wfv1.WorkflowPending, Message: "waiting for quota"}, cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: "waiting for quota"}},
		{wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning}, cube.ObjectStatus{Phase: cube.InProgress, Reason: "Running"}},
		{wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, Progress: "2/5"}, cube.ObjectStatus{Phase: cube.InProgress, Reason: "Running", Message: "2/5 steps done"}},
		{wfv1.WorkflowStatus{Phase: wfv1.WorkflowRunning, Progress: "2/5", Message: "retrying"}, cube.ObjectStatus{Phase: cube.InProgress, Reason: "Running", Message: "2/5 steps done: retrying"}},
		{wfv1.WorkflowStatus{Phase: wfv1.WorkflowSucceeded}, cube.ObjectStatus{Phase: cube.Succeeded, Reason: "Succeeded"}},
		{wfv1.WorkflowStatus{Phase: wfv1.WorkflowFailed, Message: "child 'train' failed"}, cube.ObjectStatus{Phase: cube.Failed, Reason: "Failed", Message: "child 'train' failed"}},
		{wfv1.WorkflowStatus{Phase: wfv1.WorkflowError, Message: "invalid spec"}, cube.ObjectStatus{Phase: cube.Failed, Reason: "Error", Message: "invalid spec"}},
	} {
		wf := &wfv1.Workflow{
			TypeMeta:   metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "Workflow"},
			ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ml"},
			Status:     tc.status,
		}
		got := cube.ReadStatus(toUnstructured(t, wf), argo.Kinds()...)
		tc.want.Ref = cube.RefOf(wf)
		assert.Equal(t, tc.want, got, "phase %q", tc.status.Phase)
	}
}

func TestCronWorkflowStatus(t *testing.T) {
	cw := &wfv1.CronWorkflow{
		TypeMeta:   metav1.TypeMeta{APIVersion: "argoproj.io/v1alpha1", Kind: "CronWorkflow"},
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ml"},
	}
	ref := cube.RefOf(cw)
	assert.Equal(t, cube.ObjectStatus{Ref: ref, Phase: cube.Ready, Reason: "Scheduled", Message: "0 active"}, cube.ReadStatus(toUnstructured(t, cw), argo.Kinds()...))
	cw.Spec.Suspend = true
	assert.Equal(t, cube.ObjectStatus{Ref: ref, Phase: cube.Ready, Reason: "Suspended"}, cube.ReadStatus(toUnstructured(t, cw), argo.Kinds()...))
	cw.Status.Conditions = wfv1.Conditions{{Type: wfv1.ConditionTypeSpecError, Status: metav1.ConditionTrue, Message: "bad schedule"}}
	assert.Equal(t, cube.ObjectStatus{Ref: ref, Phase: cube.Failed, Reason: "SpecError", Message: "bad schedule"}, cube.ReadStatus(toUnstructured(t, cw), argo.Kinds()...))
}

func TestWorkflowCompletion(t *testing.T) {
	c, ok := cube.CompletionOf(argo.WorkflowKind, argo.Kinds()...)
	require.True(t, ok)
	assert.Equal(t, cube.Completion{Success: "status.phase == Succeeded", Failure: "status.phase in (Failed, Error)"}, c)
	_, ok = cube.CompletionOf(argo.WorkflowKind)
	assert.False(t, ok, "a Workflow is not a kind of the Kubernetes API: its completion comes with argo.Kinds")
	// So a pipeline runs another pipeline as a workload step, with no
	// Kinds of its own: a pipeline knows its package's.
	inner := pipeline.New("inner").Step(flows.Ctr("s"))
	wf, err := argo.Workflow(pipeline.New("outer").Step(pipeline.Workload("inner", argo.Workflow(inner)))).Build()
	require.NoError(t, err)
	tm := template(t, wf, "inner")
	assert.Equal(t, "status.phase == Succeeded", tm.Resource.SuccessCondition)
	assert.Contains(t, tm.Resource.Manifest, "generateName: inner-\n")
}

// waitThrough applies p to an in-memory cluster, moves its Workflow through
// Running to final, and returns what Wait saw.
func waitThrough(t *testing.T, p *pipeline.Pipeline, final cube.Phase, message string) (cube.Status, []cube.Phase, error) {
	t.Helper()
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("ml"))
	rel, err := cluster.Client.Apply(ctx, argo.Workflow(p))
	require.NoError(t, err)
	var ref cube.ObjectRef
	for _, r := range rel.Objects {
		if r.Kind == "Workflow" {
			ref = r
		}
	}
	require.Equal(t, "Workflow", ref.Kind)

	var mu sync.Mutex
	var seen []cube.Phase
	progressed := make(chan struct{}, 16)
	type result struct {
		st  cube.Status
		err error
	}
	done := make(chan result, 1)
	go func() {
		st, err := rel.Wait(ctx, cube.Succeeded, cube.Timeout(20*time.Second), cube.OnProgress(func(s cube.Status) {
			mu.Lock()
			seen = append(seen, s.Phase)
			mu.Unlock()
			progressed <- struct{}{}
		}))
		done <- result{st, err}
	}()
	<-progressed // the first status: created, no phase yet
	require.NoError(t, cubetest.MarkObject(ctx, cluster.Fake, ref, cube.InProgress, "", ""))
	<-progressed
	require.NoError(t, cubetest.MarkObject(ctx, cluster.Fake, ref, final, "", message))
	r := <-done
	mu.Lock()
	defer mu.Unlock()
	return r.st, seen, r.err
}

func TestWaitWorkflowSucceeds(t *testing.T) {
	st, seen, err := waitThrough(t, flows.LLMFlow(), cube.Succeeded, "")
	require.NoError(t, err)
	assert.Equal(t, cube.Succeeded, st.Phase)
	assert.Equal(t, []cube.Phase{cube.InProgress, cube.InProgress, cube.Succeeded}, seen)
	for _, o := range st.Objects {
		if o.Ref.Kind == "Workflow" {
			assert.Equal(t, "Succeeded", o.Reason)
		}
	}
}

func TestWaitWorkflowFails(t *testing.T) {
	st, seen, err := waitThrough(t, flows.LLMFlow(), cube.Failed, "child 'train' failed")
	require.Error(t, err)
	assert.True(t, errors.Is(err, cube.ErrFailed))
	assert.Equal(t, cube.Failed, st.Phase)
	assert.Equal(t, []cube.Phase{cube.InProgress, cube.InProgress, cube.Failed}, seen)
	assert.Contains(t, st.Reason, "child 'train' failed")
}

func TestWaitHonoursContext(t *testing.T) {
	cluster := cubetest.NewCluster(nil, cube.Namespace("ml"))
	rel, err := cluster.Client.Apply(t.Context(), argo.Workflow(pipeline.New("idle").Step(flows.Ctr("s"))))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	st, err := rel.Wait(ctx, cube.Succeeded)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, cube.InProgress, st.Phase)
}
