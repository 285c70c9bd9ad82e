package argo_test

// Regression tests for the defects of issue 10 that the Argo, training-operator
// and KubeRay sources define: each names the upstream file whose behaviour it
// asserts. The API server checks (apiserver_test.go) apply the same objects.

import (
	"errors"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/flows"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/train"
)

// manifestOf decodes the job a step's resource template creates.
func manifestOf(t *testing.T, wf *wfv1.Workflow, step string) *unstructured.Unstructured {
	t.Helper()
	r := template(t, wf, step).Resource
	require.NotNil(t, r, "step %s has a resource template", step)
	j, err := yaml.YAMLToJSON([]byte(r.Manifest))
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(j), "integers stay int64")
	return u
}

// Argo's resource template bounds only the argoexec pod with
// activeDeadlineSeconds; the Workflow, not that pod, owns the job
// (workflow/controller/operator.go executeResource), and
// cmd/argoexec/commands/resource.go deletes nothing when the pod is killed.
// So the job gets the step's timeout as its own deadline.
func TestWorkloadTimeoutBecomesTheJobsDeadline(t *testing.T) {
	wf, err := argo.Workflow(flows.LLMFlow()).Build()
	require.NoError(t, err)
	got, found, err := unstructured.NestedInt64(manifestOf(t, wf, "train").Object, "spec", "runPolicy", "activeDeadlineSeconds")
	require.NoError(t, err)
	require.True(t, found, "training-operator's RunPolicy.ActiveDeadlineSeconds")
	assert.Equal(t, int64(6*3600), got)

	// batch/v1 Job keeps it in spec.activeDeadlineSeconds; a shorter one of
	// the job's own wins, a longer one is cut to the step's.
	for _, tc := range []struct {
		own  int64
		want int64
	}{{0, 91}, {30, 30}, {600, 91}} {
		job := batchJobObject("j", "true")
		if tc.own > 0 {
			job.Spec.ActiveDeadlineSeconds = &tc.own
		}
		wf, err := argo.Workflow(pipeline.New("p").Step(pipeline.Workload("j", cube.Objects(job)).ActiveDeadline(90*time.Second + time.Millisecond))).Build()
		require.NoError(t, err)
		got, _, err := unstructured.NestedInt64(manifestOf(t, wf, "j").Object, "spec", "activeDeadlineSeconds")
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "own %d", tc.own)
		assert.Equal(t, int32(91), template(t, wf, "j").ActiveDeadlineSeconds.IntVal, "the step keeps its own deadline")
	}

	// Without Timeout the job is left alone.
	wf, err = argo.Workflow(pipeline.New("p").Step(pipeline.Workload("j", flows.BatchJob("j", "true")))).Build()
	require.NoError(t, err)
	_, found, _ = unstructured.NestedFieldNoCopy(manifestOf(t, wf, "j").Object, "spec", "activeDeadlineSeconds")
	assert.False(t, found)
}

// A kind with no deadline field of its own (a Volcano Job: volcano.sh/apis
// batch/v1alpha1 JobSpec has none) would keep running after the step timed
// out: Timeout is refused for it.
func TestWorkloadTimeoutRefusedWithoutADeadline(t *testing.T) {
	vc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job",
		"metadata": map[string]any{"name": "gang"},
		"spec":     map[string]any{"tasks": []any{}},
	}}
	_, err := argo.Workflow(pipeline.New("p").Kinds(train.Kinds()...).Step(pipeline.Workload("gang", cube.Objects(vc)).ActiveDeadline(time.Hour))).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeInvalid, "steps[0].activeDeadline", "Job.batch.volcano.sh has no deadline of its own"))

	_, err = argo.Workflow(pipeline.New("p").Kinds(train.Kinds()...).Step(pipeline.Workload("gang", cube.Objects(vc)))).Build()
	assert.NoError(t, err, "without Timeout the step is fine")
}

