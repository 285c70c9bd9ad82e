package argo_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cubestudio/cube/internal/testsupport/flows"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/retry"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/train"
)

// fuzzGraph builds a pipeline from bytes: the first byte gives the number of
// steps, then each pair of bytes an edge from step a to step b (b waits for
// a), made with After or, when a's byte is odd, by b reading a's output.
func fuzzGraph(data []byte) (*pipeline.Pipeline, int, [][2]int) {
	if len(data) == 0 {
		return nil, 0, nil
	}
	n := 1 + int(data[0])%16
	steps := make([]*pipeline.ContainerStep, n)
	for i := range steps {
		steps[i] = pipeline.Container(fmt.Sprintf("s%d", i)).Image("busybox").Command("true").Outputs("o")
	}
	var edges [][2]int
	reads := make([][]string, n)
	for k := 1; k+1 < len(data) && len(edges) < 64; k += 2 {
		a, b := int(data[k])%n, int(data[k+1])%n
		edges = append(edges, [2]int{a, b})
		if data[k]%2 == 1 && a != b { // reading one's own output is a different error
			reads[b] = append(reads[b], steps[a].Output("o"))
		} else {
			steps[b].After(steps[a])
		}
	}
	p := pipeline.New("fuzz")
	for i, s := range steps {
		if len(reads[i]) > 0 {
			s.Args(reads[i]...)
		}
		p.Step(s)
	}
	return p, n, edges
}

// acyclic decides, with a transitive closure rather than a topological sort,
// whether the edges form a DAG.
func acyclic(n int, edges [][2]int) bool {
	reach := make([][]bool, n)
	for i := range reach {
		reach[i] = make([]bool, n)
	}
	for _, e := range edges {
		reach[e[0]][e[1]] = true
	}
	for k := range n {
		for i := range n {
			if !reach[i][k] {
				continue
			}
			for j := range n {
				if reach[k][j] {
					reach[i][j] = true
				}
			}
		}
	}
	for i := range n {
		if reach[i][i] {
			return false
		}
	}
	return true
}

func FuzzCompileAcyclic(f *testing.F) {
	f.Add([]byte{3, 0, 1, 2, 3})                   // s0 → s1, s2 → s0 (read)
	f.Add([]byte{3, 0, 1, 2, 1, 4, 2})             // chain through outputs
	f.Add([]byte{2, 0, 1, 1, 0})                   // two-step cycle
	f.Add([]byte{1, 0, 0})                         // self loop
	f.Add([]byte{5, 0, 1, 1, 2, 2, 3, 3, 4, 4, 0}) // long cycle
	f.Add([]byte{15, 0, 5, 5, 9, 9, 14, 2, 3, 3, 7, 7, 2})
	f.Fuzz(func(t *testing.T, data []byte) {
		p, n, edges := fuzzGraph(data)
		if p == nil {
			return
		}
		wf, err := argo.Workflow(p).Build()
		want := acyclic(n, edges)
		require.Equal(t, want, err == nil, "edges %v: %v", edges, err)
		edgeSet := map[[2]string]bool{}
		for _, e := range edges {
			edgeSet[[2]string{fmt.Sprintf("s%d", e[0]), fmt.Sprintf("s%d", e[1])}] = true
		}
		if !want {
			// Every reported cycle is a real one.
			for _, fe := range flows.FieldErrors(t, err) {
				require.Equal(t, "dependency cycle", fe.Detail)
				names := strings.Split(fmt.Sprint(fe.BadValue), " → ")
				require.GreaterOrEqual(t, len(names), 2)
				require.Equal(t, names[0], names[len(names)-1])
				for i := 0; i+1 < len(names); i++ {
					require.True(t, edgeSet[[2]string{names[i], names[i+1]}], "%s → %s is not an edge", names[i], names[i+1])
				}
			}
			return
		}
		// Each task depends on exactly its upstream steps.
		deps := map[string][]string{}
		for e := range edgeSet {
			deps[e[1]] = append(deps[e[1]], e[0])
		}
		for _, tk := range wf.Spec.Templates[0].DAG.Tasks {
			want := deps[tk.Name]
			slices.SortFunc(want, func(a, b string) int { return numbered(a) - numbered(b) })
			assert.Equal(t, want, tk.Dependencies, "task %s", tk.Name)
		}
	})
}

