package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/train"
)

// fieldErrors returns the field errors of an aggregate.
func fieldErrors(t *testing.T, err error) []*field.Error {
	t.Helper()
	require.Error(t, err)
	var agg utilerrors.Aggregate
	require.True(t, errors.As(err, &agg), "want an aggregate of field errors, got %T: %v", err, err)
	var out []*field.Error
	for _, e := range agg.Errors() {
		var fe *field.Error
		require.True(t, errors.As(e, &fe), "want a field error, got %T: %v", e, e)
		out = append(out, fe)
	}
	return out
}

type wantErr struct {
	typ    field.ErrorType
	path   string
	detail string // substring of the detail (or of the bad value for Invalid)
}

func (w wantErr) matches(fe *field.Error) bool {
	return fe.Type == w.typ && fe.Field == w.path &&
		(strings.Contains(fe.Detail, w.detail) || strings.Contains(fmt.Sprint(fe.BadValue), w.detail))
}

// requireErrors asserts that err holds exactly the wanted field errors.
func requireErrors(t *testing.T, err error, want ...wantErr) {
	t.Helper()
	got := fieldErrors(t, err)
	for _, w := range want {
		found := false
		for _, fe := range got {
			if w.matches(fe) {
				found = true
				break
			}
		}
		assert.True(t, found, "missing %s at %s (%q) in:\n%v", w.typ, w.path, w.detail, err)
	}
	assert.Len(t, got, len(want), "errors:\n%v", err)
}

func ctr(name string) *pipeline.ContainerStep {
	return pipeline.Container(name).Image("busybox").Command("true")
}

func TestValidateEmpty(t *testing.T) {
	_, err := pipeline.New("empty").Build()
	requireErrors(t, err, wantErr{field.ErrorTypeRequired, "steps", "at least one step"})
	_, err = pipeline.New("empty").Run(t.Context(), pipeline.Progress(nil))
	requireErrors(t, err, wantErr{field.ErrorTypeRequired, "steps", "at least one step"})
}

func TestValidateCycle(t *testing.T) {
	a, b, c, d := ctr("a"), ctr("b"), ctr("c"), ctr("d")
	a.After(c)
	b.After(a)
	c.After(b)
	d.After(d)
	_, err := pipeline.New("loop").Step(a, b, c, d).Build()
	requireErrors(t, err,
		wantErr{field.ErrorTypeInvalid, "steps", "a → b → c → a"},
		wantErr{field.ErrorTypeInvalid, "steps", "d → d"},
	)
	assert.Contains(t, err.Error(), `steps: Invalid value: "a → b → c → a": dependency cycle`)
}

func TestValidateCycleThroughOutputs(t *testing.T) {
	a := pipeline.Container("a").Image("i").Outputs("x")
	b := pipeline.Container("b").Image("i").Command("echo", a.Output("x")).Outputs("y")
	a.Command("echo", b.Output("y"))
	_, err := pipeline.New("loop").Step(a, b).Build()
	requireErrors(t, err, wantErr{field.ErrorTypeInvalid, "steps", "a → b → a"})
}

func TestValidateNames(t *testing.T) {
	long := strings.Repeat("a", 64)
	_, err := pipeline.New("Bad_Name").Step(
		ctr(""), ctr("1st"), ctr("has_underscore"), ctr(long), ctr("ok"), ctr("ok"), ctr("Bad_Name"), nil,
	).Build()
	requireErrors(t, err,
		wantErr{field.ErrorTypeInvalid, "metadata.name", "Bad_Name"},
		wantErr{field.ErrorTypeRequired, "steps[0].name", "a step name is required"},
		wantErr{field.ErrorTypeInvalid, "steps[1].name", "start with a letter"},
		wantErr{field.ErrorTypeInvalid, "steps[2].name", "start with a letter"},
		wantErr{field.ErrorTypeTooLong, "steps[3].name", ""},
		wantErr{field.ErrorTypeDuplicate, "steps[5].name", "ok"},
		wantErr{field.ErrorTypeInvalid, "steps[6].name", "Argo's template name rule"},
		wantErr{field.ErrorTypeInvalid, "steps[6].name", "must differ from the pipeline name"},
		wantErr{field.ErrorTypeRequired, "steps[7]", "step is nil"},
	)
}