// The job, its pods and the objects around it carry the pipeline's release,
// so Release.Wait on the pipeline (which lists pods by cube.dev/release)
// sees the training pods; selectors follow the label they select.
func TestWorkloadObjectsJoinThePipelinesRelease(t *testing.T) {
	objs, err := argo.Workflow(flows.LLMFlow()).Objects()
	require.NoError(t, err)
	wf := objs[len(objs)-1].(*wfv1.Workflow)
	job := manifestOf(t, wf, "train")
	assert.Equal(t, "llm-flow", job.GetLabels()[cube.LabelRelease])
	assert.Equal(t, "train", job.GetLabels()[pipeline.LabelStep])
	assert.Equal(t, "pytorchjob", job.GetLabels()[cube.LabelKind], "the job keeps its kind")
	for _, role := range []string{"Master", "Worker"} {
		labels, _, err := unstructured.NestedStringMap(job.Object, "spec", "pytorchReplicaSpecs", role, "template", "metadata", "labels")
		require.NoError(t, err)
		assert.Equal(t, "llm-flow", labels[cube.LabelRelease], role)
	}

	// A Service around the job selects its pods by the release label: the
	// selector moves with the pods' label.
	id := cube.Identity{Kind: "job", Release: "trainer"}
	job2 := batchJobObject("trainer", "true")
	svc := &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: id.ObjectMeta("trainer", "", nil, nil),
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: id.Selector("")},
	}
	objs, err = argo.Workflow(pipeline.New("flow").Step(pipeline.Workload("train", cube.Objects(svc, job2)))).Objects()
	require.NoError(t, err)
	require.Len(t, objs, 2)
	gotSvc := objs[0].(*unstructured.Unstructured)
	sel, _, _ := unstructured.NestedStringMap(gotSvc.Object, "spec", "selector")
	assert.Equal(t, map[string]string{cube.LabelRelease: "flow", cube.LabelManagedBy: cube.ManagedBy}, sel)
	pods, _, _ := unstructured.NestedStringMap(manifestOf(t, objs[1].(*wfv1.Workflow), "train").Object, "spec", "template", "metadata", "labels")
	assert.Equal(t, "flow", pods[cube.LabelRelease])
	for k, v := range sel {
		assert.Equal(t, v, pods[k], "the Service still selects the job's pods")
	}
}

// A Deployment has no completion: a serving workload is refused with the
// reason, not with advice to give the pipeline a kind.
func TestWorkloadStepRefusesServing(t *testing.T) {
	id := cube.Identity{Kind: "vllm", Release: "chat"}
	dep := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: id.ObjectMeta("chat", "", nil, nil),
	}
	svc := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: id.ObjectMeta("chat", "", nil, nil)}
	_, err := argo.Workflow(pipeline.New("p").Step(pipeline.Workload("serve", cube.Objects(dep, svc)))).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeInvalid, "steps[0].workload", "a workload step runs a job to completion, and a Deployment serves until it is deleted"))
}

