package pipeline

import (
	"fmt"
	"slices"
	"time"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pipeline/internal/graph"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/retry"
)

// Step is one node of a pipeline: a *ContainerStep, a *WorkloadStep, a
// *ServeStep or a *FuncStep. The interface is sealed; build steps with
// Container, Workload, Serve and Func.
type Step interface {
	name() string
	core() *graph.Core
	made() bool
}

// StepOptions holds the settings every kind of step shares: dependencies,
// outputs, retries, timeout, condition and fan-out. It is embedded in
// ContainerStep, WorkloadStep and FuncStep; its methods return the embedding
// step so chains stay fluent.
type StepOptions[T any] struct {
	self *T
	c    graph.Core
}

func (s *StepOptions[T]) init(self *T, name string) { s.self, s.c.Name = self, name }

func (s *StepOptions[T]) core() *graph.Core { return &s.c }

// made reports whether the step came from its constructor.
func (s *StepOptions[T]) made() bool { return s.self != nil }

// ret is what a setter returns: the builder it set, or, on a zero value
// that no constructor made (self is nil), a fresh zero value, so that a
// chain of setters goes on without a nil dereference and the builder's
// Objects reports that it was never made.
func (s *StepOptions[T]) ret() *T {
	if s.self == nil {
		return new(T)
	}
	return s.self
}

// name returns the step name given to the constructor.
func (s *StepOptions[T]) name() string { return s.c.Name }

// After makes the step wait for steps (appends). Dependencies are also
// inferred from the outputs a step uses, so After is only needed when a step
// depends on another's side effects (files in the workspace, a registry).
func (s *StepOptions[T]) After(steps ...Step) *T {
	for _, a := range steps {
		var c *graph.Core
		if !isNilStep(a) {
			c = a.core()
		}
		s.c.After = append(s.c.After, c)
	}
	return s.ret()
}

// Outputs declares output parameters (appends). A container step writes
// output NAME to the file $CUBE_OUTPUTS/NAME (also given by
// OutputFile(NAME)); a function step calls Task.SetOutput. One trailing
// newline is trimmed, as Argo does. Names match Argo's parameter names:
// letters, digits, '-' and '_', starting with a letter or digit.
func (s *StepOptions[T]) Outputs(names ...string) *T {
	s.c.Outputs = append(s.c.Outputs, names...)
	return s.ret()
}

// Output returns a placeholder for the value of this step's output name,
// for use in a later step's command, args, env, function inputs, When or
// ForEachIn: {{steps.STEP.outputs.NAME}}. Using it makes that step depend on
// this one. Compiled for Argo it becomes {{tasks.STEP.outputs.parameters.NAME}}
// passed in as an input parameter. Of a fanned-out step, the value is a JSON
// list with one value per item.
func (s *StepOptions[T]) Output(name string) string {
	return "{{steps." + s.c.Name + ".outputs." + name + "}}"
}

// Retry sets how often a failed step is tried again and how long it waits
// between tries (Argo's retryStrategy: limit and backoff); RetryOn says
// which failures count.
func (s *StepOptions[T]) Retry(p retry.Policy) *T { s.c.Retry = &p; return s.ret() }

// RetryOn sets which failures Retry retries (Argo's retryPolicy); the
// default is OnFailure. It needs Retry.
func (s *StepOptions[T]) RetryOn(c RetryCondition) *T { s.c.RetryOn = string(c); return s.ret() }

// ActiveDeadline bounds each attempt of the step (Argo's activeDeadlineSeconds,
// rounded up to whole seconds; locally the exact duration), the word
// train.Lifecycle uses for a job.
func (s *StepOptions[T]) ActiveDeadline(d time.Duration) *T {
	s.c.Timeout, s.c.TimeoutSet = d, true
	return s.ret()
}

// When runs the step only if the expression is true, e.g.
// ParamRef("env") + " == prod". The expression is Argo's `when` syntax after
// substitution (govaluate: comparisons, &&, ||, !, parentheses; bare words are
// strings). A step that is skipped counts as done for the steps after it.
func (s *StepOptions[T]) When(expr string) *T { s.c.When = expr; return s.ret() }

// ForEach fans the step out over items (Argo's withItems): one run per item,
// which reads its item through ItemRef. Replaces an earlier ForEach or
// ForEachIn.
func (s *StepOptions[T]) ForEach(items ...string) *T {
	s.c.Items, s.c.ItemsSet, s.c.ItemsFrom = slices.Clone(items), true, ""
	return s.ret()
}

