package pipeline_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/flows"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/pipeline/local"
	"github.com/cubestudio/cube/retry"
)

func TestValidateEmpty(t *testing.T) {
	_, err := argo.Workflow(pipeline.New("empty")).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeRequired, "steps", "at least one step"))
	_, err = local.Run(t.Context(), pipeline.New("empty"), local.Progress(nil))
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeRequired, "steps", "at least one step"))
}

func TestValidateCycle(t *testing.T) {
	a, b, c, d := flows.Ctr("a"), flows.Ctr("b"), flows.Ctr("c"), flows.Ctr("d")
	a.After(c)
	b.After(a)
	c.After(b)
	d.After(d)
	_, err := argo.Workflow(pipeline.New("loop").Step(a, b, c, d)).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeInvalid, "steps", "a → b → c → a"),
		flows.Want(field.ErrorTypeInvalid, "steps", "d → d"),
	)
	assert.Contains(t, err.Error(), `steps: Invalid value: "a → b → c → a": dependency cycle`)
}

func TestValidateCycleThroughOutputs(t *testing.T) {
	a := pipeline.Container("a").Image("i").Outputs("x")
	b := pipeline.Container("b").Image("i").Command("echo", a.Output("x")).Outputs("y")
	a.Command("echo", b.Output("y"))
	_, err := argo.Workflow(pipeline.New("loop").Step(a, b)).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeInvalid, "steps", "a → b → a"))
}

func TestValidateNames(t *testing.T) {
	long := strings.Repeat("a", 64)
	_, err := argo.Workflow(pipeline.New("Bad_Name").Step(
		flows.Ctr(""), flows.Ctr("1st"), flows.Ctr("has_underscore"), flows.Ctr(long), flows.Ctr("ok"), flows.Ctr("ok"), flows.Ctr("Bad_Name"), nil,
	)).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeInvalid, "metadata.name", "Bad_Name"),
		flows.Want(field.ErrorTypeRequired, "steps[0].name", "a step name is required"),
		flows.Want(field.ErrorTypeInvalid, "steps[1].name", "start with a letter"),
		flows.Want(field.ErrorTypeInvalid, "steps[2].name", "start with a letter"),
		flows.Want(field.ErrorTypeTooLong, "steps[3].name", ""),
		flows.Want(field.ErrorTypeDuplicate, "steps[5].name", "ok"),
		flows.Want(field.ErrorTypeInvalid, "steps[6].name", "Argo's template name rule"),
		flows.Want(field.ErrorTypeInvalid, "steps[6].name", "must differ from the pipeline name"),
		flows.Want(field.ErrorTypeRequired, "steps[7]", "step is nil"),
	)
}

func TestValidateDependencies(t *testing.T) {
	stray := flows.Ctr("stray")
	a := flows.Ctr("a")
	b := flows.Ctr("b").After(a, stray, nil)
	_, err := argo.Workflow(pipeline.New("deps").Step(a, b)).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeNotFound, "steps[1].after[1]", "stray"),
		flows.Want(field.ErrorTypeRequired, "steps[1].after[2]", "dependency is nil"),
	)
}