// The executor of Argo v3.7 writes WorkflowTaskResults (docs/workflow-rbac.md)
// and, for resource templates, creates the job and reads it until a
// condition matches (workflow/executor/resource.go: kubectl create, GET
// polls, kubectl get for outputs; no watch, patch or delete).
func TestExecutorRBAC(t *testing.T) {
	assert.Nil(t, argo.ExecutorRules(nil), "a nil pipeline has no rules")
	objs, err := argo.Workflow(flows.LLMFlow()).ExecutorRBAC().Objects()
	require.NoError(t, err)
	require.Len(t, objs, 5)
	sa, ok := objs[0].(*corev1.ServiceAccount)
	require.True(t, ok, "%T", objs[0])
	role := objs[1].(*rbacv1.Role)
	binding := objs[2].(*rbacv1.RoleBinding)
	assert.Equal(t, "pipeline-runner", sa.Name, "the account named with ServiceAccount")
	assert.Equal(t, "ml", sa.Namespace)
	assert.Equal(t, "llm-flow", sa.Labels[cube.LabelRelease])
	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"argoproj.io"}, Resources: []string{"workflowtaskresults"}, Verbs: []string{"create", "patch"}},
		{APIGroups: []string{"kubeflow.org"}, Resources: []string{"pytorchjobs"}, Verbs: []string{"create", "get"}},
	}, role.Rules)
	assert.Equal(t, "pipeline-runner", role.Name)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "pipeline-runner"}, binding.RoleRef)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: "pipeline-runner", Namespace: "ml"}}, binding.Subjects)
	assert.Equal(t, "pipeline-runner", objs[4].(*wfv1.Workflow).Spec.ServiceAccountName)
	assert.Equal(t, role.Rules, argo.ExecutorRules(flows.LLMFlow()))

	// Unnamed, the account is PIPELINE-executor and the Workflow uses it.
	objs, err = argo.Workflow(pipeline.New("etl").Step(flows.Ctr("a"), pipeline.Workload("b", flows.BatchJob("b", "true")))).ExecutorRBAC().Objects()
	require.NoError(t, err)
	require.Len(t, objs, 4)
	assert.Equal(t, "etl-executor", objs[0].GetName())
	assert.Equal(t, "etl-executor", objs[3].(*wfv1.Workflow).Spec.ServiceAccountName)
	assert.Equal(t, []string{"jobs"}, objs[1].(*rbacv1.Role).Rules[1].Resources)
	assert.Equal(t, []string{"batch"}, objs[1].(*rbacv1.Role).Rules[1].APIGroups)

	// Without ExecutorRBAC nothing is added.
	objs, err = argo.Workflow(pipeline.New("etl").Step(flows.Ctr("a")).ServiceAccount("runner")).Objects()
	require.NoError(t, err)
	require.Len(t, objs, 1)
	assert.Equal(t, "runner", objs[0].(*wfv1.Workflow).Spec.ServiceAccountName)

	// A schedule renders the same objects.
	sched, err := argo.CronWorkflow(pipeline.New("nightly").Step(flows.Ctr("a")), "@daily").ExecutorRBAC().Objects()
	require.NoError(t, err)
	require.Len(t, sched, 4)
	assert.IsType(t, &wfv1.CronWorkflow{}, sched[3])
	assert.Equal(t, "nightly-executor", sched[3].(*wfv1.CronWorkflow).Spec.WorkflowSpec.ServiceAccountName)

	assert.Nil(t, argo.ExecutorRules(pipeline.New("")), "a pipeline that does not validate has no rules")
}

func TestServiceAccountValidated(t *testing.T) {
	_, err := argo.Workflow(pipeline.New("p").Step(flows.Ctr("a")).ServiceAccount("Bad_SA")).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeInvalid, "serviceAccount", "lowercase RFC 1123 subdomain"))
}

// Every container step mounts the workspace; a fan-out, a job's pods or two
// steps that may run at once share it, which ReadWriteOnce allows only on one
// node.
func TestWorkspaceAccessMode(t *testing.T) {
	ws := pipeline.Workspace{Size: "1Gi"}
	mode := func(t *testing.T, p *pipeline.Pipeline) corev1.PersistentVolumeAccessMode {
		t.Helper()
		wf, err := argo.Workflow(p).Build()
		require.NoError(t, err)
		require.Len(t, wf.Spec.VolumeClaimTemplates, 1)
		return wf.Spec.VolumeClaimTemplates[0].Spec.AccessModes[0]
	}
	a, b := flows.Ctr("a"), flows.Ctr("b")
	assert.Equal(t, corev1.ReadWriteOnce, mode(t, pipeline.New("p").Workspace(ws).Step(a, flows.Ctr("b").After(a))), "one after another")
	assert.Equal(t, corev1.ReadWriteMany, mode(t, pipeline.New("p").Workspace(ws).Step(a, b)), "side by side")
	assert.Equal(t, corev1.ReadWriteMany, mode(t, pipeline.New("p").Workspace(ws).Step(flows.Ctr("f").ForEach("1", "2"))), "fan-out")
	job := pipeline.Workload("j", flows.BatchJob("j", "sh", "-c", "ls "+pipeline.WorkspaceDir))
	assert.Equal(t, corev1.ReadWriteMany, mode(t, pipeline.New("p").Workspace(ws).Step(job)), "a job's pods")
	quiet := pipeline.Workload("j", flows.BatchJob("j", "true"))
	assert.Equal(t, corev1.ReadWriteOnce, mode(t, pipeline.New("p").Workspace(ws).Step(quiet)), "a job that does not mount it")
	explicit := pipeline.Workspace{Size: "1Gi", AccessMode: corev1.ReadWriteOnce}
	assert.Equal(t, corev1.ReadWriteOnce, mode(t, pipeline.New("p").Workspace(explicit).Step(flows.Ctr("a"), flows.Ctr("b"))), "an explicit mode is kept")

	_, err := argo.Workflow(pipeline.New("p").Workspace(pipeline.Workspace{Size: "1Gi", AccessMode: corev1.ReadWriteOncePod}).Step(flows.Ctr("f").ForEach("1", "2"))).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeInvalid, "workspace.accessMode", "admits one pod at a time, but step f fans out"))
}

