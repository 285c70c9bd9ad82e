package argo_test

import (
	"fmt"
	"testing"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cubestudio/cube/internal/testsupport/cputime"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
)

// wideDAG is a 10,000-step layered DAG: each step reads the output of the
// step 1 before it and waits for the steps 7 and 97 before it.
func wideDAG(n int) *pipeline.Pipeline {
	steps := make([]*pipeline.ContainerStep, n)
	p := pipeline.New("big").Param("lr", "0.1")
	for i := range steps {
		s := pipeline.Container(fmt.Sprintf("step-%d", i)).Image("busybox").
			Command("sh", "-c", "echo "+pipeline.ParamRef("lr")+" > "+pipeline.OutputFile("o")).
			Outputs("o")
		if i >= 1 {
			s.Args(steps[i-1].Output("o"))
		}
		for _, back := range []int{7, 97} {
			if i >= back {
				s.After(steps[i-back])
			}
		}
		steps[i] = s
		p.Step(s)
	}
	return p
}

// BenchmarkCompile10000Steps compiles a 10,000-step DAG (cube) against
// writing the same Workflow's DAG tasks and container templates by hand
// with Argo's types (baseline): what the validation, placeholder rewriting
// and pod settings cost over the structs themselves.
func BenchmarkCompile10000Steps(b *testing.B) {
	const n = 10000
	b.Run("cube", func(b *testing.B) {
		p := wideDAG(n)
		b.ReportAllocs()
		b.ResetTimer()
		meter := cputime.Start()
		for b.Loop() {
			wf, err := argo.Workflow(p).Build()
			if err != nil {
				b.Fatal(err)
			}
			if len(wf.Spec.Templates) != n+1 {
				b.Fatalf("%d templates", len(wf.Spec.Templates))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
		// CPU time, all threads (the garbage collector's too): the compile's
		// cost on a shared machine, where wall time includes the neighbours.
		if used, ok := meter.Elapsed(); ok {
			b.ReportMetric(float64(used.Milliseconds())/float64(b.N), "cpu-ms/op")
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			wf := handWrittenDAG(n)
			if len(wf.Spec.Templates) != n+1 {
				b.Fatalf("%d templates", len(wf.Spec.Templates))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/step")
	})
}

// handWrittenDAG is wideDAG written directly as Argo's types, with no
// checks: one container template per step and a DAG task passing the
// previous step's output in.
func handWrittenDAG(n int) *wfv1.Workflow {
	wf := &wfv1.Workflow{
		ObjectMeta: metav1.ObjectMeta{Name: "big"},
		Spec: wfv1.WorkflowSpec{
			Entrypoint: "big",
			Arguments:  wfv1.Arguments{Parameters: []wfv1.Parameter{{Name: "lr", Value: wfv1.AnyStringPtr("0.1")}}},
			Templates:  make([]wfv1.Template, 1, n+1),
		},
	}
	dag := &wfv1.DAGTemplate{Tasks: make([]wfv1.DAGTask, 0, n)}
	for i := range n {
		name := fmt.Sprintf("step-%d", i)
		tmpl := wfv1.Template{
			Name: name,
			Container: &corev1.Container{Name: "main", Image: "busybox",
				Command: []string{"sh", "-c", "echo {{workflow.parameters.lr}} > /tmp/cube/outputs/o"}},
			Outputs: wfv1.Outputs{Parameters: []wfv1.Parameter{{Name: "o", ValueFrom: &wfv1.ValueFrom{Path: "/tmp/cube/outputs/o"}}}},
		}
		task := wfv1.DAGTask{Name: name, Template: name}
		if i >= 1 {
			prev := fmt.Sprintf("step-%d", i-1)
			tmpl.Inputs.Parameters = []wfv1.Parameter{{Name: "in"}}
			tmpl.Container.Args = []string{"{{inputs.parameters.in}}"}
			task.Arguments.Parameters = []wfv1.Parameter{{Name: "in", Value: wfv1.AnyStringPtr("{{tasks." + prev + ".outputs.parameters.o}}")}}
			task.Dependencies = append(task.Dependencies, prev)
		}
		for _, back := range []int{7, 97} {
			if i >= back {
				task.Dependencies = append(task.Dependencies, fmt.Sprintf("step-%d", i-back))
			}
		}
		wf.Spec.Templates = append(wf.Spec.Templates, tmpl)
		dag.Tasks = append(dag.Tasks, task)
	}
	wf.Spec.Templates[0] = wfv1.Template{Name: "big", DAG: dag}
	return wf
}