func TestValidateReferences(t *testing.T) {
	a := pipeline.Container("a").Image("i").Command("true").Outputs("model", "model", "bad name")
	ghost := pipeline.Container("ghost").Image("i")
	b := pipeline.Container("b").Image("i").
		Command("echo", a.Output("score"), ghost.Output("x"), pipeline.ParamRef("nope"), pipeline.ItemRef, pipeline.WorkspaceDir, pipeline.PipelineStatus).
		Args("{{steps.a.outputs}}", pipeline.OutputFile("undeclared"), "{{params.}}").
		Env("SELF", "{{steps.b.outputs.y}}").
		Outputs("y")
	f := pipeline.Func("f", func(context.Context, *pipeline.Task) error { return nil }).
		Input("path", pipeline.OutputFile("z"))
	_, err := argo.Workflow(pipeline.New("refs").Step(a, b, f)).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeDuplicate, "steps[0].outputs[1]", "model"),
		flows.Want(field.ErrorTypeInvalid, "steps[0].outputs[2]", "letters, digits"),
		flows.Want(field.ErrorTypeInvalid, "steps[1].command[1]", `step "a" has no output "score" (declared: model, model, bad name)`),
		flows.Want(field.ErrorTypeInvalid, "steps[1].command[2]", `refers to step "ghost", which is not in the pipeline`),
		flows.Want(field.ErrorTypeInvalid, "steps[1].command[3]", `parameter "nope" is not declared`),
		flows.Want(field.ErrorTypeInvalid, "steps[1].command[4]", "only a step with ForEach or ForEachIn has an item"),
		flows.Want(field.ErrorTypeInvalid, "steps[1].command[5]", "the pipeline has no workspace"),
		flows.Want(field.ErrorTypeInvalid, "steps[1].command[6]", "known only in the exit handler"),
		flows.Want(field.ErrorTypeInvalid, "steps[1].args[0]", "want {{steps.STEP.outputs.NAME}}"),
		flows.Want(field.ErrorTypeInvalid, "steps[1].args[1]", `output "undeclared" is not declared`),
		flows.Want(field.ErrorTypeInvalid, "steps[1].args[2]", "malformed placeholder {{params.}}"),
		flows.Want(field.ErrorTypeInvalid, "steps[1].env[SELF]", "the step's own output"),
		flows.Want(field.ErrorTypeInvalid, "steps[2].inputs[path]", "an output file belongs in a container step"),
		flows.Want(field.ErrorTypeInvalid, "steps[2]", "a Go function step runs only locally"),
	)
}

func TestValidateFunctionStepNamesStep(t *testing.T) {
	f := pipeline.Func("prepare", func(context.Context, *pipeline.Task) error { return nil })
	_, err := argo.Workflow(pipeline.New("p").Step(f, flows.Ctr("train").After(f))).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeInvalid, "steps[0]", "a Go function step runs only locally"))
	assert.Contains(t, err.Error(), `"prepare"`)
	_, err = local.Run(t.Context(), pipeline.New("p").Step(pipeline.Func("nil-fn", nil)), local.Progress(nil))
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeRequired, "steps[0].func", "function is nil"))
}

func TestValidateStepSettings(t *testing.T) {
	s := flows.Ctr("s").
		Retry(retry.Policy{Limit: -1, Backoff: -time.Second, Factor: -2, MaxBackoff: -time.Second, MaxDuration: -time.Second}).RetryOn("Sometimes").
		ActiveDeadline(0).
		Parallelism(2).
		When("{{params.x}} ==").
		Namespace("elsewhere")
	e := flows.Ctr("e").ForEach().Parallelism(0)
	q := flows.Ctr("q").ForEachIn("not a ref")
	r := flows.Ctr("r").ForEachIn(pipeline.ItemRef)
	_, err := argo.Workflow(pipeline.New("p").Param("x", "1").Step(s, e, q, r)).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeInvalid, "steps[0].retry.limit", "must not be negative"),
		flows.Want(field.ErrorTypeInvalid, "steps[0].retry.backoff", "must not be negative"),
		flows.Want(field.ErrorTypeInvalid, "steps[0].retry.factor", "must not be negative"),
		flows.Want(field.ErrorTypeInvalid, "steps[0].retry.maxBackoff", "must not be negative"),
		flows.Want(field.ErrorTypeInvalid, "steps[0].retry.maxDuration", "must not be negative"),
		flows.Want(field.ErrorTypeNotSupported, "steps[0].retryOn", "Sometimes"),
		flows.Want(field.ErrorTypeInvalid, "steps[0].activeDeadline", "must be positive"),
		flows.Want(field.ErrorTypeInvalid, "steps[0].parallelism", "applies only to a step with ForEach"),
		flows.Want(field.ErrorTypeInvalid, "steps[0].when", "unexpected end of expression"),
		flows.Want(field.ErrorTypeForbidden, "steps[0].namespace", "set it on the pipeline"),
		flows.Want(field.ErrorTypeRequired, "steps[1].forEach", "at least one item"),
		flows.Want(field.ErrorTypeInvalid, "steps[1].parallelism", "at least 1"),
		flows.Want(field.ErrorTypeInvalid, "steps[2].forEachIn", "must be one ParamRef or step Output"),
		flows.Want(field.ErrorTypeInvalid, "steps[3].forEachIn", "the item is known only inside the step"),
		flows.Want(field.ErrorTypeInvalid, "steps[3].forEachIn", "must be one ParamRef or step Output"),
	)
}