// Errors of a nested workload keep their field paths under the step.
func TestNestedWorkloadErrorsKeepPaths(t *testing.T) {
	broken := cube.WorkloadFunc(func() ([]client.Object, error) {
		return nil, field.ErrorList{
			field.Invalid(field.NewPath("spec", "replicas"), -1, "must not be negative"),
			field.Required(field.NewPath("image"), "an image is required"),
		}.ToAggregate()
	})
	_, err := argo.Workflow(pipeline.New("p").Step(flows.Ctr("a"), pipeline.Workload("train", broken))).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeInvalid, "steps[1].workload.spec.replicas", "must not be negative"),
		flows.Want(field.ErrorTypeRequired, "steps[1].workload.image", "an image is required"),
	)
	plain := cube.WorkloadFunc(func() ([]client.Object, error) { return nil, errors.New("no such model") })
	_, err = argo.Workflow(pipeline.New("p").Step(pipeline.Workload("train", plain))).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeInvalid, "steps[0].workload", "no such model"))
}

// batchJobObject is batchJob's Job itself.
func batchJobObject(name string, command ...string) *batchv1.Job {
	objs, _ := flows.BatchJob(name, command...).Objects()
	return objs[0].(*batchv1.Job)
}

// A workload step's outputs come from its job, read by Argo's executor
// with a JSONPath once the job succeeded (resource templates'
// outputs.parameters[].valueFrom.jsonPath, workflow/executor/resource.go
// SaveResourceParameters).
func TestWorkloadStepOutputs(t *testing.T) {
	train := pipeline.Workload("train", flows.BatchJob("trainer", "true")).
		OutputFrom("job", "{.metadata.name}").OutputFrom("finished", "{.status.completionTime}")
	report := pipeline.Container("report").Image("busybox").Command("echo", train.Output("job"), train.Output("finished"))
	wf, err := argo.Workflow(pipeline.New("p").Step(train, report)).Build()
	require.NoError(t, err)
	assert.Equal(t, []wfv1.Parameter{
		{Name: "job", ValueFrom: &wfv1.ValueFrom{JSONPath: "{.metadata.name}"}},
		{Name: "finished", ValueFrom: &wfv1.ValueFrom{JSONPath: "{.status.completionTime}"}},
	}, template(t, wf, "train").Outputs.Parameters)
	tasks := wf.Spec.Templates[0].DAG.Tasks
	require.Len(t, tasks, 2)
	assert.Equal(t, []string{"train"}, tasks[1].Dependencies)
	assert.Equal(t, "{{tasks.train.outputs.parameters.job}}", tasks[1].Arguments.Parameters[0].Value.String())

	_, err = argo.Workflow(pipeline.New("p").Step(
		pipeline.Workload("a", flows.BatchJob("a", "true")).Outputs("x"),
		pipeline.Workload("b", flows.BatchJob("b", "true")).OutputFrom("y", "{.metadata.name"),
		pipeline.Workload("c", flows.BatchJob("c", "true")).OutputFrom("z", ""),
	)).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeInvalid, "steps[0].outputs[0]", "read the output from its job with OutputFrom(name, jsonPath)"),
		flows.Want(field.ErrorTypeInvalid, "steps[1].outputs[0].jsonPath", "must be a kubectl JSONPath template"),
		flows.Want(field.ErrorTypeInvalid, "steps[2].outputs[0].jsonPath", "must be a kubectl JSONPath template"),
	)
}