// ForEachIn fans the step out over a JSON list held by a parameter or an
// upstream output (Argo's withParam), e.g. ForEachIn(split.Output("shards")).
// Items that are JSON objects expose their fields through ItemField.
// Replaces an earlier ForEach or ForEachIn.
func (s *StepOptions[T]) ForEachIn(list string) *T {
	s.c.ItemsFrom, s.c.Items, s.c.ItemsSet = list, nil, false
	return s.ret()
}

// Parallelism bounds how many items of a fanned-out step run at once
// (Argo's template parallelism on the fan-out), as Pipeline.Parallelism
// bounds the steps of a run.
func (s *StepOptions[T]) Parallelism(n int) *T {
	s.c.MaxPar, s.c.MaxParSet = n, true
	return s.ret()
}

// RetryCondition says which failures of a step are retried (Argo's
// retryPolicy).
type RetryCondition string

// Retry conditions. Locally a failure is a non-zero exit, a function's error
// or a timeout; an error is a step that could not start (a missing
// executable).
const (
	OnFailure        RetryCondition = graph.OnFailure
	OnError          RetryCondition = graph.OnError
	OnTransientError RetryCondition = graph.OnTransientError
	Always           RetryCondition = graph.Always
)

// ContainerStep runs one container: the shared pod settings of pod.Builder
// (image, command, args, env, resources, hardware, volumes…) plus the step
// settings of StepOptions. Locally its command runs as a subprocess; the
// image is ignored.
type ContainerStep struct {
	pod.Builder[ContainerStep]
	StepOptions[ContainerStep]
}

// Container returns a container step named name.
func Container(name string) *ContainerStep {
	c := &ContainerStep{}
	podspec.Of(&c.Handle).Init(c, stepKind, name)
	c.init(c, name)
	return c
}

// stepKind is the cube.dev/kind the pod settings of steps are initialised with.
const stepKind = "pipeline-step"

// WorkloadStep runs a cube.Workload whose primary object is a job (a
// PyTorchJob, a Volcano Job, a RayJob…): compiled for Argo, a resource
// template creates it and waits on the success and failure conditions of
// its kind (cube.Kind.Completion), which the pipeline is given with
// Pipeline.Kinds (train.Kinds() for training jobs; a batch Job and a
// Workflow need none); the pipeline's service account needs RBAC to create
// that kind (argo.WorkflowBuilder.ExecutorRBAC renders it).
// A job that mentions WorkspaceDir gets the run's workspace claim mounted in
// each of its pods (the workspace then defaults to ReadWriteMany). Its other
// objects (ConfigMaps, Services…) are applied with the pipeline. The job,
// its pods and those objects carry the pipeline's cube.dev/release label
// (selectors follow), so Release.Wait on the pipeline sees the job's pods.
//
// ActiveDeadline becomes the job's own deadline too (spec.activeDeadlineSeconds of
// a batch Job or RayJob, spec.runPolicy.activeDeadlineSeconds of a
// training-operator job, the smaller one if the job has its own), so the job
// stops with the step and a retry does not run beside it; a kind with no
// deadline field (a Volcano Job) refuses ActiveDeadline. A workload that serves
// (a Deployment, StatefulSet, LeaderWorkerSet, RayService…) is refused: it
// has no completion to wait for (Serve applies a Deployment or a
// LeaderWorkerSet and waits until it is available). OutputFrom reads outputs from the job
// once it has succeeded.
//
// Locally the main container's command runs once as a single process,
// unless Replace gives a function for the step.
type WorkloadStep struct {
	StepOptions[WorkloadStep]
	workload  cube.Workload
	jsonPaths map[string]string // output name → JSONPath into the job
}

// OutputFrom declares an output read from the job the step created, once
// it has succeeded, with a kubectl JSONPath template such as
// "{.metadata.name}" or "{.status.completionTime}" (Argo's resource
// template outputs, valueFrom.jsonPath; workflow/executor/resource.go
// SaveResourceParameters). Locally the path is read from the job as cube
// renders it, with its rendered name and no status. A workload step has no
// output files, so Outputs is refused for it; OutputFrom replaces an
// earlier output of the same name.
func (s *WorkloadStep) OutputFrom(name, jsonPath string) *WorkloadStep {
	if s == nil {
		return nil
	}
	if s.jsonPaths == nil {
		s.jsonPaths = map[string]string{}
	}
	if _, ok := s.jsonPaths[name]; !ok {
		s.c.Outputs = append(s.c.Outputs, name)
	}
	s.jsonPaths[name] = jsonPath
	return s
}