func TestValidateDependencies(t *testing.T) {
	stray := ctr("stray")
	a := ctr("a")
	b := ctr("b").After(a, stray, nil)
	_, err := pipeline.New("deps").Step(a, b).Build()
	requireErrors(t, err,
		wantErr{field.ErrorTypeNotFound, "steps[1].after[1]", "stray"},
		wantErr{field.ErrorTypeRequired, "steps[1].after[2]", "dependency is nil"},
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
	_, err := pipeline.New("refs").Step(a, b, f).Build()
	requireErrors(t, err,
		wantErr{field.ErrorTypeDuplicate, "steps[0].outputs[1]", "model"},
		wantErr{field.ErrorTypeInvalid, "steps[0].outputs[2]", "letters, digits"},
		wantErr{field.ErrorTypeInvalid, "steps[1].command[1]", `step "a" has no output "score" (declared: model, model, bad name)`},
		wantErr{field.ErrorTypeInvalid, "steps[1].command[2]", `refers to step "ghost", which is not in the pipeline`},
		wantErr{field.ErrorTypeInvalid, "steps[1].command[3]", `parameter "nope" is not declared`},
		wantErr{field.ErrorTypeInvalid, "steps[1].command[4]", "only a step with ForEach or ForEachIn has an item"},
		wantErr{field.ErrorTypeInvalid, "steps[1].command[5]", "the pipeline has no workspace"},
		wantErr{field.ErrorTypeInvalid, "steps[1].command[6]", "known only in the exit handler"},
		wantErr{field.ErrorTypeInvalid, "steps[1].args[0]", "want {{steps.STEP.outputs.NAME}}"},
		wantErr{field.ErrorTypeInvalid, "steps[1].args[1]", `output "undeclared" is not declared`},
		wantErr{field.ErrorTypeInvalid, "steps[1].args[2]", "malformed placeholder {{params.}}"},
		wantErr{field.ErrorTypeInvalid, "steps[1].env[SELF]", "the step's own output"},
		wantErr{field.ErrorTypeInvalid, "steps[2].inputs[path]", "an output file belongs in a container step"},
		wantErr{field.ErrorTypeInvalid, "steps[2]", "a Go function step runs only locally"},
	)
}

func TestValidateFunctionStepNamesStep(t *testing.T) {
	f := pipeline.Func("prepare", func(context.Context, *pipeline.Task) error { return nil })
	_, err := pipeline.New("p").Step(f, ctr("train").After(f)).Build()
	requireErrors(t, err, wantErr{field.ErrorTypeInvalid, "steps[0]", "a Go function step runs only locally"})
	assert.Contains(t, err.Error(), `"prepare"`)
	_, err = pipeline.New("p").Step(pipeline.Func("nil-fn", nil)).Run(t.Context(), pipeline.Progress(nil))
	requireErrors(t, err, wantErr{field.ErrorTypeRequired, "steps[0].func", "function is nil"})
}

func TestValidateStepSettings(t *testing.T) {
	s := ctr("s").
		Retry(pipeline.Retry{Limit: -1, Backoff: -time.Second, Factor: -2, MaxBackoff: -time.Second, MaxDuration: -time.Second, Policy: "Sometimes"}).
		ActiveDeadline(0).
		Parallelism(2).
		When("{{params.x}} ==").
		Namespace("elsewhere")
	e := ctr("e").ForEach().Parallelism(0)
	q := ctr("q").ForEachIn("not a ref")
	r := ctr("r").ForEachIn(pipeline.ItemRef)
	_, err := pipeline.New("p").Param("x", "1").Step(s, e, q, r).Build()
	requireErrors(t, err,
		wantErr{field.ErrorTypeInvalid, "steps[0].retry.limit", "must be between 0 and 2^31-1"},
		wantErr{field.ErrorTypeInvalid, "steps[0].retry.backoff", "must not be negative"},
		wantErr{field.ErrorTypeInvalid, "steps[0].retry.factor", "must be between 0 and 2^31-1"},
		wantErr{field.ErrorTypeInvalid, "steps[0].retry.maxBackoff", "must not be negative"},
		wantErr{field.ErrorTypeInvalid, "steps[0].retry.maxDuration", "must not be negative"},
		wantErr{field.ErrorTypeNotSupported, "steps[0].retry.policy", "Sometimes"},
		wantErr{field.ErrorTypeInvalid, "steps[0].activeDeadline", "must be positive"},
		wantErr{field.ErrorTypeInvalid, "steps[0].parallelism", "applies only to a step with ForEach"},
		wantErr{field.ErrorTypeInvalid, "steps[0].when", "unexpected end of expression"},
		wantErr{field.ErrorTypeForbidden, "steps[0].namespace", "set it on the pipeline"},
		wantErr{field.ErrorTypeRequired, "steps[1].forEach", "at least one item"},
		wantErr{field.ErrorTypeInvalid, "steps[1].parallelism", "at least 1"},
		wantErr{field.ErrorTypeInvalid, "steps[2].forEachIn", "must be one ParamRef or step Output"},
		wantErr{field.ErrorTypeInvalid, "steps[3].forEachIn", "the item is known only inside the step"},
		wantErr{field.ErrorTypeInvalid, "steps[3].forEachIn", "must be one ParamRef or step Output"},
	)
}

func TestValidatePipelineSettings(t *testing.T) {
	p := pipeline.New("p").Namespace("Bad NS").Label("bad key!", "v").Annotation("bad key!", "v").
		Param("bad param!", "v").
		Step(ctr("s")).
		Parallelism(0).
		TTL(-time.Second).TTLAfterSuccess(time.Duration(1 << 62)).
		PodGC("Sometimes").
		Workspace(pipeline.Workspace{MountPath: "relative"})
	_, err := p.Build()
	requireErrors(t, err,
		wantErr{field.ErrorTypeInvalid, "metadata.namespace", "Bad NS"},
		wantErr{field.ErrorTypeInvalid, "metadata.labels[bad key!]", "bad key!"},
		wantErr{field.ErrorTypeInvalid, "metadata.annotations[bad key!]", "bad key!"},
		wantErr{field.ErrorTypeInvalid, "params[0].name", "letters, digits"},
		wantErr{field.ErrorTypeInvalid, "parallelism", "at least 1"},
		wantErr{field.ErrorTypeInvalid, "ttl", "between 0 and 2^31-1 seconds"},
		wantErr{field.ErrorTypeInvalid, "ttlAfterSuccess", "between 0 and 2^31-1 seconds"},
		wantErr{field.ErrorTypeRequired, "workspace.size", "needs a size"},
		wantErr{field.ErrorTypeInvalid, "workspace.mountPath", "absolute path"},
		wantErr{field.ErrorTypeNotSupported, "podGC", "Sometimes"},
	)
	_, err = pipeline.New("p").Step(ctr("s")).Workspace(pipeline.Workspace{Size: "lots", AccessMode: "Sometimes"}).Build()
	requireErrors(t, err,
		wantErr{field.ErrorTypeInvalid, "workspace.size", "lots"},
		wantErr{field.ErrorTypeNotSupported, "workspace.accessMode", "Sometimes"},
	)
	_, err = pipeline.New("p").Step(ctr("s")).Workspace(pipeline.Workspace{Size: "-1Gi"}).Build()
	requireErrors(t, err, wantErr{field.ErrorTypeInvalid, "workspace.size", "must be positive"})
}

func TestValidatePodSettings(t *testing.T) {
	s := pipeline.Container("s").Command("run").CPU("lots").Accelerators(2).Env("BAD NAME", "x")
	_, err := pipeline.New("p").Step(s).Build()
	requireErrors(t, err,
		wantErr{field.ErrorTypeRequired, "steps[0].template.spec.containers[0].image", "an image is required"},
		wantErr{field.ErrorTypeInvalid, "steps[0].template.spec.containers[0].resources.requests[cpu]", "lots"},
		wantErr{field.ErrorTypeInvalid, "steps[0].template.spec.containers[0].resources.limits[cpu]", "lots"},
		wantErr{field.ErrorTypeInvalid, "steps[0].template.spec.containers[0].env[0].name", "BAD NAME"},
		wantErr{field.ErrorTypeRequired, "steps[0].template.on", "without a hardware profile"},
	)
}

func TestValidateExitHandler(t *testing.T) {
	a := ctr("a").Outputs("x")
	exit := pipeline.Container("exit").Image("i").Command("echo", a.Output("x")).After(a).When("1 == 1").ForEach("x")
	_, err := pipeline.New("p").Step(a).OnExit(exit).Build()
	requireErrors(t, err,
		wantErr{field.ErrorTypeForbidden, "onExit.after", "takes no dependencies"},
		wantErr{field.ErrorTypeForbidden, "onExit.when", "always runs"},
		wantErr{field.ErrorTypeForbidden, "onExit.forEach", "cannot fan out"},
		wantErr{field.ErrorTypeInvalid, "onExit.command[1]", "cannot read the outputs of steps"},
	)
	_, err = pipeline.New("p").Step(ctr("a")).OnExit(ctr("a")).Build()
	requireErrors(t, err, wantErr{field.ErrorTypeDuplicate, "onExit.name", "a"})
	_, err = pipeline.New("p").Step(ctr("a")).OnExit(ctr("p")).Build()
	requireErrors(t, err, wantErr{field.ErrorTypeInvalid, "onExit.name", "must differ from the pipeline name"})
	_, err = pipeline.New("p").Step(ctr("a")).OnExit(nil).Build()
	requireErrors(t, err, wantErr{field.ErrorTypeRequired, "onExit", "step is nil"})
}

func TestValidateTemplateNameCollision(t *testing.T) {
	fan := ctr("x").ForEach("1", "2").Parallelism(1)
	_, err := pipeline.New("p").Step(ctr("x-fanout"), fan).Build()
	requireErrors(t, err, wantErr{field.ErrorTypeInvalid, "steps[1].name", `template name "x-fanout" of the fan-out of step "x" is already step "x-fanout"`})
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
		a, _ := batchJob("one", "true").Objects()
		b, _ := batchJob("two", "true").Objects()
		return append(a, b...), nil
	})
	_, err := pipeline.New("p").Step(
		pipeline.Workload("pod", noCompletion),
		pipeline.Workload("broken", broken),
		pipeline.Workload("empty", empty),
		pipeline.Workload("config", onlyConfig),
		pipeline.Workload("two", twoJobs),
		pipeline.Workload("nil", nil),
		pipeline.Workload("outputs", batchJob("j", "true")).Outputs("x"),
	).Build()
	requireErrors(t, err,
		wantErr{field.ErrorTypeInvalid, "steps[0].workload", `step "pod": the pipeline has no Completion for Pod, so Argo cannot tell when it finishes: run it in a batch Job`},
		wantErr{field.ErrorTypeInvalid, "steps[1].workload", "spec.replicas: must be positive"},
		wantErr{field.ErrorTypeRequired, "steps[2].workload", "no objects"},
		wantErr{field.ErrorTypeInvalid, "steps[3].workload", "none has a cube.Completion among the pipeline's kinds"},
		wantErr{field.ErrorTypeInvalid, "steps[4].workload", "runs one job"},
		wantErr{field.ErrorTypeRequired, "steps[5].workload", "workload is nil"},
		wantErr{field.ErrorTypeInvalid, "steps[6].outputs[0]", "writes no output files"},
	)
}