func numbered(s string) int {
	var n int
	fmt.Sscanf(s, "s%d", &n)
	return n
}

// The argument pools the builder fuzzers draw from: valid values first (so
// that inputs of small bytes build), then values that are wrong in each way
// a user gets them wrong, and placeholders valid only in some places.
var (
	fuzzNames = []string{"a", "b", "train", "s-1", "x-fanout", "p", "", "Bad_Name", "1abc", "-x",
		strings.Repeat("n", 64), "fuzz", "ok"}
	fuzzTexts = []string{"echo", "hello world", "x=1", pipeline.ParamRef("lr"), pipeline.ParamRef("missing"),
		pipeline.WorkspaceDir + "/data", pipeline.ItemRef, pipeline.ItemField("k"), pipeline.PipelineStatus,
		pipeline.PipelineName, "{{steps.a.outputs.o}}", "{{steps.nope.outputs.x}}", "{{bogus", "{{outputs.o.path}}", "", "{{}}"}
	fuzzDurations = []time.Duration{time.Millisecond, 90 * time.Second, time.Hour, -time.Second, 0, 1 << 62}
	fuzzInts      = []int{1, 2, 3, -1, 0, 1 << 31}
	fuzzQuant     = []string{"1", "500m", "2Gi", "-1", "lots", "", "0"}
	fuzzWhens     = []string{"", "true", "1 == 1", pipeline.ParamRef("lr") + " == 1", "a ==", "(", "{{steps.a.outputs.o}} > 0.5"}
	fuzzModes     = []corev1.PersistentVolumeAccessMode{"", corev1.ReadWriteOnce, corev1.ReadWriteMany, corev1.ReadWriteOncePod, corev1.ReadOnlyMany, "Sideways"}
	fuzzPaths     = []string{"", "/workspace", "/data/ws", "relative", "/"}
	fuzzGC        = []pipeline.PodGCStrategy{"", pipeline.PodGCOnPodSuccess, pipeline.PodGCOnWorkflowCompletion, "Never"}
	fuzzPolicies  = []pipeline.RetryCondition{"", pipeline.OnFailure, pipeline.Always, "Sometimes"}
	fuzzLabelKeys = []string{"team", "cube.dev/x", "app", "bad key", "", "a/b/c"}
	fuzzAccounts  = []string{"", "runner", "pipeline-runner", "Bad_SA"}
)