// Workload returns a step named name that runs w.
func Workload(name string, w cube.Workload) *WorkloadStep {
	s := &WorkloadStep{workload: w}
	s.init(s, name)
	return s
}

// FuncStep runs a Go function. It runs only locally (pipeline/local):
// compiling a pipeline with one for Argo is an error naming the step.
type FuncStep struct {
	StepOptions[FuncStep]
	fn     StepFunc
	inputs []graph.NamedValue
}

// Func returns a function step named name that calls fn.
func Func(name string, fn StepFunc) *FuncStep {
	s := &FuncStep{fn: fn}
	s.init(s, name)
	return s
}

// Input sets an input the function reads with Task.Input, replacing one of
// the same name. The value may hold placeholders (another step's Output,
// ParamRef, ItemRef); using another step's output makes this step depend on
// it.
func (s *FuncStep) Input(name, value string) *FuncStep {
	if s == nil {
		return nil
	}
	s.inputs = graph.SetNamed(s.inputs, graph.NamedValue{Name: name, Value: value})
	return s
}

// isNilStep reports a nil step, typed or not: a typed nil's methods would
// dereference it.
func isNilStep(s Step) bool {
	switch t := s.(type) {
	case nil:
		return true
	case *ContainerStep:
		return t == nil
	case *WorkloadStep:
		return t == nil
	case *FuncStep:
		return t == nil
	case *ServeStep:
		return t == nil
	}
	return false
}

// stepDef is a step as the backends read it.
func stepDef(s Step) graph.Step {
	if isNilStep(s) {
		return graph.Step{Nil: true}
	}
	d := graph.Step{Value: s, Unmade: !s.made(), Core: s.core()}
	switch st := s.(type) {
	case *ContainerStep:
		d.Type = graph.Container
		d.Texts = containerTexts(st)
	case *WorkloadStep:
		d.Type = graph.Workload
		d.Workload, d.JSONPaths = st.workload, st.jsonPaths
	case *ServeStep:
		d.Type = graph.Serve
		d.Workload = st.workload
	case *FuncStep:
		d.Type = graph.Func
		d.Inputs = st.inputs
		if st.fn != nil {
			d.Func = st.fn
		}
	default:
		d.Foreign = fmt.Sprintf("%T", s)
	}
	return d
}

// containerTexts returns the strings of a container step that may hold
// placeholders, in a stable order.
func containerTexts(s *ContainerStep) []graph.Text {
	b := podspec.Of(&s.Handle)
	cmd, args := b.CommandLine()
	env := b.EnvVars()
	out := make([]graph.Text, 0, 1+len(cmd)+len(args)+len(env))
	if img := b.ImageName(); img != "" {
		out = append(out, graph.Text{Field: "image", Index: -1, Value: img})
	}
	for i, v := range cmd {
		out = append(out, graph.Text{Field: "command", Index: i, Value: v})
	}
	for i, v := range args {
		out = append(out, graph.Text{Field: "args", Index: i, Value: v})
	}
	for _, e := range env {
		if e.ValueFrom == nil {
			out = append(out, graph.Text{Field: "env", Index: -1, Key: e.Name, Value: e.Value})
		}
	}
	return out
}

// ServeStep applies a serving workload (a serve.Service, or any
// cube.Workload with one Deployment or LeaderWorkerSet) and completes once
// it is available: at least its replicas are available (a Deployment) or
// ready (a LeaderWorkerSet's groups). Later steps reach it by its Service's
// name. Compiled for Argo it is a resource template that applies the
// Deployment or LeaderWorkerSet (kubectl create: a run that finds an object
// of that name, from an earlier run or anyone's, fails the step with
// AlreadyExists rather than overwrite it; delete the earlier service
// first) and waits with a successCondition on its status; the
// objects around it (its Service, routes, autoscaler…) are applied with
// the pipeline. The service is not owned by the Workflow: it keeps serving
// after the run ends and after the Workflow is deleted, and it is deleted
// with its release (the pipeline's) like any other object cube applied.
// Neither kind has a failure condition Argo's syntax can express, so a
// service that never becomes available fails the step at its
// ActiveDeadline; set one. A serving step has no outputs and cannot fan
// out. It runs only on a cluster: a local run refuses it unless
// local.Replace gives a function for it.
type ServeStep struct {
	StepOptions[ServeStep]
	workload cube.Workload
}

// Serve returns a step named name that applies w and waits until it is
// available.
func Serve(name string, w cube.Workload) *ServeStep {
	s := &ServeStep{workload: w}
	s.init(s, name)
	return s
}