// A PyTorchJob is no kind of the Kubernetes API: a pipeline not given
// train.Kinds() has no Completion for it, and says how to give one.
func TestValidateWorkloadStepNeedsItsKind(t *testing.T) {
	ws := pipeline.Workspace{Size: "1Gi"}
	_, err := pipeline.New("p").Param("lr", "1e-4").Workspace(ws).Step(pipeline.Workload("sft", pytorchJob("sft"))).Build()
	requireErrors(t, err, wantErr{field.ErrorTypeInvalid, "steps[0].workload",
		`step "sft": the pipeline has no Completion for PyTorchJob.kubeflow.org, so Argo cannot tell when it finishes: give the pipeline its kind with Kinds`})

	wf, err := pipeline.New("p").Kinds(train.Kinds()...).Param("lr", "1e-4").Workspace(ws).Step(pipeline.Workload("sft", pytorchJob("sft"))).Build()
	require.NoError(t, err)
	assert.Equal(t, "status.completionTime", template(t, wf, "sft").Resource.SuccessCondition)
}

func TestValidateAllErrorsAtOnce(t *testing.T) {
	a := ctr("a").After(ctr("missing"))
	b := pipeline.Container("b").Command("echo", a.Output("nothing"))
	_, err := pipeline.New("p").Step(a, b, ctr("a")).Parallelism(-1).Build()
	got := fieldErrors(t, err)
	assert.Len(t, got, 5, "%v", err) // unknown dependency, missing output, no image, duplicate name, parallelism
}