func TestValidatePipelineSettings(t *testing.T) {
	p := pipeline.New("p").Namespace("Bad NS").Label("bad key!", "v").Annotation("bad key!", "v").
		Param("bad param!", "v").
		Step(flows.Ctr("s")).
		Parallelism(0).
		TTLAfterFinished(-time.Second).
		PodGC("Sometimes").
		Workspace(pipeline.Workspace{MountPath: "relative"})
	_, err := argo.Workflow(p).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeInvalid, "metadata.namespace", "Bad NS"),
		flows.Want(field.ErrorTypeInvalid, "metadata.labels[bad key!]", "bad key!"),
		flows.Want(field.ErrorTypeInvalid, "metadata.annotations[bad key!]", "bad key!"),
		flows.Want(field.ErrorTypeInvalid, "params[0].name", "letters, digits"),
		flows.Want(field.ErrorTypeInvalid, "parallelism", "at least 1"),
		flows.Want(field.ErrorTypeInvalid, "ttlAfterFinished", "between 0 and 2^31-1 seconds"),
		flows.Want(field.ErrorTypeRequired, "workspace.size", "needs a size"),
		flows.Want(field.ErrorTypeInvalid, "workspace.mountPath", "absolute path"),
		flows.Want(field.ErrorTypeNotSupported, "podGC", "Sometimes"),
	)
	_, err = argo.Workflow(pipeline.New("p").Step(flows.Ctr("s")).Workspace(pipeline.Workspace{Size: "lots", AccessMode: "Sometimes"})).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeInvalid, "workspace.size", "lots"),
		flows.Want(field.ErrorTypeNotSupported, "workspace.accessMode", "Sometimes"),
	)
	_, err = argo.Workflow(pipeline.New("p").Step(flows.Ctr("s")).Workspace(pipeline.Workspace{Size: "-1Gi"})).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeInvalid, "workspace.size", "must be positive"))
}

func TestValidatePodSettings(t *testing.T) {
	s := pipeline.Container("s").Command("run").CPU("lots").Accelerators(2).Env("BAD NAME", "x")
	_, err := argo.Workflow(pipeline.New("p").Step(s)).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeRequired, "steps[0].template.spec.containers[0].image", "an image is required"),
		flows.Want(field.ErrorTypeInvalid, "steps[0].template.spec.containers[0].resources.requests[cpu]", "lots"),
		flows.Want(field.ErrorTypeInvalid, "steps[0].template.spec.containers[0].resources.limits[cpu]", "lots"),
		flows.Want(field.ErrorTypeInvalid, "steps[0].template.spec.containers[0].env[0].name", "BAD NAME"),
		flows.Want(field.ErrorTypeRequired, "steps[0].template.on", "without a hardware profile"),
	)
}

func TestValidateExitHandler(t *testing.T) {
	a := flows.Ctr("a").Outputs("x")
	exit := pipeline.Container("exit").Image("i").Command("echo", a.Output("x")).After(a).When("1 == 1").ForEach("x")
	_, err := argo.Workflow(pipeline.New("p").Step(a).OnExit(exit)).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeForbidden, "onExit.after", "takes no dependencies"),
		flows.Want(field.ErrorTypeForbidden, "onExit.when", "always runs"),
		flows.Want(field.ErrorTypeForbidden, "onExit.forEach", "cannot fan out"),
		flows.Want(field.ErrorTypeInvalid, "onExit.command[1]", "cannot read the outputs of steps"),
	)
	_, err = argo.Workflow(pipeline.New("p").Step(flows.Ctr("a")).OnExit(flows.Ctr("a"))).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeDuplicate, "onExit.name", "a"))
	_, err = argo.Workflow(pipeline.New("p").Step(flows.Ctr("a")).OnExit(flows.Ctr("p"))).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeInvalid, "onExit.name", "must differ from the pipeline name"))
	_, err = argo.Workflow(pipeline.New("p").Step(flows.Ctr("a")).OnExit(nil)).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeRequired, "onExit", "step is nil"))
}