// fuzzStep builds one step from r, chaining methods on it; earlier steps
// are candidates for After.
func fuzzStep(r *fuzzcorpus.Program, earlier []pipeline.Step) pipeline.Step {
	name := fmt.Sprintf("s%d", len(earlier))
	if int(r.Byte())%4 == 3 {
		name = fuzzcorpus.Pick(r, fuzzNames)
	}
	var (
		step pipeline.Step
		opts func(op int)
	)
	switch int(r.Byte()) % 8 {
	case 0, 1, 2, 3:
		c := pipeline.Container(name).Image(fuzzcorpus.Pick(r, []string{"busybox", "python:3.12", ""})).Command(fuzzcorpus.Pick(r, fuzzTexts))
		step = c
		opts = func(op int) {
			switch op {
			case 0:
				c.Args(fuzzcorpus.Pick(r, fuzzTexts), fuzzcorpus.Pick(r, fuzzTexts))
			case 1:
				c.Env(fuzzcorpus.Pick(r, []string{"X", "Y", "CUBE_OUTPUTS", "bad name", ""}), fuzzcorpus.Pick(r, fuzzTexts))
			case 2:
				c.CPU(fuzzcorpus.Pick(r, fuzzQuant)).Memory(fuzzcorpus.Pick(r, fuzzQuant))
			case 3:
				c.Namespace(fuzzcorpus.Pick(r, []string{"", "elsewhere"}))
			case 4:
				c.PodLabel(fuzzcorpus.Pick(r, fuzzLabelKeys), fuzzcorpus.Pick(r, fuzzNames))
			}
		}
	case 4, 5:
		w := pipeline.Workload(name, fuzzcorpus.Pick(r, []cube.Workload{
			flows.BatchJob("job", "sh", "-c", "echo "+fuzzcorpus.Pick(r, fuzzTexts)),
			flows.PyTorchJob("sft"),
			nil,
			cube.WorkloadFunc(func() ([]client.Object, error) {
				return nil, field.ErrorList{field.Invalid(field.NewPath("spec"), 1, "broken")}.ToAggregate()
			}),
		}))
		step = w
		opts = func(op int) {
			if op < 3 {
				w.OutputFrom(fuzzcorpus.Pick(r, []string{"job", "o", "bad name"}), fuzzcorpus.Pick(r, []string{"{.metadata.name}", "{.status}", "", "{.broken"}))
			}
		}
	case 6:
		step = pipeline.Func(name, func(context.Context, *pipeline.Task) error { return nil })
	case 7:
		step = fuzzcorpus.Pick(r, []pipeline.Step{nil, (*pipeline.ContainerStep)(nil), (*pipeline.WorkloadStep)(nil), &pipeline.ContainerStep{}})
		return step
	}
	for n := int(r.Byte()) % 6; n > 0 && !r.Done(); n-- {
		op := int(r.Byte()) % 14
		if op >= 9 {
			if opts != nil {
				opts(op - 9)
			}
			continue
		}
		switch s := step.(type) {
		case *pipeline.ContainerStep:
			fuzzOptions(r, &s.StepOptions, op, earlier)
		case *pipeline.WorkloadStep:
			fuzzOptions(r, &s.StepOptions, op, earlier)
		case *pipeline.FuncStep:
			fuzzOptions(r, &s.StepOptions, op, earlier)
		}
	}
	return step
}

// fuzzOptions applies one of the settings every step shares.
func fuzzOptions[T any](r *fuzzcorpus.Program, s *pipeline.StepOptions[T], op int, earlier []pipeline.Step) {
	switch op {
	case 0:
		if len(earlier) > 0 {
			s.After(earlier[int(r.Byte())%len(earlier)])
		} else {
			s.After(nil)
		}
	case 1:
		s.Outputs(fuzzcorpus.Pick(r, []string{"o", "x", "y", "bad name", "", "o"}))
	case 2:
		s.Retry(retry.Policy{Limit: fuzzcorpus.Pick(r, fuzzInts), Backoff: fuzzcorpus.Pick(r, fuzzDurations), Factor: fuzzcorpus.Pick(r, fuzzInts), MaxBackoff: fuzzcorpus.Pick(r, fuzzDurations), MaxDuration: fuzzcorpus.Pick(r, fuzzDurations)})
		s.RetryOn(fuzzcorpus.Pick(r, fuzzPolicies))
	case 3:
		s.ActiveDeadline(fuzzcorpus.Pick(r, fuzzDurations))
	case 4:
		s.When(fuzzcorpus.Pick(r, fuzzWhens))
	case 5:
		s.ForEach(fuzzcorpus.Pick(r, [][]string{{"x"}, {"a", "b"}, {`{"k": 1}`}, nil})...)
	case 6:
		s.ForEachIn(fuzzcorpus.Pick(r, []string{"", pipeline.ParamRef("lr"), "{{steps.a.outputs.o}}", "[1,2]"}))
	case 7:
		s.Parallelism(fuzzcorpus.Pick(r, fuzzInts))
	case 8:
		if len(earlier) > 0 {
			s.After(earlier[int(r.Byte())%len(earlier)])
		}
	}
}