// A PyTorchJob is no kind of the Kubernetes API: a pipeline not given
// train.Kinds() has no Completion for it, and says how to give one.
func TestValidateWorkloadStepNeedsItsKind(t *testing.T) {
	ws := pipeline.Workspace{Size: "1Gi"}
	_, err := argo.Workflow(pipeline.New("p").Param("lr", "1e-4").Workspace(ws).Step(pipeline.Workload("sft", flows.PyTorchJob("sft")))).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeInvalid, "steps[0].workload",
		`step "sft": the pipeline has no Completion for PyTorchJob.kubeflow.org, so Argo cannot tell when it finishes: give the pipeline its kind with Kinds`))

	wf, err := argo.Workflow(pipeline.New("p").Kinds(train.Kinds()...).Param("lr", "1e-4").Workspace(ws).Step(pipeline.Workload("sft", flows.PyTorchJob("sft")))).Build()
	require.NoError(t, err)
	assert.Equal(t, "status.completionTime", template(t, wf, "sft").Resource.SuccessCondition)
}

func TestValidateSchedule(t *testing.T) {
	long := strings.Repeat("a", 53)
	_, err := argo.CronWorkflow(pipeline.New(long).Step(flows.Ctr("s"))).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeTooLong, "metadata.name", ""),
		flows.Want(field.ErrorTypeRequired, "schedule", "at least one cron expression"),
	)
	_, err = argo.CronWorkflow(pipeline.New("p").Step(flows.Ctr("s")), "* * *", "61 * * * *", "* * * * FUNDAY", "@sometimes", "@every -1s", "5-1 * * * *", "*/0 * * * *", "TZ=Mars/Base * * * * *").
		Timezone("Nowhere/Atlantis").
		ConcurrencyPolicy("Sometimes").
		StartingDeadline(-time.Second).
		KeepHistory(-1, 1).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeInvalid, "schedule[0]", "want 5 fields"),
		flows.Want(field.ErrorTypeInvalid, "schedule[1]", "minute: 61 is outside 0-59"),
		flows.Want(field.ErrorTypeInvalid, "schedule[2]", `day of week: bad value "FUNDAY"`),
		flows.Want(field.ErrorTypeInvalid, "schedule[3]", "unknown descriptor"),
		flows.Want(field.ErrorTypeInvalid, "schedule[4]", "positive duration"),
		flows.Want(field.ErrorTypeInvalid, "schedule[5]", "runs backwards"),
		flows.Want(field.ErrorTypeInvalid, "schedule[6]", "bad step"),
		flows.Want(field.ErrorTypeInvalid, "schedule[7]", `unknown time zone "Mars/Base"`),
		flows.Want(field.ErrorTypeInvalid, "timezone", "unknown time zone"),
		flows.Want(field.ErrorTypeNotSupported, "concurrencyPolicy", "Sometimes"),
		flows.Want(field.ErrorTypeInvalid, "startingDeadline", "must not be negative"),
		flows.Want(field.ErrorTypeInvalid, "keepHistory.succeeded", "between 0"),
	)
	for _, ok := range []string{"*/15 0-6,22-23 ? JAN-MAR sun", "@every 1h30m", "@midnight", "CRON_TZ=UTC 0 0 1 1 *", "0 0 * * 6"} {
		_, err := argo.CronWorkflow(pipeline.New("p").Step(flows.Ctr("s")), ok).Build()
		assert.NoError(t, err, ok)
	}
	_, err = argo.CronWorkflow(pipeline.New("p"), "@daily").Objects()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeRequired, "steps", "at least one step"))
}

func TestValidateTemplateNameCollision(t *testing.T) {
	fan := flows.Ctr("x").ForEach("1", "2").Parallelism(1)
	_, err := argo.Workflow(pipeline.New("p").Step(flows.Ctr("x-fanout"), fan)).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeInvalid, "steps[1].name", `template name "x-fanout" of the fan-out of step "x" is already step "x-fanout"`))
}