func TestValidateWorkloadSteps(t *testing.T) {
	noCompletion := cube.Objects(&corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "bare"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i", Command: []string{"true"}}}},
	})
	broken := cube.WorkloadFunc(func() ([]client.Object, error) { return nil, errors.New("spec.replicas: must be positive") })
	empty := cube.WorkloadFunc(func() ([]client.Object, error) { return nil, nil })
	cm := func(name string) client.Object {
		return &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	onlyConfig := cube.Objects(cm("a"), cm("b"))
	twoJobs := cube.WorkloadFunc(func() ([]client.Object, error) {
		a, _ := flows.BatchJob("one", "true").Objects()
		b, _ := flows.BatchJob("two", "true").Objects()
		return append(a, b...), nil
	})
	_, err := argo.Workflow(pipeline.New("p").Step(
		pipeline.Workload("pod", noCompletion),
		pipeline.Workload("broken", broken),
		pipeline.Workload("empty", empty),
		pipeline.Workload("config", onlyConfig),
		pipeline.Workload("two", twoJobs),
		pipeline.Workload("nil", nil),
		pipeline.Workload("outputs", flows.BatchJob("j", "true")).Outputs("x"),
	)).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeInvalid, "steps[0].workload", `step "pod": the pipeline has no Completion for Pod, so Argo cannot tell when it finishes: run it in a batch Job`),
		flows.Want(field.ErrorTypeInvalid, "steps[1].workload", "spec.replicas: must be positive"),
		flows.Want(field.ErrorTypeRequired, "steps[2].workload", "no objects"),
		flows.Want(field.ErrorTypeInvalid, "steps[3].workload", "none has a cube.Completion among the pipeline's kinds"),
		flows.Want(field.ErrorTypeInvalid, "steps[4].workload", "runs one job"),
		flows.Want(field.ErrorTypeRequired, "steps[5].workload", "workload is nil"),
		flows.Want(field.ErrorTypeInvalid, "steps[6].outputs[0]", "writes no output files"),
	)
}

func TestValidateAllErrorsAtOnce(t *testing.T) {
	a := flows.Ctr("a").After(flows.Ctr("missing"))
	b := pipeline.Container("b").Command("echo", a.Output("nothing"))
	_, err := argo.Workflow(pipeline.New("p").Step(a, b, flows.Ctr("a")).Parallelism(-1)).Build()
	got := flows.FieldErrors(t, err)
	assert.Len(t, got, 5, "%v", err) // unknown dependency, missing output, no image, duplicate name, parallelism
}

const nilPipeline = "pipeline: the *Pipeline is nil: make one with pipeline.New"

// A nil *Pipeline records nothing and every method that validates says so.
func TestNilPipeline(t *testing.T) {
	var p *pipeline.Pipeline
	require.NotPanics(t, func() {
		p = p.Step(flows.Ctr("a")).Param("x", "1").Workspace(pipeline.Workspace{Size: "1Gi"}).Parallelism(2).
			TTLAfterFinished(time.Hour).PodGC(pipeline.PodGCOnPodSuccess).
			ServiceAccount("sa").OnExit(flows.Ctr("e"))
	})
	assert.Nil(t, p)
	_, err := argo.Workflow(p).Build()
	assert.EqualError(t, err, nilPipeline)
	_, err = argo.Workflow(p).Objects()
	assert.EqualError(t, err, nilPipeline)
	_, err = local.Run(t.Context(), p)
	assert.EqualError(t, err, nilPipeline)
	_, err = argo.CronWorkflow(p, "@daily").Timezone("UTC").ConcurrencyPolicy(argo.ForbidConcurrent).StartingDeadline(time.Minute).
		KeepHistory(1, 1).Suspend(true).Objects()
	assert.EqualError(t, err, nilPipeline)
	var s *argo.CronWorkflowBuilder
	_, err = s.Timezone("UTC").ExecutorRBAC().Build()
	assert.EqualError(t, err, nilPipeline)
	var w *argo.WorkflowBuilder
	_, err = w.ExecutorRBAC().Objects()
	assert.EqualError(t, err, nilPipeline)
	assert.Contains(t, p.DOT(), "digraph")
	assert.Contains(t, p.Mermaid(), "flowchart")
	// Render reports the builder's refusal.
	err = cube.Render(io.Discard, argo.Workflow(p))
	assert.ErrorContains(t, err, nilPipeline)
}