// fuzzPipeline builds a pipeline from fuzz input by a random sequence of
// builder calls with random arguments. namespace is the only namespace it
// sets, so that what it accepts can be applied to a test API server. The
// pipeline has train's kinds, so that a PyTorchJob step compiles.
func fuzzPipeline(data []byte, namespace string) (*pipeline.Pipeline, *argo.WorkflowBuilder) {
	r := fuzzcorpus.NewProgram(data)
	if int(r.Byte())%16 == 15 {
		return nil, argo.Workflow(nil)
	}
	p := pipeline.New(fuzzcorpus.Pick(r, fuzzNames))
	if int(r.Byte())%16 == 15 {
		p = &pipeline.Pipeline{}
	}
	p.Kinds(train.Kinds()...)
	wf := argo.Workflow(p)
	var steps []pipeline.Step
	for ops := 0; !r.Done() && ops < 48; ops++ {
		switch int(r.Byte()) % 16 {
		case 0, 1, 2, 3, 4, 5:
			s := fuzzStep(r, steps)
			steps = append(steps, s)
			p.Step(s)
		case 6:
			p.Param(fuzzcorpus.Pick(r, []string{"lr", "publish", "bad name", ""}), fuzzcorpus.Pick(r, fuzzTexts))
		case 7:
			p.Workspace(pipeline.Workspace{Size: fuzzcorpus.Pick(r, fuzzQuant), StorageClass: fuzzcorpus.Pick(r, []string{"", "standard", "Bad Class"}),
				AccessMode: fuzzcorpus.Pick(r, fuzzModes), MountPath: fuzzcorpus.Pick(r, fuzzPaths)})
		case 8:
			p.Parallelism(fuzzcorpus.Pick(r, fuzzInts))
		case 9:
			p.TTLAfterFinished(fuzzcorpus.Pick(r, fuzzDurations))
		case 10:
			p.PodGC(fuzzcorpus.Pick(r, fuzzGC))
		case 11:
			p.ServiceAccount(fuzzcorpus.Pick(r, fuzzAccounts))
		case 12:
			wf.ExecutorRBAC()
		case 13:
			p.OnExit(fuzzStep(r, nil))
		case 14:
			p.Label(fuzzcorpus.Pick(r, fuzzLabelKeys), fuzzcorpus.Pick(r, fuzzNames))
		case 15:
			p.Namespace(fuzzcorpus.Pick(r, []string{namespace, "", "Bad NS"}))
		}
	}
	return p, wf
}

// checkBuilt asserts what every outcome of Objects must satisfy: refused
// input is a field.ErrorList aggregate whose every error names a path (or
// the nil-pipeline error); accepted input gives the same fresh objects
// again, each labelled with the pipeline's release.
func checkBuilt(t *testing.T, p *pipeline.Pipeline, wf *argo.WorkflowBuilder, objs []client.Object, err error) {
	t.Helper()
	if err != nil {
		if p == nil {
			require.EqualError(t, err, nilPipeline)
			return
		}
		fuzzcorpus.FieldErrors(t, err)
		return
	}
	require.NotEmpty(t, objs)
	for _, o := range objs {
		assert.Equal(t, podspec.Of(&p.Handle).Name(), o.GetLabels()[cube.LabelRelease], "%T %s", o, o.GetName())
	}
	again, err := wf.Objects()
	require.NoError(t, err, "the same pipeline validates again")
	require.Equal(t, len(objs), len(again))
	require.NotSame(t, objs[len(objs)-1], again[len(again)-1], "fresh objects")
}

// fuzzSeeds are inputs worth keeping: a valid fan-out with a workload, a
// nil pipeline, a zero one, RBAC with a schedule-able pipeline.
var fuzzSeeds = [][]byte{
	{1, 11, 0, 0, 0, 0},
	{1, 2, 0, 0, 0, 1, 2, 5, 4, 0, 0, 1, 8, 3, 3},
	{0},
	{1, 0, 1, 0, 0, 0, 0},
	{1, 2, 12, 0, 0, 0, 0, 0, 11, 1, 7, 2, 1, 0, 0},
	{1, 3, 4, 1, 4, 0, 2, 3, 4, 0, 5, 2, 8},
	{5, 9, 0, 5, 0, 0, 0, 3, 7, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
}

func FuzzPipelineBuilder(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, wf := fuzzPipeline(data, "fuzz-ns")
		objs, err := wf.Objects()
		checkBuilt(t, p, wf, objs, err)
		_, buildErr := wf.Build()
		assert.Equal(t, err == nil, buildErr == nil, "Build and Objects agree")
		_ = p.DOT()
		_ = p.Mermaid()
		_ = argo.ExecutorRules(p)
		_, _ = argo.CronWorkflow(p, "@daily").Objects()
	})
}