func TestValidateSchedule(t *testing.T) {
	long := strings.Repeat("a", 53)
	_, err := pipeline.New(long).Step(ctr("s")).Schedule().Build()
	requireErrors(t, err,
		wantErr{field.ErrorTypeTooLong, "metadata.name", ""},
		wantErr{field.ErrorTypeRequired, "schedule", "at least one cron expression"},
	)
	_, err = pipeline.New("p").Step(ctr("s")).
		Schedule("* * *", "61 * * * *", "* * * * FUNDAY", "@sometimes", "@every -1s", "5-1 * * * *", "*/0 * * * *", "TZ=Mars/Base * * * * *").
		Timezone("Nowhere/Atlantis").
		ConcurrencyPolicy("Sometimes").
		StartingDeadline(-time.Second).
		KeepHistory(-1, 1).
		Build()
	requireErrors(t, err,
		wantErr{field.ErrorTypeInvalid, "schedule[0]", "want 5 fields"},
		wantErr{field.ErrorTypeInvalid, "schedule[1]", "minute: 61 is outside 0-59"},
		wantErr{field.ErrorTypeInvalid, "schedule[2]", `day of week: bad value "FUNDAY"`},
		wantErr{field.ErrorTypeInvalid, "schedule[3]", "unknown descriptor"},
		wantErr{field.ErrorTypeInvalid, "schedule[4]", "positive duration"},
		wantErr{field.ErrorTypeInvalid, "schedule[5]", "runs backwards"},
		wantErr{field.ErrorTypeInvalid, "schedule[6]", "bad step"},
		wantErr{field.ErrorTypeInvalid, "schedule[7]", `unknown time zone "Mars/Base"`},
		wantErr{field.ErrorTypeInvalid, "timezone", "unknown time zone"},
		wantErr{field.ErrorTypeNotSupported, "concurrencyPolicy", "Sometimes"},
		wantErr{field.ErrorTypeInvalid, "startingDeadline", "must not be negative"},
		wantErr{field.ErrorTypeInvalid, "keepHistory.succeeded", "between 0"},
	)
	for _, ok := range []string{"*/15 0-6,22-23 ? JAN-MAR sun", "@every 1h30m", "@midnight", "CRON_TZ=UTC 0 0 1 1 *", "0 0 * * 6"} {
		_, err := pipeline.New("p").Step(ctr("s")).Schedule(ok).Build()
		assert.NoError(t, err, ok)
	}
	_, err = pipeline.New("p").Schedule("@daily").Objects()
	requireErrors(t, err, wantErr{field.ErrorTypeRequired, "steps", "at least one step"})
}

func TestValidateLocal(t *testing.T) {
	noCmd := pipeline.Container("nocmd").Image("i")
	job := pipeline.Workload("job", cube.Objects(&corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: "bare"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}},
	}))
	_, err := pipeline.New("p").Step(noCmd, job).
		Run(t.Context(), pipeline.Replace("ghost", nil), pipeline.SetParam("nope", "1"), pipeline.Parallelism(0), pipeline.Progress(nil))
	requireErrors(t, err,
		wantErr{field.ErrorTypeInvalid, "parallelism", "at least 1"},
		wantErr{field.ErrorTypeNotFound, "replace", "ghost"},
		wantErr{field.ErrorTypeNotFound, "params", "nope"},
		wantErr{field.ErrorTypeRequired, "steps[0].command", "needs a command to run locally"},
		wantErr{field.ErrorTypeRequired, "steps[1].workload", `register a function with pipeline.Replace("job", fn)`},
	)
}