// A zero Pipeline is an unnamed, empty one: its errors say so.
func TestZeroPipeline(t *testing.T) {
	_, err := argo.Workflow((&pipeline.Pipeline{}).Step(flows.Ctr("a"))).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeRequired, "metadata.name", "a name is required"))
}

// foreignStep satisfies Step by embedding StepOptions, outside the
// package's constructors.
type foreignStep struct {
	pipeline.StepOptions[foreignStep]
}

func TestNilAndForeignSteps(t *testing.T) {
	_, err := argo.Workflow(pipeline.New("p").Step(
		(*pipeline.ContainerStep)(nil),
		(*pipeline.WorkloadStep)(nil),
		(*pipeline.FuncStep)(nil),
		nil,
		&pipeline.ContainerStep{},
		&foreignStep{},
		flows.Ctr("ok").After((*pipeline.ContainerStep)(nil), nil),
	).OnExit((*pipeline.FuncStep)(nil))).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeRequired, "steps[0]", "step is nil"),
		flows.Want(field.ErrorTypeRequired, "steps[1]", "step is nil"),
		flows.Want(field.ErrorTypeRequired, "steps[2]", "step is nil"),
		flows.Want(field.ErrorTypeRequired, "steps[3]", "step is nil"),
		flows.Want(field.ErrorTypeInvalid, "steps[4]", "a step made without its constructor"),
		flows.Want(field.ErrorTypeInvalid, "steps[5]", "a step made without its constructor"),
		flows.Want(field.ErrorTypeRequired, "steps[6].after[0]", "dependency is nil"),
		flows.Want(field.ErrorTypeRequired, "steps[6].after[1]", "dependency is nil"),
		flows.Want(field.ErrorTypeRequired, "onExit", "step is nil"),
	)
	_, err = local.Run(t.Context(), pipeline.New("p").Step((*pipeline.FuncStep)(nil)), local.Progress(nil))
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeRequired, "steps[0]", "step is nil"))
	assert.NotPanics(t, func() { _ = pipeline.New("p").Step((*pipeline.ContainerStep)(nil)).DOT() })
}

// Durations and counts that cannot mean anything are refused, each at its
// path.
func TestSilentAcceptancesRefused(t *testing.T) {
	_, err := argo.Workflow(pipeline.New("p").Step(
		flows.Ctr("a").ActiveDeadline(-time.Second),
		flows.Ctr("b").ActiveDeadline(0),
		flows.Ctr("c").Retry(retry.Policy{Limit: -1, Backoff: -time.Second}),
		// Found by FuzzPipelineBuilder: these overflowed Argo's int32
		// fields (intstr.FromInt truncates, activeDeadlineSeconds wrapped).
		flows.Ctr("d").Retry(retry.Policy{Limit: 1 << 31, Factor: 1 << 31}),
		flows.Ctr("e").ActiveDeadline(1<<62),
	).TTLAfterFinished(-time.Second).Parallelism(0)).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeInvalid, "steps[0].activeDeadline", "must be positive"),
		flows.Want(field.ErrorTypeInvalid, "steps[1].activeDeadline", "must be positive"),
		flows.Want(field.ErrorTypeInvalid, "steps[2].retry.limit", "must not be negative"),
		flows.Want(field.ErrorTypeInvalid, "steps[3].retry.limit", "must be at most 2^31-1"),
		flows.Want(field.ErrorTypeInvalid, "steps[3].retry.factor", "must be at most 2^31-1"),
		flows.Want(field.ErrorTypeInvalid, "steps[4].activeDeadline", "must be at most 2^31-1 seconds"),
		flows.Want(field.ErrorTypeInvalid, "steps[2].retry.backoff", "must not be negative"),
		flows.Want(field.ErrorTypeInvalid, "ttlAfterFinished", "must be between 0 and 2^31-1 seconds"),
		flows.Want(field.ErrorTypeInvalid, "parallelism", "must be at least 1"),
	)
}
